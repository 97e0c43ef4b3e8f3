package limits_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"cloud.google.com/go/firestore"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"google.golang.org/adk/v2/platform"
	"google.golang.org/adk/v2/session"
	"google.golang.org/genai"

	"github.com/baton-run/baton/internal/firestoretest"
	"github.com/baton-run/baton/limits"
	"github.com/baton-run/baton/sessionstore"
)

func TestMain(m *testing.M) { firestoretest.Main(m) }

// base is the tests' clock: a morning, UTC; times are given as offsets
// from it.
var base = time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)

// store is app "app"'s counts on a fresh project, and one instance's
// Counter of them.
type store struct {
	t        *testing.T
	client   *firestore.Client
	sessions *sessionstore.Service
	counter  *limits.Counter
}

func newStore(t *testing.T) *store {
	client := firestoretest.NewClient(t)
	sessions := sessionstore.New(client, nil)
	return &store{t: t, client: client, sessions: sessions, counter: limits.NewCounter(sessions, "app")}
}

// meter is the meter of a turn of user with limits l at now: the
// Reading's Refs read in one round trip (toolcallback reads them with the
// chat), paired into its Meter.
func (s *store) meter(user string, l limits.Limits, now time.Time) *limits.Meter {
	s.t.Helper()
	r := s.counter.Begin(s.t.Context(), user, l, now)
	var docs []sessionstore.StoredDoc
	if names := r.Docs(); len(names) > 0 {
		var err error
		if docs, err = s.sessions.ReadDocs(s.t.Context(), names...); err != nil {
			s.t.Fatal(err)
		}
	}
	m, err := r.Meter(docs)
	if err != nil {
		s.t.Fatalf("Meter() error = %v", err)
	}
	return m
}

// commit makes one commit of writes, as the commit that stores a message
// does, and returns its time.
func (s *store) commit(writes []sessionstore.Write) (time.Time, error) {
	return s.sessions.Commit(s.t.Context(), writes...)
}

// turns counts turns of user at base plus each of at, one commit each,
// under a rate limit of limit turns a minute.
func (s *store) turns(user string, limit int, at ...time.Duration) {
	s.t.Helper()
	for _, d := range at {
		m := s.meter(user, limits.Limits{UserTurnsPerMinute: limit}, base.Add(d))
		if _, err := s.commit(m.Writes()); err != nil {
			s.t.Fatalf("count the turn at %s: %v", d, err)
		}
	}
}

// session stores session sid of user, whose turn log holds base plus each
// of log (none: nil), and returns it as read.
func (s *store) session(user, sid string, log []time.Duration) *sessionstore.Session {
	s.t.Helper()
	ctx := s.t.Context()
	created, err := s.sessions.Create(ctx, &session.CreateRequest{AppName: "app", UserID: user, SessionID: sid})
	if err != nil {
		s.t.Fatal(err)
	}
	ss, err := sessionstore.Of(created.Session)
	if err != nil {
		s.t.Fatal(err)
	}
	if log != nil {
		ev := &session.Event{ID: "message", Author: "user"}
		if err := s.sessions.AppendEventWith(ctx, ss, ev, sessionstore.AppendOptions{TurnLog: times(log...)}); err != nil {
			s.t.Fatal(err)
		}
	}
	return ss
}

// useTokens stores session sid of user, which counted n model tokens at
// at; deleted, the session is then deleted that day, which moves its
// count to the user's day document.
func (s *store) useTokens(user, sid string, n int64, at time.Time, deleted bool) {
	s.t.Helper()
	ss := s.session(user, sid, nil)
	ctx := platform.WithTimeProvider(s.t.Context(), func() time.Time { return at })
	ev := &session.Event{ID: "answer", Author: "model"}
	if err := s.sessions.AppendEventWith(ctx, ss, ev, sessionstore.AppendOptions{Tokens: sessionstore.TokenUse{N: n, At: at}}); err != nil {
		s.t.Fatal(err)
	}
	if !deleted {
		return
	}
	if err := s.sessions.Delete(ctx, &session.DeleteRequest{AppName: "app", UserID: user, SessionID: sid}); err != nil {
		s.t.Fatal(err)
	}
}

// counted is how many turns of user the window before base+at holds, as
// Check tells: the least rate limit a turn then passes, less one.
func (s *store) counted(user string, at time.Duration) int {
	s.t.Helper()
	for n := 1; ; n++ {
		if s.meter(user, limits.Limits{UserTurnsPerMinute: n}, base.Add(at)).Check(nil) == nil {
			return n - 1
		}
	}
}

