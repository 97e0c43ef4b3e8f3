package limits

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"cloud.google.com/go/firestore"

	"github.com/baton-run/baton/sessionstore"
)

// The deployment's caps (Limits.ServiceTokensPerDay and
// NewAnonymousPerDay) count across all users, in sharded counters: each
// count of a UTC day is the sum of up to Shards documents
//
//	{root}/{app}/limits/{counter}-{day}-{shard}
//
// and a write adds to one shard chosen at random, in a commit the turn
// makes anyway (a model response's, for tokens; the message's, for a new
// anonymous user). Firestore sustains about one write a second on one
// document; Shards of them take as many. A count is read as one
// aggregation query (sum of n over the day's shards, on the index
// (counter, day, n)), which Firestore bills as one read per 1,000 index
// entries: reading it costs a turn one read whatever the shard count up
// to 1,000, and no round trip of its own (it runs beside the model, as
// the user's budget does).

// Shards is how many documents a day's count is spread over: 1,000 writes
// a second, a thousand turns a second with a model response each.
const Shards = 1000

var (
	// ErrServiceBudget: the deployment has used its tokens of the day.
	ErrServiceBudget = errors.New("the service's daily token cap is reached")
	// ErrNewAnonymous: the deployment has admitted as many new anonymous
	// users today as it may.
	ErrNewAnonymous = errors.New("the service's daily cap on new anonymous users is reached")
)

// Counter names of the deployment's day counts.
const (
	counterTokens    = "tokens"
	counterAnonymous = "anonymous"
)

// shardName names a random shard of counter's count on the UTC day of at.
func (c *Counter) shardName(counter string, at time.Time) sessionstore.DocName {
	return c.sessions.AppDoc(c.app).Child(sessionstore.LimitsCollection, fmt.Sprintf("%s-%s-%03d", counter, utcDay(at), rand.IntN(Shards)))
}

// add is the write adding n to counter's count of the UTC day of at.
func (c *Counter) add(counter string, n int64, at time.Time) sessionstore.Write {
	expires := at.UTC().Truncate(24 * time.Hour).Add(48 * time.Hour)
	return sessionstore.Merge(c.shardName(counter, at), map[string]any{
		"counter": counter, "day": utcDay(at), "n": firestore.Increment(n), "gcAt": expires,
	})
}

// TokensWrite is the write that counts n model tokens used at at toward
// the deployment's day, for the commit that stores the response that
// reported them (sessionstore.AppendOptions.Writes); none for n <= 0.
func (c *Counter) TokensWrite(n int64, at time.Time) []sessionstore.Write {
	if n <= 0 {
		return nil
	}
	return []sessionstore.Write{c.add(counterTokens, n, at)}
}

// dayCount sums counter's shards of the UTC day of at: one aggregation
// query.
func (c *Counter) dayCount(ctx context.Context, counter string, at time.Time) (int64, error) {
	q := c.sessions.Client().Doc(c.sessions.AppDoc(c.app).Path()).Collection(sessionstore.LimitsCollection).
		Where("counter", "==", counter).Where("day", "==", utcDay(at))
	return sessionstore.Aggregate(ctx, q.NewAggregationQuery().WithSum("n", "n"), "sum "+counter)
}

// ServiceDay is what the deployment has used of its caps on a UTC day.
type ServiceDay struct {
	Tokens       int64 // model tokens counted
	NewAnonymous int64 // anonymous users admitted
}

// ServiceUsage reads the deployment's counts of the UTC day of at (two
// aggregation queries), for the console.
func (c *Counter) ServiceUsage(ctx context.Context, at time.Time) (ServiceDay, error) {
	var d ServiceDay
	var err error
	if d.Tokens, err = c.dayCount(ctx, counterTokens, at); err != nil {
		return d, err
	}
	d.NewAnonymous, err = c.dayCount(ctx, counterAnonymous, at)
	return d, err
}

// admittedDoc names the mark of an anonymous user admitted under the cap
// on new anonymous users ({user}/limits/admitted).
func (c *Counter) admittedDoc(user string) sessionstore.DocName {
	return c.sessions.LimitsDoc(c.app, user, "admitted")
}

// admittedMark is an admitted anonymous user's mark.
type admittedMark struct {
	Day string `firestore:"day"`
}

// nextDay is how long from now until the next UTC day.
func nextDay(now time.Time) time.Duration {
	return now.UTC().Truncate(24 * time.Hour).Add(24 * time.Hour).Sub(now)
}

