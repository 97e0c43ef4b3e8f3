package toolcallback

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/adk/v2/platform"
	"google.golang.org/adk/v2/session"
	"google.golang.org/genai"

	"github.com/baton-run/baton/sessionstore"
)

// Turn limits: how many turns a user and a chat may start per minute, and
// how many model tokens a user may use per day, across every instance.
//
// Nothing is added on the way to the model: the counts a turn checks are
// read in the round trip that reads its chat and session, and the turn is
// counted in the commit that stores its message (and takes the session's
// lease). A chat's recent turn times live in its session document, which
// that commit writes anyway; a user's live in the user's turns document,
// {root}/{app}/users/{user}/limits/turns, which that commit also writes,
// conditional on it being as read: of two turns of one user racing in two
// chats, one is stored and the other is busy (nothing written), so the
// rate holds exactly. A turn refused for its limits writes nothing.
//
// Tokens are counted from the usage metadata of each model response, in
// the commit that stores the response's event: the session document
// counts its tokens of the day (sessionstore.AppendOptions.Tokens), so
// counting costs no write of its own. A user's day is the sum over the
// user's sessions, one aggregation query sent beside the turn's read, plus
// the user's day document {root}/{app}/users/{user}/limits/tokens-{day}
// (UTC), where a deleted session's count goes, read in the same round trip
// as the chat. A turn is refused once the day's count has reached the
// budget, as read before the model is called, so a turn may overrun the
// budget by what it uses, and turns racing at the edge by what all of them
// use.
//
// Answers to paused calls (resumes) are never refused: a turn that paused
// must be able to finish. Their tokens are counted like any.

// Limits are the limits of one caller's turns. A zero field sets no limit.
type Limits struct {
	UserTurnsPerMinute int   // turns a user may start in any 60 s
	ChatTurnsPerMinute int   // turns one chat may start in any 60 s
	UserTokensPerDay   int64 // model tokens a user may use per UTC day
}

// zero reports whether l limits nothing.
func (l Limits) zero() bool { return l == Limits{} }

var (
	// ErrRateLimited: the turn would exceed a turn rate limit. The
	// *LimitError says which and how long to wait.
	ErrRateLimited = errors.New("rate limited")
	// ErrBudgetExhausted: the user has used the day's token budget. The
	// *LimitError says how long until the next day.
	ErrBudgetExhausted = errors.New("token budget exhausted")
)

// LimitError refuses a turn for one of its Limits. It wraps
// ErrRateLimited or ErrBudgetExhausted.
type LimitError struct {
	Err        error  // ErrRateLimited or ErrBudgetExhausted
	Scope      string // "user" or "chat"
	Limit      int64
	RetryAfter time.Duration
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("%v: %s limit %d; retry after %s", e.Err, e.Scope, e.Limit, e.RetryAfter.Round(time.Second))
}

func (e *LimitError) Unwrap() error { return e.Err }

// rateWindow is the window of the turn rate limits.
const rateWindow = time.Minute

// turnsDoc is a user's recent turn times (the user's turns document).
type turnsDoc struct {
	Times []time.Time `firestore:"times"`
	// Expires is the TTL field: once the last turn leaves the window the
	// document says nothing.
	Expires time.Time `firestore:"gcAt"`
}

func (t *Team) turnsRef(user string) *firestore.DocumentRef {
	return t.sessions.LimitsRef(t.app, user, "turns")
}

// meter is what one turn's limits read (in the turn's first round trip,
// or from this instance's copy, see userTurnsCache) and what its message's
// commit writes.
type meter struct {
	limits Limits
	now    time.Time
	turns  *userTurns // nil: no user rate limit
	tokens int64      // the user's tokens of the day, with a budget
	err    error      // reading or decoding what the limits count
	// remember, when set, keeps the user's turn times the message's
	// commit stores (see userTurnsCache).
	remember func(userTurns)
}

// userTurns is a user's turns document as read: its times and update
// time, the condition of the commit that writes it.
type userTurns struct {
	ref     *firestore.DocumentRef
	times   []time.Time
	exists  bool
	version time.Time
}

