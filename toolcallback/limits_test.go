package toolcallback_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"google.golang.org/adk/v2/platform"
	"google.golang.org/genai"

	"github.com/baton-run/baton/internal/firestoretest"
	"github.com/baton-run/baton/limits"
	"github.com/baton-run/baton/modeltest"
	"github.com/baton-run/baton/sessionstore"
	"github.com/baton-run/baton/toolcallback"
)

// limitClock is a pinned clock: at(d) is a context at base+d.
func limitClock(t *testing.T) func(d time.Duration) context.Context {
	base := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	return func(d time.Duration) context.Context {
		return platform.WithTimeProvider(t.Context(), func() time.Time { return base.Add(d) })
	}
}

func limitedTurn(user, chat string, l limits.Limits) toolcallback.TurnRequest {
	return toolcallback.TurnRequest{UserID: user, ChatID: chat, ClientID: "tab", Content: genai.NewContentFromText("hi", genai.RoleUser), Limits: l}
}

// twoCountingInstances returns a fixture whose model answers "ok" with
// 100 tokens, and two instances a and b of its team, counting tokens.
func twoCountingInstances(t *testing.T, opts *toolcallback.Options) (f *fixture, a, b *toolcallback.Team) {
	opts.CountTokens = true
	f = newFixture(t, opts)
	f.model.Repeat = textReply("ok")
	f.model.Usage = &genai.GenerateContentResponseUsageMetadata{TotalTokenCount: 100}
	clientB, _ := firestoretest.Reopen(t, f.client)
	return f, f.team, f.instanceOn(clientB)
}

// limitedStep is a turn of ada's in chat on team.
type limitedStep struct {
	team *toolcallback.Team
	chat string
}

// limitedTurns runs ada's steps under lim, a minute apart from at(0).
func limitedTurns(t *testing.T, at func(time.Duration) context.Context, lim limits.Limits, steps ...limitedStep) {
	t.Helper()
	for i, step := range steps {
		if _, _, err := runTurn(at(time.Duration(i)*time.Minute), step.team, limitedTurn("ada", step.chat, lim)); err != nil {
			t.Fatalf("turn %d: %v", i, err)
		}
	}
}

// wantLimited checks that err refuses a turn for the limit of scope, with
// sentinel and a wait of about wait.
func wantLimited(t *testing.T, err, sentinel error, scope string, wait time.Duration) {
	t.Helper()
	var le *limits.LimitError
	if !errors.Is(err, sentinel) || !errors.As(err, &le) || le.Scope != scope {
		t.Fatalf("Turn() error = %v, want %v for the %s", err, sentinel, scope)
	}
	if d := le.RetryAfter - wait; d < -time.Second || d > time.Second {
		t.Errorf("RetryAfter = %s, want about %s", le.RetryAfter, wait)
	}
}