// times is base plus each offset.
func times(offsets ...time.Duration) []time.Time {
	out := make([]time.Time, len(offsets))
	for i, d := range offsets {
		out[i] = base.Add(d)
	}
	return out
}

// wantRefused fails t unless err, of Check, refuses the turn as want
// does (nil: not at all).
func wantRefused(t *testing.T, err error, want *limits.LimitError) {
	t.Helper()
	var got *limits.LimitError
	if err != nil && !errors.As(err, &got) {
		t.Fatalf("Check() error = %v, want a *LimitError", err)
	}
	sameErr := cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".Err" }, cmpopts.EquateErrors())
	if diff := cmp.Diff(want, got, sameErr); diff != "" {
		t.Errorf("Check() (-want +got):\n%s", diff)
	}
}

// exhausted is the *LimitError of a used-up budget.
func exhausted(budget int64, wait time.Duration) *limits.LimitError {
	return &limits.LimitError{Err: limits.ErrBudgetExhausted, Scope: "user", Limit: budget, RetryAfter: wait}
}

// rate is a *LimitError of a rate limit.
func rate(scope string, limit int64, wait time.Duration) *limits.LimitError {
	return &limits.LimitError{Err: limits.ErrRateLimited, Scope: scope, Limit: limit, RetryAfter: wait}
}

// TestUserRate: a user's turn is refused while the user's turns document
// holds limit turns of the last minute, for as long as it takes the ones
// that must leave the window to leave it.
func TestUserRate(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	for i, tc := range []struct {
		name  string
		turns []time.Duration // the user's earlier turns, counted under a limit of 10
		limit int
		want  *limits.LimitError // of a turn at base
	}{
		{"no limit", []time.Duration{-3 * time.Second, -2 * time.Second, -time.Second}, 0, nil},
		{"no turn yet", nil, 1, nil},
		{"under the limit", []time.Duration{-50 * time.Second, -30 * time.Second}, 3, nil},
		{"at the limit: the oldest must leave", []time.Duration{-50 * time.Second, -30 * time.Second, -10 * time.Second}, 3,
			rate("user", 3, 10*time.Second)},
		{"over a lowered limit: the two oldest must leave", []time.Duration{-50 * time.Second, -40 * time.Second, -30 * time.Second}, 2,
			rate("user", 2, 20*time.Second)},
		{"turns before the window do not count", []time.Duration{-90 * time.Second, -61 * time.Second, -10 * time.Second}, 2, nil},
		{"a turn a minute old has left the window", []time.Duration{-time.Minute, -10 * time.Second}, 2, nil},
		{"a turn just inside it", []time.Duration{-59500 * time.Millisecond, -10 * time.Second}, 2,
			rate("user", 2, 500*time.Millisecond)},
		{"a wait of at least a millisecond", []time.Duration{-time.Minute + 100*time.Microsecond}, 1,
			rate("user", 1, time.Millisecond)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			user := fmt.Sprint("user-", i)
			s.turns(user, 10, tc.turns...)
			wantRefused(t, s.meter(user, limits.Limits{UserTurnsPerMinute: tc.limit}, base).Check(nil), tc.want)
		})
	}
}

// TestChatRate: a chat's turn is refused by the turn log of its session,
// and ChatLog is the log the message's commit stores there: the window's
// latest turns, at most the limit's number, and this one.
func TestChatRate(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	for i, tc := range []struct {
		name    string
		log     []time.Duration // the session's turn log; nil: no session stored
		limit   int
		want    *limits.LimitError // of a turn at base
		wantLog []time.Time
	}{
		{"no limit", []time.Duration{-2 * time.Second, -time.Second}, 0, nil, nil},
		{"a new chat", nil, 2, nil, times(0)},
		{"under the limit", []time.Duration{-30 * time.Second}, 2, nil, times(-30*time.Second, 0)},
		{"at the limit", []time.Duration{-40 * time.Second, -20 * time.Second}, 2,
			rate("chat", 2, 20*time.Second), times(-20*time.Second, 0)},
		{"turns before the window leave the log", []time.Duration{-2 * time.Minute, -61 * time.Second, -5 * time.Second}, 3,
			nil, times(-5*time.Second, 0)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			user := fmt.Sprint("user-", i)
			var sess *sessionstore.Session
			if tc.log != nil {
				sess = s.session(user, "chat~0", tc.log)
			}
			m := s.meter(user, limits.Limits{ChatTurnsPerMinute: tc.limit}, base)
			wantRefused(t, m.Check(sess), tc.want)
			if diff := cmp.Diff(tc.wantLog, m.ChatLog(sess)); diff != "" {
				t.Errorf("ChatLog() (-want +got):\n%s", diff)
			}
		})
	}
}

