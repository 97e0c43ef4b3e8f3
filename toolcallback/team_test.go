package toolcallback_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/firestore"
	"cloud.google.com/go/firestore/apiv1/firestorepb"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/platform"
	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/api/iterator"
	"google.golang.org/genai"

	"github.com/baton-run/baton/internal/firestoretest"
	"github.com/baton-run/baton/internal/teamtest"
	"github.com/baton-run/baton/modeltest"
	"github.com/baton-run/baton/sessionstore"
	"github.com/baton-run/baton/toolcallback"
)

// teamFixture is a concierge (default) and a DJ, each on its own strict
// scripted model.
type teamFixture struct {
	t         *testing.T
	client    *firestore.Client
	counter   *firestoretest.Counter
	sessions  *sessionstore.Service
	team      *toolcallback.Team
	concierge *modeltest.Strict
	dj        *modeltest.Strict
}

func newTeamFixture(t *testing.T, options ...func(*toolcallback.Options)) *teamFixture {
	t.Helper()
	f := &teamFixture{t: t, concierge: &modeltest.Strict{T: t}, dj: &modeltest.Strict{T: t}}
	opts := &toolcallback.Options{IdleRetention: 24 * time.Hour}
	for _, o := range options {
		o(opts)
	}
	w := teamtest.New(t, &teamtest.Options{Team: opts, Agents: func(w *teamtest.World, _ *teamtest.Instance) []toolcallback.Member {
		return []toolcallback.Member{
			w.Member(llmagent.Config{Name: "concierge", Model: f.concierge, Tools: []tool.Tool{w.Tools.Location}}),
			w.Member(llmagent.Config{Name: "dj", Model: f.dj, Tools: []tool.Tool{w.Tools.BGM}}),
		}
	}})
	f.client, f.counter, f.sessions, f.team = w.Client, w.Counter, w.Sessions, w.Team
	return f
}

// turn sends user-1's message text to chat from tab-a, asking for agent
// ("": the chat's own), as runTurn does.
func (f *teamFixture) turn(chat, agent, text string) ([]*session.Event, *toolcallback.SwitchReport, error) {
	f.t.Helper()
	req := textTurn(chat, "tab-a", text)
	req.Agent = agent
	return runTurn(f.t.Context(), f.team, req)
}

// sessionIDs lists the user's stored ADK sessions.
func (f *teamFixture) sessionIDs() []string {
	f.t.Helper()
	list, err := f.sessions.List(f.t.Context(), &session.ListRequest{AppName: "app", UserID: "user-1"})
	if err != nil {
		f.t.Fatal(err)
	}
	var ids []string
	for _, s := range list.Sessions {
		ids = append(ids, s.ID())
	}
	return ids
}

// countDocs counts every document under ref, recursively, ref included.
func countDocs(t *testing.T, ctx context.Context, ref *firestore.DocumentRef) int {
	t.Helper()
	n := 0
	if _, err := ref.Get(ctx); err == nil {
		n++
	}
	cols := ref.Collections(ctx)
	for {
		col, err := cols.Next()
		if errors.Is(err, iterator.Done) {
			return n
		}
		if err != nil {
			t.Fatal(err)
		}
		docs := col.DocumentRefs(ctx)
		for {
			d, err := docs.Next()
			if errors.Is(err, iterator.Done) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			n += countDocs(t, ctx, d)
		}
	}
}

