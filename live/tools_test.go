package live_test

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/baton-run/baton/internal/firestoretest"
	"github.com/baton-run/baton/live"
	"github.com/baton-run/baton/modeltest"
	"github.com/baton-run/baton/toolcallback"
)

// toolResponses counts the tool responses the stand-in was sent, on every
// connection, and those it dropped (orphans).
func toolResponses(s *modeltest.LiveServer) (sent, orphans int) {
	for _, c := range s.Conns() {
		for _, f := range c.Frames() {
			if f.Client != nil && f.Client.ToolResponse != nil {
				sent += len(f.Client.ToolResponse.FunctionResponses)
			}
		}
		orphans += len(c.Orphans())
	}
	return sent, orphans
}

// TestBrowserCallAnsweredElsewhere: a browser call made in live mode is
// recorded with its event and shown to the device; the model goes on (the
// call is NON_BLOCKING). Twenty answers, from another instance and from
// the socket at once, are recorded once and reach the model once, and the
// response is stored once; the other instance resumes nothing and does not
// wait for the segment.
func TestBrowserCallAnsweredElsewhere(t *testing.T) {
	w := newWorld(t, &modeltest.LiveOptions{Script: []modeltest.Reply{
		modeltest.CallReply(modeltest.Call("", "change_bgm", map[string]any{"track": 2})), modeltest.EchoReply,
	}})
	in := w.instance(nil, nil, nil)
	conv, cl := in.open(t, chat, device)
	if err := conv.Text("play track 2"); err != nil {
		t.Fatal(err)
	}
	call := cl.toolCall(1)
	want := live.ToolCall{Type: "tool-call", ToolCallID: call.ToolCallID, ToolName: "change_bgm", Input: map[string]any{"track": float64(2)}, Kind: "browser", DeviceID: device}
	if diff := cmp.Diff(want, call); diff != "" {
		t.Fatalf("tool call (-want +got):\n%s", diff)
	}
	if s := w.model.Conn(0).Setup(); s.Tools[0].FunctionDeclarations[0].Behavior != "NON_BLOCKING" {
		t.Errorf("change_bgm declared %q, want NON_BLOCKING", s.Tools[0].FunctionDeclarations[0].Behavior)
	}
	cl.turnsComplete(1) // the model's turn ended without the answer

	other, _ := firestoretest.Reopen(t, w.client)
	elsewhere := w.instance(other, nil, nil)
	answer := toolcallback.Answer{Output: map[string]any{"playing": float64(2)}}
	var wg sync.WaitGroup
	var mu sync.Mutex
	recorded, resumed := 0, 0
	start := time.Now()
	for i := range 20 {
		wg.Go(func() {
			var err error
			var res *toolcallback.ResumeOutcome
			if i%4 == 0 {
				err = conv.Answer(t.Context(), live.Answer{ToolCallID: call.ToolCallID, Output: answer.Output})
			} else {
				res, err = elsewhere.team.Resume(t.Context(), toolcallback.ResumeRequest{UserID: user, ChatID: chat, ClientID: device, CallID: call.ToolCallID, Answer: answer})
			}
			var resolved *toolcallback.AlreadyResolvedError
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil && res != nil:
				recorded++
				if res.Invocation != nil {
					resumed++
				}
			case err == nil, errors.As(err, &resolved) && resolved.Same:
			default:
				t.Errorf("answer %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("the answers took %s: an answer waited for the live segment", took)
	}
	if said := cl.said(1); said.Text != `saw change_bgm={"playing":2}` {
		t.Fatalf("the model said %q after the answer", said.Text)
	}
	cl.await("the tool's result", 1, func(m live.Message) bool { r, ok := m.(live.ToolResult); return ok && r.ToolCallID == call.ToolCallID })
	conv.Close()
	if sent, orphans := toolResponses(w.model); sent != 1 || orphans != 0 {
		t.Errorf("the model was sent %d tool responses (%d dropped), want 1", sent, orphans)
	}
	if recorded > 1 || resumed != 0 {
		t.Errorf("%d answers recorded by the other instance (%d resumed the agent), want at most one, none", recorded, resumed)
	}
	wantStored := "user: play track 2\nassistant: call change_bgm\nuser: response change_bgm {\"playing\":2}\nassistant: saw change_bgm={\"playing\":2}\n"
	if diff := cmp.Diff(wantStored, storedLines(w.events(chat))); diff != "" {
		t.Errorf("stored conversation (-want +got):\n%s", diff)
	}
	state, err := in.team.Pending(t.Context(), toolcallback.PendingRequest{UserID: user, ChatID: chat})
	if err != nil || len(state.Calls) != 0 {
		t.Errorf("Pending() = %d calls, %v; want none", len(state.Calls), err)
	}
}

// TestServerToolsAndApprovals: a server tool runs off the loops and its
// response reaches the model; a tool that needs approval is asked as ADK
// asks (the ledger records the request), runs once when approved, and the
// model gets its result.
func TestServerToolsAndApprovals(t *testing.T) {
	w := newWorld(t, &modeltest.LiveOptions{Script: []modeltest.Reply{
		modeltest.CallReply(modeltest.Call("", "get_weather", map[string]any{"city": "Oslo"})), modeltest.EchoReply,
		modeltest.CallReply(modeltest.Call("", "book_table", map[string]any{"people": 4})), modeltest.EchoReply,
	}})
	in := w.instance(nil, nil, nil)
	conv, cl := in.open(t, chat, device)
	if err := conv.Text("weather in Oslo?"); err != nil {
		t.Fatal(err)
	}
	if said := cl.said(1); said.Text != `saw get_weather={"forecast":"sunny in Oslo"}` {
		t.Fatalf("the model said %q after the weather", said.Text)
	}
	if err := conv.Text("book for 4"); err != nil {
		t.Fatal(err)
	}
	ask := cl.toolCall(1)
	if ask.Kind != "approval" || ask.ToolName != "book_table" || ask.ApprovalID == "" || ask.DeviceID != device {
		t.Fatalf("approval asked as %+v", ask)
	}
	if w.booked.Load() != 0 {
		t.Fatal("the tool ran before it was approved")
	}
	yes := true
	for range 3 {
		if err := conv.Answer(t.Context(), live.Answer{ApprovalID: ask.ApprovalID, Approved: &yes}); err != nil {
			t.Fatal(err)
		}
	}
	if said := cl.said(2); said.Text != `saw book_table={"booked":true,"people":4}` {
		t.Fatalf("the model said %q after the approval", said.Text)
	}
	conv.Close()
	if n := w.booked.Load(); n != 1 {
		t.Errorf("the approved tool ran %d times, want once", n)
	}
	want := "user: weather in Oslo?\nassistant: call get_weather\nassistant: response get_weather {\"forecast\":\"sunny in Oslo\"}\n" +
		"assistant: saw get_weather={\"forecast\":\"sunny in Oslo\"}\n" +
		"user: book for 4\nassistant: call book_table\n" +
		"assistant: response book_table {\"error\":\"error tool \\\"book_table\\\" requires confirmation, please approve or reject\"}\n" +
		"assistant: call adk_request_confirmation\nuser: response adk_request_confirmation {\"confirmed\":true,\"payload\":null}\n" +
		"assistant: response book_table {\"booked\":true,\"people\":4}\nassistant: saw book_table={\"booked\":true,\"people\":4}\n"
	if diff := cmp.Diff(want, storedLines(w.events(chat))); diff != "" {
		t.Errorf("stored conversation (-want +got):\n%s", diff)
	}
}
