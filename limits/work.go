package limits

import (
	"context"
	"time"

	"github.com/baton-run/baton/sessionstore"
)

// Work off a turn (a background tool's own model calls) is held to the
// same daily budget as the user's turns, without a session of its own:
// Spent reads the day's count as a turn's budget check does, and AddTokens
// counts what the work used in the user's day document, which every
// later check includes.

// Spent returns the tokens user counted on the UTC day of now (the sum
// over the user's sessions and the day document: one aggregation query
// and one lookup), and the budget's error when they reach budget (0: no
// budget, nothing read).
func (c *Counter) Spent(ctx context.Context, user string, budget int64, now time.Time) (int64, error) {
	if budget <= 0 {
		return 0, nil
	}
	sum := readInBackground(true, func() (int64, error) { return c.sessions.SessionTokens(ctx, c.app, user, now) })
	docs, err := c.sessions.ReadDocs(ctx, c.sessions.DayTokensDoc(c.app, user, now))
	if err != nil {
		return 0, err
	}
	day, err := sessionstore.DayTokens(docs[0])
	if err != nil {
		return 0, err
	}
	sessions, err := sum.wait()
	if err != nil {
		return 0, err
	}
	return sessions + day, budgetError(sessions+day, budget, now)
}

// AddTokens counts n tokens user's work used at now, outside any turn, in
// the user's day document (one write).
func (c *Counter) AddTokens(ctx context.Context, user string, n int64, now time.Time) error {
	return c.sessions.AddDayTokens(ctx, c.app, user, n, now)
}

// Budget is the daily token budget m holds its turn to; 0: none.
func (m *Meter) Budget() int64 {
	if m == nil {
		return 0
	}
	return m.limits.UserTokensPerDay
}
