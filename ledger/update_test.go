package ledger_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/baton-run/baton/ledger"
	"github.com/baton-run/baton/sessionstore"
)

// TestFirstWriterWins: each conditional update of a record as read fails
// with ErrChanged, writing nothing, once another writer changed it.
func TestFirstWriterWins(t *testing.T) {
	t.Parallel()
	yes := true
	answer := ledger.Answer{Output: map[string]any{"playing": 2.0}}
	updates := []struct {
		name string
		do   func(ctx context.Context, l *ledger.Ledger, c *ledger.Call) (*ledger.Call, error)
		want ledger.Status
	}{
		{"Answer", func(ctx context.Context, l *ledger.Ledger, c *ledger.Call) (*ledger.Call, error) {
			return l.Answer(ctx, c, answer, "tab-1", base.Add(time.Minute))
		}, ledger.StatusResolved},
		{"Cancel", func(ctx context.Context, l *ledger.Ledger, c *ledger.Call) (*ledger.Call, error) {
			return l.Cancel(ctx, c, base.Add(time.Minute))
		}, ledger.StatusCancelled},
		{"Cancel past expiry", func(ctx context.Context, l *ledger.Ledger, c *ledger.Call) (*ledger.Call, error) {
			return l.Cancel(ctx, c, base.Add(time.Hour))
		}, ledger.StatusExpired},
		{"Expire", func(ctx context.Context, l *ledger.Ledger, c *ledger.Call) (*ledger.Call, error) {
			return l.Expire(ctx, c, base.Add(time.Hour))
		}, ledger.StatusExpired},
	}
	for _, first := range updates {
		for _, second := range updates {
			t.Run(first.name+" then "+second.name, func(t *testing.T) {
				t.Parallel()
				w := newWorld(t)
				ctx := t.Context()
				w.record(call("s", "c1", 0))
				asRead := w.get("s", "c1")
				got, err := first.do(ctx, w.ledger, asRead)
				if err != nil {
					t.Fatalf("%s error = %v", first.name, err)
				}
				if got.Status != first.want {
					t.Errorf("%s: status %s, want %s", first.name, got.Status, first.want)
				}
				if _, err := second.do(ctx, w.ledger, asRead); !errors.Is(err, ledger.ErrChanged) {
					t.Errorf("%s on the record as read before %s: error = %v, want ErrChanged", second.name, first.name, err)
				}
				stored := w.get("s", "c1")
				if stored.Status != first.want {
					t.Errorf("stored status %s, want %s (the first writer's)", stored.Status, first.want)
				}
				if first.want == ledger.StatusResolved && (!stored.SameAnswer(answer) || stored.ResolvedBy != "tab-1") {
					t.Errorf("stored answer %+v by %q, want %+v by tab-1", stored.Answer, stored.ResolvedBy, answer)
				}
			})
		}
	}
	t.Run("approval", func(t *testing.T) {
		t.Parallel()
		w := newWorld(t)
		w.record(call("s", "c1", 0))
		got, err := w.ledger.Answer(t.Context(), w.get("s", "c1"), ledger.Answer{Approved: &yes}, "", base)
		if err != nil || got.Answer == nil || got.Answer.Approved == nil || !*got.Answer.Approved {
			t.Fatalf("Answer(approved) = %+v, %v", got, err)
		}
		if !w.get("s", "c1").SameAnswer(ledger.Answer{Approved: &yes}) {
			t.Error("the stored answer differs from the one recorded")
		}
	})
}

// TestConcurrentAnswers: of writers racing on the same record as read,
// exactly one wins; every other gets ErrChanged.
func TestConcurrentAnswers(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.record(call("s", "c1", 0))
	asRead := w.get("s", "c1")
	const writers = 4
	var wg sync.WaitGroup
	errs := make([]error, writers)
	for i := range writers {
		wg.Go(func() {
			if i%2 == 0 {
				_, errs[i] = w.ledger.Answer(t.Context(), asRead, ledger.Answer{Output: map[string]any{"by": float64(i)}}, "tab-1", base)
			} else {
				_, errs[i] = w.ledger.Cancel(t.Context(), asRead, base)
			}
		})
	}
	wg.Wait()
	won := -1
	for i, err := range errs {
		switch {
		case err == nil && won >= 0:
			t.Errorf("writers %d and %d both won", won, i)
		case err == nil:
			won = i
		case !errors.Is(err, ledger.ErrChanged):
			t.Errorf("writer %d error = %v, want nil or ErrChanged", i, err)
		}
	}
	if won < 0 {
		t.Fatal("no writer won")
	}
	stored := w.get("s", "c1")
	if won%2 == 0 && !stored.SameAnswer(ledger.Answer{Output: map[string]any{"by": float64(won)}}) {
		t.Errorf("stored %s answer %+v, want writer %d's", stored.Status, stored.Answer, won)
	}
	if won%2 == 1 && stored.Status != ledger.StatusCancelled {
		t.Errorf("stored status %s, want cancelled (writer %d's)", stored.Status, won)
	}
}

