// Package usechat serves a toolcallback.Team to the AI SDK's useChat, as
// package a2aserver serves it over A2A: one protocol, one package. It holds
// the Chat function's routes for a page (POST /Chat, the resume stream GET
// /Chat/{chatId}/stream, the conversation GET /Chat/{chatId} and its files
// GET /Chat/{chatId}/files/{name}), the history a reloaded page shows, and
// the AI SDK UI message stream an invocation is answered with, which
// Baton's own routes (Turn, ToolResult) answer with too (Server.Respond).
// Package functions registers the routes, verifies the caller (Identity)
// and maps the errors these return to HTTP statuses.
//
// A useChat request carries the whole conversation: Chat takes only the
// newest user message (by its client id, so a resent one starts no second
// turn) and the answers the last assistant message holds, through the
// ledger, because the transcript in Firestore is the truth and the ledger
// is what makes answers exactly-once. The body is read as a stream
// (chatbody.go), so a request holds one message at a time, never the
// history; what Chat takes is checked exactly (exactjson.go), and what it
// does not take is skipped unread.
//
// The resume stream is rebuilt from the session and followed with a
// Firestore listener rather than buffered per instance (chatstream.go), so
// any instance can serve it and nothing but Firestore is needed; the price
// is text at event granularity. Questions asked on a running call are not
// in the session: the stream follows them in the ledger
// (incallquestions.go).
//
// A2UI surfaces (docs/a2ui.md) go out as data-a2ui parts in the streams
// and the history, each surface in the history once, as it last was; an
// action on a card comes in as a user message's data-a2ui-action part,
// which Chat decodes and the turn checks (toolcallback.TurnRequest.Actions).
//
// A page shows a file with an <img>, which sends no Authorization header,
// so the history and the streams give each stored file a short-lived URL
// signed here (FileURLs, files.go) and served by File.
//
// This package stores nothing of its own: the Firestore paths and indexes
// are those of sessionstore and toolcallback.
package usechat
