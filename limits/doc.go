// Package limits holds the turn limits of a deployment: how many turns a
// user and a chat may start per minute, and how many model tokens a user
// may use per UTC day, across every instance.
//
// It adds no round trip on the way to the model. What a turn's limits
// count is read in the round trip that reads its chat and session (Docs),
// or taken from this instance's copy (Counter keeps each user's turns
// document as last read or written), and the turn is counted in the
// commit that stores its message: a Meter is what one turn read and what
// that commit writes.
//
// # Where the counts live
//
// A chat's recent turn times live in its session document
// (sessionstore.AppendOptions.TurnLog), which the message's commit writes
// anyway. A user's live in the user's turns document,
//
//	{root}/{app}/users/{user}/limits/turns
//
// which that commit also writes, conditional on it being as read: of two
// turns of one user racing in two chats, one is stored and the other is
// busy (nothing written), so the rate holds exactly. A turn that took its
// session's lease first (one that settles open calls) adds its time to
// whatever the document holds by then instead, since its commit must not
// fail.
//
// Tokens are counted from the usage metadata of each model response, in
// the commit that stores the response's event: the session document counts
// its tokens of the day (sessionstore.AppendOptions.Tokens), so counting
// costs no write of its own. A user's day is the sum over the user's
// sessions, one aggregation query (Counter.Sum), plus the user's day
// document
//
//	{root}/{app}/users/{user}/limits/tokens-{day}
//
// (UTC), where a deleted session's count goes, and the tokens a background
// tool's own model calls use (Counter.AddTokens: an increment, one write a
// request; Counter.Spent reads the day for such a tool's check, in
// limits/work.go). The count is read when the
// turn begins, beside its model request (Counter.Begin: the model does not
// wait for it), and the commit that stores the turn's message waits for it
// (Meter.CheckBudget): a commit cannot be conditioned on a sum, and a
// refused turn must store nothing. A turn is refused once the day's count,
// as read at its start, has reached the budget, so a turn may overrun the
// budget by what it uses, and turns racing at the edge by what all of them
// use. An instance that refused a user for the budget remembers it until
// the UTC day ends (a day's count only grows). Counting a chat's tokens
// per chat rather than per user is what saves the write: a user's total is
// only ever read on the turn path (and by a background tool that checks
// its budget).
//
// # Live segments
//
// A live segment (a voice conversation holding a chat, toolcallback's
// LiveSegment) opens as a turn: it is held to the turn rates and to the
// budget when it opens. Its model turns have no turns of their own: its
// holder counts their tokens as they come (Meter.TokensLeft is what the
// budget had left) and ends the segment once they reach it. How many live
// segments a user may hold at once (Limits.LiveSegmentsPerUser) is counted
// when one opens (Reading.CountLive), from the marks the segments' lease
// renewals write on their session documents anyway
// (sessionstore.SessionsLive): one aggregation query beside the chat's
// read, and no write of its own. Segments opened at the same moment may
// both pass.
//
// Answers to paused calls (resumes) are never refused: a turn that paused
// must be able to finish. Their tokens are counted like any.
//
// # The deployment's caps
//
// Limits.ServiceTokensPerDay caps every user's tokens together per UTC
// day, and NewAnonymousPerDay the anonymous users admitted per day; past
// either a new turn is refused (ErrServiceBudget, ErrNewAnonymous), never
// an answer. Both count in sharded documents under the app
// ({root}/{app}/limits/{counter}-{day}-{shard}, Shards of them), one shard
// chosen at random per write, so that no document is hot: a model
// response's commit adds its tokens to one (Counter.TokensWrite, with
// toolcallback's CountServiceTokens), and the message's commit that
// admits a user creates their mark ({user}/limits/admitted) and adds one
// to the day's admissions. A count is one aggregation query over the
// day's shards (index counter, day, n: Indexes), billed as one read per
// 1,000 shards, read beside the model as the user's budget is
// (service.go). Refusals are counted in the metric baton.limits.refused
// (metrics.go).
//
// The counts carry a TTL field, gcAt (sessionstore's TTLs list the
// collection group); an admission mark has none: it lasts as long as the
// user's data.
package limits
