package toolcallback_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/platform"
	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/functiontool"
	"google.golang.org/adk/v2/tool/toolconfirmation"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/baton-run/baton/internal/firestoretest"
	"github.com/baton-run/baton/internal/modeltest"
	"github.com/baton-run/baton/sessionstore"
	"github.com/baton-run/baton/toolcallback"
)

// crashLeaseTTL is long enough that no renewal lands inside a path (so the
// writes of a path are the same on every run) and is skipped over by the
// recovering instance's clock.
const crashLeaseTTL = 30 * time.Second

// crashPath is a request path whose Firestore writes are each, in turn, the
// last one a process makes before it dies.
type crashPath struct {
	name string
	// setup runs to completion on the same instance before the doomed part.
	setupScript []reply
	setup       func(w *crashWorld, e *toolcallback.Engine) error
	script      []reply
	// run is the doomed part; it returns the events a client was streamed.
	run func(w *crashWorld, e *toolcallback.Engine) []*session.Event
}

var crashPaths = []crashPath{
	{
		name:   "turn-that-pauses-on-a-browser-tool",
		script: []reply{callReply(call("c1", "change_bgm", map[string]any{"track": 7}))},
		run:    func(w *crashWorld, e *toolcallback.Engine) []*session.Event { return w.turn(e, "track 7") },
	},
	{
		name:        "resume-of-a-browser-call",
		setupScript: []reply{callReply(call("c1", "change_bgm", map[string]any{"track": 7}))},
		setup:       func(w *crashWorld, e *toolcallback.Engine) error { return w.turnErr(e, "track 7") },
		script:      []reply{echoReply},
		run: func(w *crashWorld, e *toolcallback.Engine) []*session.Event {
			return w.answer(e, "c1", toolcallback.Answer{Output: map[string]any{"playing": 7}})
		},
	},
	{
		name:   "plain-turn",
		script: []reply{textReply("hello")},
		run:    func(w *crashWorld, e *toolcallback.Engine) []*session.Event { return w.turn(e, "hi") },
	},
	{
		name:   "turn-with-a-server-tool",
		script: []reply{callReply(call("a1", "add", map[string]any{"a": 1, "b": 2})), echoReply},
		run:    func(w *crashWorld, e *toolcallback.Engine) []*session.Event { return w.turn(e, "1+2") },
	},
	{
		name: "turn-that-pauses-beside-a-server-tool",
		script: []reply{callReply(
			call("a1", "add", map[string]any{"a": 1, "b": 2}),
			call("c1", "change_bgm", map[string]any{"track": 3}))},
		run: func(w *crashWorld, e *toolcallback.Engine) []*session.Event { return w.turn(e, "add and play") },
	},
	{
		name:   "turn-that-pauses-for-approval",
		script: []reply{callReply(call("b1", "book_table", map[string]any{"people": 4, "name": "Ada"}))},
		run:    func(w *crashWorld, e *toolcallback.Engine) []*session.Event { return w.turn(e, "book for 4") },
	},
	{
		name:        "resume-of-an-approval",
		setupScript: []reply{callReply(call("b1", "book_table", map[string]any{"people": 4, "name": "Ada"}))},
		setup:       func(w *crashWorld, e *toolcallback.Engine) error { return w.turnErr(e, "book for 4") },
		script:      []reply{echoReply},
		run: func(w *crashWorld, e *toolcallback.Engine) []*session.Event {
			return w.answer(e, w.approvalID(e), toolcallback.Answer{Approved: ptr(true)})
		},
	},
	{
		name: "resume-of-a-step-with-a-browser-call-and-an-approval",
		setupScript: []reply{callReply(
			call("c1", "change_bgm", map[string]any{"track": 3}),
			call("b1", "book_table", map[string]any{"people": 4, "name": "Ada"}))},
		setup: func(w *crashWorld, e *toolcallback.Engine) error {
			if err := w.turnErr(e, "play and book"); err != nil {
				return err
			}
			_, _, err := resume(e, w.t.Context(), crashSession, "c1", crashClient, toolcallback.Answer{Output: map[string]any{"playing": 3}})
			return err
		},
		script: []reply{echoReply},
		run: func(w *crashWorld, e *toolcallback.Engine) []*session.Event {
			return w.answer(e, w.approvalID(e), toolcallback.Answer{Approved: ptr(true)})
		},
	},
	{
		name:        "turn-that-cancels-a-pending-call",
		setupScript: []reply{callReply(call("c1", "change_bgm", map[string]any{"track": 7}))},
		setup:       func(w *crashWorld, e *toolcallback.Engine) error { return w.turnErr(e, "track 7") },
		script:      []reply{echoReply},
		run:         func(w *crashWorld, e *toolcallback.Engine) []*session.Event { return w.turn(e, "never mind") },
	},
}