// TestSwitchAndBack switches concierge → DJ → concierge in one chat.
func TestSwitchAndBack(t *testing.T) {
	t.Parallel()
	f := newTeamFixture(t)
	f.concierge.Script = []reply{textReply("Hello, I'm the concierge."), echoReply}
	f.dj.Script = []reply{callReply(call("c1", "change_bgm", map[string]any{"track": 2})), textReply("Track 2 is on.")}

	if _, report, err := f.turn("chat", "", "hello"); err != nil || report.Switched || report.To != "concierge" {
		t.Fatalf("first turn: %+v, %v; want the concierge without a switch", report, err)
	}
	if got := f.sessionIDs(); strings.Join(got, ",") != "chat~0" {
		t.Fatalf("sessions after the first turn = %v, want [chat~0]", got)
	}
	_, report, err := f.turn("chat", "dj", "play track 2")
	if err != nil || !report.Switched || report.From != "concierge" || report.To != "dj" {
		t.Fatalf("switch to dj: %+v, %v", report, err)
	}
	if got := f.sessionIDs(); strings.Join(got, ",") != "chat~1" {
		t.Errorf("sessions after the switch = %v, want only the new chat~1", got)
	}
	// The DJ's model saw the earlier turns as user and model turns.
	djReq := modeltest.DumpContents(f.dj.LastRequest().Contents)
	if !strings.Contains(djReq, `text("hello")`) || !strings.Contains(djReq, `model: text("Hello, I'm the concierge.")`) {
		t.Errorf("DJ's first request lacks the migrated conversation:\n%s", djReq)
	}
	res, _, err := resume(f.team, t.Context(), "chat", "c1", "tab-a", toolcallback.Answer{Output: map[string]any{"playing": 2}})
	if err != nil || res.Invocation == nil {
		t.Fatalf("answer c1: %+v, %v", res, err)
	}
	_, report, err = f.turn("chat", "concierge", "what did the DJ just do?")
	if err != nil || !report.Switched || report.From != "dj" {
		t.Fatalf("switch back: %+v, %v", report, err)
	}
	if got := f.sessionIDs(); strings.Join(got, ",") != "chat~2" {
		t.Errorf("sessions after switching back = %v, want only chat~2", got)
	}
	req := f.concierge.LastRequest().Contents
	dump := modeltest.DumpContents(req)
	for _, want := range []string{`text("hello")`, `text("play track 2")`, `[dj called change_bgm(track=2): {\"playing\":2}]`, `text("Track 2 is on.")`, `text("what did the DJ just do?")`} {
		if !strings.Contains(dump, want) {
			t.Errorf("concierge's request lacks %s:\n%s", want, dump)
		}
	}
	if strings.Contains(dump, "call(") || strings.Contains(dump, "response(") {
		t.Errorf("concierge's request carries the DJ's function calls:\n%s", dump)
	}
	chat, err := f.sessions.GetChat(t.Context(), "app", "user-1", "chat")
	if err != nil || chat.Switches != 2 || chat.Agent != "concierge" || chat.SessionID != "chat~2" || chat.CleanupAt != nil {
		t.Errorf("chat record = %+v, %v", chat, err)
	}
}

// TestLongChatIDs: a chat id of any accepted length (up to 1,500 bytes)
// works from its first turn through many agent switches, although the ADK
// session behind it is named after the chat and the switch count.
func TestLongChatIDs(t *testing.T) {
	t.Parallel()
	for _, n := range []int{1480, 1481, 1498, 1499, 1500} {
		t.Run(fmt.Sprintf("%d bytes", n), func(t *testing.T) {
			t.Parallel()
			f := newTeamFixture(t)
			f.concierge.Repeat = textReply("Concierge.")
			f.dj.Repeat = textReply("DJ.")
			chatID := strings.Repeat("c", n)
			if _, _, err := f.turn(chatID, "", "hello"); err != nil {
				t.Fatalf("first turn: %v", err)
			}
			const switches = 12
			for i := 1; i <= switches; i++ {
				target := "dj"
				if i%2 == 0 {
					target = "concierge"
				}
				_, report, err := f.turn(chatID, target, fmt.Sprintf("switch %d", i))
				if err != nil || !report.Switched {
					t.Fatalf("switch %d to %s: %+v, %v", i, target, report, err)
				}
			}
			chat, err := f.sessions.GetChat(t.Context(), "app", "user-1", chatID)
			if err != nil || chat.Switches != switches || chat.Agent != "concierge" {
				t.Fatalf("chat after %d switches = %+v, %v", switches, chat, err)
			}
			if got := f.sessionIDs(); len(got) != 1 || got[0] != chat.SessionID || len(got[0]) > sessionstore.MaxIDBytes {
				t.Errorf("sessions = %d ids %v..., want only the chat's session %.20q..., at most %d bytes", len(got), got, chat.SessionID, sessionstore.MaxIDBytes)
			}
			if _, err := f.team.Pending(t.Context(), toolcallback.PendingRequest{UserID: "user-1", ChatID: chatID, ClientID: "tab-a"}); err != nil {
				t.Errorf("Pending() error = %v", err)
			}
		})
	}
}

