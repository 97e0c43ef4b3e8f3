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
	// spent holds the users whose budget this instance found used up, with
	// the UTC day and the budget: a day's count only grows, so that stays
	// true until the day ends (or the budget is raised), and their later
	// turns are refused without a read, or a model request.
	spent map[string]spentBudget
	// serviceSpent is the deployment's token cap this instance found
	// reached, and on which UTC day: its later turns that day are refused
	// without a read.
	serviceSpent spentBudget
	// admitted holds the anonymous users this instance knows admitted
	// under the cap on new anonymous users (an admission is for good).
	admitted map[string]bool
}

// spentBudget is a budget found used up on a UTC day.
type spentBudget struct {
	day    string
	budget int64
}

// maxUsers bounds the memory the copies take; past it they are forgotten
// all at once and learnt again.
const maxUsers = 100_000

// NewCounter returns the counter of app's turns, whose counts sessions
// stores.
func NewCounter(sessions *sessionstore.Service, app string) *Counter {
	return &Counter{sessions: sessions, app: app}
}

// Reading is what one turn of a user reads for its limits, begun by Begin:
// the documents to read beside the chat (Docs) and, with a budget, the sum
// of the day's tokens over the user's sessions, already being queried.
type Reading struct {
	c      *Counter
	user   string
	limits Limits
	now    time.Time
	sum    *pending // nil: no budget
	live   *pending // nil: live segments not counted (CountLive)
	// service and anonymous are the deployment's counts of the day, being
	// read; nil: that cap does not apply.
	service, anonymous *pending
}

// pending is a count being read in the background, or known (done nil).
type pending struct {
	done chan struct{}
	n    int64
	err  error
}

// readInBackground runs read in the background; nil when !needed.
func readInBackground(needed bool, read func() (int64, error)) *pending {
	if !needed {
		return nil
	}
	p := &pending{done: make(chan struct{})}
	go func() {
		defer close(p.done)
		p.n, p.err = read()
	}()
	return p
}

// wait returns the count once read; 0 for nil.
func (p *pending) wait() (int64, error) {
	if p == nil {
		return 0, nil
	}
	if p.done != nil {
		<-p.done
	}
	return p.n, p.err
}

// Begin begins what a turn of user with limits l at now reads. With a
// budget, the sum of the day's tokens over the user's sessions is queried
// at once, in the background: nothing waits for it but the turn's first
// commit (Meter.CheckBudget), so the model is asked while it is read.
func (c *Counter) Begin(ctx context.Context, user string, l Limits, now time.Time) *Reading {
	return &Reading{c: c, user: user, limits: l, now: now, sum: readInBackground(l.UserTokensPerDay > 0, func() (int64, error) {
		return c.sessions.SessionTokens(ctx, c.app, user, now)
	}), service: readInBackground(l.ServiceTokensPerDay > 0 && !c.serviceSpentOn(now, l.ServiceTokensPerDay), func() (int64, error) {
		return c.dayCount(ctx, counterTokens, now)
	}), anonymous: readInBackground(l.NewAnonymousPerDay > 0 && !c.isAdmitted(user), func() (int64, error) {
		return c.dayCount(ctx, counterAnonymous, now)
	})}
}

// CountLive begins, for a live segment about to open, the count of the
// user's live segments (sessionstore.SessionsLive), in the background
// beside the chat's read, when LiveSegmentsPerUser bounds them. Call it
// before Meter or Cached.
func (r *Reading) CountLive(ctx context.Context) {
	r.live = readInBackground(r.limits.LiveSegmentsPerUser > 0, func() (int64, error) {
		return r.c.sessions.SessionsLive(ctx, r.c.app, r.user, r.now)
	})
}

// Docs are the documents the turn reads beside its chat (see Meter): the
// user's turns document, when the user's rate is limited, and the day
// document of the user's deleted sessions' tokens, with a budget.
func (r *Reading) Docs() []sessionstore.DocName {
	var docs []sessionstore.DocName
	if r.limits.UserTurnsPerMinute > 0 {
		docs = append(docs, r.c.turnsDoc(r.user))
	}
	if r.limits.UserTokensPerDay > 0 {
		docs = append(docs, r.c.sessions.DayTokensDoc(r.c.app, r.user, r.now))
	}
	if r.anonymous != nil {
		docs = append(docs, r.c.admittedDoc(r.user))
	}
	return docs
}

