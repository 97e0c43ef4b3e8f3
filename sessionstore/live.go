package sessionstore

import (
	"context"
	"time"
)

// liveUntilField is the session document's mark of a live segment: while
// one holds the session's lease, the lease's expiry. It is written with the
// lease (a live claim, AcquireLease with Live, each renewal) and removed
// when the lease is released; a holder that dies leaves a time that passes
// within one lease term. Counting a user's sessions whose mark lies ahead
// (SessionsLive) counts the user's live segments without a write of its
// own: the renewals write the session document anyway.
const liveUntilField = "liveUntil"

// Live marks the claim's lease as held by a live segment: the claiming
// commit and every renewal write the session's liveUntil (SessionsLive).
// It returns c.
func (c *LeaseClaim) Live() *LeaseClaim {
	c.lease.live = true
	return c
}

// LiveUntil is the session's liveUntil as read: while a live segment held
// its lease, when that lease ran out unless renewed; zero otherwise.
func (ss *Session) LiveUntil() time.Time {
	ss.mu.RLock()
	defer ss.mu.RUnlock()
	return ss.liveUntil
}

// SessionsLive counts user's sessions that a live segment holds at now (a
// liveUntil after now): one aggregation query on the automatic index of
// liveUntil, billed as one read per 1,000 sessions counted.
func (s *Service) SessionsLive(ctx context.Context, app, user string, now time.Time) (int64, error) {
	q := s.userRef(app, user).Collection("sessions").Where(liveUntilField, ">", now)
	return Aggregate(ctx, q.NewAggregationQuery().WithCount("n"), "count live sessions")
}
