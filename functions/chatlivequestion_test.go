package functions

import (
	"encoding/json"
	"fmt"
	"iter"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/functiontool"

	"github.com/baton-run/baton/internal/polltest"
	"github.com/baton-run/baton/modeltest"
	"github.com/baton-run/baton/toolcallback"
	"github.com/baton-run/baton/uistream/uistreamtest"
	"github.com/baton-run/baton/userinput"
)

// liveAsker makes the fixture's only agent one whose tool ask_notes asks
// its question on the live call (toolcallback.AskInCall, as a 2025-11-25 MCP
// server's elicitation does) and returns the answer's action.
func liveAsker(f *httpFixture, _ *ServerOptions) {
	ask, err := functiontool.New(functiontool.Config{Name: "ask_notes", Description: "asks before it forgets the notes"},
		func(ctx agent.Context, _ struct{}) (map[string]any, error) {
			reply, err := toolcallback.AskInCall(ctx, "ask_notes", userinput.Request{
				Server: "notes", Tool: "clear_notes", Message: "Forget the notes?", Round: 1, State: inputState,
				Requests: map[string]any{"confirm": map[string]any{"method": "elicitation/create", "params": map[string]any{
					"mode": "form", "message": "Forget the notes?",
					"requestedSchema": map[string]any{"type": "object", "properties": map[string]any{"confirm": map[string]any{"type": "boolean"}}},
				}}},
			}, 20*time.Second)
			if err != nil {
				return nil, err
			}
			return map[string]any{"action": reply.Responses["confirm"].Action}, nil
		})
	if err != nil {
		f.t.Fatal(err)
	}
	f.members = []toolcallback.Member{f.world.Member(llmagent.Config{Name: "assistant", Model: f.model, Tools: []tool.Tool{ask}})}
}

