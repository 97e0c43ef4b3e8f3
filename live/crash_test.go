package live_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/platform"
	"google.golang.org/genai"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/baton-run/baton/internal/firestoretest"
	"github.com/baton-run/baton/live"
	"github.com/baton-run/baton/modeltest"
	"github.com/baton-run/baton/toolcallback"
)

// crashLease is the lease term of the doomed instance: longer than its
// path, so that no renewal lands in it (its writes are the same on every
// run); the instance that takes over reads its clock that much later.
const crashLease = 30 * time.Second

// voiceRules answer as a model with memory would, whatever was lost: a
// request for music calls change_bgm, a tool's answer is echoed, anything
// else is greeted.
func voiceRules(req *model.LLMRequest) *genai.Content {
	last := req.Contents[len(req.Contents)-1]
	for _, p := range last.Parts {
		if p.FunctionResponse != nil {
			return modeltest.EchoReply(req)
		}
		if strings.Contains(p.Text, "track") {
			return modeltest.CallReply(modeltest.Call("", "change_bgm", map[string]any{"track": 3}))(req)
		}
	}
	return genai.NewContentFromText("Hello.", genai.RoleModel)
}

// TestCrashAtEveryLiveWrite kills the instance holding a live segment right
// after each of its Firestore writes in turn (every later call of its
// client fails, as if the process had died), on a path that opens the
// segment, has a turn, pauses on a browser call that the device answers,
// hears the model's answer and closes. Another instance then opens the
// chat: every call the client was shown has its ledger record and, if
// still open, is shown again and can be answered; no call is answered
// twice; a text turn after it finds the transcript valid (the strict text
// model), with no user message twice.
func TestCrashAtEveryLiveWrite(t *testing.T) {
	writes := len(runLiveCrash(t, -1))
	if writes < 6 {
		t.Fatalf("the path made %d commits; the test is not exercising it", writes)
	}
	for k := range writes {
		t.Run(fmt.Sprintf("dies-after-write-%d-of-%d", k, writes), func(t *testing.T) {
			runLiveCrash(t, k)
		})
	}
}

// runLiveCrash runs the path, killing the instance after its first
// survive commits (never when survive < 0), then recovers on another
// instance. It returns the commits of the path.
func runLiveCrash(t *testing.T, survive int) []string {
	w := newWorld(t, &modeltest.LiveOptions{Repeat: voiceRules})
	w.text.Repeat = modeltest.EchoReply
	client, counter := firestoretest.Reopen(t, w.client)
	var mu sync.Mutex
	var commits []string
	dead := false
	counter.SetHook(func(method string, _ any) error {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case dead:
			return status.Error(codes.Canceled, "process killed")
		case !strings.HasSuffix(method, "/Commit"):
			return nil
		case survive >= 0 && len(commits) >= survive:
			dead = true
			return status.Error(codes.Canceled, "process killed")
		}
		commits = append(commits, method)
		return nil
	})
	doomed := w.instance(client, &toolcallback.Options{LeaseTTL: crashLease}, nil)
	shown := doomedPath(t, doomed)
	mu.Lock()
	dead = true
	made := append([]string(nil), commits...)
	mu.Unlock()
	recoverLive(t, w, shown)
	return made
}

// doomedPath runs the path as far as the instance lives, and returns the
// calls the client was shown.
func doomedPath(t *testing.T, in *instance) []live.ToolCall {
	cl := newClient(t)
	conv, err := in.runner.Open(t.Context(), live.Request{UserID: user, ChatID: chat, DeviceID: device}, cl)
	if err != nil {
		return nil // died at the segment's first write
	}
	defer conv.Close()
	ended := conv.Done()
	if conv.Text("hi") != nil || !cl.until(ended, signal("turn-complete")) {
		return cl.calls()
	}
	if conv.Text("play track 3") != nil || !cl.until(ended, isToolCall) {
		return cl.calls()
	}
	call := cl.calls()[0]
	if conv.Answer(t.Context(), live.Answer{ToolCallID: call.ToolCallID, Output: map[string]any{"playing": 3}}) != nil {
		return cl.calls()
	}
	cl.until(ended, func(m live.Message) bool {
		tr, ok := m.(live.Transcript)
		return ok && tr.Final && strings.HasPrefix(tr.Text, "saw")
	})
	return cl.calls()
}

