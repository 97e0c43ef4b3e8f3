// Package toolcallback pauses an ADK agent on calls that only a browser, a
// person or another system can answer, and resumes it exactly once, on any
// instance, when the answer arrives.
//
// # Tools
//
// Browser and External declare long-running tools whose handler returns a
// placeholder and sets SkipSummarization, which ends the invocation (ADK's
// IsLongRunning alone would call the model again). Approval declares a Go
// tool gated by ADK's tool confirmation. The placeholder carries a marker
// (kind, timeout, any-device), so a paused call can be recognised from the
// session's events alone.
//
// # Ledger
//
// Each paused call has a record at
//
//	{session document}/calls/{call id}
//
// (the session document is sessionstore's, so deleting a session's tree
// finds its records). The engine writes the record when the event that
// pauses the call has reached the session and before the client sees the
// call. A crash between the two is repaired on the next turn, resume or
// listing of that session: the records are rebuilt from the events (the
// client that started the turn is stamped on those events by a plugin).
// Since every turn repairs, only the latest events (recentWindow) can hold
// a lost call, and only those are read for it: a long history is not read
// twice per turn.
//
// An answer is recorded with a precondition on the record's update time:
// the first writer wins and later answers get the recorded outcome. When
// every call of a model step has an answer, the agent is resumed once, under
// the session lease, with one user content holding all the responses;
// before running, the engine checks in the session that no earlier resume
// delivered them, since replaying responses re-runs the model and replaying
// a confirmation re-runs the tool.
//
// # One invocation per session
//
// Every turn and resume holds sessionstore's lease on the session. Because
// the lease lives in the session document, taking it fences every handle
// read before: a stalled holder whose lease was taken over fails its next
// append. Invocations run detached from the caller's cancellation, bounded
// by their own deadline, and the lease lasts that deadline plus a margin, so
// it never needs renewing.
//
// # Indexes
//
// Queries within one session's calls (by status, step, resumed) use
// Firestore's automatic single-field indexes. Sweep queries the "calls"
// collection group with scope == X and sweepAt <= now, ordered by sweepAt:
// it needs the composite index (scope ASC, sweepAt ASC) at collection-group
// scope, listed in Indexes. gcAt is the TTL field.
package toolcallback

// Index is a composite index a query of this package needs.
type Index struct {
	CollectionGroup string
	QueryScope      string // "COLLECTION_GROUP" or "COLLECTION"
	Fields          []string
}

// Indexes lists the composite indexes this package's queries need; the
// deployment declares each of them.
var Indexes = []Index{
	{CollectionGroup: callsCollection, QueryScope: "COLLECTION_GROUP", Fields: []string{"scope", "sweepAt"}},
}

// TTLField is the ledger's time-to-live field: Firestore garbage-collects a
// record some time after it. Expiry semantics are in code; TTL only
// collects garbage, and late.
const TTLField = "gcAt"

// TTL is a collection group's time-to-live field.
type TTL struct {
	CollectionGroup string
	Field           string
}

// TTLs lists the time-to-live fields of this package's documents.
var TTLs = []TTL{{CollectionGroup: callsCollection, Field: TTLField}}

// QueriedFields are the fields this package's queries filter or order on,
// by collection group (pending.go, resume.go): their automatic indexes must
// not be exempted.
var QueriedFields = map[string][]string{
	callsCollection: {"scope", "sweepAt", "status", "step", "resumed"},
}