// meterRefs are the documents a turn with limits l reads beside its chat.
func (t *Team) meterRefs(user string, l Limits, now time.Time) []*firestore.DocumentRef {
	var refs []*firestore.DocumentRef
	if l.UserTurnsPerMinute > 0 {
		refs = append(refs, t.turnsRef(user))
	}
	if l.UserTokensPerDay > 0 {
		refs = append(refs, t.sessions.DayTokensRef(t.app, user, now))
	}
	return refs
}

// readChat reads, in one round trip, the chat with the session it is
// believed to point at (see activeSessions) and what the caller's limits
// count; with a token budget, the sum of the user's sessions' tokens is
// queried beside it. The meter is nil when l limits nothing, and set when
// the chat does not exist (the error wraps ErrNotFound).
func (t *Team) readChat(ctx context.Context, user, chatID string, l Limits) (*sessionstore.Chat, session.Session, *meter, error) {
	now := platform.Now(ctx)
	sum := func() (int64, error) { return 0, nil }
	if l.UserTokensPerDay > 0 {
		summed := make(chan error, 1)
		var n int64
		go func() {
			var err error
			n, err = t.sessions.SessionTokens(ctx, t.app, user, now)
			summed <- err
		}()
		sum = func() (int64, error) { err := <-summed; return n, err }
	}
	chat, sess, snaps, err := t.sessions.GetChatSession(ctx, t.app, user, chatID, t.active.guess(user, chatID), !t.opts.SessionStateOnly,
		t.meterRefs(user, l, now)...)
	if err != nil && !errors.Is(err, sessionstore.ErrNotFound) {
		return nil, nil, nil, err
	}
	return chat, sess, newMeter(l, now, snaps, sum), err
}

// newMeter pairs the snapshots of meterRefs and the session tokens' sum
// with the limits; nil when l limits nothing.
func newMeter(l Limits, now time.Time, snaps []*firestore.DocumentSnapshot, sum func() (int64, error)) *meter {
	if l.zero() {
		return nil
	}
	m := &meter{limits: l, now: now}
	if l.UserTurnsPerMinute > 0 {
		m.turns, m.err = turnsFrom(snaps[0])
		snaps = snaps[1:]
	}
	if l.UserTokensPerDay > 0 {
		deleted, err := sessionstore.DayTokens(snaps[0])
		stored, serr := sum()
		m.tokens, m.err = deleted+stored, errors.Join(m.err, err, serr)
	}
	return m
}

// turnsFrom decodes a user's turns document.
func turnsFrom(snap *firestore.DocumentSnapshot) (*userTurns, error) {
	u := &userTurns{ref: snap.Ref, exists: snap.Exists()}
	if !u.exists {
		return u, nil
	}
	u.version = snap.UpdateTime
	var d turnsDoc
	if err := snap.DataTo(&d); err != nil {
		return nil, fmt.Errorf("decode turn times: %w", err)
	}
	u.times = d.Times
	return u, nil
}

// check refuses the turn when the user, or the chat whose session is sess
// (nil: not read yet, or not stored), is at a limit. A message the session
// took already is not refused: it is a resend, answered with the turn it
// started (ErrMessageTaken), and starts nothing.
func (m *meter) check(sess session.Session, messageID string) error {
	if m == nil || resent(sess, messageID) {
		return nil
	}
	if m.err != nil {
		return m.err
	}
	if err := m.checkUser(); err != nil {
		return err
	}
	return m.checkChat(sess, messageID)
}

// resent reports whether sess took the message messageID already.
func resent(sess session.Session, messageID string) bool {
	return sess != nil && messageID != "" && takenMessage(sess) == messageID
}

// checkUser refuses the turn when the user is at a limit.
func (m *meter) checkUser() error {
	if budget := m.limits.UserTokensPerDay; budget > 0 && m.tokens >= budget {
		next := m.now.UTC().Truncate(24 * time.Hour).Add(24 * time.Hour)
		return &LimitError{Err: ErrBudgetExhausted, Scope: "user", Limit: budget, RetryAfter: next.Sub(m.now)}
	}
	return checkRate("user", m.userTimes(), m.limits.UserTurnsPerMinute, m.now)
}

// checkChat refuses the turn when the chat, whose session is sess (nil:
// not stored yet), is at its limit, unless it resends messageID.
func (m *meter) checkChat(sess session.Session, messageID string) error {
	if m == nil || sess == nil || resent(sess, messageID) {
		return nil
	}
	return checkRate("chat", sessionstore.TurnLog(sess), m.limits.ChatTurnsPerMinute, m.now)
}

