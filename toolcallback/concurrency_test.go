package toolcallback_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/baton-run/baton/internal/polltest"
	"github.com/baton-run/baton/sessionstore"
	"github.com/baton-run/baton/toolcallback"
)

// TestStepResumedOnceWithAllAnswers answers two calls of one model step
// from two goroutines at once.
func TestStepResumedOnceWithAllAnswers(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil,
		callReply(call("c1", "change_bgm", map[string]any{"track": 3}), call("c2", "get_location", nil)),
		echoReply,
	)
	if _, err := f.turn(f.team, "s1", "tab-a", "play track 3 and tell me where I am"); err != nil {
		t.Fatalf("Turn() error = %v", err)
	}
	second := f.newInstance()
	teams := []*toolcallback.Team{f.team, second}
	answers := []struct {
		id     string
		answer toolcallback.Answer
	}{
		{"c1", toolcallback.Answer{Output: map[string]any{"playing": 3}}},
		{"c2", toolcallback.Answer{Output: map[string]any{"city": "Kyoto"}}},
	}
	results := make([]*toolcallback.ResumeOutcome, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Go(func() {
			results[i], _, errs[i] = resume(teams[i], t.Context(), "s1", answers[i].id, "tab-a", answers[i].answer)
		})
	}
	wg.Wait()
	resumed := 0
	for i := range 2 {
		if errs[i] != nil {
			t.Fatalf("Resume(%s) error = %v", answers[i].id, errs[i])
		}
		if results[i].Invocation != nil {
			resumed++
		}
	}
	if resumed != 1 {
		t.Errorf("%d resumptions, want exactly 1", resumed)
	}
	if f.model.Calls() != 2 {
		t.Fatalf("model called %d times, want 2", f.model.Calls())
	}
	last := f.model.LastRequest().Contents
	got := dumpContents(last[len(last)-1:])
	if !strings.Contains(got, "response(c1") || !strings.Contains(got, "response(c2") {
		t.Errorf("resumed request's last content = %s, want both responses", got)
	}
}

// TestDuplicateAnswers sends the same answer 20 times at once.
func TestDuplicateAnswers(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil, callReply(call("c1", "change_bgm", map[string]any{"track": 1})), echoReply)
	if _, err := f.turn(f.team, "s1", "tab-a", "track 1 please"); err != nil {
		t.Fatalf("Turn() error = %v", err)
	}
	const n = 20
	results := make([]*toolcallback.ResumeOutcome, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			results[i], _, errs[i] = resume(f.team, t.Context(), "s1", "c1", "tab-a", toolcallback.Answer{Output: map[string]any{"playing": 1}})
		})
	}
	wg.Wait()
	accepted := 0
	for i := range n {
		var already *toolcallback.AlreadyResolvedError
		switch {
		case errs[i] == nil:
			accepted++
			if results[i].Invocation == nil {
				t.Errorf("accepted answer did not resume the agent")
			}
		case errors.As(errs[i], &already):
			if !already.Same || already.Call.Status != toolcallback.StatusResolved || already.Call.Answer.Output["playing"] != float64(1) {
				t.Errorf("AlreadyResolvedError = %+v, want the recorded outcome marked Same", already)
			}
		default:
			t.Errorf("Resume() error = %v, want nil or AlreadyResolvedError", errs[i])
		}
	}
	if accepted != 1 {
		t.Errorf("%d answers accepted, want 1", accepted)
	}
	if f.model.Calls() != 2 {
		t.Errorf("model called %d times, want 2 (one turn, one resume)", f.model.Calls())
	}
}

