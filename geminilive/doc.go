// Package geminilive holds one conversation with Gemini Live (the
// BidiGenerateContent WebSocket API, through genai's own client) across
// the connections it takes, for Baton's live mode. It stores nothing: the
// caller (a live segment holding the chat's lease) keeps the resumption
// handle, the calls and the transcript in Firestore, and gives them back
// to the next holder.
//
// It drives genai's live session itself, rather than calling ADK's
// runner.RunLive, because of what RunLive v2.2.0 does (adk_test.go pins
// each point against modeltest.LiveServer): it writes to the model's socket
// from two goroutines, and audio streamed while a tool response goes out
// panics the process or garbles frames; it drops usageMetadata, goAway and
// toolCallCancellation; on a reconnect it presents the handle and still
// sends the history loaded at the start (the model sees it twice), with a
// "continue" user turn that makes the model speak unprompted; it resumes
// only after EOF-like errors and 1008, not after Gemini's 1011; it writes
// the handle into the caller's LiveRunConfig, so a config shared by two
// chats resumes one chat's model session in the other; it stores no
// response given to Send; tool confirmations are nil, so an approval never
// completes; and tools run inside the loop that passes the model's frames
// on.
//
// A Session has one writer goroutine, the only one to write to the
// model's socket (audio, activity signals, text, tool responses, in the
// order queued; audio never waits: beyond AudioFrames the oldest is
// dropped), and one reader per connection, which turns frames into Events
// (text, audio, transcriptions piece by piece and whole per turn, tool
// calls and cancellations, usage, handles, goAway, turn ends). It
// reconnects on goAway, on the closes Gemini ends a connection with (1011
// at its connection limit, 1000, 1001) and on a lost connection: with the
// latest handle, or, without a handle or when the model refuses it (1007),
// with a new model session seeded with History as context (turnComplete
// false: the model waits for the user). A model session that was seeded
// and issued no handle since is replaced by one seeded with what it had,
// its seed and what it took since: History, read from storage, may not
// hold the turn just ended yet, and may hold what was typed meanwhile
// (sent after the seed).
//
// A handle restores the model session as it was when issued, and Gemini
// issues none while a call is in flight, nor between a turn's end and a
// close right after it: a connection resumed from it is first sent, as
// context, what the model session took after the handle (the user's turns,
// typed or heard, the model's words and answered calls, the responses
// written; since.go), closed into turns where package live closes the
// stored messages, so that the resumed model's context is the stored
// conversation; a last user turn the model had not answered is sent with
// turnComplete, and answered. After a goAway nothing more is written to
// the connection, but it is left only once the model is idle (it neither
// speaks nor owes an answer to a turn written to it) or closes it: a
// message written just before the goAway is answered where it went,
// rather than lost with the connection.
//
// Tool calls are the caller's to run, off both loops; Deliver answers each
// call at most once (ErrNotPending for a second answer or a cancelled
// call). A handle restores the model session as it was when issued, and
// Gemini issues none while a blocking call waits: a call made after the
// latest handle, or an earlier holder's pending call (Config.Pending), is
// unknown to the resumed model, so its response goes as a
// call-and-response pair of turns instead of a toolResponse the model
// would drop (an earlier holder's NON_BLOCKING call made before its handle
// is Config.Known, and answered with a toolResponse); a response written
// after the latest handle goes in the replay with its call, or, for a call
// made before the handle, is written again after a resume. The ledger (first writer wins) makes the answer unique
// across instances; the Session, within one.
//
// Capture gives the live setup what ADK itself would send the agent's
// model (instruction, declarations of its tools and toolsets, the
// conversation) by running the agent once with a plugin that stops before
// the model; Agent.Run runs one of its tools for a call with the
// invocation ADK built, and with a person's confirmation when one is
// needed.
//
// It is a folder of its own because it knows genai and ADK but neither
// Firestore nor the ledger: toolcallback (or a live package beside it)
// imports it.
package geminilive