// serviceError refuses a turn once the deployment's count (n, of cap)
// is reached, with err (0 cap: none).
func serviceError(err error, n, limit int64, now time.Time) error {
	if limit <= 0 || n < limit {
		return nil
	}
	return refuse(err, "service", limit, nextDay(now))
}

// serviceSpentOn reports whether this instance found the deployment's
// token cap (of limit tokens, or less) reached on the UTC day of now.
func (c *Counter) serviceSpentOn(now time.Time, limit int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.serviceSpent.day == utcDay(now) && limit <= c.serviceSpent.budget
}

// isAdmitted reports whether this instance knows user admitted.
func (c *Counter) isAdmitted(user string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.admitted[user]
}

// admit notes user admitted.
func (c *Counter) admit(user string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.admitted == nil || len(c.admitted) >= maxUsers {
		c.admitted = map[string]bool{}
	}
	c.admitted[user] = true
}

// checkService refuses the turn when the deployment's token cap is
// reached, or its cap on new anonymous users when the turn would admit
// its user, as read when the turn began; it waits for those reads.
func (m *Meter) checkService() error {
	if m.service != nil {
		n, err := m.service.wait()
		if err != nil {
			return err
		}
		limit := m.limits.ServiceTokensPerDay
		if err := serviceError(ErrServiceBudget, n, limit, m.now); err != nil {
			m.counter.mu.Lock()
			m.counter.serviceSpent = spentBudget{day: utcDay(m.now), budget: limit}
			m.counter.mu.Unlock()
			return err
		}
	}
	if m.admit != nil {
		n, err := m.admit.wait()
		if err != nil {
			return err
		}
		return serviceError(ErrNewAnonymous, n, m.limits.NewAnonymousPerDay, m.now)
	}
	return nil
}

// admission are the writes that admit the turn's user under the cap on
// new anonymous users: its mark, and one more in the day's count. The
// mark is created (a second first turn racing it fails its commit,
// writing nothing, and is planned again on a read that finds the mark),
// or merged by a turn under its lease, whose commit must not fail.
func (m *Meter) admission(underLease bool) []sessionstore.Write {
	if m.admit == nil {
		return nil
	}
	mark := m.counter.admittedDoc(m.user)
	w := sessionstore.Create(mark, admittedMark{Day: utcDay(m.now)})
	if underLease {
		w = sessionstore.Merge(mark, map[string]any{"day": utcDay(m.now)})
	}
	return []sessionstore.Write{w, m.counter.add(counterAnonymous, 1, m.now)}
}

// UserDay is what a user used on a UTC day, as their limits count it.
type UserDay struct {
	Tokens          int64 // model tokens of the day (their sessions' and their deleted sessions')
	TurnsLastMinute int   // turns started in the minute before
	Admitted        bool  // admitted under the cap on new anonymous users
}

// UserUsage reads what user used at now (the console's user page): the
// day's sum over their sessions (one aggregation), and their turns and
// tokens-of-deleted-sessions and admission documents (one round trip).
func (c *Counter) UserUsage(ctx context.Context, user string, now time.Time) (UserDay, error) {
	var d UserDay
	sum, err := c.sessions.SessionTokens(ctx, c.app, user, now)
	if err != nil {
		return d, err
	}
	docs, err := c.sessions.ReadDocs(ctx, c.turnsDoc(user), c.sessions.DayTokensDoc(c.app, user, now), c.admittedDoc(user))
	if err != nil {
		return d, err
	}
	turns, err := turnsFrom(c.turnsDoc(user), docs[0])
	if err != nil {
		return d, err
	}
	deleted, err := sessionstore.DayTokens(docs[1])
	if err != nil {
		return d, err
	}
	d.Tokens, d.TurnsLastMinute, d.Admitted = sum+deleted, len(inWindow(turns.times, now)), docs[2].Exists()
	return d, nil
}

// Indexes lists the composite index the deployment's counts need: the sum
// of n over a day's shards of a counter.
var Indexes = []sessionstore.Index{
	{CollectionGroup: sessionstore.LimitsCollection, QueryScope: "COLLECTION", Fields: []string{"counter", "day", "n"}},
}

// QueriedFields are the fields the counts' queries filter or sum on.
var QueriedFields = map[string][]string{sessionstore.LimitsCollection: {"counter", "day", "n"}}
