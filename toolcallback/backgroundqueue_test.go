package toolcallback_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/adk/v2/platform"

	"github.com/baton-run/baton/internal/localtasks"
	"github.com/baton-run/baton/toolcallback"
)

// TestBackgroundDuplicateDeliveries: a queue that delivers each attempt
// twice at once, or each task again after it completed, and a delivery
// that comes late, after the call's result was recorded and delivered,
// get the work run once and its result delivered to the model once.
func TestBackgroundDuplicateDeliveries(t *testing.T) {
	t.Parallel()
	for _, dup := range []localtasks.Duplication{localtasks.DuplicateConcurrently, localtasks.DuplicateAfterCompletion} {
		t.Run(map[localtasks.Duplication]string{localtasks.DuplicateConcurrently: "concurrently", localtasks.DuplicateAfterCompletion: "after completion"}[dup], func(t *testing.T) {
			t.Parallel()
			f := newBGFixture(t, nil, &localtasks.Options{TimeScale: 0.05, Duplicate: dup}, playlistCall, echoReply)
			var running, most atomic.Int32
			f.setWork(func(ctx context.Context, a playlistArgs) (playlistResult, error) {
				n := running.Add(1)
				defer running.Add(-1)
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				_ = toolcallback.Progress(ctx, "half way")
				return playlistResult{Tracks: []string{"x"}}, nil
			})
			if _, err := f.turnEvents("chat", "make me a playlist"); err != nil {
				t.Fatal(err)
			}
			f.waitTask("chat", "c1", localtasks.Completed)
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			name := f.taskName("chat", "c1")
			dropped, err := f.tasks.Wait(ctx, func(e localtasks.Event) bool { return e.Task == name && e.Duplicate && e.Kind == localtasks.Dropped })
			if err != nil {
				t.Fatalf("waiting for the duplicate's answer: %v", err)
			}
			// At once, the duplicate finds the work held and is turned
			// away (the queue would deliver it again after the hold);
			// after completion, it finds the work done.
			if dup == localtasks.DuplicateAfterCompletion && dropped.Status != http.StatusOK ||
				dup == localtasks.DuplicateConcurrently && dropped.Status != http.StatusOK && dropped.Status != http.StatusTooManyRequests {
				t.Errorf("the duplicate was answered %d", dropped.Status)
			}
			// Once more, late: a delivery of a task that ran already.
			if status := f.deliver("chat", "c1"); status != http.StatusOK {
				t.Errorf("a late delivery was answered %d, want 200", status)
			}
			if n := f.runs.Load(); n != 1 {
				t.Errorf("the work ran %d times, want once", n)
			}
			if m := most.Load(); m > 1 {
				t.Errorf("%d runs of the work at once", m)
			}
			if got := f.responses("chat", "c1"); len(got) != 1 {
				t.Errorf("responses to c1 = %v, want one", got)
			}
			if s := f.tasks.Stats(); s.Creates != 1 || s.Duplicates == 0 {
				t.Errorf("queue stats %+v, want one task created and delivered twice", s)
			}
		})
	}
}

// TestBackgroundRetries: an error the tool marks retryable is retried by
// the queue, with a new attempt each time, until the work succeeds or
// the tool's bound is reached; then the last error is the call's answer.
// Unmarked errors and panics are the answer at once.
func TestBackgroundRetries(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		fail     int // attempts that fail before one succeeds
		err      error
		panics   bool
		runs     int32
		response string
	}{
		{name: "retryable then success", fail: 2, err: toolcallback.Retryable(errBusy), runs: 3, response: `"tracks":["x"]`},
		{name: "retryable to the bound", fail: 10, err: toolcallback.Retryable(errBusy), runs: 3, response: errBusy.Error()},
		{name: "not retryable", fail: 10, err: errors.New("no such mood"), runs: 1, response: "no such mood"},
		{name: "panic", fail: 10, panics: true, runs: 1, response: "the tool failed unexpectedly"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newBGFixture(t, nil, nil, playlistCall, echoReply)
			var attempts atomic.Int32
			f.setWork(func(ctx context.Context, a playlistArgs) (playlistResult, error) {
				n := attempts.Add(1)
				if c, err := toolcallback.Working(ctx); err != nil || c.Work.Attempt != int(n) {
					t.Errorf("Working() = %+v, %v; want attempt %d", c, err, n)
				}
				if int(n) <= tc.fail {
					if tc.panics {
						panic("boom")
					}
					return playlistResult{}, tc.err
				}
				return playlistResult{Tracks: []string{"x"}}, nil
			})
			if _, err := f.turnEvents("chat", "make me a playlist"); err != nil {
				t.Fatal(err)
			}
			f.waitTask("chat", "c1", localtasks.Completed)
			if n := f.runs.Load(); n != tc.runs {
				t.Errorf("the work ran %d times, want %d", n, tc.runs)
			}
			got := f.responses("chat", "c1")
			if len(got) != 1 || !strings.Contains(toJSON(got[0]), tc.response) {
				t.Errorf("responses to c1 = %v, want one holding %q", got, tc.response)
			}
		})
	}
}

