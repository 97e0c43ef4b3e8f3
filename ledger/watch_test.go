package ledger_test

import (
	"context"
	"testing"
	"time"

	"github.com/baton-run/baton/ledger"
)

// TestAwait: Await returns once the record is settled, as recorded.
func TestAwait(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.record(call("s", "c1", 0))
	asRead := w.get("s", "c1")
	done := make(chan *ledger.Call, 1)
	// The bound turns a listener that never hears the answer into a
	// failure rather than a hung test; the wait itself is for the event.
	bound, stop := context.WithTimeout(t.Context(), time.Minute)
	defer stop()
	go func() {
		c, err := w.ledger.Await(bound, asRead)
		if err != nil {
			t.Errorf("Await() error = %v", err)
		}
		done <- c
	}()
	if _, err := w.ledger.Answer(t.Context(), asRead, ledger.Answer{Output: map[string]any{"ok": true}}, "tab-1", base); err != nil {
		t.Fatal(err)
	}
	if c := <-done; c == nil || c.Status != ledger.StatusResolved || c.Answer == nil {
		t.Errorf("Await() = %+v, want the answered call", c)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	w.record(call("s", "c2", 0))
	if c, err := w.ledger.Await(ctx, w.get("s", "c2")); err == nil {
		t.Errorf("Await(cancelled) = %+v, want an error", c)
	}
}

// TestAnswers: each answered, unresumed call once, as answers come.
func TestAnswers(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.record(call("s", "before", 0), call("s", "after", time.Second), call("s", "unanswered", 2*time.Second))
	if _, err := w.ledger.Answer(t.Context(), w.get("s", "before"), ledger.Answer{Error: "x"}, "tab-1", base); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var got []string
	for c, err := range w.ledger.Answers(ctx, "u", "s") {
		if err != nil {
			t.Fatalf("Answers() error = %v", err)
		}
		got = append(got, c.ID)
		if len(got) == 1 {
			// Marking the first resumed changes the results: it is not
			// yielded again.
			if err := w.ledger.MarkResumed(t.Context(), []*ledger.Call{c}); err != nil {
				t.Fatal(err)
			}
			if _, err := w.ledger.Answer(t.Context(), w.get("s", "after"), ledger.Answer{Error: "y"}, "tab-1", base); err != nil {
				t.Fatal(err)
			}
		}
		if len(got) == 2 {
			break
		}
	}
	if len(got) != 2 || got[0] != "before" || got[1] != "after" {
		t.Errorf("Answers() yielded %v, want [before after]", got)
	}
}

// TestQuestions: a pending in-call question, then its closing, as
// recorded; an expired question nobody closed is left out.
func TestQuestions(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	stale := call("s", "stale", 0)
	stale.InCall, stale.Resumed, stale.Kind = true, true, ledger.KindInput
	asked := call("s", "asked", 0)
	asked.InCall, asked.Resumed, asked.Kind, asked.Expires = true, true, ledger.KindInput, time.Now().Add(time.Hour)
	w.record(stale, asked, call("s", "ordinary", 0))
	var got []string
	for c, err := range w.ledger.Questions(ctx, "u", "s") {
		if err != nil {
			t.Fatalf("Questions() error = %v", err)
		}
		got = append(got, c.ID+":"+string(c.Status))
		if c.Status == ledger.StatusPending {
			if _, err := w.ledger.Answer(t.Context(), w.get("s", c.ID), ledger.Answer{Output: map[string]any{"responses": map[string]any{}}}, "tab-1", time.Now()); err != nil {
				t.Fatal(err)
			}
			continue
		}
		break
	}
	if len(got) != 2 || got[0] != "asked:pending" || got[1] != "asked:resolved" {
		t.Errorf("Questions() yielded %v, want [asked:pending asked:resolved]", got)
	}
}