func (m *meter) userTimes() []time.Time {
	if m.turns == nil {
		return nil
	}
	return m.turns.times
}

// checkRate refuses a turn at now when times holds limit turns or more in
// the window before it (limit 0: no limit), saying when the oldest that
// must leave the window does.
func checkRate(scope string, times []time.Time, limit int, now time.Time) error {
	if limit <= 0 {
		return nil
	}
	recent := inWindow(times, now)
	if len(recent) < limit {
		return nil
	}
	wait := recent[len(recent)-limit].Add(rateWindow).Sub(now)
	return &LimitError{Err: ErrRateLimited, Scope: scope, Limit: int64(limit), RetryAfter: max(wait, time.Millisecond)}
}

// inWindow returns the times of times within the rate window before now,
// sorted.
func inWindow(times []time.Time, now time.Time) []time.Time {
	from := now.Add(-rateWindow)
	out := make([]time.Time, 0, len(times))
	for _, t := range times {
		if t.After(from) && !t.After(now) {
			out = append(out, t)
		}
	}
	slices.SortFunc(out, func(a, b time.Time) int { return a.Compare(b) })
	return out
}

// logged is times with now added, keeping what a limit of limit turns can
// still need: the window's latest turns, at most limit of them.
func logged(times []time.Time, now time.Time, limit int) []time.Time {
	out := append(inWindow(times, now), now)
	if len(out) > limit {
		out = out[len(out)-limit:]
	}
	return out
}

// chatLog is the turn log the message's commit stores in sess's session
// document (nil sess: a new one), or nil when the chat's rate is not
// limited.
func (m *meter) chatLog(sess session.Session) []time.Time {
	if m == nil || m.limits.ChatTurnsPerMinute <= 0 {
		return nil
	}
	var times []time.Time
	if sess != nil {
		times = sessionstore.TurnLog(sess)
	}
	return logged(times, m.now, m.limits.ChatTurnsPerMinute)
}

// userWrites are the writes of the user's turns document in the message's
// commit. exact makes the write conditional on the document being as read,
// so that turns racing in other chats cannot both pass; without it (a turn
// that took the lease first, and whose commit must not fail) the turn is
// added to whatever the document holds by then.
func (m *meter) userWrites(exact bool) []sessionstore.DocWrite {
	if m == nil || m.turns == nil {
		return nil
	}
	ref, limit := m.turns.ref, m.limits.UserTurnsPerMinute
	expires := m.now.Add(rateWindow)
	if !exact {
		return []sessionstore.DocWrite{func(b *firestore.WriteBatch) {
			b.Set(ref, map[string]any{"times": firestore.ArrayUnion(m.now), "gcAt": expires}, firestore.MergeAll)
		}}
	}
	doc := turnsDoc{Times: logged(m.turns.times, m.now, limit), Expires: expires}
	if !m.turns.exists {
		return []sessionstore.DocWrite{func(b *firestore.WriteBatch) { b.Create(ref, doc) }}
	}
	pre := firestore.LastUpdateTime(m.turns.version)
	return []sessionstore.DocWrite{func(b *firestore.WriteBatch) {
		b.Update(ref, []firestore.Update{{Path: "times", Value: doc.Times}, {Path: "gcAt", Value: doc.Expires}}, pre)
	}}
}

// committed is what the message's commit, made at commitTime with
// userWrites(true), left in the user's turns document, for remember: every
// write of a Firestore commit takes the commit's time as its update time.
func (m *meter) committed(commitTime time.Time) {
	if m == nil || m.turns == nil || m.remember == nil {
		return
	}
	m.remember(userTurns{ref: m.turns.ref, times: logged(m.turns.times, m.now, m.limits.UserTurnsPerMinute), exists: true, version: commitTime})
}

// tokensUsed is what a model response's usage metadata counts.
func tokensUsed(u *genai.GenerateContentResponseUsageMetadata) int64 {
	if u == nil {
		return 0
	}
	if u.TotalTokenCount > 0 {
		return int64(u.TotalTokenCount)
	}
	return int64(u.PromptTokenCount) + int64(u.CandidatesTokenCount) + int64(u.ThoughtsTokenCount) + int64(u.ToolUsePromptTokenCount)
}
