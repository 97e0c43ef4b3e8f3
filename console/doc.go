// Package console is the operator's side of a deployment: the views of
// its chats (by state, including stuck ones), of one chat's timeline and
// of one user, the actions an operator takes on them, and the record of
// every action. functions serves it as the Admin function (the page at
// /admin and its API, /admin/api/); who is an operator is decided there,
// where identity is checked (docs/operator.md).
//
// # Views: what Baton already stores
//
// The console stores nothing to make a chat visible: each view reads what
// the turns store anyway, through the package that owns it.
//
//   - Running and live chats are sessions whose lease term, or liveUntil,
//     is ahead (sessionstore.SessionsByLease); waiting chats and chats
//     with background work are pending ledger records of the kinds that
//     wait for a person or a system, or of the kinds of work
//     (ledger.Waiting).
//   - Stuck is three lists, each defined by what should have happened:
//     "lease", a session lease past its term by Options.StuckAfter and
//     never released (its holder died and nothing took the chat since);
//     "call", a ledger record the sweeper should have looked at
//     StuckAfter ago (pending past its expiry, or answered and never
//     delivered: ledger.Overdue, the sweeper's own index); "cleanup", a
//     chat whose cleanup (a switch or a deletion that died halfway,
//     sessions it retired) was due StuckAfter ago and not done
//     (sessionstore.Chats with CleanupBefore, the sweeper's index).
//
// Each list is one query per page, on an index declared in Terraform
// (held to the code by infra's tests), continued by a cursor; filters by
// user and age narrow the query itself. The agent filter narrows the
// lists found from ledger records (waiting, background, stuck calls),
// whose records name their agent; the others are found from session and
// chat documents and refuse it (4xx) rather than filter a page after the
// query (a session does not name its agent; a chat's may be mid-switch).
//
// A chat's timeline (timeline.go) merges its session's events (rewound
// ones included, marked), the ledger records of its calls with their
// transitions, stop requests, rewind marks, agent switches (the moved
// events' marks and the chat's record), live segments' openings, the
// session's current lease, and the operator actions on the chat. A
// lease's history is not stored: every acquisition overwrites the lease
// in the session document, and recording each would cost a turn one more
// write; the timeline shows each invocation's first and last event
// instead (an invocation is one holding of the lease), with the lease's
// fence, which counts the acquisitions.
//
// # Actions: a client's paths
//
// An action goes through the code a client's request takes: a stop is
// Team.Stop, an answer is Team.Resume as an operator (first writer wins,
// the same resume), an expiry is Team.ExpireCall (the ledger's first
// writer wins, the reason delivered as the call's error response), a
// release is Team.ReleaseLease (a takeover and a release: the lease's
// fence makes a holder alive after all lose its writes), a sweep is
// Team.Sweep. Deleting a user's data is the account deletion a user's
// own DELETE /Account runs (Team.DeleteAccount, given as
// Options.Account); blocking is the door's (Options.Blocker: a custom claim).
//
// # The record of actions
//
// Every action is recorded before it runs and again when it ended, in
//
//	{root}/{app}/operatorActions/{id}
//
// (who, when, what, on which user, chat and call, the reason, the
// outcome), and logged. This package is the one owner of those
// documents. The list of all actions is ordered by time on the automatic
// index of "at"; a user's and a chat's are equality queries on "user"
// and "chat", which Firestore serves by merging the automatic indexes,
// bounded to 200 and ordered here.
package console