// TestCrashAtEveryWrite kills the process right after each Firestore write
// of each path (every later call of its client fails, as if it had died),
// then lets a second instance take over the session. Whatever the write,
// a call the client was shown has its ledger record; the calls still
// pending are listed and can be answered; the strict model accepts every
// later request; and no call is answered, or approved tool run, twice.
func TestCrashAtEveryWrite(t *testing.T) {
	t.Parallel()
	for _, p := range crashPaths {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			writes := runCrashPath(t, p, -1)
			if writes < 3 {
				t.Fatalf("path made %d writes; the test is not exercising it", writes)
			}
			for k := range writes {
				t.Run(fmt.Sprintf("dies-after-write-%d-of-%d", k, writes), func(t *testing.T) {
					t.Parallel()
					runCrashPath(t, p, k)
				})
			}
		})
	}
}

// runCrashPath runs p, killing the process after its first `survive`
// writes (never, when survive < 0), recovers on a second instance and
// checks the outcome. It returns how many writes the doomed part made.
func runCrashPath(t *testing.T, p crashPath, survive int) int {
	w := newCrashWorld(t)
	doomed := &modeltest.Strict{T: t, Script: append(append([]reply{}, p.setupScript...), p.script...)}
	e := w.engine(w.client, doomed)
	if p.setup != nil {
		if err := p.setup(w, e); err != nil {
			t.Fatalf("setup: %v", err)
		}
	}
	var armed, dead atomic.Bool
	var writes atomic.Int32
	w.counter.SetHook(func(method string, _ any) error {
		if dead.Load() {
			return status.Error(codes.Canceled, "process killed")
		}
		if armed.Load() && strings.HasSuffix(method, "/Commit") {
			if n := writes.Add(1); survive >= 0 && int(n) > survive {
				dead.Store(true)
				return status.Error(codes.Canceled, "process killed")
			}
		}
		return nil
	})
	armed.Store(true)
	seen := p.run(w, e)
	if survive < 0 {
		return int(writes.Load())
	}
	dead.Store(true)
	w.recover(seen)
	return int(writes.Load())
}

// crashWorld is one session on a fresh project, and the tools of the app.
type crashWorld struct {
	t       *testing.T
	client  *firestore.Client
	counter *firestoretest.Counter
	tools   []tool.Tool
	booked  atomic.Int32
}

const crashSession, crashClient = "s1", "tab-a"