// TestSwitchCancelsPendingCall switches away while the DJ waits for the
// browser.
func TestSwitchCancelsPendingCall(t *testing.T) {
	t.Parallel()
	f := newTeamFixture(t)
	f.dj.Script = []reply{callReply(call("c1", "change_bgm", map[string]any{"track": 3}))}
	f.concierge.Script = []reply{echoReply}
	if _, _, err := f.turn("chat", "dj", "play track 3"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.turn("chat", "concierge", "actually, never mind"); err != nil {
		t.Fatalf("switch: %v", err)
	}
	dump := modeltest.DumpContents(f.concierge.LastRequest().Contents)
	if !strings.Contains(dump, "[dj called change_bgm(track=3): cancelled") {
		t.Errorf("migrated record does not say the call was cancelled:\n%s", dump)
	}
	before := f.counter.Snapshot()
	_, err := f.team.Resume(t.Context(), toolcallback.ResumeRequest{UserID: "user-1", ChatID: "chat", CallID: "c1", ClientID: "tab-a",
		Answer: toolcallback.Answer{Output: map[string]any{"playing": 3}}})
	if !errors.Is(err, toolcallback.ErrExpired) {
		t.Errorf("late answer error = %v, want ErrExpired (410)", err)
	}
	if w := f.counter.Snapshot().Sub(before).Writes; w != 0 {
		t.Errorf("late answer wrote %d documents", w)
	}
}

// TestSwitchFailures fails each step of a switch and checks the chat still
// works and a sweep removes the leftovers.
func TestSwitchFailures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// fail says whether to fail a commit, given its writes.
		fail       func(writes []*firestorepb.Write) bool
		wantSwitch bool // the switch itself completed
	}{
		{"after create, before the pointer flip", func(ws []*firestorepb.Write) bool {
			for _, w := range ws {
				if u := w.GetUpdate(); u != nil && strings.Contains(u.Name, "/chats/") && u.Fields["session"].GetStringValue() == "chat~1" {
					return true
				}
			}
			return false
		}, false},
		{"after the pointer flip, deleting the old session", func(ws []*firestorepb.Write) bool {
			for _, w := range ws {
				if strings.HasSuffix(w.GetDelete(), "/sessions/chat~0") {
					return true
				}
			}
			return false
		}, true},
		{"during delete, clearing the cleanup mark", func(ws []*firestorepb.Write) bool {
			for _, w := range ws {
				if u := w.GetUpdate(); u != nil && strings.Contains(u.Name, "/chats/") && u.Fields["session"].GetStringValue() == "chat~1" && isNull(u.Fields["cleanupAt"]) {
					return true
				}
			}
			return false
		}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newTeamFixture(t)
			f.concierge.Script = []reply{textReply("Hi."), textReply("Still here.")}
			f.dj.Script = []reply{textReply("DJ here."), textReply("Still DJ.")}
			if _, _, err := f.turn("chat", "", "hello"); err != nil {
				t.Fatal(err)
			}
			var once sync.Once
			failed := false
			f.counter.SetHook(func(method string, req any) error {
				c, ok := req.(*firestorepb.CommitRequest)
				if !ok || !tc.fail(c.Writes) {
					return nil
				}
				var err error
				once.Do(func() { failed, err = true, errors.New("injected failure") })
				return err
			})
			_, _, err := f.turn("chat", "dj", "switch to the dj")
			f.counter.SetHook(nil)
			if !failed {
				t.Fatal("the failure was never injected")
			}
			if tc.wantSwitch && err != nil {
				t.Fatalf("switch error = %v, want the switch to complete", err)
			}
			if !tc.wantSwitch && err == nil {
				t.Fatal("switch succeeded although its pointer flip failed")
			}
			// The chat works on the next turn, with a complete session.
			agent := "concierge"
			if tc.wantSwitch {
				agent = "dj"
			}
			events, report, err := f.turn("chat", "", "are you there?")
			if err != nil || report.To != agent || finalText(events) == "" {
				t.Fatalf("next turn: %+v %q %v; want %s answering", report, finalText(events), err, agent)
			}
			// A sweep past the switch's lease removes what it left behind.
			if _, err := f.team.Sweep(t.Context(), time.Now().Add(5*time.Minute)); err != nil {
				t.Fatalf("Sweep() error = %v", err)
			}
			chat, err := f.sessions.GetChat(t.Context(), "app", "user-1", "chat")
			if err != nil {
				t.Fatal(err)
			}
			if got := f.sessionIDs(); len(got) != 1 || got[0] != chat.SessionID {
				t.Errorf("sessions after sweep = %v, want only the active %s", got, chat.SessionID)
			}
			if chat.CleanupAt != nil || chat.Building != "" {
				t.Errorf("chat after sweep = %+v, want no cleanup left", chat)
			}
		})
	}
}

