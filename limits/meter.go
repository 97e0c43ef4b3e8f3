package limits

import (
	"context"
	"errors"
	"sync"
	"time"

	"cloud.google.com/go/firestore"

	"github.com/baton-run/baton/sessionstore"
)

// Counter counts one app's turns against their callers' limits. It keeps,
// per user, the turns document as this instance last read or wrote it, so
// that a turn that reads nothing (a warm turn) can still be held to the
// user's rate: like any copy it is a guess checked by the store, since the
// message's commit writes the document on condition of the version kept.
type Counter struct {
	sessions *sessionstore.Service
	app      string

	mu    sync.Mutex
	users map[string]userTurns
}

// maxUsers bounds the memory the copies take; past it they are forgotten
// all at once and learnt again.
const maxUsers = 100_000

// NewCounter returns the counter of app's turns, whose counts sessions
// stores.
func NewCounter(sessions *sessionstore.Service, app string) *Counter {
	return &Counter{sessions: sessions, app: app}
}

// Reading is what one turn of a user reads for its limits, started by
// Begin: the documents to read beside the chat (Refs) and the query of the
// day's tokens, already sent.
type Reading struct {
	c      *Counter
	user   string
	limits Limits
	now    time.Time
	sum    *sum // nil: no budget
}

// Begin starts what a turn of user with limits l at now reads: with a
// budget, the query of the user's tokens of the day across the user's
// sessions, sent now so that it takes the same round trip as the read of
// Refs.
func (c *Counter) Begin(ctx context.Context, user string, l Limits, now time.Time) *Reading {
	r := &Reading{c: c, user: user, limits: l, now: now}
	if l.UserTokensPerDay > 0 {
		r.sum = &sum{done: make(chan struct{})}
		go func() {
			defer close(r.sum.done)
			r.sum.n, r.sum.err = c.sessions.SessionTokens(ctx, c.app, user, now)
		}()
	}
	return r
}

// sum is the sum of a user's sessions' tokens of a day, being queried.
type sum struct {
	done chan struct{}
	n    int64
	err  error
}

// wait returns the sum once the query answered.
func (s *sum) wait() (int64, error) {
	if s == nil {
		return 0, nil
	}
	<-s.done
	return s.n, s.err
}

// Refs are the documents the turn reads beside its chat (see Meter): the
// user's turns document and the day document of the user's deleted
// sessions' tokens, as the limits need them.
func (r *Reading) Refs() []*firestore.DocumentRef {
	var refs []*firestore.DocumentRef
	if r.limits.UserTurnsPerMinute > 0 {
		refs = append(refs, r.c.sessions.LimitsRef(r.c.app, r.user, "turns"))
	}
	if r.limits.UserTokensPerDay > 0 {
		refs = append(refs, r.c.sessions.DayTokensRef(r.c.app, r.user, r.now))
	}
	return refs
}

// Meter pairs what the turn read (snaps, of Refs in that order, and the
// sum) into the turn's meter, and keeps the user's turns document as read.
// It is nil when the limits limit nothing.
func (r *Reading) Meter(snaps []*firestore.DocumentSnapshot) (*Meter, error) {
	if r.limits.Zero() {
		return nil, nil
	}
	m := &Meter{limits: r.limits, now: r.now}
	if r.limits.UserTurnsPerMinute > 0 {
		turns, err := turnsFrom(snaps[0])
		if err != nil {
			return nil, err
		}
		snaps = snaps[1:]
		r.c.put(r.user, *turns, false)
		m.turns, m.remember = turns, r.c.rememberer(r.user)
	}
	if r.limits.UserTokensPerDay > 0 {
		deleted, err := sessionstore.DayTokens(snaps[0])
		stored, serr := r.sum.wait()
		if err = errors.Join(err, serr); err != nil {
			return nil, err
		}
		m.tokens = deleted + stored
	}
	return m, nil
}

// Cached returns the turn's meter made from this instance's copies alone,
// for a turn that reads nothing; ok is false when they cannot serve it (no
// copy of the user's turns document, or a token budget, which every
// instance counts into).
func (r *Reading) Cached() (_ *Meter, ok bool) {
	l := r.limits
	if l.UserTokensPerDay > 0 {
		return nil, false
	}
	if l.Zero() {
		return nil, true
	}
	m := &Meter{limits: l, now: r.now}
	if l.UserTurnsPerMinute > 0 {
		turns, ok := r.c.get(r.user)
		if !ok {
			return nil, false
		}
		m.turns, m.remember = &turns, r.c.rememberer(r.user)
	}
	return m, true
}