// TestBudget: a user's turn is refused once the user's model tokens of the
// UTC day, in stored and deleted sessions alike, have reached the budget,
// until the next UTC day.
func TestBudget(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	type use struct {
		n       int64
		at      time.Duration
		deleted bool
	}
	// 02:00 in Tokyo the next day is still the day of base in UTC.
	tokyo := base.Add(7 * time.Hour).In(time.FixedZone("JST", 9*60*60))
	for i, tc := range []struct {
		name   string
		budget int64
		uses   []use
		now    time.Time // of the turn checked
		want   *limits.LimitError
	}{
		{"no budget", 0, []use{{1000, -time.Hour, false}}, base, nil},
		{"under the budget", 250, []use{{100, -time.Hour, false}, {100, -time.Minute, false}}, base, nil},
		{"reached by the sessions", 250, []use{{150, -time.Hour, false}, {100, -time.Minute, false}}, base, exhausted(250, 14*time.Hour)},
		{"a deleted session still counts", 250, []use{{150, -time.Hour, false}, {100, -time.Minute, true}}, base, exhausted(250, 14*time.Hour)},
		{"yesterday's tokens do not count", 250, []use{{300, -24 * time.Hour, false}, {300, -24 * time.Hour, true}}, base, nil},
		{"the day is UTC's", 250, []use{{250, -time.Hour, false}}, tokyo, exhausted(250, 7*time.Hour)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			user := fmt.Sprint("user-", i)
			for k, u := range tc.uses {
				s.useTokens(user, fmt.Sprint("chat~", k), u.n, base.Add(u.at), u.deleted)
			}
			m := s.meter(user, limits.Limits{UserTokensPerDay: tc.budget}, tc.now)
			wantRefused(t, m.CheckBudget(), tc.want)
		})
	}
}

// TestSpentBudget: once this instance found a user's budget used up,
// Check refuses the user's later turns of that UTC day without waiting for
// a read; a raised budget, or the next day, is read again.
func TestSpentBudget(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	s.useTokens("ada", "chat~0", 250, base.Add(-time.Hour), false)
	l := limits.Limits{UserTokensPerDay: 250}
	if err := s.meter("ada", l, base).Check(nil); err != nil {
		t.Fatalf("Check() before the budget was read: %v, want the read to be CheckBudget's", err)
	}
	wantRefused(t, s.meter("ada", l, base).CheckBudget(), exhausted(250, 14*time.Hour))
	wantRefused(t, s.meter("ada", l, base.Add(time.Hour)).Check(nil), exhausted(250, 13*time.Hour))
	if err := s.meter("ada", limits.Limits{UserTokensPerDay: 500}, base.Add(time.Hour)).Check(nil); err != nil {
		t.Errorf("Check() with a raised budget: %v, want it read again", err)
	}
	if err := s.meter("ada", l, base.Add(24*time.Hour)).Check(nil); err != nil {
		t.Errorf("Check() the next day: %v, want it read again", err)
	}
}

// TestWrites: Writes store a turn only if the user's turns document is as
// the meter read it (created if it was missing), so that of two turns of
// one user racing in two chats only one is counted and the other's commit
// fails, writing nothing; WritesUnderLease, for a turn whose commit must
// not fail, adds the turn to whatever the document holds.
func TestWrites(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	for i, tc := range []struct {
		name    string
		earlier []time.Duration // turns counted before the race
		lost    error           // the second commit's failure
	}{
		{"no document yet", nil, sessionstore.ErrAlreadyExists},
		{"a document read", []time.Duration{-30 * time.Second}, sessionstore.ErrConflict},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			user := fmt.Sprint("user-", i)
			l := limits.Limits{UserTurnsPerMinute: 10}
			s.turns(user, 10, tc.earlier...)
			first, second := s.meter(user, l, base), s.meter(user, l, base.Add(time.Second))
			if _, err := s.commit(first.Writes()); err != nil {
				t.Fatalf("the first commit of Writes: %v", err)
			}
			if _, err := s.commit(second.Writes()); !errors.Is(err, tc.lost) {
				t.Fatalf("the second commit of Writes, on the same read: %v, want %v", err, tc.lost)
			}
			if got, want := s.counted(user, 2*time.Second), len(tc.earlier)+1; got != want {
				t.Errorf("turns counted after the race = %d, want %d", got, want)
			}
			if _, err := s.commit(second.WritesUnderLease()); err != nil {
				t.Fatalf("WritesUnderLease on the same read: %v, want it stored", err)
			}
			if got, want := s.counted(user, 2*time.Second), len(tc.earlier)+2; got != want {
				t.Errorf("turns counted after WritesUnderLease = %d, want %d", got, want)
			}
		})
	}
}