// recoverLive plays the next instance, later than the dead holder's lease.
func recoverLive(t *testing.T, w *world, shown []live.ToolCall) {
	ctx := platform.WithTimeProvider(t.Context(), func() time.Time { return time.Now().Add(crashLease + time.Second) })
	next := w.instance(nil, &toolcallback.Options{LeaseTTL: crashLease}, nil)
	cl := newClient(t)
	conv, err := next.runner.Open(ctx, live.Request{UserID: user, ChatID: chat, DeviceID: device}, cl)
	if err != nil {
		t.Fatalf("Open() after the crash error = %v", err)
	}
	ready := cl.ready()
	open := map[string]bool{}
	for _, c := range ready.Calls {
		open[c.ToolCallID] = true
	}
	state, err := next.team.Pending(ctx, toolcallback.PendingRequest{UserID: user, ChatID: chat, ClientID: device})
	if err != nil {
		t.Fatalf("Pending() after the crash error = %v", err)
	}
	for _, c := range state.Calls {
		if !open[c.OriginalID] {
			t.Errorf("call %s is pending but the new socket was not shown it", c.OriginalID)
		}
	}
	for _, c := range shown {
		if len(state.Calls) > 0 || answeredIn(w, c.ToolCallID) {
			continue
		}
		// An answer recorded but not delivered is delivered by the new
		// segment once it listens, then its result shown.
		delivered := cl.until(nil, func(m live.Message) bool {
			r, ok := m.(live.ToolResult)
			return ok && r.ToolCallID == c.ToolCallID
		})
		if !delivered || !answeredIn(w, c.ToolCallID) {
			t.Errorf("call %s was shown, is not pending and its answer is not delivered to the transcript", c.ToolCallID)
		}
	}
	for _, c := range ready.Calls {
		if err := conv.Answer(ctx, live.Answer{ToolCallID: c.ToolCallID, Output: map[string]any{"playing": 3}}); err != nil {
			t.Errorf("answer %s after the crash: %v", c.ToolCallID, err)
		}
		cl.said(1)
	}
	conv.Close()
	checkAnsweredOnce(t, w)
	checkTextTurn(t, w, next)
}

// answeredIn reports whether the chat's transcript holds a response to the
// call id.
func answeredIn(w *world, id string) bool {
	for _, ev := range w.events(chat) {
		if ev.Content == nil {
			continue
		}
		for _, p := range ev.Content.Parts {
			if p.FunctionResponse != nil && p.FunctionResponse.ID == id {
				return true
			}
		}
	}
	return false
}

// checkAnsweredOnce: no call has two responses in the transcript, and the
// model was sent no call's response twice.
func checkAnsweredOnce(t *testing.T, w *world) {
	t.Helper()
	stored := map[string]int{}
	for _, ev := range w.events(chat) {
		if ev.Content == nil {
			continue
		}
		for _, p := range ev.Content.Parts {
			if p.FunctionResponse != nil {
				stored[p.FunctionResponse.ID]++
			}
		}
	}
	for id, n := range stored {
		if n > 1 {
			t.Errorf("call %s has %d responses in the transcript", id, n)
		}
	}
	for _, c := range w.model.Conns() {
		sent := map[string]int{}
		for _, content := range c.Seen() {
			for _, p := range content.Parts {
				if p.FunctionResponse != nil {
					sent[p.FunctionResponse.ID]++
				}
			}
		}
		for id, n := range sent {
			if n > 1 {
				t.Errorf("connection %d: the model saw call %s answered %d times", c.Index(), id, n)
			}
		}
	}
}
