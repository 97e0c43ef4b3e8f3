// Package functions holds Baton's HTTP entry points for functions-framework-go:
// Chat, Turn, ToolResult, Pending and Sweep (see Names), registered in init.
//
// Each function decodes and validates its request, takes the user's identity
// from a verified Firebase Auth ID token (never from the body), calls the
// team (toolcallback) and streams the result as an AI SDK UI message stream
// (package uistream). Ids in a request are checked once, by the team; this
// package passes them through. Errors become HTTP statuses in one function, status in
// errors.go; a 5xx says only "internal error" and the detail goes to the log.
//
// A handler returns only when the invocation it started has ended, even if
// the client disconnected: on Cloud Run an instance's CPU is throttled once
// no request is in flight, so the request is what keeps the detached
// invocation running to its end.
//
// The deployed agent comes from UseAgent, called from an init function of
// the deployment (infra/package generates one): this package does not
// import any agent, so a team deploys its own with Baton's functions.
//
// Chat serves the AI SDK's useChat, whose requests carry the whole
// conversation: it takes only the newest user message (by its client id,
// so a resent one starts no second turn) and the answers the last
// assistant message holds, through the ledger, because the transcript in
// Firestore is the truth and the ledger is what makes answers exactly-once.
// Its resume stream is rebuilt from the session and followed with a
// Firestore listener rather than buffered per instance, so any instance can
// serve it and nothing but Firestore is needed; the price is text at event
// granularity.
//
// The kind of identity (a user signed in anonymously, a service account on
// A2A, anyone else) chooses the turn limits a new message is held to
// (limits.go, docs/limits.md); answers to paused calls are never limited.
// Files of a message are stored through ADK's artifact.Service by the team
// (gcsartifact on BATON_FILES_BUCKET); GET /Chat/{chatId} gives each one a
// short-lived URL signed by this package and served by GET
// /Chat/{chatId}/files/{name} (files.go), since an <img> sends no
// Authorization header.
//
// A2UI surfaces (docs/a2ui.md) go out as data-a2ui parts in the streams
// and the history, each surface in the history once, as it last was; an
// action on a card comes in as a user message's data-a2ui-action part,
// checked against the chat's surfaces before the turn starts.
//
// Chat also serves live mode: GET /Chat/{chatId}/live upgrades to a
// WebSocket holding a live conversation (package live), authenticated by
// its first frame (live.go, livesocket.go; docs/live.md).
//
// Firestore paths and indexes are those of sessionstore and toolcallback;
// this package stores nothing of its own.
package functions
