package console_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/platform"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/genai"

	"github.com/baton-run/baton/console"
	"github.com/baton-run/baton/internal/firestoretest"
	"github.com/baton-run/baton/modeltest"
	"github.com/baton-run/baton/sessionstore"
	"github.com/baton-run/baton/toolcallback"
)

func TestMain(m *testing.M) { firestoretest.Main(m) }

type bgmArgs struct {
	Track int `json:"track"`
}

// world is a one-agent team (agent "dj", a browser tool change_bgm) of
// app "app", its console, and a strict scripted model.
type world struct {
	t        *testing.T
	counter  *firestoretest.Counter
	sessions *sessionstore.Service
	team     *toolcallback.Team
	console  *console.Console
	model    *modeltest.Strict
}

func newWorld(t *testing.T, script ...modeltest.Reply) *world {
	t.Helper()
	client, counter := firestoretest.NewCountingClient(t)
	w := &world{t: t, counter: counter, sessions: sessionstore.New(client, nil), model: &modeltest.Strict{T: t, Script: script}}
	bgm, err := toolcallback.Browser[bgmArgs](toolcallback.BrowserConfig{Name: "change_bgm", Description: "switch the page's music"})
	if err != nil {
		t.Fatal(err)
	}
	a, err := llmagent.New(llmagent.Config{Name: "dj", Model: w.model, Tools: []tool.Tool{bgm}})
	if err != nil {
		t.Fatal(err)
	}
	if w.team, err = toolcallback.NewTeam(w.sessions, "app", []toolcallback.Member{{Agent: a}}, nil); err != nil {
		t.Fatal(err)
	}
	w.console = console.New(w.team, w.sessions, nil)
	return w
}

// turn sends user's message to chat from tab-1 and waits for its end.
func (w *world) turn(ctx context.Context, user, chat, text string) error {
	w.t.Helper()
	inv, _, err := w.team.Turn(ctx, toolcallback.TurnRequest{UserID: user, ChatID: chat, ClientID: "tab-1", Content: genai.NewContentFromText(text, genai.RoleUser)})
	if err != nil {
		return err
	}
	return inv.Wait()
}

// list is the chats of a list's first page, as "user/chat".
func (w *world) list(ctx context.Context, q console.ChatQuery) []string {
	w.t.Helper()
	if q.Limit == 0 {
		q.Limit = 50
	}
	p, err := w.console.Chats(ctx, q)
	if err != nil {
		w.t.Fatalf("Chats(%+v): %v", q, err)
	}
	out := []string{}
	for _, r := range p.Rows {
		out = append(out, r.User+"/"+r.Chat)
	}
	return out
}