// TestCounterCopy: the Counter keeps each user's turns document as this
// instance last read it or a commit stored it, so that a turn that reads
// nothing (Reading.Cached) is still held to the user's rate. A commit
// replaces the copy only with a later version than the one kept, and the
// copy's version is what the next Writes is conditional on.
func TestCounterCopy(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	rate2 := limits.Limits{UserTurnsPerMinute: 2}
	cached := func(l limits.Limits, at time.Duration) (*limits.Meter, bool) {
		return s.counter.Begin(t.Context(), "ada", l, base.Add(at)).Cached(t.Context())
	}
	if _, ok := cached(rate2, 0); ok {
		t.Fatal("Cached() served a user rate before any read of the user")
	}
	if m, ok := cached(limits.Limits{ChatTurnsPerMinute: 1}, 0); !ok || m == nil {
		t.Errorf("Cached() of a chat rate alone = %v, %v; want a meter, which needs no copy", m, ok)
	}
	first := s.meter("ada", rate2, base)
	if m, ok := cached(limits.Limits{UserTokensPerDay: 100}, 0); !ok || m.CheckBudget() != nil {
		t.Error("Cached() of a budget not used up: want a meter that reads it beside the model request, and passes")
	}
	firstAt, err := s.commit(first.Writes())
	if err != nil {
		t.Fatal(err)
	}
	// Another turn reads the document first stored, and stores its own
	// turn; its commit is told before first's.
	second := s.meter("ada", rate2, base.Add(time.Second))
	secondAt, err := s.commit(second.Writes())
	if err != nil {
		t.Fatal(err)
	}
	second.Committed(secondAt)
	first.Committed(firstAt)
	m, ok := cached(rate2, 2*time.Second)
	if !ok {
		t.Fatal("Cached() after the commits: no copy")
	}
	// The copy is second's: both turns, at the document's version.
	wantRefused(t, m.Check(nil), rate("user", 2, 58*time.Second))
	m, _ = cached(limits.Limits{UserTurnsPerMinute: 3}, 2*time.Second)
	if _, err := s.commit(m.Writes()); err != nil {
		t.Errorf("Writes of the copy: %v, want it conditional on the version stored", err)
	}
}

// TestNoLimits: limits that limit nothing read nothing and give a nil
// meter, which refuses nothing and writes nothing.
func TestNoLimits(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	r := s.counter.Begin(t.Context(), "ada", limits.Limits{}, base)
	if docs := r.Docs(); len(docs) != 0 {
		t.Errorf("Docs() = %d documents, want none", len(docs))
	}
	m, err := r.Meter(nil)
	if m != nil || err != nil {
		t.Fatalf("Meter() = %v, %v; want nil", m, err)
	}
	if cached, ok := r.Cached(t.Context()); cached != nil || !ok {
		t.Errorf("Cached() = %v, %v; want nil, true", cached, ok)
	}
	if err := m.Check(nil); err != nil {
		t.Errorf("Check() = %v", err)
	}
	if m.ChatLog(nil) != nil || m.Writes() != nil || m.WritesUnderLease() != nil {
		t.Error("a nil meter logs or writes")
	}
}

