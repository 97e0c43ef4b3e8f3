package toolcallback_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/adk/v2/platform"

	"github.com/baton-run/baton/sessionstore"
	"github.com/baton-run/baton/toolcallback"
)

// pausedFixture is a fixture whose session s1 has call c1 (change_bgm)
// pending for tab-a; script continues the model after that.
func pausedFixture(t *testing.T, opts *toolcallback.Options, script ...reply) *fixture {
	t.Helper()
	f := newFixture(t, opts, append([]reply{callReply(call("c1", "change_bgm", map[string]any{"track": 2}))}, script...)...)
	if _, err := f.turn(f.team, "s1", "tab-a", "change the music to track 2"); err != nil {
		t.Fatalf("Turn() error = %v", err)
	}
	return f
}

func TestCancelPolicy(t *testing.T) {
	t.Parallel()
	f := pausedFixture(t, nil, echoReply)
	events, err := f.turn(f.team, "s1", "tab-a", "never mind, what time is it?")
	if err != nil {
		t.Fatalf("Turn() error = %v", err)
	}
	if got := f.callStatus("s1", "c1"); got != "cancelled" {
		t.Errorf("ledger status = %s, want cancelled", got)
	}
	// The model saw the cancellation and the new message (strict pairing
	// holds), and answered the message.
	req := dumpContents(f.model.LastRequest().Contents)
	if !strings.Contains(req, "response(c1 change_bgm map[error:cancelled") {
		t.Errorf("model request lacks the cancellation:\n%s", req)
	}
	if got := finalText(events); !strings.Contains(got, "text=never mind") {
		t.Errorf("model answer = %q, want it to answer the new message", got)
	}
	// A late answer is refused and changes nothing.
	before := f.counter.Snapshot()
	_, _, err = resume(f.team, t.Context(), "s1", "c1", "tab-a", toolcallback.Answer{Output: map[string]any{"playing": 2}})
	if !errors.Is(err, toolcallback.ErrExpired) {
		t.Errorf("late Resume() error = %v, want ErrExpired", err)
	}
	if w := f.counter.Snapshot().Sub(before).Writes; w != 0 {
		t.Errorf("late answer wrote %d documents, want 0", w)
	}
}

func TestRejectPolicy(t *testing.T) {
	t.Parallel()
	f := pausedFixture(t, &toolcallback.Options{PendingPolicy: toolcallback.PendingReject})
	before := f.counter.Snapshot()
	history := len(f.history("s1"))
	_, err := f.turn(f.team, "s1", "tab-a", "something else")
	var pending *toolcallback.PendingCallsError
	if !errors.As(err, &pending) || len(pending.Calls) != 1 || pending.Calls[0].ID != "c1" {
		t.Fatalf("Turn() error = %v, want PendingCallsError listing c1", err)
	}
	if w := f.counter.Snapshot().Sub(before).Writes; w != 0 {
		t.Errorf("refused turn wrote %d documents, want 0", w)
	}
	if n := len(f.history("s1")); n != history {
		t.Errorf("history grew from %d to %d events", history, n)
	}
	if got := f.callStatus("s1", "c1"); got != "pending" {
		t.Errorf("ledger status = %s, want pending", got)
	}
}

