package toolcallback_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"cloud.google.com/go/firestore"
	"cloud.google.com/go/firestore/apiv1/firestorepb"
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
	"github.com/baton-run/baton/internal/teamtest"
	"github.com/baton-run/baton/limits"
	"github.com/baton-run/baton/modeltest"
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
	setup       func(w *crashWorld, team *toolcallback.Team) error
	script      []reply
	// run is the doomed part; it returns the events a client was streamed.
	run func(w *crashWorld, team *toolcallback.Team) []*session.Event
	// took checks, on the commits of the doomed part run to its end, that
	// it took the way through Team that the path is named after.
	took func(w *crashWorld, commits []*firestorepb.CommitRequest) error
}

var crashPaths = []crashPath{
	{
		name:   "turn-in-a-new-chat-that-pauses-on-a-browser-tool",
		script: []reply{callReply(call("c1", "change_bgm", map[string]any{"track": 7}))},
		run:    func(w *crashWorld, team *toolcallback.Team) []*session.Event { return w.turn(team, "", "track 7") },
		took:   tookNewChat,
	},
	{
		name:        "short-resume-of-a-browser-call",
		setupScript: []reply{callReply(call("c1", "change_bgm", map[string]any{"track": 7}))},
		setup:       func(w *crashWorld, team *toolcallback.Team) error { return w.turnErr(team, "", "track 7") },
		script:      []reply{echoReply},
		run: func(w *crashWorld, team *toolcallback.Team) []*session.Event {
			return w.answer(team, "c1", toolcallback.Answer{Output: map[string]any{"playing": 7}})
		},
		took: tookShortResume,
	},
	{
		name:   "plain-turn-in-a-new-chat",
		script: []reply{textReply("hello")},
		run:    func(w *crashWorld, team *toolcallback.Team) []*session.Event { return w.turn(team, "", "hi") },
		took:   tookNewChat,
	},
	{
		name:        "plain-turn-in-an-existing-chat",
		setupScript: []reply{textReply("hello")},
		setup:       func(w *crashWorld, team *toolcallback.Team) error { return w.turnErr(team, "", "hi") },
		script:      []reply{textReply("again")},
		run:         func(w *crashWorld, team *toolcallback.Team) []*session.Event { return w.turn(team, "", "hi again") },
		took:        tookExistingChat,
	},
	{
		// The doomed instance served the chat's last turn and kept its
		// session: the turn reads nothing.
		name:        "warm-plain-turn",
		setupScript: []reply{textReply("hello")},
		setup:       func(w *crashWorld, team *toolcallback.Team) error { return w.turnErr(team, "", "hi") },
		script:      []reply{textReply("again")},
		run:         func(w *crashWorld, team *toolcallback.Team) []*session.Event { return w.turn(team, "", "hi again") },
		took:        tookWarm(true),
	},
	{
		// Another instance wrote the chat since: the warm attempt's commit
		// fails, its model request is dropped, and the turn reads.
		name:        "plain-turn-on-a-stale-warm-copy",
		setupScript: []reply{textReply("hello"), textReply("elsewhere")},
		setup: func(w *crashWorld, team *toolcallback.Team) error {
			if err := w.turnErr(team, "", "hi"); err != nil {
				return err
			}
			return w.turnErr(w.team(w.client, w.model), "", "from another tab")
		},
		script: []reply{textReply("dropped"), textReply("again")},
		run:    func(w *crashWorld, team *toolcallback.Team) []*session.Event { return w.turn(team, "", "hi again") },
		took:   tookWarm(false),
	},
	{
		// The resume marked its records resumed and recorded, in its last
		// commit, that none is open: the next turn claims the lease with
		// its message, as a plain turn does, and settles nothing.
		name:        "turn-after-a-resume",
		setupScript: []reply{callReply(call("c1", "change_bgm", map[string]any{"track": 7})), echoReply},
		setup: func(w *crashWorld, team *toolcallback.Team) error {
			if err := w.turnErr(team, "", "track 7"); err != nil {
				return err
			}
			if _, _, err := resume(team, w.t.Context(), crashChat, "c1", crashClient, toolcallback.Answer{Output: map[string]any{"playing": 7}}); err != nil {
				return err
			}
			return nil
		},
		script: []reply{textReply("next")},
		run:    func(w *crashWorld, team *toolcallback.Team) []*session.Event { return w.turn(team, "", "and now?") },
		took:   tookNoSettle,
	},
	{
		// With a token budget the model is asked while the day's count is
		// read, and the message's commit waits for it.
		name:        "turn-with-a-token-budget",
		setupScript: []reply{textReply("hello")},
		setup:       func(w *crashWorld, team *toolcallback.Team) error { return w.turnErr(team, "", "hi") },
		script:      []reply{textReply("again")},
		run: func(w *crashWorld, team *toolcallback.Team) []*session.Event {
			req := crashTurn("", "", "hi again")
			req.Limits = limits.Limits{UserTokensPerDay: 1 << 20, UserTurnsPerMinute: 100, ChatTurnsPerMinute: 100}
			events, _, _ := runTurn(w.t.Context(), team, req)
			return events
		},
		took: tookExistingChat,
	},
	{
		name:   "turn-with-a-server-tool",
		script: []reply{callReply(call("a1", "add", map[string]any{"a": 1, "b": 2})), echoReply},
		run:    func(w *crashWorld, team *toolcallback.Team) []*session.Event { return w.turn(team, "", "1+2") },
		took:   tookNewChat,
	},
	{
		name: "turn-that-pauses-beside-a-server-tool",
		script: []reply{callReply(
			call("a1", "add", map[string]any{"a": 1, "b": 2}),
			call("c1", "change_bgm", map[string]any{"track": 3}))},
		run:  func(w *crashWorld, team *toolcallback.Team) []*session.Event { return w.turn(team, "", "add and play") },
		took: tookNewChat,
	},
	{
		name:   "turn-that-pauses-for-approval",
		script: []reply{callReply(call("b1", "book_table", map[string]any{"people": 4, "name": "Ada"}))},
		run:    func(w *crashWorld, team *toolcallback.Team) []*session.Event { return w.turn(team, "", "book for 4") },
		took:   tookNewChat,
	},
	{
		name:        "short-resume-of-an-approval",
		setupScript: []reply{callReply(call("b1", "book_table", map[string]any{"people": 4, "name": "Ada"}))},
		setup:       func(w *crashWorld, team *toolcallback.Team) error { return w.turnErr(team, "", "book for 4") },
		script:      []reply{echoReply},
		run: func(w *crashWorld, team *toolcallback.Team) []*session.Event {
			return w.answer(team, w.approvalID(team), toolcallback.Answer{Approved: ptr(true)})
		},
		took: tookShortResume,
	},
	{
		// The step mixes an answer and an approval, which only the long
		// path delivers (the answer in an event of its own first).
		name: "long-resume-of-a-step-with-a-browser-call-and-an-approval",
		setupScript: []reply{callReply(
			call("c1", "change_bgm", map[string]any{"track": 3}),
			call("b1", "book_table", map[string]any{"people": 4, "name": "Ada"}))},
		setup: func(w *crashWorld, team *toolcallback.Team) error {
			if err := w.turnErr(team, "", "play and book"); err != nil {
				return err
			}
			_, _, err := resume(team, w.t.Context(), crashChat, "c1", crashClient, toolcallback.Answer{Output: map[string]any{"playing": 3}})
			return err
		},
		script: []reply{echoReply},
		run: func(w *crashWorld, team *toolcallback.Team) []*session.Event {
			return w.answer(team, w.approvalID(team), toolcallback.Answer{Approved: ptr(true)})
		},
		took: tookLongResume,
	},
	{
		// An instance that last saw the chat before its switch (here: one
		// that never saw it) reads the chat's first session, not the
		// active one, and so answers the long way.
		name:        "long-resume-on-an-instance-that-missed-a-switch",
		setupScript: []reply{textReply("hello"), callReply(call("c1", "change_bgm", map[string]any{"track": 2}))},
		setup: func(w *crashWorld, team *toolcallback.Team) error {
			if err := w.turnErr(team, "", "hi"); err != nil {
				return err
			}
			return w.turnErr(team, "dj", "play track 2")
		},
		script: []reply{echoReply},
		run: func(w *crashWorld, _ *toolcallback.Team) []*session.Event {
			return w.answer(w.team(w.client, w.model), "c1", toolcallback.Answer{Output: map[string]any{"playing": 2}})
		},
		took: tookLongResume,
	},
	{
		name:        "turn-that-cancels-a-pending-call",
		setupScript: []reply{callReply(call("c1", "change_bgm", map[string]any{"track": 7}))},
		setup:       func(w *crashWorld, team *toolcallback.Team) error { return w.turnErr(team, "", "track 7") },
		script:      []reply{echoReply},
		run:         func(w *crashWorld, team *toolcallback.Team) []*session.Event { return w.turn(team, "", "never mind") },
		took:        tookExistingChat,
	},
	{
		name:        "turn-that-switches-agent",
		setupScript: []reply{textReply("hello")},
		setup:       func(w *crashWorld, team *toolcallback.Team) error { return w.turnErr(team, "", "hi") },
		script:      []reply{textReply("the DJ here")},
		run:         func(w *crashWorld, team *toolcallback.Team) []*session.Event { return w.turn(team, "dj", "DJ please") },
		took:        tookSwitch,
	},
	{
		name:        "switch-that-cancels-a-pending-call",
		setupScript: []reply{callReply(call("c1", "change_bgm", map[string]any{"track": 7}))},
		setup:       func(w *crashWorld, team *toolcallback.Team) error { return w.turnErr(team, "", "track 7") },
		script:      []reply{callReply(call("c2", "change_bgm", map[string]any{"track": 8}))},
		run: func(w *crashWorld, team *toolcallback.Team) []*session.Event {
			return w.turn(team, "dj", "DJ, track 8")
		},
		took: tookSwitch,
	},
}