func TestTokensUsed(t *testing.T) {
	for _, tc := range []struct {
		name  string
		usage *genai.GenerateContentResponseUsageMetadata
		want  int64
	}{
		{"none", nil, 0},
		{"the total", &genai.GenerateContentResponseUsageMetadata{PromptTokenCount: 3, CandidatesTokenCount: 4, TotalTokenCount: 10}, 10},
		{"the parts without a total", &genai.GenerateContentResponseUsageMetadata{PromptTokenCount: 3, CandidatesTokenCount: 4,
			ThoughtsTokenCount: 5, ToolUsePromptTokenCount: 6}, 18},
		// A thinking model's total counts its thoughts (Gemini's
		// totalTokenCount does): a budget must too.
		{"a thinking model's total", &genai.GenerateContentResponseUsageMetadata{PromptTokenCount: 3, CandidatesTokenCount: 4,
			ThoughtsTokenCount: 5, TotalTokenCount: 12}, 12},
	} {
		if got := limits.TokensUsed(tc.usage); got != tc.want {
			t.Errorf("%s: TokensUsed() = %d, want %d", tc.name, got, tc.want)
		}
	}
}

// liveSession stores session sid of user held by a live segment whose
// lease runs out at base+until, and returns it as read.
func (s *store) liveSession(user, sid string, until time.Duration) *sessionstore.Session {
	s.t.Helper()
	ctx := platform.WithTimeProvider(s.t.Context(), func() time.Time { return base })
	sess, claim, err := s.sessions.ClaimNewSession(ctx, &session.CreateRequest{AppName: "app", UserID: user, SessionID: sid}, nil, "live:tab", until)
	if err != nil {
		s.t.Fatal(err)
	}
	if err := s.sessions.AppendEventWith(ctx, sess, &session.Event{ID: "open", Author: "model"}, sessionstore.AppendOptions{Claim: claim.Live()}); err != nil {
		s.t.Fatal(err)
	}
	got, err := s.sessions.Read(ctx, sessionstore.ReadRequest{App: "app", User: user, SessionID: sid})
	if err != nil {
		s.t.Fatal(err)
	}
	return got
}

// TestLiveSegments: a live segment is refused while the user's live
// segments, counted beside the read, reach the limit; the chat's own
// session, still held by a segment that is ending, is not counted, and a
// segment whose lease ran out no longer counts.
func TestLiveSegments(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	tooMany := &limits.LimitError{Err: limits.ErrLiveSegments, Scope: "user", Limit: 2, RetryAfter: 15 * time.Second}
	for i, tc := range []struct {
		name  string
		held  []time.Duration // the users' segments' lease ends
		own   int             // the index among held of the chat's own session; -1: another chat
		limit int
		want  *limits.LimitError
	}{
		{"no limit", []time.Duration{time.Minute, time.Minute, time.Minute}, -1, 0, nil},
		{"under the limit", []time.Duration{time.Minute}, -1, 2, nil},
		{"at the limit", []time.Duration{time.Minute, time.Minute}, -1, 2, tooMany},
		{"the chat's own segment is replaced", []time.Duration{time.Minute, time.Minute}, 1, 2, nil},
		{"a dead holder's segment has run out", []time.Duration{time.Minute, -time.Second}, -1, 2, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			user := fmt.Sprint("live-user-", i)
			var own *sessionstore.Session
			for k, until := range tc.held {
				sess := s.liveSession(user, fmt.Sprint("chat~", k), until)
				if k == tc.own {
					own = sess
				}
			}
			r := s.counter.Begin(t.Context(), user, limits.Limits{LiveSegmentsPerUser: tc.limit}, base)
			r.CountLive(t.Context())
			m, err := r.Meter(nil)
			if err != nil {
				t.Fatal(err)
			}
			wantRefused(t, m.CheckLive(own), tc.want)
		})
	}
}

// TestTokensLeft: what the budget had left when the turn began, counted
// as CheckBudget counts it; nothing without a budget.
func TestTokensLeft(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	s.useTokens("ada", "chat~0", 100, base.Add(-time.Hour), false)
	s.useTokens("ada", "chat~1", 50, base.Add(-time.Hour), true)
	for _, tc := range []struct {
		name   string
		budget int64
		left   int64
		ok     bool
	}{
		{"no budget", 0, 0, false},
		{"some left", 400, 250, true},
		{"overrun", 120, -30, true},
	} {
		left, ok := s.meter("ada", limits.Limits{UserTokensPerDay: tc.budget, UserTurnsPerMinute: 1}, base).TokensLeft()
		if left != tc.left || ok != tc.ok {
			t.Errorf("%s: TokensLeft() = %d, %v; want %d, %v", tc.name, left, ok, tc.left, tc.ok)
		}
	}
}
