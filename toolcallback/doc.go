// Package toolcallback pauses an ADK agent on calls that only a browser, a
// person or another system can answer, and resumes it exactly once, on any
// instance, when the answer arrives.
//
// # Tools
//
// Browser and External declare long-running tools whose handler returns a
// placeholder and sets SkipSummarization, which ends the invocation (ADK's
// IsLongRunning alone would call the model again). Approval declares a Go
// tool gated by ADK's tool confirmation. A tool that needs a person's input
// mid-call (an MCP server's question) asks with RequestInput, which pauses
// like an approval (KindInput, input.go), or AskLive, which keeps the turn
// open (live.go).
//
// # Ledger
//
// Each paused call has a record at
//
//	{session document}/calls/{call id}
//
// (the session document is sessionstore's, so deleting a session's tree
// finds its records). The record is written in the same Firestore commit as
// the event that holds the call: the runner appends through a session
// service (invocationSessions) that adds the records to the event's batch. A
// browser or external call is recognised by its tool's name, which the
// tool announced to the invocation when the model request was built, so
// the record exists from the model's event on, before the tool has run;
// an approval is recognised by ADK's confirmation request. The runner
// yields an event only once it is stored, so a client never sees a call
// that has no record, and no crash can leave one.
//
// An answer is recorded with a precondition on the record's update time:
// the first writer wins and later answers get the recorded outcome. When
// every call of a model step has an answer, the agent is resumed once, under
// the session lease; before running, the engine checks in the session which
// answers no earlier resume delivered, since replaying responses re-runs the
// model and replaying a confirmation re-runs the tool. ADK runs approved
// tools from the latest user event only and hides that event from the
// model, so a step that mixes approvals with other calls gets the other
// answers in a user event of their own first.
//
// # Rewind
//
// Team.Rewind regenerates an answer or edits an earlier user message: under
// the session's lease, one commit stores a sessionstore rewind mark and
// closes the ledger records still open (cancelled, never delivered), then
// the user message runs as a turn. The mark names the request, so the same
// request again is recognised (rewind.go; docs/conversation-control.md).
//
// # After a crash
//
// A process can die after any write. The next turn, resume or agent switch
// of the session, under its lease, repairs what the dead invocation left
// (repair.go says what each state becomes): calls without a response and
// without a record are closed with an error response, and a message no
// model event answers gets a note that it was interrupted. A call with a
// record stays pending and can be answered.
//
// # One invocation per session
//
// Every turn and resume holds sessionstore's lease on the session, renewed
// every third of LeaseTTL while the holder works, so a holder that dies
// frees the session within LeaseTTL. Because the lease lives in the session
// document, taking it over changes that document's update time, on which
// every write of the previous holder is conditioned: a stalled holder
// writes nothing once its lease was taken, and its invocation is cancelled
// when it notices. Invocations run detached from the caller's
// cancellation, bounded by InvocationTimeout.
//
// # Stop
//
// Team.Stop stops what runs in a chat from any instance (stop.go). A
// running invocation is asked through a request document beside its
// session, named after its lease's fence (sessionstore.RequestStop); the
// holder listens to that one document (a snapshot listener, one listen
// stream per invocation that runs longer than stopListenDelay, and one
// read when a request arrives) and cancels the runner's context. A
// listener rather than a poll: a poll costs a read per interval per
// running turn, a listener nothing until the request comes. A document of
// its own rather than the session's: a write there would fence the holder
// out before it stored what it had generated. The delay keeps turns
// shorter than it from paying for a listen stream; a request made before
// the listener starts is in its first snapshot. Then the holder, still
// under its lease, closes what the invocation left (every call without a
// response gets one, pending records are cancelled) and stores the text
// the model had streamed as the final event, marked stoppedKey. A paused
// turn is stopped under the lease by the request itself: its pending
// calls are cancelled and closed the same way.
//
// # One invocation, one session service
//
// Each invocation builds its own runner around its own session service
// (invocationSessions), which holds what the request prepared: the
// session handle it read (the runner's Get returns it instead of reading
// again), the lease it holds or the claim the message's commit takes, and
// the client that started it. Nothing of Baton's passes through ADK's
// runner on the context except the pausing tools' declarations, which the
// tools themselves must reach. The turn's way (new chat, plain turn,
// settled turn, short or long resume) is decided in Team.Turn, engine.turn
// and Team.Resume, before anything is started.
//
// # Round trips
//
// A turn reads the chat and its session in one round trip (the session id
// guessed from an instance cache the chat document then checks) and hands
// that handle to ADK's runner, whose Get would otherwise read it again.
// The lease is taken by the commit that stores the user message,
// conditional on the session being as read; a new chat's first message
// creates the chat and the session in that same commit. The ledger is
// queried only when the session document says records may be open, or
// when the tail shows something to settle; that turn then takes the lease
// first, as before. A resume reads chat, session and call at once, and when
// its answer completes the step, one commit records the answer, takes the
// lease and delivers the step's answers. Every other case takes the long
// path, which reads everything again under the lease: the short paths only
// skip work whose outcome the conditional commit would contradict.
//
// # Warm turns
//
// An instance keeps the session handle its last turn of a chat left
// (warm.go): the invocation's final reply is staged and stored with the
// lease's release, so the handle is then the session exactly as stored.
// The chat's next turn on that instance reads nothing: it stages the
// message on the copy and starts the model at once, while the commit that
// stores the message and claims the lease, conditional on the copy's
// version, runs beside it. The copy may be stale (another instance wrote),
// so nothing is shown until that commit succeeds, and a failed one cancels
// the model request and falls back to the read: speculation costs one
// cancelled model request on a lost race, never a wrong history.
//
// # Turn limits
//
// A turn's limits (limits.go) add no round trip: the user's counts
// ({root}/{app}/users/{user}/limits/turns and tokens-{day}) are read with
// the chat and session, a chat's recent turn times live in its session
// document, and the turn is counted in the commit that stores its message.
// A model response's tokens are counted in the session document the
// commit that stores it writes anyway; a user's day is their sum over the
// user's sessions, an aggregation query sent beside the turn's read.
// Counting a chat's tokens per chat, rather than per user, is what saves
// the write: a user's total is then only ever read, never written on the
// turn path (a deleted session moves its count to tokens-{day}).
//
// # Files
//
// With Options.Files (an ADK artifact.Service), Team.Turn saves a user
// message's inline files as artifacts of the chat ({app}/{user}/{chat id}/
// {name}/{version} in gcsartifact's bucket) before the turn starts, and the
// session stores a genai.FileData reference (baton-file:{chat}/{name}/
// {version}) in each file's place, so files never enter Firestore. The
// model gets the bytes from a plugin of each invocation's runner: its
// before-model callback swaps the references in the LLM request for the
// artifacts' bytes. That is where it is cheapest: ADK's contents processor
// (llminternal.buildContentsDefault) has already deep-copied the history's
// contents into the request, so the swap edits that copy, reads each file
// once per invocation, and leaves the session's events as they are. Sweep's
// deletion of an idle chat deletes its files first (files.go).
//
// # Indexes
//
// Queries within one session's calls (by status, step, resumed; live and
// status, equalities only, for the questions asked on a live call) use
// Firestore's automatic single-field indexes. Sweep queries the "calls"
// collection group with scope == X and sweepAt <= now, ordered by sweepAt:
// it needs the composite index (scope ASC, sweepAt ASC) at collection-group
// scope, listed in Indexes. gcAt is the TTL field.
package toolcallback

import "github.com/baton-run/baton/sessionstore"

// Indexes lists the composite indexes this package's queries need; the
// deployment declares each of them.
var Indexes = []sessionstore.Index{
	{CollectionGroup: callsCollection, QueryScope: "COLLECTION_GROUP", Fields: []string{"scope", "sweepAt"}},
}

// TTLs lists the time-to-live fields of this package's documents: the
// ledger's gcAt, and the turn limits' counts' (limits.go).
var TTLs = []sessionstore.TTL{{CollectionGroup: callsCollection, Field: "gcAt"}, {CollectionGroup: sessionstore.LimitsCollection, Field: "gcAt"}}

// QueriedFields are the fields this package's queries filter or order on,
// by collection group (pending.go, resume.go): their automatic indexes must
// not be exempted.
var QueriedFields = map[string][]string{
	callsCollection: {"scope", "sweepAt", "status", "step", "resumed", "live"},
}