// TestConcurrentTurns holds one turn inside the model while a second one
// arrives on the same session.
func TestConcurrentTurns(t *testing.T) {
	t.Parallel()
	for _, policy := range []toolcallback.LeasePolicy{toolcallback.LeaseReject, toolcallback.LeaseEnqueue} {
		t.Run(string(policy), func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, &toolcallback.Options{LeasePolicy: policy, MaxWait: 20 * time.Second},
				textReply("ready"), textReply("first"), textReply("second"))
			// The chat and its session exist before the race, so both
			// turns contend for its lease only.
			if _, err := f.turn(f.team, "s1", "tab-a", "hello"); err != nil {
				t.Fatal(err)
			}
			gate := make(chan struct{})
			f.model.Gate = gate
			first, _, err := f.team.Turn(t.Context(), textTurn("s1", "tab-a", "one"))
			if err != nil {
				t.Fatalf("first Turn() error = %v", err)
			}
			polltest.Until(t, "the first turn to call the model", func() bool { return f.model.Calls() == 2 })
			// The second turn reads the chat with its session, finds it
			// busy, and (enqueued) reads it again to take the lease.
			var reads atomic.Int32
			f.counter.SetHook(func(method string, _ any) error {
				if strings.HasSuffix(method, "/BatchGetDocuments") {
					reads.Add(1)
				}
				return nil
			})
			type outcome struct {
				inv *toolcallback.Invocation
				err error
			}
			done := make(chan outcome, 1)
			go func() {
				inv, _, err := f.team.Turn(t.Context(), textTurn("s1", "tab-b", "two"))
				done <- outcome{inv, err}
			}()
			if policy == toolcallback.LeaseReject {
				o := <-done
				var busy *sessionstore.BusyError
				if !errors.As(o.err, &busy) || busy.RetryAfter <= 0 {
					t.Fatalf("second Turn() error = %v, want BusyError with RetryAfter", o.err)
				}
				close(gate)
				if _, err := collect(first); err != nil {
					t.Fatal(err)
				}
				return
			}
			polltest.Until(t, "the second turn to find the session busy and wait", func() bool { return reads.Load() >= 2 })
			close(gate)
			if _, err := collect(first); err != nil {
				t.Fatal(err)
			}
			o := <-done
			if o.err != nil {
				t.Fatalf("enqueued Turn() error = %v", o.err)
			}
			if _, err := collect(o.inv); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, ev := range f.history("s1") {
				got = append(got, ev.Author+":"+ev.Content.Parts[0].Text)
			}
			want := "user:hello assistant:ready user:one assistant:first user:two assistant:second"
			if strings.Join(got, " ") != want {
				t.Errorf("history = %v, want %s", got, want)
			}
		})
	}
}

// TestCallerCancellation cancels the caller while the model is working:
// the invocation still finishes, records its call and releases the lease.
func TestCallerCancellation(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil, callReply(call("c1", "change_bgm", map[string]any{"track": 5})), echoReply)
	gate := make(chan struct{})
	f.model.Gate = gate
	ctx, cancel := context.WithCancel(t.Context())
	inv, _, err := f.team.Turn(ctx, textTurn("s1", "tab-a", "track 5"))
	if err != nil {
		t.Fatalf("Turn() error = %v", err)
	}
	polltest.Until(t, "the turn to call the model", func() bool { return f.model.Calls() == 1 })
	cancel() // the client went away
	close(gate)
	if err := inv.Wait(); err != nil {
		t.Fatalf("invocation error = %v, want it to finish despite the caller", err)
	}
	if got := f.callStatus("s1", "c1"); got != "pending" {
		t.Errorf("ledger status = %s, want pending", got)
	}
	f.model.Gate = nil
	// The session is free again and the transcript is valid for the model
	// (the strict model checks the resumed request).
	if _, _, err := resume(f.team, t.Context(), "s1", "c1", "tab-a", toolcallback.Answer{Output: map[string]any{"playing": 5}}); err != nil {
		t.Fatalf("Resume() error = %v", err)
	}
	if f.model.Calls() != 2 {
		t.Errorf("model called %d times, want 2", f.model.Calls())
	}
}

// TestPendingDuringTurnTakesNoLease: a reader that loads a chat while a
// turn runs sees a message not answered yet, as a dead turn would leave
// it; with the turn's lease live as read, it does not try to take the
// lease to repair it, which would only find it busy. So it reads the
// chat, the session and the ledger, and nothing more.
func TestPendingDuringTurnTakesNoLease(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	f.model.Repeat = textReply("ok")
	gate := make(chan struct{})
	f.model.Gate = gate
	inv, _, err := f.team.Turn(t.Context(), textTurn("s1", "tab-a", "hello"))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var sent []string
	f.counter.SetHook(func(method string, _ any) error {
		name := method[strings.LastIndexByte(method, '/')+1:]
		if name == "Listen" {
			return nil // the running turn's stop listener (toolcallback's stopListenDelay), not Pending's
		}
		mu.Lock()
		sent = append(sent, name)
		mu.Unlock()
		return nil
	})
	state, err := f.team.Pending(t.Context(), toolcallback.PendingRequest{UserID: "user-1", ChatID: "s1", ClientID: "tab-b", History: 50})
	f.counter.SetHook(nil)
	close(gate)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := collect(inv); err != nil {
		t.Fatal(err)
	}
	if state.History.Len() == 0 {
		t.Errorf("Pending during the turn shows no history")
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"BatchGetDocuments", "BatchGetDocuments", "RunQuery"}; !slices.Equal(sent, want) {
		t.Errorf("Pending during a turn sent %v; want %v (the chat, the session, the ledger)", sent, want)
	}
}