// turnsDoc names user's turns document.
func (c *Counter) turnsDoc(user string) sessionstore.DocName {
	return c.sessions.LimitsDoc(c.app, user, "turns")
}

// Meter pairs what the turn read (snaps, of Docs in that order) into the
// turn's meter, and keeps the user's turns document as read. It is nil
// when the limits limit nothing.
func (r *Reading) Meter(docs []sessionstore.StoredDoc) (*Meter, error) {
	if r.limits.Zero() {
		return nil, nil
	}
	m := r.meter()
	if r.limits.UserTurnsPerMinute > 0 {
		turns, err := turnsFrom(r.c.turnsDoc(r.user), docs[0])
		if err != nil {
			return nil, err
		}
		docs = docs[1:]
		r.c.put(r.user, *turns, false)
		m.turns, m.remember = turns, r.c.rememberer(r.user)
	}
	if r.limits.UserTokensPerDay > 0 {
		deleted, err := sessionstore.DayTokens(docs[0])
		if err != nil {
			return nil, err
		}
		m.deleted = &pending{n: deleted}
		docs = docs[1:]
	}
	if r.anonymous != nil {
		if docs[0].Exists() {
			r.c.admit(r.user)
		} else {
			m.admit = r.anonymous
		}
	}
	return m, nil
}

// Cached returns the turn's meter for a turn that reads nothing: from this
// instance's copy of the user's turns document, and with a budget the day
// document of the deleted sessions' tokens read now in the background,
// beside the sum. ok is false when the user's rate is limited and there is
// no copy.
func (r *Reading) Cached(ctx context.Context) (_ *Meter, ok bool) {
	if r.limits.Zero() {
		return nil, true
	}
	m := r.meter()
	if r.anonymous != nil {
		return nil, false // not known admitted: the mark is read with the chat
	}
	if r.limits.UserTurnsPerMinute > 0 {
		turns, ok := r.c.get(r.user)
		if !ok {
			return nil, false
		}
		m.turns, m.remember = &turns, r.c.rememberer(r.user)
	}
	m.deleted = readInBackground(r.limits.UserTokensPerDay > 0, func() (int64, error) {
		docs, err := r.c.sessions.ReadDocs(ctx, r.c.sessions.DayTokensDoc(r.c.app, r.user, r.now))
		if err != nil {
			return 0, err
		}
		return sessionstore.DayTokens(docs[0])
	})
	return m, true
}

// meter is the turn's meter before what it read of the user's turns.
func (r *Reading) meter() *Meter {
	m := &Meter{limits: r.limits, now: r.now, sum: r.sum, live: r.live, service: r.service, counter: r.c, user: r.user}
	if r.limits.UserTokensPerDay > 0 {
		m.spent = r.c.spentOn(r.user, r.now, r.limits.UserTokensPerDay)
		m.noteSpent = func() { r.c.setSpent(r.user, r.now, r.limits.UserTokensPerDay) }
	}
	return m
}

// spentOn reports whether this instance found user's budget (of budget
// tokens, or more) used up on the UTC day of now.
func (c *Counter) spentOn(user string, now time.Time, budget int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, ok := c.spent[user]
	return ok && s.day == utcDay(now) && budget <= s.budget
}

// setSpent notes that user's budget of budget tokens is used up on the UTC
// day of now.
func (c *Counter) setSpent(user string, now time.Time, budget int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.spent == nil || len(c.spent) >= maxUsers {
		c.spent = map[string]spentBudget{}
	}
	c.spent[user] = spentBudget{day: utcDay(now), budget: budget}
}

func utcDay(t time.Time) string { return t.UTC().Format(time.DateOnly) }

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
	// sum and deleted are the day's tokens of the user's sessions and of
	// those deleted, being read; nil: no budget.
	sum, deleted *pending
	// live is the count of the user's live segments, being read; nil:
	// not counted.
	live *pending
	// spent: this instance found the budget used up today already;
	// noteSpent tells it so.
	spent     bool
	noteSpent func()
	// remember keeps the user's turn times the message's commit stores.
	remember func(userTurns)
	// service is the deployment's tokens of the day, being read (nil: no
	// cap, or found reached already today); admit, the day's count of new
	// anonymous users, when this turn would admit its user (nil: it
	// would not).
	service, admit *pending
	counter        *Counter
	user           string
}