// TestTurnRateLimitsAcrossInstances: the counts are Firestore's, not an
// instance's: a user over the per-user limit on one instance is refused
// on the other, another user is not, and a chat's limit does not hold back
// the user's other chats. A refused turn writes nothing and calls no model
// (warm turns are off: a stale copy's turn would ask the model beside its
// commit, which fails, before it is refused on a read).
func TestTurnRateLimitsAcrossInstances(t *testing.T) {
	t.Parallel()
	f := newFixture(t, &toolcallback.Options{WarmChats: -1})
	f.model.Repeat = textReply("ok")
	clientB, counterB := firestoretest.Reopen(t, f.client)
	a, b := f.team, f.instanceOn(clientB)
	at := limitClock(t)
	lim := limits.Limits{UserTurnsPerMinute: 3, ChatTurnsPerMinute: 2}
	run := func(team *toolcallback.Team, d time.Duration, user, chat string) error {
		t.Helper()
		_, _, err := runTurn(at(d), team, limitedTurn(user, chat, lim))
		return err
	}
	for i, step := range []struct {
		team *toolcallback.Team
		d    time.Duration
		chat string
		user string
	}{{a, 0, "c1", "ada"}, {b, time.Second, "c1", "ada"}} {
		if err := run(step.team, step.d, step.user, step.chat); err != nil {
			t.Fatalf("turn %d: %v", i, err)
		}
	}
	refused := func(team *toolcallback.Team, d time.Duration, user, chat string) error {
		t.Helper()
		calls, writes, writesB := f.model.Calls(), f.counter.Writes(), counterB.Writes()
		err := run(team, d, user, chat)
		if f.model.Calls() != calls || f.counter.Writes() != writes || counterB.Writes() != writesB {
			t.Errorf("a refused turn called the model or wrote (error %v)", err)
		}
		return err
	}
	// The chat has had its two turns in this minute, on two instances.
	wantLimited(t, refused(a, 2*time.Second, "ada", "c1"), limits.ErrRateLimited, "chat", 58*time.Second)
	// The user's other chat is free, on either instance: the user's third turn.
	if err := run(b, 3*time.Second, "ada", "c2"); err != nil {
		t.Fatalf("turn in another chat: %v", err)
	}
	// The user has had three turns: a fourth is refused on both instances,
	// in a chat of its own too.
	wantLimited(t, refused(a, 4*time.Second, "ada", "c3"), limits.ErrRateLimited, "user", 56*time.Second)
	wantLimited(t, refused(b, 5*time.Second, "ada", "c2"), limits.ErrRateLimited, "user", 55*time.Second)
	// Another user is not held back.
	if err := run(a, 5*time.Second, "bob", "c1"); err != nil {
		t.Fatalf("another user's turn: %v", err)
	}
	// Once the turns of 0 s and 1 s have left the window, two more pass;
	// the next waits for the turn of 3 s to leave it.
	for _, chat := range []string{"c3", "c4"} {
		if err := run(b, 61*time.Second, "ada", chat); err != nil {
			t.Fatalf("turn after the window: %v", err)
		}
	}
	wantLimited(t, refused(a, 62*time.Second, "ada", "c5"), limits.ErrRateLimited, "user", 1*time.Second)
}

// TestUserRateRace: turns of one user racing in different chats on two
// instances do not pass the per-user limit together: the count is checked
// and written in the commit that stores each message, conditional on it.
// The model is asked beside that commit, so a turn that lost may have
// asked it; it stored nothing.
func TestUserRateRace(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	f.model.Repeat = textReply("ok")
	clientB, _ := firestoretest.Reopen(t, f.client)
	teams := []*toolcallback.Team{f.team, f.instanceOn(clientB)}
	warmUp(t, teams...)
	lim := limits.Limits{UserTurnsPerMinute: 2}
	const racers = 8
	var wg sync.WaitGroup
	errs := make([]error, racers)
	ctx := limitClock(t)(0)
	for i := range racers {
		wg.Go(func() {
			_, _, errs[i] = runTurn(ctx, teams[i%2], limitedTurn("ada", fmt.Sprintf("c%d", i), lim))
		})
	}
	wg.Wait()
	passed := 0
	for _, err := range errs {
		switch {
		case err == nil:
			passed++
		case errors.Is(err, limits.ErrRateLimited), errors.Is(err, sessionstore.ErrBusy):
		default:
			t.Fatalf("racing turn: %v", err)
		}
	}
	if passed > lim.UserTurnsPerMinute || passed == 0 {
		t.Errorf("%d of %d racing turns passed, want 1 to %d", passed, racers, lim.UserTurnsPerMinute)
	}
	for i, err := range errs {
		chat := fmt.Sprintf("c%d", i)
		if n := f.storedEvents("ada", chat); (err == nil) != (n > 0) {
			t.Errorf("chat %s: turn error %v, %d events stored: a refused turn stores nothing, a turn that ran stores its message", chat, err, n)
		}
	}
}

// storedEvents returns how many events user's chat stores: 0 for a chat
// that was never stored.
func (f *fixture) storedEvents(user, chat string) int {
	f.t.Helper()
	c, err := f.sessions.GetChat(f.t.Context(), "app", user, chat)
	if errors.Is(err, sessionstore.ErrNotFound) {
		return 0
	}
	if err != nil {
		f.t.Fatal(err)
	}
	got, err := f.sessions.Read(f.t.Context(), sessionstore.ReadRequest{App: "app", User: user, SessionID: c.SessionID})
	if errors.Is(err, sessionstore.ErrNotFound) {
		return 0
	}
	if err != nil {
		f.t.Fatal(err)
	}
	return got.Events().Len()
}