// TestWaitingChatAnsweredByOperator: a chat paused on a browser call is
// in the waiting list, its timeline shows the message, the call and the
// record; an operator's answer resumes the agent through the client's
// path (recorded, first writer wins) and the user's next turn goes on.
func TestWaitingChatAnsweredByOperator(t *testing.T) {
	w := newWorld(t, modeltest.CallReply(modeltest.Call("c1", "change_bgm", map[string]any{"track": 2})),
		modeltest.TextReply("Playing track 2."), modeltest.TextReply("You're welcome."))
	ctx := t.Context()
	if err := w.turn(ctx, "alice", "chat-1", "play track 2"); err != nil {
		t.Fatal(err)
	}
	if got := w.list(ctx, console.ChatQuery{State: console.StateWaiting}); !slices.Equal(got, []string{"alice/chat-1"}) {
		t.Fatalf("waiting = %v, want alice/chat-1", got)
	}
	if got := w.list(ctx, console.ChatQuery{State: console.StateWaiting, User: "bob"}); len(got) != 0 {
		t.Errorf("bob's waiting chats = %v, want none", got)
	}
	tl, err := w.console.ChatTimeline(ctx, "alice", "chat-1")
	if err != nil {
		t.Fatal(err)
	}
	if kinds := entryKinds(tl); !containsAll(kinds, "chat", "message", "call", "call-paused", "invocation-start", "invocation-end") {
		t.Errorf("timeline kinds = %v", kinds)
	}
	out, err := w.console.Answer(ctx, "ops@example.com", console.Target{User: "alice", Chat: "chat-1", Call: "c1"},
		toolcallback.Answer{Output: map[string]any{"playing": 2}})
	if err != nil {
		t.Fatalf("Answer: %v", err)
	}
	if !out.Resumed {
		t.Errorf("the operator's answer resumed nothing: %+v", out)
	}
	if got := w.list(ctx, console.ChatQuery{State: console.StateWaiting}); len(got) != 0 {
		t.Errorf("waiting after the answer = %v, want none", got)
	}
	if err := w.turn(ctx, "alice", "chat-1", "thanks"); err != nil {
		t.Errorf("the user's next turn: %v", err)
	}
	if req := modeltest.DumpContents(w.model.LastRequest().Contents); !strings.Contains(req, "playing") {
		t.Errorf("the model never read the operator's answer:\n%s", req)
	}
	actions, _, err := w.console.Actions(ctx, "", 10)
	if err != nil || len(actions) != 1 || actions[0].What != "answer" || actions[0].Outcome != "done" || actions[0].Operator != "ops@example.com" {
		t.Errorf("recorded actions = %+v, %v; want the answer, done", actions, err)
	}
	tl, err = w.console.ChatTimeline(ctx, "alice", "chat-1")
	if err != nil {
		t.Fatal(err)
	}
	if kinds := entryKinds(tl); !containsAll(kinds, "call-settled", "response", "action") {
		t.Errorf("timeline after the answer = %v; want the settlement, the response and the action", kinds)
	}
	if _, err := w.console.Answer(ctx, "ops@example.com", console.Target{User: "alice", Chat: "chat-1", Call: "c1"},
		toolcallback.Answer{Output: map[string]any{"playing": 3}}); !errors.As(err, new(*toolcallback.AlreadyResolvedError)) {
		t.Errorf("a second answer = %v, want AlreadyResolvedError", err)
	}
}

// TestStuckCallSweptByOperator: a call past its expiry that no sweep
// closed is listed as stuck (and by age); the operator's sweep closes it
// and resumes the model with the expiry, and it leaves the list.
func TestStuckCallSweptByOperator(t *testing.T) {
	w := newWorld(t, modeltest.CallReply(modeltest.Call("c1", "change_bgm", map[string]any{"track": 2})),
		modeltest.TextReply("The page did not answer."))
	if err := w.turn(t.Context(), "alice", "chat-1", "play track 2"); err != nil {
		t.Fatal(err)
	}
	later := platform.WithTimeProvider(t.Context(), func() time.Time { return time.Now().Add(20 * time.Minute) })
	if got := w.list(later, console.ChatQuery{State: console.StateStuckCall}); !slices.Equal(got, []string{"alice/chat-1"}) {
		t.Fatalf("stuck calls 20 minutes on = %v, want alice/chat-1", got)
	}
	if got := w.list(later, console.ChatQuery{State: console.StateStuckCall, MinAge: time.Hour}); len(got) != 0 {
		t.Errorf("stuck for an hour = %v, want none", got)
	}
	if got := w.list(t.Context(), console.ChatQuery{State: console.StateStuckCall}); len(got) != 0 {
		t.Errorf("stuck now = %v, want none (the call is not due)", got)
	}
	report, err := w.console.Sweep(later, "ops@example.com")
	if err != nil || report.Expired != 1 || report.Resumed != 1 {
		t.Fatalf("Sweep = %+v, %v; want one expired and resumed", report, err)
	}
	if got := w.list(later, console.ChatQuery{State: console.StateStuckCall}); len(got) != 0 {
		t.Errorf("stuck after the sweep = %v, want none", got)
	}
}