// TestSweepExpiry runs two sweepers at once past the call's deadline.
func TestSweepExpiry(t *testing.T) {
	t.Parallel()
	f := pausedFixture(t, nil, echoReply)
	second := f.newInstance()
	later := time.Now().Add(11 * time.Minute)
	reports := make([]toolcallback.SweepReport, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i, team := range []*toolcallback.Team{f.team, second} {
		wg.Go(func() { reports[i], errs[i] = team.Sweep(t.Context(), later) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatalf("Sweep() error = %v", err)
		}
	}
	if got := reports[0].Expired + reports[1].Expired; got != 1 {
		t.Errorf("calls expired = %d, want 1 (reports %+v)", got, reports)
	}
	if got := reports[0].Resumed + reports[1].Resumed; got != 1 {
		t.Errorf("steps resumed = %d, want 1 (reports %+v)", got, reports)
	}
	if f.model.Calls() != 2 {
		t.Fatalf("model called %d times, want 2", f.model.Calls())
	}
	if req := dumpContents(f.model.LastRequest().Contents); !strings.Contains(req, "error:no result within 10m") {
		t.Errorf("model was not told the call expired:\n%s", req)
	}
	// Sweeping again does nothing.
	again, err := f.team.Sweep(t.Context(), later)
	if err != nil || again != (toolcallback.SweepReport{}) {
		t.Errorf("second Sweep() = %+v, %v; want nothing done", again, err)
	}
	// A late answer gets the expired error.
	if _, _, err := resume(f.team, t.Context(), "s1", "c1", "tab-a", toolcallback.Answer{Output: map[string]any{}}); !errors.Is(err, toolcallback.ErrExpired) {
		t.Errorf("late Resume() error = %v, want ErrExpired", err)
	}
}

func TestAnswerAfterDeadlineBeforeSweep(t *testing.T) {
	t.Parallel()
	f := pausedFixture(t, nil)
	ctx := platform.WithTimeProvider(t.Context(), func() time.Time { return time.Now().Add(11 * time.Minute) })
	before := f.counter.Snapshot()
	if _, _, err := resume(f.team, ctx, "s1", "c1", "tab-a", toolcallback.Answer{Output: map[string]any{}}); !errors.Is(err, toolcallback.ErrExpired) {
		t.Errorf("Resume() after the deadline error = %v, want ErrExpired", err)
	}
	if w := f.counter.Snapshot().Sub(before).Writes; w != 0 {
		t.Errorf("refused answer wrote %d documents, want 0", w)
	}
}

// TestRefusedAnswers: every refused answer names its reason and writes
// nothing.
func TestRefusedAnswers(t *testing.T) {
	t.Parallel()
	f := pausedFixture(t, nil)
	ok := toolcallback.Answer{Output: map[string]any{"playing": 2}}
	pending := f.pending("s1", "tab-a")
	if len(pending) != 1 {
		t.Fatalf("Pending() = %d calls, want 1", len(pending))
	}
	token, err := f.team.Token(pending[0])
	if err != nil {
		t.Fatal(err)
	}
	// A forged signature: its first character changed. That is six bits
	// of the MAC, so the forgery never decodes to the same bytes. (Ending
	// it in "xx" did, about once in a thousand runs: the last character's
	// low bits are padding, which decoding ignores.)
	dot := strings.LastIndexByte(token, '.')
	first := byte('A')
	if token[dot+1] == first {
		first = 'B'
	}
	forged := token[:dot+1] + string(first) + token[dot+2:]
	otherArgs := *pending[0]
	otherArgs.Args = map[string]any{"track": 9}
	mismatched, err := f.team.Token(&otherArgs)
	if err != nil {
		t.Fatal(err)
	}
	expiredCall := *pending[0]
	expiredCall.Expires = time.Now().Add(-time.Minute)
	expired, err := f.team.Token(&expiredCall)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		result  toolcallback.ResumeRequest
		wantErr error
	}{
		{"wrong client", toolcallback.ResumeRequest{UserID: "user-1", ChatID: "s1", CallID: "c1", ClientID: "tab-b", Answer: ok}, toolcallback.ErrWrongClient},
		// Another user's chat is not found, as a chat that does not exist.
		{"other user", toolcallback.ResumeRequest{UserID: "user-2", ChatID: "s1", CallID: "c1", ClientID: "tab-a", Answer: ok}, sessionstore.ErrNotFound},
		{"unknown call", toolcallback.ResumeRequest{UserID: "user-1", ChatID: "s1", CallID: "c9", ClientID: "tab-a", Answer: ok}, toolcallback.ErrCallNotFound},
		{"unknown chat", toolcallback.ResumeRequest{UserID: "user-1", ChatID: "s9", CallID: "c1", ClientID: "tab-a", Answer: ok}, sessionstore.ErrNotFound},
		{"invalid call id", toolcallback.ResumeRequest{UserID: "user-1", ChatID: "s1", CallID: "a/b", ClientID: "tab-a", Answer: ok}, sessionstore.ErrInvalidID},
		{"oversize", toolcallback.ResumeRequest{UserID: "user-1", ChatID: "s1", CallID: "c1", ClientID: "tab-a",
			Answer: toolcallback.Answer{Output: map[string]any{"blob": strings.Repeat("x", 300<<10)}}}, toolcallback.ErrAnswerTooLarge},
		{"approval for a browser call", toolcallback.ResumeRequest{UserID: "user-1", ChatID: "s1", CallID: "c1", ClientID: "tab-a",
			Answer: toolcallback.Answer{Approved: ptr(true)}}, toolcallback.ErrInvalidAnswer},
		{"empty answer", toolcallback.ResumeRequest{UserID: "user-1", ChatID: "s1", CallID: "c1", ClientID: "tab-a"}, toolcallback.ErrInvalidAnswer},
		{"forged token", toolcallback.ResumeRequest{Token: forged, Answer: ok}, toolcallback.ErrInvalidCallToken},
		{"token for other arguments", toolcallback.ResumeRequest{Token: mismatched, Answer: ok}, toolcallback.ErrInvalidCallToken},
		{"expired token", toolcallback.ResumeRequest{Token: expired, Answer: ok}, toolcallback.ErrInvalidCallToken},
		{"garbage token", toolcallback.ResumeRequest{Token: "not-a-token", Answer: ok}, toolcallback.ErrInvalidCallToken},
	}
	for _, tc := range tests {
		before := f.counter.Snapshot()
		_, err := f.team.Resume(t.Context(), tc.result)
		if !errors.Is(err, tc.wantErr) {
			t.Errorf("%s: Resume() error = %v, want %v", tc.name, err, tc.wantErr)
		}
		if w := f.counter.Snapshot().Sub(before).Writes; w != 0 {
			t.Errorf("%s: %d documents written, want 0", tc.name, w)
		}
	}
	if got := f.callStatus("s1", "c1"); got != "pending" {
		t.Errorf("ledger status after refused answers = %s, want pending", got)
	}
	if f.model.Calls() != 1 {
		t.Errorf("model called %d times, want 1", f.model.Calls())
	}
}

func TestTokenAnswers(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil, callReply(call("x1", "ask_crm", map[string]any{"query": "vip?"})), echoReply)
	if _, err := f.turn(f.team, "s1", "tab-a", "is Ada a VIP?"); err != nil {
		t.Fatal(err)
	}
	calls := f.pending("s1", "tab-a")
	if len(calls) != 1 || calls[0].Kind != toolcallback.KindExternal {
		t.Fatalf("Pending() = %+v, want one external call", calls)
	}
	token, err := f.team.Token(calls[0])
	if err != nil {
		t.Fatal(err)
	}
	answer := toolcallback.Answer{Output: map[string]any{"vip": true}}
	res, err := f.team.Resume(t.Context(), toolcallback.ResumeRequest{Token: token, Answer: answer})
	if err != nil {
		t.Fatalf("Resume(token) error = %v", err)
	}
	events, err := collect(res.Invocation)
	if err != nil {
		t.Fatal(err)
	}
	if got := finalText(events); !strings.Contains(got, `ask_crm={"vip":true}`) {
		t.Errorf("model answer = %q, want the external result", got)
	}
	_, err = f.team.Resume(t.Context(), toolcallback.ResumeRequest{Token: token, Answer: answer})
	var already *toolcallback.AlreadyResolvedError
	if !errors.As(err, &already) || !already.Same {
		t.Errorf("retried token answer error = %v, want AlreadyResolvedError with Same", err)
	}
}