func (c *Counter) get(user string) (userTurns, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	u, ok := c.users[user]
	return u, ok
}

// put keeps u, read from the store, or (written) what a commit stored,
// unless a later version of the user's document is kept.
func (c *Counter) put(user string, u userTurns, written bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.users[user]; ok && written && old.version.After(u.version) {
		return
	}
	if c.users == nil || len(c.users) >= maxUsers {
		c.users = map[string]userTurns{}
	}
	c.users[user] = u
}

// rememberer keeps what a message's commit stored in user's turns
// document.
func (c *Counter) rememberer(user string) func(userTurns) {
	return func(u userTurns) { c.put(user, u, true) }
}

// Meter is what one turn's limits read, and what its message's commit
// writes. A nil *Meter limits nothing.
type Meter struct {
	limits Limits
	now    time.Time
	turns  *userTurns // nil: no user rate limit
	tokens int64      // the user's tokens of the day, with a budget
	// remember keeps the user's turn times the message's commit stores.
	remember func(userTurns)
}

// Check refuses the turn with a *LimitError when the user, or the chat
// whose session is sess (nil: not stored yet), is at a limit.
func (m *Meter) Check(sess *sessionstore.Session) error {
	if m == nil {
		return nil
	}
	if err := budgetError(m.tokens, m.limits.UserTokensPerDay, m.now); err != nil {
		return err
	}
	var times []time.Time
	if m.turns != nil {
		times = m.turns.times
	}
	if err := checkRate("user", times, m.limits.UserTurnsPerMinute, m.now); err != nil {
		return err
	}
	if sess == nil {
		return nil
	}
	return checkRate("chat", sess.TurnLog(), m.limits.ChatTurnsPerMinute, m.now)
}

// ChatLog is the turn log the message's commit stores in sess's session
// document (nil sess: a new one), or nil when the chat's rate is not
// limited.
func (m *Meter) ChatLog(sess *sessionstore.Session) []time.Time {
	if m == nil || m.limits.ChatTurnsPerMinute <= 0 {
		return nil
	}
	var times []time.Time
	if sess != nil {
		times = sess.TurnLog()
	}
	return logged(times, m.now, m.limits.ChatTurnsPerMinute)
}

// Writes are the writes of the user's turns document in the commit that
// stores the message and claims the session's lease: conditional on the
// document being as read, so that turns racing in other chats cannot both
// pass (the loser's commit fails, writing nothing).
func (m *Meter) Writes() []sessionstore.DocWrite {
	if m == nil || m.turns == nil {
		return nil
	}
	ref := m.turns.ref
	doc := turnsDoc{Times: logged(m.turns.times, m.now, m.limits.UserTurnsPerMinute), Expires: m.now.Add(rateWindow)}
	if !m.turns.exists {
		return []sessionstore.DocWrite{func(b *firestore.WriteBatch) { b.Create(ref, doc) }}
	}
	pre := firestore.LastUpdateTime(m.turns.version)
	return []sessionstore.DocWrite{func(b *firestore.WriteBatch) {
		b.Update(ref, []firestore.Update{{Path: "times", Value: doc.Times}, {Path: "gcAt", Value: doc.Expires}}, pre)
	}}
}

// WritesUnderLease are the writes of the user's turns document in the
// message's commit of a turn that holds its session's lease already, and
// whose commit must not fail: the turn is added to whatever the document
// holds by then.
func (m *Meter) WritesUnderLease() []sessionstore.DocWrite {
	if m == nil || m.turns == nil {
		return nil
	}
	ref, expires := m.turns.ref, m.now.Add(rateWindow)
	return []sessionstore.DocWrite{func(b *firestore.WriteBatch) {
		b.Set(ref, map[string]any{"times": firestore.ArrayUnion(m.now), "gcAt": expires}, firestore.MergeAll)
	}}
}

// Committed tells the meter the commit that stored Writes was made at
// commitTime: every write of a Firestore commit takes the commit's time as
// its update time, so the counter now knows the user's document as
// stored.
func (m *Meter) Committed(commitTime time.Time) {
	if m == nil || m.turns == nil || m.remember == nil {
		return
	}
	m.remember(userTurns{ref: m.turns.ref, times: logged(m.turns.times, m.now, m.limits.UserTurnsPerMinute), exists: true, version: commitTime})
}