func newCrashWorld(t *testing.T) *crashWorld {
	w := &crashWorld{t: t}
	w.client, w.counter = firestoretest.NewCountingClient(t)
	bgm, err := toolcallback.Browser[bgmArgs](toolcallback.BrowserConfig{Name: "change_bgm", Description: "switch the music"})
	if err != nil {
		t.Fatal(err)
	}
	book, err := toolcallback.Approval(toolcallback.ApprovalConfig[tableArgs]{Name: "book_table", Description: "book a table"},
		func(_ agent.Context, a tableArgs) (map[string]any, error) {
			w.booked.Add(1)
			return map[string]any{"booked": true, "people": a.People}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	add, err := functiontool.New(functiontool.Config{Name: "add", Description: "adds"},
		func(_ agent.Context, a struct{ A, B int }) (map[string]any, error) {
			return map[string]any{"sum": a.A + a.B}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	w.tools = []tool.Tool{bgm, book, add}
	return w
}

func (w *crashWorld) engine(client *firestore.Client, m *modeltest.Strict) *toolcallback.Engine {
	a, err := llmagent.New(llmagent.Config{Name: "assistant", Model: m, Tools: w.tools})
	if err != nil {
		w.t.Fatal(err)
	}
	e, err := toolcallback.New(client, sessionstore.New(client, nil), "app", a, &toolcallback.Options{
		LeaseTTL: crashLeaseTTL, TokenKey: []byte("test-key-0123456789abcdef0123456789"),
	})
	if err != nil {
		w.t.Fatal(err)
	}
	return e
}

func (w *crashWorld) turnErr(e *toolcallback.Engine, text string) error {
	return w.turnCtx(w.t.Context(), e, text, nil)
}

// turn runs a turn that may die; it returns what the client was streamed.
func (w *crashWorld) turn(e *toolcallback.Engine, text string) []*session.Event {
	var seen []*session.Event
	_ = w.turnCtx(w.t.Context(), e, text, &seen)
	return seen
}

func (w *crashWorld) turnCtx(ctx context.Context, e *toolcallback.Engine, text string, seen *[]*session.Event) error {
	inv, err := e.Turn(ctx, textTurn(crashSession, crashClient, text))
	if err != nil {
		return err
	}
	events, err := collect(inv)
	if seen != nil {
		*seen = events
	}
	return err
}

func (w *crashWorld) answer(e *toolcallback.Engine, callID string, a toolcallback.Answer) []*session.Event {
	_, events, _ := resume(e, w.t.Context(), crashSession, callID, crashClient, a)
	return events
}

func (w *crashWorld) approvalID(e *toolcallback.Engine) string {
	calls, err := e.Pending(w.t.Context(), "user-1", crashSession, crashClient)
	if err != nil || len(calls) != 1 {
		w.t.Fatalf("Pending() = %v, %v; want the approval", calls, err)
	}
	return calls[0].ID
}

// recover plays the next instance: later than the dead holder's lease, it
// lists and answers what is pending, then sends a message.
func (w *crashWorld) recover(seen []*session.Event) {
	t := w.t
	client, _ := firestoretest.Reopen(t, w.client)
	m := &modeltest.Strict{T: t, Repeat: echoReply}
	e := w.engine(client, m)
	ctx := platform.WithTimeProvider(t.Context(), func() time.Time { return time.Now().Add(crashLeaseTTL + time.Second) })

	calls, err := e.Pending(ctx, "user-1", crashSession, crashClient)
	if err != nil && !errors.Is(err, sessionstore.ErrNotFound) {
		t.Fatalf("Pending() after the crash error = %v", err)
	}
	listed := map[string]bool{}
	for _, c := range calls {
		listed[c.ID] = true
	}
	// A reloaded tab asks Pending first: the conversation it then shows is
	// already repaired (no message left without an answer).
	if stored, err := sessionstore.New(client, nil).Get(ctx, &session.GetRequest{AppName: "app", UserID: "user-1", SessionID: crashSession}); err == nil {
		if events := stored.Session.Events(); events.Len() > 0 {
			last := events.At(events.Len() - 1)
			if last.Author == "user" && last.Content != nil && len(last.Content.Parts) > 0 && last.Content.Parts[0].Text != "" {
				t.Errorf("after Pending the conversation still ends on the unanswered message %q", last.Content.Parts[0].Text)
			}
		}
	}
	// Every paused call a client was shown has its record, and if that is
	// still pending the call is listed.
	ledger := sessionstore.New(client, nil).SessionRef("app", "user-1", crashSession).Collection("calls")
	for _, ev := range seen {
		if ev.Partial || ev.Content == nil {
			continue
		}
		for _, p := range ev.Content.Parts {
			fc := p.FunctionCall
			if fc == nil || (fc.Name != "change_bgm" && fc.Name != toolconfirmation.FunctionCallName) {
				continue
			}
			snap, err := ledger.Doc(fc.ID).Get(ctx)
			if err != nil {
				t.Fatalf("call %s (%s) was streamed but its ledger record cannot be read: %v", fc.ID, fc.Name, err)
			}
			if st, _ := snap.DataAt("status"); st == "pending" && !listed[fc.ID] {
				t.Errorf("call %s is pending but Pending() does not list it", fc.ID)
			}
		}
	}
	for _, c := range calls {
		a := toolcallback.Answer{Output: map[string]any{"playing": 1}}
		if c.Kind == toolcallback.KindApproval {
			a = toolcallback.Answer{Approved: ptr(true)}
		}
		if _, _, err := resume(e, ctx, crashSession, c.ID, crashClient, a); err != nil {
			t.Errorf("answer %s after the crash: %v", c.ID, err)
		}
	}
	if err := w.turnCtx(ctx, e, "are you there?", nil); err != nil {
		t.Fatalf("turn after the crash error = %v", err)
	}
	if m.Calls() == 0 {
		t.Error("the model was not called after the crash")
	}
	if n := w.booked.Load(); n > 1 {
		t.Errorf("approved tool ran %d times, want at most once", n)
	}
	// No user message is left unanswered: between two of them the model
	// (or Baton's note that it was interrupted) said something.
	got, err := sessionstore.New(client, nil).Get(ctx, &session.GetRequest{AppName: "app", UserID: "user-1", SessionID: crashSession})
	if err != nil {
		t.Fatal(err)
	}
	waiting := ""
	for ev := range got.Session.Events().All() {
		if ev.Content == nil {
			continue
		}
		text := ""
		if len(ev.Content.Parts) > 0 {
			text = ev.Content.Parts[0].Text
		}
		switch {
		case ev.Author == "user" && text != "" && waiting != "":
			t.Errorf("user message %q follows %q with no model event between", text, waiting)
		case ev.Author == "user" && text != "":
			waiting = text
		case ev.Author != "user":
			waiting = ""
		}
	}
}