func isNull(v *firestorepb.Value) bool {
	_, ok := v.GetValueType().(*firestorepb.Value_NullValue)
	return ok
}

// TestConcurrentSwitches: two tabs switch one chat at once.
func TestConcurrentSwitches(t *testing.T) {
	t.Parallel()
	f := newTeamFixture(t)
	f.concierge.Script = []reply{textReply("Hi.")}
	f.dj.Script = []reply{textReply("First."), textReply("Second.")}
	if _, _, err := f.turn("chat", "", "hello"); err != nil {
		t.Fatal(err)
	}
	gate := make(chan struct{})
	f.dj.Gate = gate // the switch that wins keeps its new session busy in the model
	type result struct {
		inv *toolcallback.Invocation
		err error
	}
	results := make(chan result, 2)
	for _, tab := range []string{"tab-a", "tab-b"} {
		go func() {
			inv, _, err := f.team.Turn(t.Context(), toolcallback.TurnRequest{UserID: "user-1", ChatID: "chat", ClientID: tab, Agent: "dj",
				Content: genai.NewContentFromText("dj please", genai.RoleUser)})
			results <- result{inv, err}
		}()
	}
	got := []result{<-results, <-results}
	close(gate)
	busy, ran := 0, 0
	for _, r := range got {
		switch {
		case errors.Is(r.err, sessionstore.ErrBusy):
			busy++
		case r.err == nil:
			ran++
			if _, err := collect(r.inv); err != nil {
				t.Fatal(err)
			}
		default:
			t.Errorf("Turn() error = %v, want nil or busy", r.err)
		}
	}
	if ran != 1 || busy != 1 {
		t.Errorf("%d ran, %d busy; want one each", ran, busy)
	}
	if got := f.sessionIDs(); len(got) != 1 {
		t.Errorf("sessions = %v, want exactly one active", got)
	}
}

