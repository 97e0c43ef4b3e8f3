// Package sessionstore is a Firestore implementation of ADK's session.Service.
//
// # Document layout
//
// Everything lives under one top-level collection, Options.Root (default
// "baton"), so two deployments can share a database:
//
//	{root}/{app}                                    app state       (stateDoc)
//	{root}/{app}/users/{user}                       user state      (stateDoc)
//	{root}/{app}/users/{user}/sessions/{session}    session         (sessionDoc)
//	{root}/{app}/users/{user}/sessions/{session}/events/{n:06d}    event chunk (chunkDoc)
//	{root}/{app}/users/{user}/chats/{chat}          chat session    (chatDoc)
//	{root}/{app}/users/{user}/sessions/{session}/stops/{fence}     stop request   (stopDoc)
//
// A session document holds the session-scoped state (one JSON object), the
// revision counter, ADK's last-update time, its most recent events (the
// tail) and an index of its sealed event chunks (number, event count, first
// and last event time). Each event is stored as JSON, tagged with the
// revision that appended it. When the next event would push the session
// document past about 1 MB, the tail is sealed into a chunk document, which
// never changes afterwards. App and user state documents keep one field per
// key, so an append merges the keys it changes without reading.
//
// Why pack: Firestore bills per document, not per byte. One document per
// event would make every turn read the whole history one document at a
// time. Packed, a Get reads the session, app and user documents in one round
// trip and the sealed chunks it needs (about one per MB of history) in a
// second, whatever the event count (Read without Shared, for callers that
// run no agent, skips the app and user documents: Firestore bills a lookup
// as a read even when the document does not exist); an append writes the session document
// alone, plus a chunk when it seals one and the app or user state document
// when the event changes them. NumRecentEvents and After use the chunk index
// to skip chunks they cannot need.
//
// # Concurrency
//
// Every append increments the session's revision. The compare-and-set on
// that revision is a Firestore precondition on the session document's update
// time, taken when the handle was read or last written: every write to the
// session document changes both, so "unchanged update time" means
// "unchanged revision". It is an equality check on a server-assigned
// version, never a comparison of clocks. The append (session, any sealed
// chunk, any app or user state) is one atomic batch: a loser gets
// ErrConflict and nothing of its event is stored. A request that runs an
// agent can take the session's lease with its first append instead of
// before it, passing a LeaseClaim (ClaimLease; ClaimNewSession for a
// session and chat not stored yet) in AppendOptions: that append is
// conditional on the update time as read, so its success proves the handle
// it read is current, and a request reads the session once and writes its
// lease and first event in one commit. The claim is an argument of the
// append, not a state of the handle, so what a commit writes is decided
// by its caller and planned in one place. The session document's
// sideDocsClosed field says whether documents an append created beside it
// (the ledger's records) may still be open; a document without the field
// reads as "they may". Because the tail lives in the session document and
// sealed chunks are immutable, a Get always sees a consistent history even
// while appends land.
//
// A request that runs an agent reads what it needs once (Read, or ReadChat
// for a chat with its session and other documents) and takes the lease
// with its first write, so the read and the lease are one round trip each
// and the handle read is the one the runner uses.
//
// The commit that stores a turn's message can also carry what the turn
// limits (package limits) count: the chat's recent turn times in the
// session document (AppendOptions.TurnLog, read back with
// Session.TurnLog), and writes of the caller's documents beside the user
// (AppendOptions.Writes, the user's turns document under LimitsCollection),
// which commit with the event or not at all. A model response's tokens are
// counted the same way (AppendOptions.Tokens): the session document counts
// its tokens of the current UTC day, and a user's day is the sum over the
// user's sessions (SessionTokens, one aggregation query) plus the day
// document of the user's deleted sessions (DayTokensDoc): a delete moves
// the session's count there in its own commit, so that deleting a chat
// does not give its tokens back; AddDayTokens adds there the tokens of
// model calls made outside any session's commit (a background tool's).
//
// Other parts keep documents of their own beside the sessions (the
// ledger's records under a session, the turn limits' counts under a user,
// the A2A tasks under a chat). The Service names where (DocName: SessionDoc,
// ChatDoc, UserDoc, then Child), and their owner builds the writes of
// them (Write: Create, Update with the update time it read, Merge), which
// the Service places in the commits it assembles (AppendOptions.Create and
// Writes, ClaimLease) or makes alone (Commit). A read made on an owner's
// behalf (ChatRead.Also, read with the chat; ReadDocs) hands back
// StoredDoc values, which the owner decodes. No document reference, snapshot or
// write batch crosses the package's edge: a document's owner decides what
// is written, the Service decides in which commit. The owners query their
// own documents on the same database (Client), which Open opens.
//
// # What is exported
//
// What a user of ADK's session.Service needs (the Service, Session and
// their methods), and the operations on the documents this package owns
// (sessions, their events and lease, stop requests, chats) that another
// part of Baton needs. Each is a session or chat operation, named for what
// it does to those documents, whichever part calls it: most are called by
// toolcallback alone (the lease, staged and claiming appends, rewind marks,
// stop requests, a switch's chat updates and migrated history, the
// sweeper's chat queries), because toolcallback runs the invocations, and
// that does not make them its concern. What another part owns is not kept
// here: the ledger's records, the limits' counts and the A2A tasks reach a
// commit only as Writes on a DocName. Nothing is exported for this
// package's tests alone: they reach a lease's single renewal and its
// expiry through export_test.go. CreateChat stores a chat on its own, for
// tests and imports that build its session otherwise (CreateWithEvents),
// where a chat's first turn stores it with its session (ClaimNewSession).
//
// # Staged appends
//
// An event the runner must see at once (in Events and State, for the
// model's next request) can be stored a little later (StageEvent): a warm
// turn stages the user's message and stores it while the model is already
// called; an invocation stages its final reply and stores it with the
// lease's release, in one commit (ReleaseSession). Staged events are stored
// in the order they were staged, each in its own commit, before any later
// append through the handle. A staged event whose commit fails leaves the
// handle ahead of the store: every later append through it fails, and the
// caller drops it (a reader is never shown a staged event before it is
// stored). Session.AsStored says whether a handle is the session as stored,
// for a later warm turn.
//
// An append is three steps (events.go): planAppend builds the batch and
// what the handle becomes from the handle alone, commitAppend makes the
// commit and classifies its failure, applyAppend updates the handle. Only
// the last changes the handle, so a failed commit leaves it as read.
//
// A commit can fail and still be made: the Firestore client retries an
// unavailable commit, and the retry finds its own first attempt (a
// conflict); the emulator answers Canceled or Unknown to a commit it made
// while a listener of the document was closing. So a failure that may hide
// a made commit (mayHaveLanded) costs one read of the session document: if
// it holds the plan's revision with the plan's event last, and the lease
// as the commit left it (a takeover since fences the handle out, as ever),
// the append was made (storedAnyway). A lease's renewal and AcquireLease check
// their lease the same way.
//
// # Stop requests
//
// An acquisition may take over a live lease when its holder is one the
// caller accepts (LeaseRequest.TakeOver: a live segment of the same
// device, for toolcallback): the fence refuses the former holder's later
// writes, so sessionstore needs to know nothing of who may replace whom.
//
// A stop request (RequestStop) asks whoever holds a session's lease to stop.
// It is a document of its own, named after the fence of the lease it
// stops, because a write to the session document would fence its holder
// out; the holder listens to it with AwaitStop.
//
// # Errors
//
// FirestoreError is the one place where gRPC codes of the Firestore client
// become this package's sentinels (ErrNotFound, ErrAlreadyExists,
// ErrConflict, ErrUnavailable, ErrTooLarge); the packages that keep
// documents beside sessions use it too and branch with errors.Is.
//
// # Values
//
// Events and state values are stored as JSON, like ADK's database service:
// every event field round-trips (nil and empty maps and slices stay
// distinct), but numbers inside free-form maps (state, function arguments,
// custom metadata) come back as float64, and structs as maps.
//
// # Rewind
//
// A rewind takes a conversation back to before one of its invocations.
// Nothing is deleted: a rewind mark (RewindSession), an event of its own,
// is appended, and from then on every read of the session (Get, Read,
// ReadChat, Watch's first change, and so the runner, a page's history,
// replays and MigrateHistory) leaves out the events the mark rewinds: from
// the first event of the named invocation up to the mark. They stay stored,
// for audit, and Session.Rewound returns them. The mark itself stays in
// the events a read returns; it has no content, so neither a model nor a
// page shows it. Marks compose: an earlier mark inside a rewound part
// counts no more.
//
// The mark's state delta puts session-scoped state back as it was before
// the rewound events: a key they changed gets the value the latest kept
// event gave it, and a key no kept event set is removed (a key set only
// when the session was created counts as never set). app: and user: state
// is shared with the user's other sessions and is not rolled back; temp:
// state never outlives an invocation.
//
// # Chat sessions
//
// A chat is what a client holds: its document points at the one ADK session
// active for it and that session's agent. An agent switch (coordinated by
// toolcallback.Team) builds a new ADK session holding the conversation as
// MigrateHistory rewrites it, then moves the pointer with a compare-and-set
// on the chat document, so the chat always points at a complete session.
// Each event MigrateHistory builds carries, in its custom metadata, the
// switch that first moved it ("baton_switch") and the structured form of
// the tool-call records its text holds ("baton_records"); MovedBy reads
// them back, so a page can show a moved conversation as it was shown live.
// The chat notes the session being built and the sessions it retired, and
// sets cleanupAt, so that a switch that dies half-way leaves leftovers a
// sweep can find and delete (PurgeSession deletes a session's whole tree:
// Firestore deletes no subcollection by itself).
//
// # Indexes
//
// List across all users of an app is a collection-group query on
// "sessions" with an equality filter on "scope" ("{root}/{app}"). It needs
// the single-field index on sessions.scope enabled for collection-group
// scope. Cleanup queries the "chats" collection group with scope == X and a
// range on cleanupAt or on lastActivity, which need the composite indexes in
// Indexes. SessionTokens sums tokensUsed over a user's sessions with
// tokensDay ==, which needs the composite index (tokensDay, tokensUsed) on
// the sessions collection: a sum is computed from index entries.
// SessionsLive counts a user's sessions with liveUntil > now, on
// liveUntil's automatic single-field index. The operator's console lists
// an app's sessions by their lease's term (lease.expires) and by
// liveUntil (browse.go: the composite indexes with scope), a user's on
// the automatic indexes, and chats by cleanupAt (the cleanup index) and
// a user's by lastActivity. Its pages continue after a Cursor. All are
// declared in infra/terraform.
//
// # Live segments
//
// A live segment (toolcallback.LiveSegment) holds a session's lease like
// any invocation, marked live (LeaseClaim.Live, LeaseRequest.Live): the
// commit that takes the lease and each renewal also write the session
// document's liveUntil, the lease's expiry, and the release removes it
// (live.go). A user's live segments are counted from it (SessionsLive).
package sessionstore