// TestTokenBudgetAcrossInstances: tokens are counted from each model
// response's usage metadata; once a user's day has reached the budget, the
// next turn is refused on any instance, in any chat, until the next day,
// storing nothing. The turn that crossed the budget ran whole: it overran
// by what it used. The day's count is read beside the model request, so
// the first refused turn on an instance asked the model (and cancelled it);
// that instance then refuses the user without asking it, all day.
func TestTokenBudgetAcrossInstances(t *testing.T) {
	t.Parallel()
	f, a, b := twoCountingInstances(t, &toolcallback.Options{})
	at := limitClock(t)
	lim := limits.Limits{UserTokensPerDay: 250}
	limitedTurns(t, at, lim, limitedStep{a, "c1"}, limitedStep{b, "c2"}, limitedStep{a, "c1"})
	if got := f.tokensOf("ada", at(0)); got != 300 {
		t.Errorf("tokens counted = %d, want 300 (three responses of 100)", got)
	}
	// 10:05 UTC: 13 h 55 min to the next day.
	storedC2 := f.storedEvents("ada", "c2")
	_, _, err := runTurn(at(5*time.Minute), b, limitedTurn("ada", "c3", lim))
	wantLimited(t, err, limits.ErrBudgetExhausted, "user", 13*time.Hour+55*time.Minute)
	_, _, err = runTurn(at(6*time.Minute), a, limitedTurn("ada", "c2", lim))
	wantLimited(t, err, limits.ErrBudgetExhausted, "user", 13*time.Hour+54*time.Minute)
	if n, m := f.storedEvents("ada", "c3"), f.storedEvents("ada", "c2"); n != 0 || m != storedC2 {
		t.Errorf("refused turns stored %d events in a new chat and %d in c2 (%d before): want nothing stored", n, m-storedC2, storedC2)
	}
	if got := f.tokensOf("ada", at(0)); got != 300 {
		t.Errorf("tokens counted after the refused turns = %d, want 300", got)
	}
	calls := f.model.Calls()
	for i, team := range []*toolcallback.Team{a, b} {
		_, _, err = runTurn(at(time.Duration(7+i)*time.Minute), team, limitedTurn("ada", "c1", lim))
		wantLimited(t, err, limits.ErrBudgetExhausted, "user", 13*time.Hour+time.Duration(53-i)*time.Minute)
	}
	if f.model.Calls() != calls {
		t.Errorf("an instance that had refused the user's turn for the budget asked the model again that day")
	}
	if _, _, err := runTurn(at(time.Minute), a, limitedTurn("bob", "c1", lim)); err != nil {
		t.Errorf("another user's turn: %v", err)
	}
	if _, _, err := runTurn(at(14*time.Hour), b, limitedTurn("ada", "c3", lim)); err != nil {
		t.Errorf("turn on the next day: %v", err)
	}
}

