// Package a2aserver serves a toolcallback.Team over the Agent2Agent
// protocol (JSON-RPC binding, versions 1.0 and 0.3 on one URL), statelessly:
// any instance answers any request about any task.
//
// # Why its own executor
//
// ADK's server/adka2a executor runs an ADK runner on a session service of
// its own and hands a follow-up's function responses straight to that
// runner. It knows nothing of Baton's chats, session leases, ledger or
// crash repair, so an answer could resume the agent twice or bypass a
// paused call's record. The executor here (executor.go) drives the Team
// instead: a context id is a chat id, a task is one turn of that chat (its
// calls belong to the Baton client "a2a~{task id}"), a pause is the task's
// input-required state listing the ledger's pending calls, and answers go
// through Team.Resume, exactly once. ADK's conversions (adka2a.ToA2AParts,
// ToGenAIParts, BuildAgentSkills) are reused so ADK callers read the calls
// as they read adka2a's.
//
// # Repeated messages
//
// A message whose id the server took already runs nothing (dedupe.go):
// a caller that lost an answer and sends again, or a remote-agent worker
// that resends after a crash (toolcallback's sends carry fixed ids), gets
// the task the first message started or continued, as it stands
// (message/send; a blocking one reads the task every settleEvery until it
// is final again), or its events from now on to its next final state
// (message/stream). An id counts for the task a message names, or, for a
// message that starts a task, for its context: such a message's context
// (when it names none) and task ids are derived from the user and the
// message id (UUID version 5), so the same message names the same task on
// every instance. The writes that accept a message decide between two
// sent at once: for a message on a task, a2a-go's conditional update that
// adds it to the task's history (the loser finds it there); for a message
// that starts a task, the turn's commit, which records the message id
// with the user's message (toolcallback's TurnRequest.MessageID; the
// loser's turn is refused with ErrMessageTaken and it waits, up to
// taskAwait, for the winner to store the task). a2a-go runs an execution
// on a message its task holds already without adding it again; the
// executor tells it from a message it added (TaskStore.takeAccepted) and
// ends such an execution with a status the store refuses unwritten.
//
// It costs no Firestore operation on the common path: a new task's first
// read is a document read at its derived path, in place of a2a-go's
// lookup of a random id (a query), and a message on a task is checked in
// memory (a first message and an answer made the same round trips, reads
// and writes with and without it, counted by firestoretest.Counter). A
// repeated message costs a few reads of its task and no write; a message that
// starts a task, sent twice at once, may make the losing instance call the
// model beside its commit (Team's speculative turn), which is cancelled
// when the commit fails and stores nothing. Not recognised: a message that
// starts a task in a context the caller names, sent again after another
// message of that context and after a crash that kept its task from
// being stored (the chat remembers only its latest message id).
//
// # Background calls
//
// A task paused on background calls only (toolcallback.Background) is not
// input-required: no caller answers such a call. Its execution follows
// the work instead (work.go): a listener on the session's background calls
// sends each stored progress report as a working status, and a watch of
// the chat sends the resumed agent's text once the work's answer is in the
// chat, then the task settles as after any turn. The execution holds its
// request while the work runs; if it ends first, the task stays working
// and goes stale, and the next message on it takes it over (awaitOwner).
//
// # A2UI
//
// The card advertises the A2UI extension (a2ui.go, docs/a2ui.md). A
// client that activates it, or sends a2uiClientCapabilities, gets each
// surface a turn shows as DataParts in a task artifact of its own
// (replaced when the surface is drawn again, so tasks/get shows it as it
// last was); any other client gets the surface's text. An action DataPart
// answers the task's call waiting on its surface through Team.Resume, or,
// on a card, becomes the text of a user message.
//
// # Errors
//
// What an error means is errclass's; errors.go is A2A's table of what each
// class is answered with: a JSON-RPC error whose data carries Baton's code
// (and when to retry), as the HTTP routes' bodies do. Once a task has taken
// a message, a refusal is the task's state instead (input-required with a
// validation_error part, or failed). An answer the task's calls cannot
// take (toolcallback.CheckAnswer: a press the form did not offer) is
// refused before a2a-go stores the message in its task (TaskStore.Update
// asks executor.checkAnswers), at the price of a read of the task's
// pending calls, so that bad input writes nothing here either.
//
// # Why cluster mode
//
// a2a-go keeps tasks and event fan-out in memory unless given a task store,
// an event queue manager and a work queue ("cluster mode"). TaskStore keeps
// tasks in Firestore with optimistic concurrency on the document's update
// time; eventQueues stores each processed event and lets any instance
// follow a task with a Firestore snapshot listener; localQueue runs the
// work on the instance that took the request, since on serverless the
// request's instance is the only worker there is.
//
// # Where a2a-go v2.4.0 needed help
//
// a2a-go appends a follow-up message to its task (a new version) before
// the execution starts, so a late duplicate answer would make the running
// execution's next write fail: TaskStore refuses such a message while a
// live execution holds the task (ErrTaskBusy). Its cluster-mode cancel of
// an input-required task answers "not cancelable" while the cancellation
// goes on (cancel.go waits for it), and it saves a new task's push config
// before the task exists (held, then written with the task). In cluster
// mode a caller waiting on a message reads only stored events, and an
// execution that a2a-go ends by marking its task failed (an event that
// could not be stored, an executor error) stores none: the work queue
// hands that result to the caller itself and stores the task's final
// state as an event (eventQueues.finish), else the caller would wait
// until its deadline.
//
// # Storage
//
//	{chat}/a2aTasks/{task id}                   task      (taskDoc; TTL gcAt)
//	{chat}/a2aTasks/{task id}/a2aEvents/{v:020d} event    (eventDoc; TTL gcAt, a day)
//	{chat}/a2aTasks/{task id}/a2aPush/{id}      push config (pushDoc; TTL gcAt)
//
// where {chat} is sessionstore's chat document, so deleting a chat
// (sessionstore.DeleteChat, Team's idle cleanup) deletes its tasks. A task
// is found by id with a collection-group query on a2aTasks.key
// ("{root}/{app}/{user}/{task id}"), so another user's task is not found;
// events are followed with a collection-group query on a2aEvents (key ==,
// version >, ordered by version). Indexes and TTLs lists both.
package a2aserver

