// Package functions holds Baton's HTTP entry points for functions-framework-go:
// Chat, Turn, ToolResult, Pending, Sweep, A2A and Admin (see Names),
// registered in init.
//
// Each function decodes and validates its request, takes the user's identity
// from a verified Firebase Auth ID token (never from the body), calls the
// team (toolcallback) and streams the result as an AI SDK UI message stream
// (package uistream). Ids in a request are checked once, by the team; this
// package passes them through. What an error means is decided once, by
// package errclass; errors.go answers the class with its HTTP status and
// the JSON body, and the live socket with an error frame (livesocket.go); a
// 5xx says only "internal error" and the detail goes to the log.
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
// Chat serves the AI SDK's useChat through package usechat, which holds
// that protocol (its routes, the history a page shows, the UI message
// stream every turn is answered with); this package routes Chat's paths
// (chatroutes.go), verifies the caller and maps the errors.
//
// The kind of identity (a user signed in anonymously, a service account on
// A2A, anyone else) chooses the turn limits a new message is held to
// (limits.go, docs/limits.md); answers to paused calls are never limited.
// Files of a message are stored through ADK's artifact.Service by the team
// (gcsartifact on BATON_FILES_BUCKET; filestore.go), their URLs signed by
// usechat.
//
// Chat also serves live mode: GET /Chat/{chatId}/live upgrades to a
// WebSocket holding a live conversation (package live), authenticated by
// its first frame (live.go, livesocket.go; docs/live.md).
//
// Admin serves the operator's console (admin.go; package console holds its
// views and actions, docs/operator.md). Who is an operator is decided here,
// where identity is checked (operator.go): a user whose record in Firebase
// Auth carries the operator claim or a listed verified email, checked on
// every console request against the record rather than the token, so
// that a removed claim counts at once and an edited token never does.
// Blocked users are refused by their token's claim, at no cost per
// request.
//
// Metrics (metrics.go): InstallMetrics sets the process's meter provider,
// which every package records on; it exports to Cloud Monitoring with
// BATON_METRIC_EXPORT=cloudmonitoring and is read in process for the
// console. wrap counts every request by function and status.
//
// Firestore paths and indexes are those of sessionstore, ledger, limits
// and console; this package stores nothing of its own.
package functions