// TestBudgetRefusalStoresNothing: a warm turn whose model calls a browser
// tool before the day's count has been read is refused for the budget
// with nothing stored: the call's append (which creates the call's ledger
// record) waits for the claiming commit, which the budget refuses, and
// the chat is not left held. The count's read is held until the call's
// append has started.
func TestBudgetRefusalStoresNothing(t *testing.T) {
	t.Parallel()
	log := &errorLog{}
	opts := &toolcallback.Options{Logger: log.logger()}
	watch := newClaimWatch(opts)
	f, a, b := twoCountingInstances(t, opts)
	at := limitClock(t)
	lim := limits.Limits{UserTokensPerDay: 250}
	// a serves c1 (its copy is warm); b spends the rest of the day's budget.
	limitedTurns(t, at, lim, limitedStep{a, "c1"}, limitedStep{b, "c2"}, limitedStep{b, "c2"})
	stored := f.storedEvents("ada", "c1")
	f.model.Repeat = callReply(call("c9", "change_bgm", map[string]any{"track": 9}))
	watch.hold(t, f.counter, "/RunAggregationQuery")
	_, _, err := runTurn(at(5*time.Minute), a, limitedTurn("ada", "c1", lim))
	f.counter.SetHook(nil)
	wantLimited(t, err, limits.ErrBudgetExhausted, "user", 13*time.Hour+55*time.Minute)
	if !watch.held.Load() {
		t.Fatal("the warm turn never read the day's count")
	}
	if n := f.storedEvents("ada", "c1"); n != stored {
		t.Errorf("the refused turn stored %d events in c1, want none", n-stored)
	}
	if got := log.got(); len(got) > 0 {
		t.Errorf("the refused turn logged errors: %q", got)
	}
	f.model.Repeat = textReply("ok")
	if _, _, err := runTurn(at(14*time.Hour), a, limitedTurn("ada", "c1", lim)); err != nil {
		t.Errorf("turn on the next day: %v", err)
	}
}

// TestTokenBudgetAfterSwitch: an agent switch deletes the chat's old
// session, whose document counted the tokens of the turns before it; they
// still count, so the switch gives no budget back.
func TestTokenBudgetAfterSwitch(t *testing.T) {
	t.Parallel()
	f := newTeamFixture(t, func(o *toolcallback.Options) { o.CountTokens = true })
	for _, m := range []*modeltest.Strict{f.concierge, f.dj} {
		m.Repeat = textReply("ok")
		m.Usage = &genai.GenerateContentResponseUsageMetadata{TotalTokenCount: 100}
	}
	ctx := limitClock(t)(0)
	lim := limits.Limits{UserTokensPerDay: 250}
	turn := func(agent string) error {
		req := limitedTurn("user-1", "chat", lim)
		req.Agent = agent
		_, _, err := runTurn(ctx, f.team, req)
		return err
	}
	for i, agent := range []string{"concierge", "concierge", "dj"} {
		if err := turn(agent); err != nil {
			t.Fatalf("turn %d: %v", i, err)
		}
	}
	if ids := f.sessionIDs(); len(ids) != 1 {
		t.Fatalf("sessions after the switch = %v, want the new one only", ids)
	}
	wantLimited(t, turn("dj"), limits.ErrBudgetExhausted, "user", 14*time.Hour)
}

// TestTokenBudgetRace: turns racing at the edge of the budget all pass the
// check before any of them has used anything, so they overrun it by at
// most what the turns in flight use; every response is counted (no count
// lost to a concurrent one), and once they are counted no turn passes.
func TestTokenBudgetRace(t *testing.T) {
	t.Parallel()
	f := newFixture(t, &toolcallback.Options{CountTokens: true})
	f.model.Repeat = textReply("ok")
	f.model.Usage = &genai.GenerateContentResponseUsageMetadata{TotalTokenCount: 100}
	clientB, _ := firestoretest.Reopen(t, f.client)
	teams := []*toolcallback.Team{f.team, f.instanceOn(clientB)}
	warmUp(t, teams...)
	lim := limits.Limits{UserTokensPerDay: 250}
	ctx := limitClock(t)(0)
	if _, _, err := runTurn(ctx, f.team, limitedTurn("ada", "c0", lim)); err != nil {
		t.Fatal(err)
	}
	// Hold the model so that every racer is in flight at once.
	gate := make(chan struct{})
	f.model.Gate = gate
	const racers = 6
	invs := make([]*toolcallback.Invocation, racers)
	errs := make([]error, racers)
	var wg sync.WaitGroup
	for i := range racers {
		wg.Go(func() {
			invs[i], _, errs[i] = teams[i%2].Turn(ctx, limitedTurn("ada", fmt.Sprintf("c%d", i+1), lim))
		})
	}
	wg.Wait()
	close(gate)
	inFlight := 0
	for i, inv := range invs {
		if errs[i] != nil {
			t.Fatalf("racer %d: %v", i, errs[i])
		}
		if _, err := collect(inv); err != nil {
			t.Fatalf("racer %d: %v", i, err)
		}
		inFlight++
	}
	used := f.tokensOf("ada", ctx)
	if want := int64(100 * (1 + inFlight)); used != want {
		t.Errorf("tokens counted = %d, want %d (one response of 100 per turn)", used, want)
	}
	if over := used - lim.UserTokensPerDay; over > int64(100*inFlight) {
		t.Errorf("budget overrun by %d, more than the %d turns in flight used", over, inFlight)
	}
	_, _, err := runTurn(ctx, teams[1], limitedTurn("ada", "c1", lim))
	wantLimited(t, err, limits.ErrBudgetExhausted, "user", 14*time.Hour)
}