// TestBackgroundEnqueueRepair: a call whose task was not created after its
// commit (the queue failed, or the process died in between) is found by
// the sweeper once the grace has passed, which creates the task; the work
// then runs once.
func TestBackgroundEnqueueRepair(t *testing.T) {
	t.Parallel()
	f := newBGFixture(t, nil, nil, playlistCall, echoReply)
	f.refuseFirstEnqueue()
	if _, err := f.turnEvents("chat", "make me a playlist"); err != nil {
		t.Fatal(err)
	}
	if s := f.tasks.Stats(); s.Creates != 0 {
		t.Fatalf("tasks created: %d, want none (the queue refused)", s.Creates)
	}
	report, err := f.team.Sweep(t.Context(), time.Now())
	if err != nil || report.Enqueued != 0 {
		t.Errorf("Sweep() within the grace = %+v, %v; want nothing enqueued", report, err)
	}
	later := time.Now().Add(time.Minute)
	report, err = f.team.Sweep(platform.WithTimeProvider(t.Context(), func() time.Time { return later }), later)
	if err != nil || report.Enqueued != 1 {
		t.Fatalf("Sweep() after the grace = %+v, %v; want c1 enqueued", report, err)
	}
	f.waitTask("chat", "c1", localtasks.Completed)
	if got := f.responses("chat", "c1"); len(got) != 1 || f.runs.Load() != 1 {
		t.Errorf("responses to c1 = %v after %d runs, want one after one", got, f.runs.Load())
	}
	// Once marked enqueued, the sweeper leaves the call alone.
	report, err = f.team.Sweep(platform.WithTimeProvider(t.Context(), func() time.Time { return later }), later)
	if err != nil || report.Enqueued != 0 {
		t.Errorf("Sweep() after the repair = %+v, %v; want nothing enqueued", report, err)
	}
}

// TestBackgroundUserBound: a call over the user's bound of running
// background calls is refused: the model reads why, and the turn goes on.
func TestBackgroundUserBound(t *testing.T) {
	t.Parallel()
	f := newBGFixture(t, &toolcallback.Options{BackgroundPerUser: 1}, nil, playlistCall, playlistCall, echoReply, echoReply)
	started, release := make(chan struct{}, 1), make(chan struct{})
	f.setWork(func(ctx context.Context, a playlistArgs) (playlistResult, error) {
		started <- struct{}{}
		<-release
		return playlistResult{Tracks: []string{"one"}}, nil
	})
	if _, err := f.turnEvents("chat-1", "make me a playlist"); err != nil {
		t.Fatal(err)
	}
	await(t, started, "the first work to start")
	events, err := f.turnEvents("chat-2", "and another")
	if err != nil {
		t.Fatal(err)
	}
	if text := finalText(events); !strings.Contains(text, "already has 1 background tasks running") {
		t.Errorf("the second chat's answer %q does not read the refusal", text)
	}
	if got := f.toolResponses("chat-2", "c1"); len(got) != 1 || !strings.Contains(toJSON(got[0]), "refused") {
		t.Errorf("responses to chat-2's c1 = %v, want the refusal", got)
	}
	close(release)
	f.waitTask("chat-1", "c1", localtasks.Completed)
	if s := f.tasks.Stats(); s.Creates != 1 {
		t.Errorf("tasks created: %d, want 1 (the refused call has none)", s.Creates)
	}
}

// TestBackgroundProgressInterval: a tool that reports progress as fast as
// it can gets its reports stored at most once per ProgressInterval, never
// once per report; the latest one stored is a report the tool made.
func TestBackgroundProgressInterval(t *testing.T) {
	t.Parallel()
	const interval = 50 * time.Millisecond
	f := newBGFixture(t, &toolcallback.Options{ProgressInterval: interval}, nil, playlistCall, echoReply)
	var stored atomic.Int32
	f.counter.SetHook(func(method string, req any) error {
		if strings.HasSuffix(method, "/Commit") && commitKind(req) == "progress" {
			stored.Add(1)
		}
		return nil
	})
	var reports int
	f.setWork(func(ctx context.Context, a playlistArgs) (playlistResult, error) {
		for stored.Load() < 4 {
			reports++
			if err := toolcallback.Progress(ctx, map[string]int{"report": reports}); err != nil {
				return playlistResult{}, err
			}
			if ctx.Err() != nil {
				return playlistResult{}, ctx.Err()
			}
		}
		return playlistResult{Tracks: []string{"x"}}, nil
	})
	// Every progress write falls between the turn and the delivery's end.
	start := time.Now()
	if _, err := f.turnEvents("chat", "make me a playlist"); err != nil {
		t.Fatal(err)
	}
	f.waitDone("chat", "c1")
	took := time.Since(start)
	n := int(stored.Load())
	if most := int(took/interval) + 1; n > most {
		t.Errorf("%d progress writes in %v, want at most %d (one per %v)", n, took, most, interval)
	}
	if reports <= n {
		t.Errorf("%d reports stored %d times: one write per report", reports, n)
	}
	t.Logf("%d reports in %v, %d stored", reports, took, n)
}