import "github.com/baton-run/baton/sessionstore"

// Indexes lists the composite indexes this package's queries need: a
// subscriber follows a task's events by key ==, version >, ordered by
// version.
var Indexes = []sessionstore.Index{
	{CollectionGroup: eventsCollection, QueryScope: "COLLECTION_GROUP", Fields: []string{"key", "version"}},
}

// FieldIndexes: finding a task by id is a collection-group equality query.
var FieldIndexes = []sessionstore.FieldIndex{{CollectionGroup: tasksCollection, Field: "key", QueryScope: "COLLECTION_GROUP"}}

// QueriedFields are the fields this package's queries filter or order on,
// by collection group: their automatic indexes must not be exempted.
var QueriedFields = map[string][]string{
	tasksCollection:  {"key", "updated"},
	eventsCollection: {"key", "version"},
}

// TTLField is the time-to-live field of every document this package stores.
const TTLField = "gcAt"

// TTLs lists the time-to-live fields of this package's documents.
var TTLs = []sessionstore.TTL{
	{CollectionGroup: tasksCollection, Field: TTLField},
	{CollectionGroup: eventsCollection, Field: TTLField},
	{CollectionGroup: pushCollection, Field: TTLField},
}

// DataKinds are the kinds of a person's data this package keeps (see
// sessionstore.DataKind).
var DataKinds = []sessionstore.DataKind{
	{Name: "A2A task", Owner: "a2aserver", Collection: tasksCollection, Path: "{chat}/a2aTasks/{task}", Scope: sessionstore.ScopeChat,
		Why: "an A2A client's view of a turn: the same conversation is in the chat's messages", Kept: "as long as its chat; Firestore collects it after its gcAt"},
	{Name: "A2A task event", Owner: "a2aserver", Collection: eventsCollection, Path: "{chat}/a2aTasks/{task}/a2aEvents/{version}", Scope: sessionstore.ScopeChat,
		Why: "a task's changes, kept a day for its subscribers", Kept: "a day"},
	{Name: "A2A push config", Owner: "a2aserver", Collection: pushCollection, Path: "{chat}/a2aTasks/{task}/a2aPush/{id}", Scope: sessionstore.ScopeChat,
		Why: "where an A2A client asked to be told of a task's changes: the client's settings", Kept: "as long as its task"},
}