// warmUp runs a turn on each team, for another user: ADK's runner sets
// its root agent's mode on the agent's first run, which two first runs
// racing would both write (a data race in ADK v2.2.0).
func warmUp(t *testing.T, teams ...*toolcallback.Team) {
	t.Helper()
	for i, team := range teams {
		if _, _, err := runTurn(t.Context(), team, limitedTurn("warm-up", fmt.Sprint("w", i), limits.Limits{})); err != nil {
			t.Fatal(err)
		}
	}
}

// tokensOf reads user's token count for the day of ctx's clock: what the
// user's sessions counted, and what the deleted ones had.
func (f *fixture) tokensOf(user string, ctx context.Context) int64 {
	f.t.Helper()
	at := platform.Now(ctx)
	stored, err := f.sessions.SessionTokens(f.t.Context(), "app", user, at)
	if err != nil {
		f.t.Fatalf("sum tokens: %v", err)
	}
	docs, err := f.sessions.ReadDocs(f.t.Context(), f.sessions.DayTokensDoc("app", user, at))
	if err != nil {
		f.t.Fatalf("read token count: %v", err)
	}
	deleted, err := sessionstore.DayTokens(docs[0])
	if err != nil {
		f.t.Fatal(err)
	}
	return stored + deleted
}

// TestTokenBudgetAlternatingInstances: two instances with warm copies
// (whose turns read nothing before the model) take turns for one user, in
// one chat and in two, until the budget refuses them. The day's count is
// read at each turn's start, beside the model request, and the turn's
// commit waits for it: the user's day never exceeds the budget by more
// than the one turn that crossed it (the documented bound, for turns that
// do not race), and both instances refuse from then on.
func TestTokenBudgetAlternatingInstances(t *testing.T) {
	t.Parallel()
	for _, chats := range [][]string{{"c1", "c1"}, {"c1", "c2"}} {
		t.Run(fmt.Sprintf("chats %v", chats), func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, &toolcallback.Options{CountTokens: true, SessionStateOnly: true})
			f.model.Repeat = textReply("ok")
			f.model.Usage = &genai.GenerateContentResponseUsageMetadata{TotalTokenCount: 100}
			clientB, _ := firestoretest.Reopen(t, f.client)
			teams := []*toolcallback.Team{f.team, f.instanceOn(clientB)}
			lim := limits.Limits{UserTokensPerDay: 1000}
			at := limitClock(t)
			ran := 0
			for i := 0; ; i++ {
				_, _, err := runTurn(at(time.Duration(i)*time.Second), teams[i%2], limitedTurn("ada", chats[i%2], lim))
				if errors.Is(err, limits.ErrBudgetExhausted) {
					break
				}
				if err != nil {
					t.Fatalf("turn %d: %v", i, err)
				}
				if ran++; ran > 20 {
					t.Fatal("20 turns of 100 tokens ran within a budget of 1000")
				}
			}
			if got := f.tokensOf("ada", at(0)); got < lim.UserTokensPerDay || got > lim.UserTokensPerDay+100 {
				t.Errorf("the day counted %d tokens over %d turns, want the budget (%d) reached and overrun by at most one turn (100)", got, ran, lim.UserTokensPerDay)
			}
			for i, team := range teams {
				_, _, err := runTurn(at(time.Minute), team, limitedTurn("ada", chats[i], lim))
				wantLimited(t, err, limits.ErrBudgetExhausted, "user", 14*time.Hour-time.Minute)
			}
		})
	}
}