// TestCrashAtEveryWrite kills the process right after each Firestore write
// of each path through Team (every later call of its client fails, as if
// it had died), then lets a second instance take over the chat. Whatever
// the write, a call the client was shown has its ledger record; the calls
// still pending are listed and can be answered; the strict model accepts
// every later request; no call is answered, or approved tool run, twice;
// and the messages sent before are still the chat's. Each path is first
// run to its end, which checks that it goes the
// way it is named after (new or existing chat, short or long resume,
// switch) and counts its writes.
func TestCrashAtEveryWrite(t *testing.T) {
	t.Parallel()
	for _, p := range crashPaths {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			w, commits := runCrashPath(t, p, -1)
			writes := len(commits)
			// A plain turn makes two: its message with the lease, its
			// reply with the release.
			if writes < 2 {
				t.Fatalf("path made %d writes; the test is not exercising it", writes)
			}
			if err := p.took(w, commits); err != nil {
				t.Fatalf("the path went another way: %v\ncommits:\n%s", err, describeCommits(commits))
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
// checks the outcome. It returns the world it ran in and the commits the
// doomed part made.
func runCrashPath(t *testing.T, p crashPath, survive int) (*crashWorld, []*firestorepb.CommitRequest) {
	w := newCrashWorld(t)
	w.model = &modeltest.Strict{T: t, Script: append(append([]reply{}, p.setupScript...), p.script...)}
	team := w.team(w.client, w.model)
	if p.setup != nil {
		if err := p.setup(w, team); err != nil {
			t.Fatalf("setup: %v", err)
		}
	}
	var armed, dead atomic.Bool
	var mu sync.Mutex
	var commits []*firestorepb.CommitRequest
	w.counter.SetHook(func(method string, req any) error {
		if dead.Load() {
			return status.Error(codes.Canceled, "process killed")
		}
		if !armed.Load() || !strings.HasSuffix(method, "/Commit") {
			return nil
		}
		mu.Lock()
		defer mu.Unlock()
		if survive >= 0 && len(commits) >= survive {
			dead.Store(true)
			return status.Error(codes.Canceled, "process killed")
		}
		commits = append(commits, req.(*firestorepb.CommitRequest))
		return nil
	})
	armed.Store(true)
	before := w.counter.Snapshot()
	seen := p.run(w, team)
	w.runOps = w.counter.Snapshot().Sub(before)
	mu.Lock()
	done := slices.Clone(commits)
	mu.Unlock()
	if survive < 0 {
		return w, done
	}
	dead.Store(true)
	w.recover(seen)
	return w, done
}

// crashWorld is one chat on a fresh project, the tools of the app and its
// two agents: the assistant (the default) and a DJ.
type crashWorld struct {
	t        *testing.T
	client   *firestore.Client
	counter  *firestoretest.Counter
	sessions *sessionstore.Service
	model    *modeltest.Strict // the doomed instance's
	tools    []tool.Tool       // the assistant's
	djTools  []tool.Tool
	booked   *atomic.Int32 // runs of book_table
	renamed  atomic.Int32  // renames done: the input tool's last round
	kept     []string      // messages sent before the doomed part
	// gone are texts that no model request may hold once a rewind mark
	// is stored (rewindcrash_test.go).
	gone []string
	// runOps are the operations of the doomed part.
	runOps firestoretest.Ops
}

const crashChat, crashClient = "s1", "tab-a"

func newCrashWorld(t *testing.T) *crashWorld {
	w := &crashWorld{t: t}
	w.client, w.counter = firestoretest.NewCountingClient(t)
	w.sessions = sessionstore.New(w.client, nil)
	demo := teamtest.NewTools(t)
	w.booked = &demo.Booked
	add, err := functiontool.New(functiontool.Config{Name: "add", Description: "adds"},
		func(_ agent.Context, a struct{ A, B int }) (map[string]any, error) {
			return map[string]any{"sum": a.A + a.B}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	w.tools = []tool.Tool{demo.BGM, demo.Book, add, w.renameTool()}
	w.djTools = []tool.Tool{demo.BGM}
	return w
}

// team is an instance of the app over client, both agents answering
// with m.
func (w *crashWorld) team(client *firestore.Client, m *modeltest.Strict) *toolcallback.Team {
	return teamtest.NewTeam(w.t, sessionstore.New(client, nil), &toolcallback.Options{
		LeaseTTL: crashLeaseTTL,
		// The agents keep no app: or user: state: a chat's next turn on
		// the instance that served its last one is a warm turn.
		SessionStateOnly: true,
	},
		teamtest.Member(w.t, llmagent.Config{Name: "assistant", Model: m, Tools: w.tools}),
		teamtest.Member(w.t, llmagent.Config{Name: "dj", Model: m, Tools: w.djTools}))
}

// crashTurn is user-1's message text to the crash chat, with the client's
// message id id ("": none), for agentName ("": the chat's agent).
func crashTurn(agentName, id, text string) toolcallback.TurnRequest {
	req := textTurn(crashChat, crashClient, text)
	req.Agent, req.MessageID = agentName, id
	return req
}

// turnErr runs a turn that must not die; its message is one the chat must
// keep whatever happens later.
func (w *crashWorld) turnErr(team *toolcallback.Team, agentName, text string) error {
	_, _, err := runTurn(w.t.Context(), team, crashTurn(agentName, "", text))
	if err == nil {
		w.kept = append(w.kept, text)
	}
	return err
}

// turn runs a turn that may die; it returns what the client was streamed.
func (w *crashWorld) turn(team *toolcallback.Team, agentName, text string) []*session.Event {
	events, _, _ := runTurn(w.t.Context(), team, crashTurn(agentName, "", text))
	return events
}

func (w *crashWorld) answer(team *toolcallback.Team, callID string, a toolcallback.Answer) []*session.Event {
	_, events, _ := resume(team, w.t.Context(), crashChat, callID, crashClient, a)
	return events
}

func (w *crashWorld) approvalID(team *toolcallback.Team) string {
	state, err := team.Pending(w.t.Context(), toolcallback.PendingRequest{UserID: "user-1", ChatID: crashChat, ClientID: crashClient})
	if err != nil || len(state.Calls) != 1 {
		w.t.Fatalf("Pending() = %v, %v; want the approval", state, err)
	}
	return state.Calls[0].ID
}

// recover plays the next instance: later than the dead holder's lease, it
// lists and answers what is pending, then sends a message.
func (w *crashWorld) recover(seen []*session.Event) {
	t := w.t
	client, _ := firestoretest.Reopen(t, w.client)
	sessions := sessionstore.New(client, nil)
	m := &modeltest.Strict{T: t, Repeat: echoReply}
	team := w.team(client, m)
	ctx := platform.WithTimeProvider(t.Context(), func() time.Time { return time.Now().Add(crashLeaseTTL + time.Second) })

	var calls []*toolcallback.Call
	state, err := team.Pending(ctx, toolcallback.PendingRequest{UserID: "user-1", ChatID: crashChat, ClientID: crashClient})
	switch {
	case err == nil:
		calls = state.Calls
	case !errors.Is(err, sessionstore.ErrNotFound):
		t.Fatalf("Pending() after the crash error = %v", err)
	}
	listed := map[string]bool{}
	for _, c := range calls {
		listed[c.ID] = true
	}
	// A reloaded tab asks Pending first: the conversation it then shows is
	// already repaired (no message left without an answer).
	chat, err := sessions.GetChat(ctx, "app", "user-1", crashChat)
	if err != nil && !errors.Is(err, sessionstore.ErrNotFound) {
		t.Fatalf("GetChat() after the crash error = %v", err)
	}
	if chat != nil {
		if stored, err := sessions.Get(ctx, &session.GetRequest{AppName: "app", UserID: "user-1", SessionID: chat.SessionID}); err == nil {
			if events := stored.Session.Events(); events.Len() > 0 {
				last := events.At(events.Len() - 1)
				if last.Author == "user" && last.Content != nil && len(last.Content.Parts) > 0 && last.Content.Parts[0].Text != "" {
					t.Errorf("after Pending the conversation still ends on the unanswered message %q", last.Content.Parts[0].Text)
				}
			}
		}
	}
	// Every paused call a client was shown has its record (in the chat's
	// active session, or one it retired), and if that is still pending
	// the call is listed.
	for _, ev := range seen {
		if ev.Partial || ev.Content == nil {
			continue
		}
		for _, p := range ev.Content.Parts {
			fc := p.FunctionCall
			if fc == nil || (fc.Name != "change_bgm" && fc.Name != toolconfirmation.FunctionCallName) {
				continue
			}
			snap := callRecord(ctx, t, sessions, chat, fc.ID)
			if snap == nil {
				t.Fatalf("call %s (%s) was streamed but has no ledger record", fc.ID, fc.Name)
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
		if c.Kind == toolcallback.KindInput {
			a = acceptInput(c)
		}
		if _, _, err := resume(team, ctx, crashChat, c.ID, crashClient, a); err != nil {
			t.Errorf("answer %s after the crash: %v", c.ID, err)
		}
	}
	if _, _, err := runTurn(ctx, team, crashTurn("", "", "are you there?")); err != nil {
		t.Fatalf("turn after the crash error = %v", err)
	}
	if m.Calls() == 0 {
		t.Error("the model was not called after the crash")
	}
	w.checkGone(ctx, sessions, m)
	checkNoPlaceholderLeft(t, m)
	if n := w.booked.Load(); n > 1 {
		t.Errorf("approved tool ran %d times, want at most once", n)
	}
	if n := w.renamed.Load(); n > 1 {
		t.Errorf("the input tool finished %d times, want at most once", n)
	}
	w.checkEveryMessageAnswered(ctx, sessions)
}

// callRecord reads the ledger record of a call of chat from its active
// session or a retired one; nil when there is none.
func callRecord(ctx context.Context, t *testing.T, sessions *sessionstore.Service, chat *sessionstore.Chat, id string) *firestore.DocumentSnapshot {
	t.Helper()
	if chat == nil {
		return nil
	}
	for _, sid := range append([]string{chat.SessionID}, chat.Retired...) {
		snap, err := sessions.Client().Doc(sessions.SessionDoc("app", "user-1", sid).Child("calls", id).Path()).Get(ctx)
		if snap != nil && !snap.Exists() {
			continue
		}
		if err != nil {
			t.Fatalf("read call %s in %s: %v", id, sid, err)
		}
		return snap
	}
	return nil
}

// checkEveryMessageAnswered: no user message is left unanswered; between
// two of them the model (or Baton's note that it was interrupted) said
// something. And the conversation before the doomed part is still the
// chat's: every message sent then is in its history.
func (w *crashWorld) checkEveryMessageAnswered(ctx context.Context, sessions *sessionstore.Service) {
	t := w.t
	chat, err := sessions.GetChat(ctx, "app", "user-1", crashChat)
	if err != nil {
		t.Fatal(err)
	}
	got, err := sessions.Get(ctx, &session.GetRequest{AppName: "app", UserID: "user-1", SessionID: chat.SessionID})
	if err != nil {
		t.Fatal(err)
	}
	waiting := ""
	sent := map[string]bool{}
	for ev := range got.Session.Events().All() {
		if ev.Content == nil {
			continue
		}
		text := ""
		if len(ev.Content.Parts) > 0 {
			text = ev.Content.Parts[0].Text
		}
		if ev.Author == "user" {
			sent[text] = true
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
	for _, text := range w.kept {
		if !sent[text] {
			t.Errorf("the message %q, sent before the crash, is no longer in the chat's history", text)
		}
	}
}

// The checks of which way a path went, on the commits it made.

// written returns the document a write writes or deletes.
func written(w *firestorepb.Write) string {
	if d := w.GetDelete(); d != "" {
		return d
	}
	return w.GetUpdate().GetName()
}

func (w *crashWorld) chatDoc() string {
	return w.sessions.Client().Doc(w.sessions.ChatDoc("app", "user-1", crashChat).Path()).Path
}

func (w *crashWorld) sessionDoc(n int) string {
	return w.sessions.Client().Doc(w.sessions.SessionDoc("app", "user-1", fmt.Sprintf("%s~%d", crashChat, n)).Path()).Path
}

// writesDoc reports whether c writes (or deletes) the document doc.
func writesDoc(c *firestorepb.CommitRequest, doc string) bool {
	return slices.ContainsFunc(c.Writes, func(w *firestorepb.Write) bool { return written(w) == doc })
}

// tookNewChat: the first commit creates the chat together with its first
// session (the create-on-append commit, which also stores the message).
func tookNewChat(w *crashWorld, commits []*firestorepb.CommitRequest) error {
	first := commits[0]
	if !writesDoc(first, w.chatDoc()) || !writesDoc(first, w.sessionDoc(0)) {
		return errors.New("the first commit does not create the chat together with its session")
	}
	return nil
}

// tookExistingChat: no commit writes the chat record, but for its
// listing, which the commits that claim and release the session and the
// ledger's keep current.
func tookExistingChat(w *crashWorld, commits []*firestorepb.CommitRequest) error {
	for i, c := range commits {
		for _, wr := range c.Writes {
			if written(wr) == w.chatDoc() && !listingOnly(wr) {
				return fmt.Errorf("commit %d writes the chat record of an existing chat", i)
			}
		}
	}
	return nil
}

// listingOnly reports whether wr writes only the listing's fields of a
// chat document (sessionstore.Listing).
func listingOnly(wr *firestorepb.Write) bool {
	paths := wr.GetUpdateMask().GetFieldPaths()
	if wr.GetUpdate() == nil || len(paths) == 0 {
		return false
	}
	for _, p := range paths {
		switch {
		case strings.HasPrefix(p, "waiting."), p == "lastActivity", p == "activeUntil", p == "live", p == "modelTitle":
		default:
			return false
		}
	}
	return true
}

// tookWarm: an existing chat's turn that read nothing (warm), or that
// read after its warm attempt lost (not warm).
func tookWarm(warm bool) func(*crashWorld, []*firestorepb.CommitRequest) error {
	return func(w *crashWorld, commits []*firestorepb.CommitRequest) error {
		if err := tookExistingChat(w, commits); err != nil {
			return err
		}
		if read := w.runOps.Lookups() > 0; read == warm {
			return fmt.Errorf("the turn looked up %d documents; warm = %v", w.runOps.Lookups(), warm)
		}
		return nil
	}
}

// tookNoSettle: an existing chat's turn whose commits touch no ledger
// record: it took the lease with its message, settling nothing.
func tookNoSettle(w *crashWorld, commits []*firestorepb.CommitRequest) error {
	if err := tookExistingChat(w, commits); err != nil {
		return err
	}
	for i, c := range commits {
		for _, wr := range c.Writes {
			if strings.Contains(written(wr), "/calls/") {
				return fmt.Errorf("commit %d writes the ledger record %s: the turn settled", i, written(wr))
			}
		}
	}
	return nil
}

// tookSwitch: the chat moves to a second session, and the first is
// deleted.
func tookSwitch(w *crashWorld, commits []*firestorepb.CommitRequest) error {
	var built, moved, deleted bool
	for _, c := range commits {
		for _, wr := range c.Writes {
			switch {
			case written(wr) == w.sessionDoc(1) && wr.GetUpdate() != nil:
				built = true
			case written(wr) == w.chatDoc() && wr.GetUpdate().GetFields()["session"].GetStringValue() == crashChat+"~1":
				moved = true
			case wr.GetDelete() == w.sessionDoc(0):
				deleted = true
			}
		}
	}
	if !built || !moved || !deleted {
		return fmt.Errorf("new session built %v, chat moved to it %v, old session deleted %v; want all", built, moved, deleted)
	}
	return nil
}

// answerCommit returns the commit that records an answer in a ledger
// record, or nil.
func answerCommit(commits []*firestorepb.CommitRequest) *firestorepb.CommitRequest {
	for _, c := range commits {
		for _, wr := range c.Writes {
			if strings.Contains(written(wr), "/calls/") && slices.Contains(wr.GetUpdateMask().GetFieldPaths(), "answer") {
				return c
			}
		}
	}
	return nil
}

// tookShortResume: the answer is recorded by the commit that takes the
// session's lease and stores the answer for the agent.
func tookShortResume(w *crashWorld, commits []*firestorepb.CommitRequest) error {
	c := answerCommit(commits)
	if c == nil {
		return errors.New("no commit records the answer")
	}
	if !writesDoc(c, w.sessionDoc(0)) {
		return errors.New("the answer is recorded without the session: the long path")
	}
	return nil
}

// tookLongResume: the answer is recorded first, by itself; the session is
// written by later commits.
func tookLongResume(w *crashWorld, commits []*firestorepb.CommitRequest) error {
	c := answerCommit(commits)
	if c == nil {
		return errors.New("no commit records the answer")
	}
	for _, wr := range c.Writes {
		if !strings.Contains(written(wr), "/calls/") && !listingOnly(wr) {
			return fmt.Errorf("the answer is recorded with %s: the short path", written(wr))
		}
	}
	return nil
}

// describeCommits lists each commit's writes, for a failure message.
func describeCommits(commits []*firestorepb.CommitRequest) string {
	var b strings.Builder
	for i, c := range commits {
		fmt.Fprintf(&b, "%d:", i)
		for _, wr := range c.Writes {
			doc := written(wr)
			if j := strings.Index(doc, "/users/"); j >= 0 {
				doc = doc[j:]
			}
			kind := "update"
			if wr.GetDelete() != "" {
				kind = "delete"
			}
			fmt.Fprintf(&b, " %s %s %v;", kind, doc, wr.GetUpdateMask().GetFieldPaths())
		}
		b.WriteString("\n")
	}
	return b.String()
}
