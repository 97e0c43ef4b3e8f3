// Package ledger keeps the records of paused calls: one per call an agent
// paused on (a browser's tool, an approval, a question to a person, an
// external system's call, a surface waiting for an action), and one per
// question asked while a tool still runs (an in-call question). It owns
// the record, its stored form and field names, every query on the
// records, every conditional update, and the writes a record adds to a
// session's commit; toolcallback decides when each happens.
//
// # Where
//
// Each record is a document
//
//	{session document}/calls/{call id}
//
// under sessionstore's session document (sessionstore.Service.SessionDoc),
// so that deleting a session's tree deletes its records.
//
// # States
//
// A record is created pending, in the same Firestore commit as the event
// that holds its call (Record, a write for sessionstore.AppendOptions):
// no call is ever stored without its record, nor a record without its call.
// From pending it moves once, first writer wins, to
//
//   - resolved: an answer was recorded (Answer, or AnswerWrite in a commit
//     that also takes the session's lease);
//   - expired: its time ran out (Expire: the sweeper, an in-call question's
//     asker; Cancel past the expiry);
//   - cancelled: nobody will answer it any more (Cancel: a new message, a
//     stop, an agent switch; Closed: a rewind that takes it back).
//
// Independently, resumed says the agent has the call's outcome (an answer,
// or an error response for an expired or cancelled call): MarkResumed, or
// Delivered in the commit that stores the responses. A record not resumed
// is open: Unresumed finds it, and the sweeper looks at it from sweepAt on
// (its expiry while pending, AnswerGrace after an answer), until it is
// resumed and sweepAt removed. An in-call question is written resumed,
// with no sweepAt: its asking tool takes the answer itself (Await), and
// Open and Questions find it while it is pending.
//
// # Background calls
//
// A background call's record (KindBackground) also holds its work
// (Work): it is written "to be enqueued", with its sweep time at
// EnqueueGrace after its creation rather than at its expiry, so that the
// sweeper creates the task a crash between the commit and the enqueue
// left undone; Enqueued marks the task created and moves the sweep time
// to the expiry. A delivery's attempt claims the work (Claim: counted,
// held until a time its holder renews with each progress report,
// Report), and an attempt that failed with an error worth another one
// lets it go (Release). The result is an answer like any (Answer). Each
// of these is conditional on the version read, so a duplicate or late
// delivery changes nothing: two attempts never hold the work at once, and
// a report after a stop or an expiry fails. Running counts a user's
// pending background calls over every session (the per-user bound);
// Working follows a session's pending ones (their progress) for readers.
//
// # Remote calls
//
// A remote agent's call's record (KindRemote) holds a Work, used for its
// sends only (to be enqueued, enqueued: the same repair as a background
// call's), and a Remote: the remote task's id, its last state applied and
// the remote's time of it, the messages sent, the question it asked
// last and the last one answered, the push token's id, and whether its
// cancel was sent. RemoteSent records the first message sent;
// RemoteState applies a newer state of the task (its progress, its
// question, an answer sent); Polled moves the sweeper's next read;
// CancelSent marks the cancel. The write that closes a call whose task
// runs (CancelDue) marks its work to be enqueued again, for the cancel,
// and keeps the record before the sweeper, even once resumed, until
// CancelSent (or Swept, once the queue has the cancel): a closer that
// dies before queueing the cancel leaves it to the sweeper, as a lost
// send is. While the call is pending and its task known, its sweep time
// is its next poll (Remote.PollEvery), so the sweeper's one query finds
// the calls to read. PushToken signs the token
// a remote echoes with its notifications, with a key derived from
// TokenKey (a push token is never a call token, nor the reverse), and
// ByPushToken checks it against the call and its TokenID. The question a
// remote task asks is an in-call KindInput record whose OriginalID is the
// remote call's id; its chat is the call's, so that the chat's listing
// counts it as waiting for the person. A remote call's answer may carry
// files (Answer.Files: references into the chat's file store) and A2UI
// messages (Answer.Surfaces), set by Baton only. Working follows remote
// calls with background ones (kind in [background, remote]: Firestore
// serves equalities, "in" included, from its automatic indexes).
//
// # First writer wins
//
// Every update of a record's status is conditional on the record's update
// time as read (the Call carries it), a precondition rather than a
// transaction: the emulator locks transactions pessimistically, and a
// precondition costs nothing more than the write. The loser gets
// ErrChanged and writes nothing; it reads the record again to learn the
// winner's outcome. Two answers, an answer and the sweeper, a stop and an
// answer: exactly one of each pair changes the record.
//
// # New kinds
//
// A new kind of paused call is a Kind, a tool declaration in toolcallback,
// and, when its calls carry state of their own (a queue's attempt, a
// remote task's id, a progress report), a typed field of Call and of the
// stored record converted in recordOf and record.call, with the writes
// that change it here, conditional on the version read as Answer's are,
// so that deliveries that come at least once and out of order change a
// record once.
//
// # Indexes and TTL
//
// Queries within one session's records (by status, resumed, and the
// in-call mark with status, equalities only) use Firestore's automatic
// single-field indexes. The sweeper's query (Due) is on the "calls"
// collection group with scope == X and sweepAt <= now, ordered by sweepAt:
// the composite index (scope ASC, sweepAt ASC) at collection-group scope,
// listed in Indexes. Running counts on the "calls" collection group with
// work.owner == X and status == Y: the composite index (work.owner ASC,
// status ASC) at collection-group scope, listed too; Working's filter
// (kind and status, within a session) uses the automatic indexes.
// gcAt, Retention after the call's expiry, is the TTL
// field (TTLs); TTL only collects garbage, expiry is decided in code.
// QueriedFields lists the fields whose automatic indexes must stay.
//
// The operator's console pages through records across an app's sessions
// (browse.go): pending records by kind (Waiting, on the indexes (scope,
// status, kind, created) and, for one user, (scope, user, status, kind,
// created)), and records the sweeper should have looked at (Overdue, on
// the sweeper's own index, and (scope, user, sweepAt) for one user). An
// operator's expiry stores its reason (ExpireBecause), which the model
// reads in the call's error response.
//
// The in-call mark is stored as "live", the name earlier versions gave
// it, so that records in flight during a deployment are found by both.
package ledger