// Check refuses the turn with a *LimitError when the user, or the chat
// whose session is sess (nil: not stored yet), is at a rate limit, or the
// user's budget is known to be used up today. The budget as read now is
// CheckBudget's.
func (m *Meter) Check(sess *sessionstore.Session) error {
	if m == nil {
		return nil
	}
	if m.spent {
		return budgetError(m.limits.UserTokensPerDay, m.limits.UserTokensPerDay, m.now)
	}
	if l := m.limits.ServiceTokensPerDay; l > 0 && m.counter.serviceSpentOn(m.now, l) {
		return serviceError(ErrServiceBudget, l, l, m.now)
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

// CheckBudget refuses the turn with a *LimitError when the user has used
// the day's token budget, as read when the turn began; it waits for that
// read. Nothing the turn writes may be committed before it passed: a
// commit cannot be conditioned on a sum, so the turn's first commit waits
// for it, while the model is already asked.
func (m *Meter) CheckBudget() error {
	if m == nil {
		return nil
	}
	if err := m.checkService(); err != nil {
		return err
	}
	if m.sum == nil {
		return nil
	}
	stored, err := m.sum.wait()
	deleted, derr := m.deleted.wait()
	if err = errors.Join(err, derr); err != nil {
		return err
	}
	err = budgetError(stored+deleted, m.limits.UserTokensPerDay, m.now)
	if err != nil {
		m.noteSpent()
	}
	return err
}

// CheckLive refuses a live segment with a *LimitError (ErrLiveSegments)
// when the user held LiveSegmentsPerUser of them as counted when the turn
// began (Reading.CountLive); it waits for that count. sess is the chat's
// session as read (nil: none): a segment it still held (one whose holder
// died, ending) is not counted, since the new one takes its place. Two
// segments opened at the same moment may both pass: the bound holds up to
// those.
func (m *Meter) CheckLive(sess *sessionstore.Session) error {
	if m == nil || m.live == nil {
		return nil
	}
	n, err := m.live.wait()
	if err != nil {
		return err
	}
	if sess != nil && sess.LiveUntil().After(m.now) {
		n--
	}
	if limit := m.limits.LiveSegmentsPerUser; n >= int64(limit) {
		return refuse(ErrLiveSegments, "user", int64(limit), liveRetry)
	}
	return nil
}

// TokensLeft is what the user's token budget had left when the turn began
// (at most zero once used up), for a caller that counts against it as it
// goes (a live segment, whose model turns come without turns of their
// own); false without a budget. It waits for the read, as CheckBudget.
func (m *Meter) TokensLeft() (int64, bool) {
	if m == nil || m.sum == nil {
		return 0, false
	}
	stored, err := m.sum.wait()
	deleted, derr := m.deleted.wait()
	if err != nil || derr != nil {
		return 0, true // CheckBudget has refused the turn already
	}
	return m.limits.UserTokensPerDay - stored - deleted, true
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
func (m *Meter) Writes() []sessionstore.Write {
	if m == nil {
		return nil
	}
	admission := m.admission(false)
	if m.turns == nil {
		return admission
	}
	name := m.turns.name
	doc := turnsDoc{Times: logged(m.turns.times, m.now, m.limits.UserTurnsPerMinute), Expires: m.now.Add(rateWindow)}
	if !m.turns.exists {
		return append(admission, sessionstore.Create(name, doc))
	}
	return append(admission, sessionstore.Update(name, m.turns.version,
		firestore.Update{Path: "times", Value: doc.Times}, firestore.Update{Path: "gcAt", Value: doc.Expires}))
}

// WritesUnderLease are the writes of the user's turns document in the
// message's commit of a turn that holds its session's lease already, and
// whose commit must not fail: the turn is added to whatever the document
// holds by then.
func (m *Meter) WritesUnderLease() []sessionstore.Write {
	if m == nil {
		return nil
	}
	admission := m.admission(true)
	if m.turns == nil {
		return admission
	}
	return append(admission, sessionstore.Merge(m.turns.name,
		map[string]any{"times": firestore.ArrayUnion(m.now), "gcAt": m.now.Add(rateWindow)}))
}

// Committed tells the meter the commit that stored Writes was made at
// commitTime: every write of a Firestore commit takes the commit's time as
// its update time, so the counter now knows the user's document as
// stored.
func (m *Meter) Committed(commitTime time.Time) {
	if m != nil && m.admit != nil {
		m.counter.admit(m.user)
	}
	if m == nil || m.turns == nil || m.remember == nil {
		return
	}
	m.remember(userTurns{name: m.turns.name, times: logged(m.turns.times, m.now, m.limits.UserTurnsPerMinute), exists: true, version: commitTime})
}