// FieldIndex is a single-field index setting a query needs beyond
// Firestore's automatic ones.
type FieldIndex struct {
	CollectionGroup string
	Field           string
	QueryScope      string // "COLLECTION_GROUP" or "COLLECTION"
}

// FieldIndexes lists the single-field index settings this package's queries
// need: List across users is a collection-group query on sessions with
// scope ==. The deployment declares each one; a test holds it to this list.
var FieldIndexes = []FieldIndex{
	{CollectionGroup: "sessions", Field: "scope", QueryScope: "COLLECTION_GROUP"},
}

// QueriedFields are the fields this package's queries filter or order on,
// by collection group: their automatic indexes must not be exempted.
var QueriedFields = map[string][]string{
	"sessions":         {"scope", "tokensDay", "tokensUsed", liveUntilField, leaseExpiresField},
	"chats":            {"scope", "cleanupAt", "lastActivity"},
	accountsCollection: {fieldDeleting},
}

// Index is a composite index a query of this package needs.
type Index struct {
	CollectionGroup string
	QueryScope      string // "COLLECTION_GROUP" or "COLLECTION"
	Fields          []string
}

// Indexes lists the composite indexes this package's queries need.
var Indexes = []Index{
	{CollectionGroup: "chats", QueryScope: "COLLECTION_GROUP", Fields: []string{"scope", "cleanupAt"}},
	{CollectionGroup: "chats", QueryScope: "COLLECTION_GROUP", Fields: []string{"scope", "lastActivity"}},
	{CollectionGroup: "sessions", QueryScope: "COLLECTION", Fields: []string{"tokensDay", "tokensUsed"}},
	// The console (browse.go): an app's sessions by their lease's term,
	// and by liveUntil.
	{CollectionGroup: "sessions", QueryScope: "COLLECTION_GROUP", Fields: []string{"scope", leaseExpiresField}},
	{CollectionGroup: "sessions", QueryScope: "COLLECTION_GROUP", Fields: []string{"scope", liveUntilField}},
}
