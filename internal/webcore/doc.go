// Package webcore runs local/e2e/a2ui.mjs, which reads A2UI messages with
// @a2ui/web_core's own v0.9 parsing and message processor, the core of the
// demo page's renderer: tests of package a2ui hand it the messages Baton
// builds, tests of package functions the data-a2ui parts a turn's stream
// and the history carry. It is a package of its own so that both run the
// script one way; it stores nothing.
package webcore
