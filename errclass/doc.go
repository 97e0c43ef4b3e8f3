// Package errclass holds the one classification of Baton's errors: what
// an error means to a client. Of turns any error a request ends with into
// a Class: a Code (the "code" of an HTTP error body and of the live
// socket's error frame), the HTTP status of that code, when to retry
// (RetryAfter), a message safe to show (a server's fault says only
// "internal error"; the detail is for the log), and what the client needs
// to act on it (the calls that block a message, an answer's recorded
// outcome, the known agents).
//
// It decides; the transports only translate. The HTTP routes of package
// functions and the useChat adapter (package usechat) answer a class with
// its status and the JSON body {"error": {"code", "message", ...}}; the
// live socket with an error frame of the same code; A2A (package
// a2aserver) with the JSON-RPC error its own table names for the code, or,
// once a task has taken a message, with the task's input-required or
// failed state. So one error reads the same on every transport (a message
// too large is too_large everywhere), and docs/http-api.md's table of codes
// is checked against Codes.
//
// Why a package of its own: the classification must know the sentinels of
// sessionstore, toolcallback, limits and a2ui, and is used by functions,
// usechat, a2aserver and the live socket, so it sits between them. It also
// holds the sentinels of a request itself (ErrBadRequest and the others
// below), which every door wraps: whatever a decoder of client input
// returns wraps ErrBadRequest (or a sentinel of the part that decoded it,
// such as a2ui.ErrInvalid), so bad input is never a 5xx. As Go CDK's
// gcerrors does for its drivers, the precedence between sentinels an error
// wraps at once is decided here, in one ordered list (rules in
// errclass.go).
//
// It stores nothing and has no Firestore paths or indexes.
package errclass