// TestIdleCleanup deletes every document of an idle chat and nothing of an
// active one.
func TestIdleCleanup(t *testing.T) {
	t.Parallel()
	f := newTeamFixture(t)
	f.dj.Script = []reply{callReply(call("c1", "change_bgm", map[string]any{"track": 1}))}
	f.concierge.Script = []reply{textReply("Switched."), textReply("Fresh chat.")}
	if _, _, err := f.turn("old", "dj", "music"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.turn("old", "concierge", "never mind"); err != nil { // retires a session with a ledger record
		t.Fatal(err)
	}
	user := f.sessions.Client().Doc(f.sessions.UserDoc("app", "user-1").Path())
	before := countDocs(t, t.Context(), user)
	if before < 3 {
		t.Fatalf("only %d documents before cleanup; the fixture should have made more", before)
	}
	later := time.Now().Add(25 * time.Hour)
	ctx := t.Context()
	// A chat active "now" (at the sweep's clock) must stay.
	activeCtx := platformAt(ctx, later)
	if _, _, err := runTurn(activeCtx, f.team, textTurn("new", "tab-a", "hi")); err != nil {
		t.Fatal(err)
	}
	withNew := countDocs(t, ctx, user)
	report, err := f.team.Sweep(ctx, later)
	if err != nil {
		t.Fatalf("Sweep() error = %v", err)
	}
	if report.Idle != 1 {
		t.Errorf("Sweep() = %+v, want one idle chat deleted", report)
	}
	after := countDocs(t, ctx, user)
	if _, err := f.team.Follow(ctx, "user-1", "old"); !errors.Is(err, sessionstore.ErrNotFound) {
		t.Errorf("idle chat still readable: %v", err)
	}
	// What remains is exactly the active chat's documents, and the idle
	// chat's bare tombstone.
	if want := withNew - before + 1; after != want {
		t.Errorf("documents after cleanup = %d, want %d (the active chat's and a tombstone; %d before)", after, want, withNew)
	}
	if _, err := f.sessions.GetChat(ctx, "app", "user-1", "new"); err != nil {
		t.Errorf("active chat was deleted: %v", err)
	}
}

func platformAt(ctx context.Context, at time.Time) context.Context {
	return platform.WithTimeProvider(ctx, func() time.Time { return at })
}

// TestSwitchCarriesState: session-scoped state moves with the
// conversation unless the target agent drops it; temp: never moves and
// user: state stays the user's.
func TestSwitchCarriesState(t *testing.T) {
	t.Parallel()
	for _, drop := range []bool{false, true} {
		t.Run(fmt.Sprintf("drop=%v", drop), func(t *testing.T) {
			t.Parallel()
			f := newTeamFixture(t)
			if drop {
				dj := teamtest.Member(t, llmagent.Config{Name: "dj", Model: f.dj})
				dj.DropState = true
				f.team = teamtest.NewTeam(t, f.sessions, nil, teamtest.Member(t, llmagent.Config{Name: "concierge", Model: f.concierge}), dj)
			}
			f.concierge.Script = []reply{textReply("Hi.")}
			f.dj.Script = []reply{textReply("DJ.")}
			if _, _, err := f.turn("chat", "", "hello"); err != nil {
				t.Fatal(err)
			}
			got, err := f.sessions.Get(t.Context(), &session.GetRequest{AppName: "app", UserID: "user-1", SessionID: "chat~0"})
			if err != nil {
				t.Fatal(err)
			}
			if err := f.sessions.AppendEvent(t.Context(), got.Session, &session.Event{ID: "state", Author: "concierge",
				Actions: session.EventActions{StateDelta: map[string]any{"mood": "jazzy", "temp:scratch": 1, "user:name": "Ada"}}}); err != nil {
				t.Fatal(err)
			}
			if _, _, err := f.turn("chat", "dj", "music"); err != nil {
				t.Fatal(err)
			}
			moved, err := f.sessions.Get(t.Context(), &session.GetRequest{AppName: "app", UserID: "user-1", SessionID: "chat~1"})
			if err != nil {
				t.Fatal(err)
			}
			state := map[string]any{}
			for k, v := range moved.Session.State().All() {
				state[k] = v
			}
			if _, ok := state["temp:scratch"]; ok {
				t.Errorf("temp: state moved: %v", state)
			}
			if state["user:name"] != "Ada" {
				t.Errorf("user: state = %v, want it shared", state["user:name"])
			}
			if _, ok := state["mood"]; ok == drop {
				t.Errorf("session state after the switch = %v; carried = %v, want %v", state, ok, !drop)
			}
		})
	}
}