func TestAnyDeviceAndVisibility(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil, callReply(call("c1", "change_bgm", map[string]any{"track": 1}), call("l1", "get_location", nil)), echoReply)
	if _, err := f.turn(f.team, "s1", "tab-a", "music and location"); err != nil {
		t.Fatal(err)
	}
	ids := func(calls []*toolcallback.Call) string {
		var s []string
		for _, c := range calls {
			s = append(s, c.ID)
		}
		return strings.Join(s, ",")
	}
	if got := ids(f.pending("s1", "tab-a")); got != "c1,l1" {
		t.Errorf("Pending(tab-a) = %s, want c1,l1", got)
	}
	if got := ids(f.pending("s1", "tab-b")); got != "l1" {
		t.Errorf("Pending(tab-b) = %s, want only the any-device call l1", got)
	}
	if _, _, err := resume(f.team, t.Context(), "s1", "l1", "tab-b", toolcallback.Answer{Output: map[string]any{"city": "Oslo"}}); err != nil {
		t.Errorf("Resume(l1 from tab-b) error = %v, want accepted", err)
	}
	if _, err := f.team.Pending(t.Context(), toolcallback.PendingRequest{UserID: "user-2", ChatID: "s1", ClientID: "tab-a"}); !errors.Is(err, sessionstore.ErrNotFound) {
		t.Errorf("Pending(other user) error = %v, want ErrNotFound", err)
	}
}

// TestSweepStartsNoResumeItCannotFinish: with less time left than an
// invocation may take, Sweep expires the call but leaves its resume to the
// next sweep.
func TestSweepStartsNoResumeItCannotFinish(t *testing.T) {
	t.Parallel()
	f := pausedFixture(t, &toolcallback.Options{InvocationTimeout: time.Minute}, echoReply)
	later := time.Now().Add(11 * time.Minute)
	short, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	report, err := f.team.Sweep(short, later)
	if err != nil || report.Expired != 1 || report.Resumed != 0 || report.Skipped != 1 {
		t.Fatalf("short Sweep() = %+v, %v; want the call expired and its resume skipped", report, err)
	}
	if f.model.Calls() != 1 {
		t.Errorf("model called %d times, want 1", f.model.Calls())
	}
	report, err = f.team.Sweep(t.Context(), later)
	if err != nil || report.Resumed != 1 {
		t.Errorf("next Sweep() = %+v, %v; want the step resumed", report, err)
	}
}