// TestStuckLeaseReleasedByOperator: a lease past its term never released
// is listed as stuck; the operator's release (fenced) takes it off.
func TestStuckLeaseReleasedByOperator(t *testing.T) {
	w := newWorld(t, modeltest.TextReply("Hi."))
	ctx := t.Context()
	if err := w.turn(ctx, "alice", "chat-1", "hello"); err != nil {
		t.Fatal(err)
	}
	sid := "chat-1~0"
	early := platform.WithTimeProvider(ctx, func() time.Time { return time.Now().Add(-time.Hour) })
	held, err := w.sessions.AcquireLease(early, sessionstore.LeaseRequest{App: "app", User: "alice", SessionID: sid, Holder: "dead/1", TTL: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if got := w.list(ctx, console.ChatQuery{State: console.StateStuckLease}); !slices.Equal(got, []string{"alice/chat-1"}) {
		t.Fatalf("stuck leases = %v, want alice/chat-1", got)
	}
	report, err := w.console.Release(ctx, "ops@example.com", console.Target{User: "alice", Chat: "chat-1"})
	if err != nil || !report.Held || report.Holder != "dead/1" {
		t.Fatalf("Release = %+v, %v", report, err)
	}
	if got := w.list(ctx, console.ChatQuery{State: console.StateStuckLease}); len(got) != 0 {
		t.Errorf("stuck leases after the release = %v, want none", got)
	}
	if _, err := w.sessions.Read(ctx, sessionstore.ReadRequest{App: "app", User: "alice", SessionID: sid, Lease: held}); !errors.Is(err, sessionstore.ErrLeaseLost) {
		t.Errorf("the old holder's read = %v, want ErrLeaseLost", err)
	}
}

// TestConsoleBadInput: every malformed request is refused before it
// reads or writes.
func TestConsoleBadInput(t *testing.T) {
	w := newWorld(t)
	ctx := t.Context()
	before := w.counter.Snapshot()
	queries := []console.ChatQuery{
		{State: "asleep", Limit: 10},
		{State: console.StateWaiting, Limit: 0},
		{State: console.StateWaiting, Limit: 10, User: "a/b"},
		{State: console.StateWaiting, Limit: 10, Agent: "nobody"},
		{State: console.StateRunning, Limit: 10, Agent: "dj"},
		{State: console.StateRunning, Limit: 10, MinAge: time.Minute},
		{State: console.StateWaiting, Limit: 10, MinAge: -time.Minute},
	}
	for _, q := range queries {
		if _, err := w.console.Chats(ctx, q); !errors.Is(err, console.ErrBadInput) {
			t.Errorf("Chats(%+v) = %v, want ErrBadInput", q, err)
		}
	}
	if _, err := w.console.ChatTimeline(ctx, "", "x"); !errors.Is(err, console.ErrBadInput) {
		t.Errorf("timeline without a user = %v", err)
	}
	if _, err := w.console.Expire(ctx, "ops", console.Target{User: "u", Chat: "c", Call: "k"}, ""); !errors.Is(err, console.ErrBadInput) {
		t.Errorf("expiry without a reason = %v", err)
	}
	if _, err := w.console.Stop(ctx, "ops", console.Target{User: "u", Chat: "../x"}); !errors.Is(err, console.ErrBadInput) {
		t.Errorf("stop of a bad chat id = %v", err)
	}
	if err := w.console.DeleteUser(ctx, "ops", "u"); !errors.Is(err, console.ErrUnsupported) {
		t.Errorf("delete without the account deletion = %v, want ErrUnsupported", err)
	}
	if ops := w.counter.Snapshot().Sub(before); ops.RoundTrips != 0 {
		t.Errorf("refused requests made %+v", ops)
	}
	if _, err := w.console.Chats(ctx, console.ChatQuery{State: console.StateWaiting, Limit: 10, Cursor: "bm9wZQ"}); !errors.Is(err, console.ErrBadInput) {
		t.Errorf("a forged cursor = %v, want ErrBadInput", err)
	}
}

func entryKinds(tl *console.Timeline) []string {
	var out []string
	for _, e := range tl.Entries {
		out = append(out, e.Kind)
	}
	return out
}

func containsAll(have []string, want ...string) bool {
	for _, w := range want {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}
