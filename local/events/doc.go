// Package events is the local demo's events agent: a small A2A agent of
// its own (a2a-go's server, JSON-RPC, push notifications), which the
// local runner starts on a port of its own, as another team's agent
// would run elsewhere, and which the demo's concierge delegates to
// (toolcallback.Remote, docs/remote-agents.md). Asked what is on, it
// first asks which part of town (its task goes input-required, and Baton
// puts the question to the person), then looks for a couple of seconds,
// reporting that it works, and answers with a listing: as text, as an
// A2UI card, and with a poster (a small PNG) as a file, which Baton keeps
// in the chat's file store and shows as the others.
//
// It stores nothing: its tasks live in a2a-go's in-memory store, for the
// process's life.
package events