// TestCommitWrites: the writes the ledger adds to a session's commit.
func TestCommitWrites(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	t.Run("AnswerWrite loses to an earlier answer", func(t *testing.T) {
		t.Parallel()
		w := newWorld(t)
		w.record(call("s", "c1", 0))
		asRead := w.get("s", "c1")
		write, answered, err := w.ledger.AnswerWrite(asRead, ledger.Answer{Error: "no"}, "tab-2", base)
		if err != nil || answered.Status != ledger.StatusResolved || answered.ResolvedBy != "tab-2" {
			t.Fatalf("AnswerWrite() = %+v, %v", answered, err)
		}
		if _, err := w.ledger.Answer(ctx, asRead, ledger.Answer{Error: "first"}, "tab-1", base); err != nil {
			t.Fatal(err)
		}
		if _, err := w.sessions.Commit(ctx, write...); !errors.Is(err, sessionstore.ErrConflict) {
			t.Errorf("commit of a stale AnswerWrite error = %v, want ErrConflict", err)
		}
		if got := w.get("s", "c1"); got.Answer == nil || got.Answer.Error != "first" {
			t.Errorf("stored answer %+v, want the first", got.Answer)
		}
	})
	t.Run("Closed", func(t *testing.T) {
		t.Parallel()
		w := newWorld(t)
		w.record(call("s", "open", 0), call("s", "late", 0), call("s", "answered", 0))
		if _, err := w.ledger.Answer(ctx, w.get("s", "answered"), ledger.Answer{Error: "x"}, "tab-1", base); err != nil {
			t.Fatal(err)
		}
		calls := []*ledger.Call{w.get("s", "open"), w.get("s", "late"), w.get("s", "answered")}
		if _, err := w.sessions.Commit(ctx, w.ledger.Closed(calls[:1], base)...); err != nil {
			t.Fatalf("commit Closed: %v", err)
		}
		if _, err := w.sessions.Commit(ctx, w.ledger.Closed(calls[1:], base.Add(time.Hour))...); err != nil {
			t.Fatalf("commit Closed: %v", err)
		}
		want := map[string]ledger.Status{"open": ledger.StatusCancelled, "late": ledger.StatusExpired, "answered": ledger.StatusResolved}
		for id, status := range want {
			if got := w.get("s", id); got.Status != status || !got.Resumed {
				t.Errorf("%s: %s, resumed %v; want %s, resumed", id, got.Status, got.Resumed, status)
			}
		}
		if due, err := w.ledger.Due(ctx, "dj", base.Add(24*time.Hour), 10); err != nil || len(due) != 0 {
			t.Errorf("Due() after Closed = %v, %v; want none", ids(due), err)
		}
		// A record answered after it was read makes the commit fail.
		w.record(call("s", "raced", 0))
		stale := w.get("s", "raced")
		if _, err := w.ledger.Answer(ctx, stale, ledger.Answer{Error: "x"}, "tab-1", base); err != nil {
			t.Fatal(err)
		}
		if _, err := w.sessions.Commit(ctx, w.ledger.Closed([]*ledger.Call{stale}, base)...); !errors.Is(err, sessionstore.ErrConflict) {
			t.Errorf("commit Closed of a stale record error = %v, want ErrConflict", err)
		}
	})
	t.Run("Delivered and MarkResumed", func(t *testing.T) {
		t.Parallel()
		w := newWorld(t)
		w.record(call("s", "a", 0), call("s", "b", 0))
		if _, err := w.sessions.Commit(ctx, w.ledger.Delivered([]*ledger.Call{w.get("s", "a")})...); err != nil {
			t.Fatal(err)
		}
		if err := w.ledger.MarkResumed(ctx, []*ledger.Call{w.get("s", "b")}); err != nil {
			t.Fatal(err)
		}
		if open, err := w.ledger.Unresumed(ctx, "u", "s"); err != nil || len(open) != 0 {
			t.Errorf("Unresumed() = %v, %v; want none", ids(open), err)
		}
	})
}

func TestToken(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	c := call("s", "c1", 0)
	c.Expires = time.Now().Add(time.Hour)
	w.record(c)
	token, err := w.ledger.Token(c)
	if err != nil {
		t.Fatal(err)
	}
	got, err := w.ledger.ByToken(t.Context(), token)
	if err != nil || got.ID != "c1" || got.SessionID != "s" || got.UserID != "u" {
		t.Fatalf("ByToken() = %+v, %v; want call c1", got, err)
	}
	if _, err := w.ledger.ByToken(t.Context(), token+"x"); !errors.Is(err, ledger.ErrInvalidToken) {
		t.Errorf("ByToken(forged) error = %v, want ErrInvalidToken", err)
	}
	other := *c
	other.Args = map[string]any{"track": 3.0}
	forOther, err := w.ledger.Token(&other)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.ledger.ByToken(t.Context(), forOther); !errors.Is(err, ledger.ErrInvalidToken) {
		t.Errorf("ByToken(other arguments) error = %v, want ErrInvalidToken", err)
	}
}
