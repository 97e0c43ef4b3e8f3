package ledger_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/baton-run/baton/ledger"
)

// work is a pending background call of session sid, created at base,
// expiring an hour later, its task not created yet.
func work(sid, id string) *ledger.Call {
	c := call(sid, id, 0)
	c.Kind, c.Tool, c.Expires = ledger.KindBackground, "prepare_playlist", base.Add(time.Hour)
	c.Work = &ledger.Work{MaxAttempts: 3, TokensPerDay: 5000}
	return c
}

// TestWorkRoundTrip: a background call's work is stored and read back,
// and the sweeper finds it at the enqueue grace until its task is marked
// created, then only at its expiry.
func TestWorkRoundTrip(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ctx := t.Context()
	w.record(work("s", "w1"))
	got := w.get("s", "w1")
	if got.Kind != ledger.KindBackground || got.Work == nil || got.Work.MaxAttempts != 3 || got.Work.TokensPerDay != 5000 || !got.Work.Enqueued.IsZero() {
		t.Fatalf("stored work = %+v (kind %s), want the recorded one, not enqueued", got.Work, got.Kind)
	}
	due, err := w.ledger.Due(ctx, "dj", base.Add(30*time.Second), 10)
	if err != nil || len(due) != 1 {
		t.Fatalf("Due(grace) = %v, %v; want w1, to be enqueued", ids(due), err)
	}
	if _, err := w.ledger.Enqueued(ctx, got, base.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if due, err := w.ledger.Due(ctx, "dj", base.Add(59*time.Minute), 10); err != nil || len(due) != 0 {
		t.Errorf("Due(before expiry) after Enqueued = %v, %v; want none", ids(due), err)
	}
	if due, err := w.ledger.Due(ctx, "dj", base.Add(time.Hour), 10); err != nil || len(due) != 1 {
		t.Errorf("Due(expiry) = %v, %v; want w1", ids(due), err)
	}
	if got := w.get("s", "w1"); !got.Work.Enqueued.Equal(base.Add(time.Second)) {
		t.Errorf("enqueued at %v, want %v", got.Work.Enqueued, base.Add(time.Second))
	}
}

// TestEnqueuedKeepsPoll: a remote call whose task a notification named
// before the turn marked the call's task created keeps its polls: the mark
// moves the sweeper's look to the next poll, not to the expiry (a crash
// that then lost the remote's later notifications left the call waiting
// for its timeout). A remote call whose task is not known yet is looked
// at only at its expiry, as a background call is, until its send is
// recorded.
func TestEnqueuedKeepsPoll(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ctx := t.Context()
	c := work("s", "r1")
	c.Kind, c.Tool, c.Remote = ledger.KindRemote, "ask_events", &ledger.Remote{PollEvery: time.Minute}
	w.record(c)
	asRead := w.get("s", "r1")
	noted, err := w.ledger.RemoteState(ctx, asRead, ledger.RemoteUpdate{TaskID: "t1", ContextID: "x1", State: "submitted"}, base.Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.ledger.Enqueued(ctx, noted, base.Add(2*time.Second)); err != nil {
		t.Fatal(err)
	}
	if due, err := w.ledger.Due(ctx, "dj", base.Add(2*time.Second+time.Minute), 10); err != nil || len(due) != 1 {
		t.Errorf("Due(next poll) after the mark = %v, %v; want r1", ids(due), err)
	}

	w.record(func() *ledger.Call {
		c := work("s", "r2")
		c.Kind, c.Tool, c.Remote = ledger.KindRemote, "ask_events", &ledger.Remote{PollEvery: time.Minute}
		return c
	}())
	if _, err := w.ledger.Enqueued(ctx, w.get("s", "r2"), base.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if due, err := w.ledger.Due(ctx, "dj", base.Add(59*time.Minute), 10); err != nil || len(due) != 1 || due[0].ID != "r1" {
		t.Errorf("Due(before expiry) = %v, %v; want r1 only: r2's task is not known yet", ids(due), err)
	}
}

// TestWorkFirstWriterWins: every change of a call's work is conditional
// on the record as read: two attempts claiming the same delivery, a
// progress report after a stop, a mark after a claim; the loser writes
// nothing.
func TestWorkFirstWriterWins(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	until := base.Add(30 * time.Second)
	t.Run("two claims", func(t *testing.T) {
		t.Parallel()
		w := newWorld(t)
		w.record(work("s", "w1"))
		asRead := w.get("s", "w1")
		first, err := w.ledger.Claim(ctx, asRead, "a", until, base)
		if err != nil || first.Work.Attempt != 1 || first.Work.Holder != "a" || first.Work.Enqueued.IsZero() {
			t.Fatalf("Claim() = %+v, %v; want attempt 1 held by a, enqueued", first.Work, err)
		}
		if _, err := w.ledger.Claim(ctx, asRead, "b", until, base); !errors.Is(err, ledger.ErrChanged) {
			t.Errorf("second Claim() error = %v, want ErrChanged", err)
		}
		if _, err := w.ledger.Enqueued(ctx, asRead, base); !errors.Is(err, ledger.ErrChanged) {
			t.Errorf("Enqueued() after the claim error = %v, want ErrChanged", err)
		}
		if got := w.get("s", "w1"); got.Work.Holder != "a" || got.Work.Attempt != 1 || !got.Work.Held(base) || got.Work.Held(until) {
			t.Errorf("stored work %+v, want attempt 1 held by a until %v", got.Work, until)
		}
	})
	t.Run("report after a stop", func(t *testing.T) {
		t.Parallel()
		w := newWorld(t)
		w.record(work("s", "w1"))
		held, err := w.ledger.Claim(ctx, w.get("s", "w1"), "a", until, base)
		if err != nil {
			t.Fatal(err)
		}
		// The holder's own writes carry the version they made.
		held, err = w.ledger.Report(ctx, held, json.RawMessage(`{"done":1}`), until.Add(time.Second), base.Add(time.Second))
		if err != nil {
			t.Fatalf("Report() after the holder's claim error = %v", err)
		}
		if _, err := w.ledger.Cancel(ctx, w.get("s", "w1"), base.Add(2*time.Second)); err != nil {
			t.Fatal(err)
		}
		if _, err := w.ledger.Report(ctx, held, json.RawMessage(`{"done":2}`), until, base.Add(3*time.Second)); !errors.Is(err, ledger.ErrChanged) {
			t.Errorf("Report() after a stop error = %v, want ErrChanged", err)
		}
		if _, err := w.ledger.Answer(ctx, held, ledger.Answer{Output: map[string]any{"ok": true}}, "", base.Add(3*time.Second)); !errors.Is(err, ledger.ErrChanged) {
			t.Errorf("Answer() after a stop error = %v, want ErrChanged", err)
		}
		got := w.get("s", "w1")
		if got.Status != ledger.StatusCancelled || string(got.Work.Progress) != `{"done":1}` || !got.Work.ProgressAt.Equal(base.Add(time.Second)) {
			t.Errorf("stored %s with progress %s at %v, want cancelled with the first report", got.Status, got.Work.Progress, got.Work.ProgressAt)
		}
	})
	t.Run("release then claim again", func(t *testing.T) {
		t.Parallel()
		w := newWorld(t)
		w.record(work("s", "w1"))
		held, err := w.ledger.Claim(ctx, w.get("s", "w1"), "a", until, base)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.ledger.Release(ctx, held, "timeout talking to the catalogue"); err != nil {
			t.Fatal(err)
		}
		released := w.get("s", "w1")
		if released.Work.Held(base) || released.Work.Error != "timeout talking to the catalogue" || released.Status != ledger.StatusPending {
			t.Fatalf("released work %+v (%s), want not held, with the error, pending", released.Work, released.Status)
		}
		again, err := w.ledger.Claim(ctx, released, "b", until, base.Add(time.Second))
		if err != nil || again.Work.Attempt != 2 || again.Work.Holder != "b" {
			t.Errorf("Claim() after Release = %+v, %v; want attempt 2 held by b", again.Work, err)
		}
	})
	t.Run("claim of a settled call", func(t *testing.T) {
		t.Parallel()
		w := newWorld(t)
		w.record(work("s", "w1"))
		cancelled, err := w.ledger.Cancel(ctx, w.get("s", "w1"), base)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.ledger.Claim(ctx, cancelled, "a", until, base); !errors.Is(err, ledger.ErrChanged) {
			t.Errorf("Claim() of a cancelled call error = %v, want ErrChanged", err)
		}
	})
}

// TestRunning: a user's pending background calls, over sessions, and
// nothing else (a remote agent's call carries work too, and is not one).
func TestRunning(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ctx := t.Context()
	other := work("s3", "w4")
	other.UserID = "someone-else"
	w.record(work("s1", "w1"), work("s1", "w2"), work("s2", "w3"), call("s1", "browser", 0))
	remote := work("s2", "r1")
	remote.Kind, remote.Tool, remote.Remote = ledger.KindRemote, "ask_events", &ledger.Remote{}
	w.record(other, remote)
	if _, err := w.ledger.Answer(ctx, w.get("s1", "w2"), ledger.Answer{Output: map[string]any{"ok": true}}, "", base); err != nil {
		t.Fatal(err)
	}
	if n, err := w.ledger.Running(ctx, "u"); err != nil || n != 2 {
		t.Errorf("Running(u) = %d, %v; want 2 (w1 and w3)", n, err)
	}
}

// TestWorking: a follower hears each pending background call, each
// progress stored, and the call once settled.
func TestWorking(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.record(work("s", "w1"), call("s", "browser", 0))
	bound, stop := context.WithTimeout(t.Context(), time.Minute)
	defer stop()
	held, err := w.ledger.Claim(t.Context(), w.get("s", "w1"), "a", base.Add(time.Minute), base)
	if err != nil {
		t.Fatal(err)
	}
	var seen []string
	for c, err := range w.ledger.Working(bound, "u", "s") {
		if err != nil {
			t.Fatalf("Working() error = %v", err)
		}
		seen = append(seen, string(c.Status)+":"+string(c.Work.Progress))
		switch len(seen) {
		case 1:
			if held, err = w.ledger.Report(t.Context(), held, json.RawMessage(`"half"`), base.Add(time.Minute), base); err != nil {
				t.Fatal(err)
			}
		case 2:
			if _, err := w.ledger.Answer(t.Context(), held, ledger.Answer{Output: map[string]any{"ok": true}}, "", base); err != nil {
				t.Fatal(err)
			}
		}
		if len(seen) == 3 {
			break
		}
	}
	want := []string{"pending:", `pending:"half"`, `resolved:"half"`}
	if len(seen) != len(want) {
		t.Fatalf("Working() yielded %q, want %q", seen, want)
	}
	for i := range want {
		if seen[i] != want[i] {
			t.Errorf("Working() yielded %q, want %q", seen, want)
			break
		}
	}
}