// pendingCalls reads GET /Pending for a chat and client (none while the
// chat does not exist yet).
func (f *httpFixture) pendingCalls(user, chatID, client string) []map[string]any {
	f.t.Helper()
	resp := f.do(http.MethodGet, NamePending+"?sessionId="+chatID+"&clientId="+client, f.token(user), nil, nil)
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		return nil
	}
	var v struct {
		Calls []map[string]any `json:"calls"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil || resp.StatusCode != http.StatusOK {
		f.t.Fatalf("GET /Pending: status %d, %v", resp.StatusCode, err)
	}
	return v.Calls
}

// sseReader reads a UI message stream chunk by chunk, as it comes.
type sseReader struct {
	t      *testing.T
	resp   *http.Response
	next   func() (map[string]any, bool)
	stop   func()
	chunks []map[string]any
}

func newSSEReader(t *testing.T, resp *http.Response) *sseReader {
	next, stop := iter.Pull(uistreamtest.Read(t, resp.Body))
	return &sseReader{t: t, resp: resp, next: next, stop: stop}
}

// until reads chunks until one satisfies want, and returns it; nil when
// the stream ends first.
func (r *sseReader) until(want func(map[string]any) bool) map[string]any {
	for {
		c, ok := r.next()
		if !ok {
			return nil
		}
		r.chunks = append(r.chunks, c)
		if want(c) {
			return c
		}
	}
}

// rest reads the stream to its end, checks it is a valid UI message
// stream, and returns every chunk it carried.
func (r *sseReader) rest() []map[string]any {
	r.t.Helper()
	r.until(func(map[string]any) bool { return false })
	r.stop()
	r.resp.Body.Close()
	uistreamtest.Check(r.t, r.chunks)
	return r.chunks
}

func chunkFor(typ, callID string) func(map[string]any) bool {
	return func(c map[string]any) bool { return c["type"] == typ && c["toolCallId"] == callID }
}

// TestChatLiveQuestionAfterReload: a question asked on the live call while
// the turn runs is listed by /Pending (for the device that started the
// turn) and shown by GET /Chat/{chatId} like a paused question, with
// "live": true, and a stream that follows the turn (a reloaded page's
// resume, another tab) shows it to that device; answered with ToolResult,
// the waiting tool gets the answer, and every stream of the turn shows the
// question answered (its output, provider-executed) so no card keeps
// asking. Nothing shows the request state.
func TestChatLiveQuestionAfterReload(t *testing.T) {
	t.Parallel()
	f := newHTTPFixtureWith(t, liveAsker, nil, modeltest.CallReply(modeltest.Call("q1", "ask_notes", map[string]any{})), modeltest.EchoReply)
	turn := make(chan *sseReader, 1)
	go func() {
		turn <- newSSEReader(t, f.chat("ada", chatBody("chat1", "tab-a", userMessage("u1", "clear my notes"))))
	}()

	var question map[string]any
	polltest.Until(t, "/Pending to list the question asked on the live call", func() bool {
		for _, c := range f.pendingCalls("ada", "chat1", "tab-a") {
			if input, _ := c["input"].(map[string]any); c["toolName"] == userinput.ToolName && input["live"] == true {
				question = c
			}
		}
		return question != nil
	})
	id, _ := question["toolCallId"].(string)
	if calls := f.pendingCalls("ada", "chat1", "tab-b"); len(calls) != 0 {
		t.Errorf("/Pending for another tab lists %v, want nothing: only tab-a may answer", calls)
	}

	// The page reloads: GET /Chat/{chatId} shows the form for tab-a.
	var part map[string]any
	for _, m := range f.messages("ada", "chat1").Messages {
		for _, p := range m.Parts {
			if p["toolCallId"] == id {
				part = p
			}
		}
	}
	meta, _ := part["callProviderMetadata"].(map[string]any)
	baton, _ := meta["baton"].(map[string]any)
	if input, _ := part["input"].(map[string]any); part["type"] != "tool-"+userinput.ToolName || part["state"] != "input-available" ||
		input["live"] != true || input["message"] != "Forget the notes?" || baton["deviceId"] != "tab-a" {
		t.Errorf("GET /Chat shows the question as %v, want an open %s call for tab-a with live: true", part, userinput.ToolName)
	}

	// Its resumed stream shows the question too, for tab-a.
	replay := newSSEReader(t, f.do(http.MethodGet, NameChat+"/chat1/stream", f.token("ada"), nil, nil))
	form := replay.until(chunkFor("tool-input-available", id))
	meta, _ = form["providerMetadata"].(map[string]any)
	if baton, _ := meta["baton"].(map[string]any); form == nil || baton["deviceId"] != "tab-a" || form["providerExecuted"] != nil {
		t.Fatalf("the resumed stream's form = %v, want a browser call for tab-a", form)
	}

	answer := map[string]any{"responses": map[string]any{"confirm": map[string]any{"action": "accept", "content": map[string]any{"confirm": true}}}}
	resp := f.do(http.MethodPost, NameToolResult, f.token("ada"), map[string]any{"sessionId": "chat1", "clientId": "tab-a", "toolCallId": id, "output": answer},
		map[string]string{"Accept": "application/json"})
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("POST /ToolResult = %d, want 202 (recorded; the waiting turn goes on)", resp.StatusCode)
	}

	var first *sseReader
	select {
	case first = <-turn:
	case <-time.After(30 * time.Second):
		t.Fatal("the turn's stream did not start")
	}
	for name, chunks := range map[string][]map[string]any{"the turn's stream": first.rest(), "the resumed stream": replay.rest()} {
		if got := text(chunks); !strings.Contains(got, `"action":"accept"`) {
			t.Errorf("%s: the model said %q, want the tool's result of the accepted answer", name, got)
		}
		var outcome map[string]any
		for _, c := range chunksOfType(chunks, "tool-output-available") {
			if c["toolCallId"] == id {
				outcome = c
			}
		}
		if outcome == nil || outcome["providerExecuted"] != true || fmt.Sprint(outcome["output"]) != fmt.Sprint(answer) {
			t.Errorf("%s: the question's outcome = %v, want the answer, provider-executed", name, outcome)
		}
		if raw, _ := json.Marshal(chunks); strings.Contains(string(raw), inputState) {
			t.Errorf("%s shows the request state", name)
		}
	}
	if calls := f.pendingCalls("ada", "chat1", "tab-a"); len(calls) != 0 {
		t.Errorf("/Pending after the turn lists %v, want nothing", calls)
	}
}
