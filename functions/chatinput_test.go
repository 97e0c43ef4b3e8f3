package functions

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"google.golang.org/adk/v2/tool"

	"github.com/baton-run/baton/internal/teamtest"
	"github.com/baton-run/baton/modeltest"
	"github.com/baton-run/baton/userinput"
)

// inputState is the request state clear_notes gives with its question; no
// client may ever see it.
// inputState is what clear_notes's question carries, and an answer must
// bring back.
const inputState = teamtest.InputState

// clearTool is the shared world's clear_notes: it asks before it acts, as
// an MCP server's multi-round-trip request does (docs/mcp-input.md): the
// first run asks, the run with the answer acts on it.
func (f *httpFixture) clearTool() tool.Tool { return f.world.Tools.ClearNotes }

// inputAnswered is the assistant message of a turn paused on a question,
// as useChat holds it after addToolOutput on the baton_input part.
func inputAnswered(messageID, callID string, input, output map[string]any) map[string]any {
	return map[string]any{"id": messageID, "role": "assistant", "parts": []any{
		map[string]any{"type": "step-start"},
		map[string]any{"type": "tool-clear_notes", "toolCallId": "q1", "state": "input-available", "input": map[string]any{}, "providerExecuted": true},
		map[string]any{"type": "tool-" + userinput.ToolName, "toolCallId": callID, "state": "output-available", "input": input, "output": output},
	}}
}

// TestChatAnswersAToolsQuestion: a tool's question reaches the page as a
// baton_input browser call for the device that started the turn (in the
// stream and in GET /Chat after a reload), never with the request state;
// the page's answer, posted as that call's output, runs the tool again
// once, and a re-POST runs nothing.
func TestChatAnswersAToolsQuestion(t *testing.T) {
	t.Parallel()
	f := newHTTPFixture(t, nil, modeltest.CallReply(modeltest.Call("q1", "clear_notes", map[string]any{})), modeltest.EchoReply)
	resp := f.chat("ada", chatBody("chat1", "tab-a", userMessage("u1", "clear my notes")))
	chunks := f.stream(resp)
	var form map[string]any
	for _, c := range chunksOfType(chunks, "tool-input-available") {
		if c["toolName"] == userinput.ToolName {
			form = c
		}
	}
	meta, _ := form["providerMetadata"].(map[string]any)
	if baton, _ := meta["baton"].(map[string]any); form == nil || form["providerExecuted"] != nil || baton["deviceId"] != "tab-a" {
		t.Fatalf("the stream's form = %v; want a browser call of %s for tab-a", form, userinput.ToolName)
	}
	input, _ := form["input"].(map[string]any)
	if requests, _ := input["requests"].(map[string]any); requests["confirm"] == nil || input["message"] != "Forget the notes?" {
		t.Errorf("form input = %v; want the confirm request", input)
	}
	if raw, _ := json.Marshal(chunks); strings.Contains(string(raw), inputState) {
		t.Errorf("the stream shows the request state: %s", raw)
	}
	callID := form["toolCallId"].(string)
	messageID := chunksOfType(chunks, "start")[0]["messageId"].(string)

	reloaded := f.messages("ada", "chat1")
	var shown bool
	for _, m := range reloaded.Messages {
		for _, p := range m.Parts {
			if p["type"] == "tool-"+userinput.ToolName && p["toolCallId"] == callID && p["state"] == "input-available" {
				shown = true
			}
		}
	}
	if raw, _ := json.Marshal(reloaded); strings.Contains(string(raw), inputState) {
		t.Errorf("GET /Chat shows the request state: %s", raw)
	}
	if !shown {
		t.Errorf("GET /Chat does not show the question %s: %v", callID, reloaded.Messages)
	}

	answer := map[string]any{"responses": map[string]any{"confirm": map[string]any{"action": "accept", "content": map[string]any{"confirm": true}}}}
	body := chatBody("chat1", "tab-a", inputAnswered(messageID, callID, input, answer))
	resumed := f.stream(f.chat("ada", body), "q1")
	if got := text(resumed); !strings.Contains(got, `"cleared":true`) {
		t.Errorf("after the answer the model said %q; want the tool's result", got)
	}
	f.stream(f.chat("ada", body), "q1") // the page's re-POST
	if n := f.cleared.Load(); n != 1 {
		t.Errorf("the tool acted %d times; want once", n)
	}
	if got := f.logs.String(); strings.Contains(got, inputState) {
		t.Errorf("the logs show the request state")
	}
}

// TestChatQuestionOnlyForItsDevice: another tab's answer is refused.
func TestChatQuestionOnlyForItsDevice(t *testing.T) {
	t.Parallel()
	f := newHTTPFixture(t, nil, modeltest.CallReply(modeltest.Call("q1", "clear_notes", map[string]any{})))
	chunks := f.stream(f.chat("ada", chatBody("chat1", "tab-a", userMessage("u1", "clear my notes"))))
	var callID string
	var input map[string]any
	for _, c := range chunksOfType(chunks, "tool-input-available") {
		if c["toolName"] == userinput.ToolName {
			callID, input = c["toolCallId"].(string), c["input"].(map[string]any)
		}
	}
	answer := map[string]any{"responses": map[string]any{"confirm": map[string]any{"action": "accept", "content": map[string]any{"confirm": true}}}}
	resp := f.chat("ada", chatBody("chat1", "tab-b", inputAnswered(chunksOfType(chunks, "start")[0]["messageId"].(string), callID, input, answer)))
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusOK || f.cleared.Load() != 0 {
		t.Errorf("another tab's answer: status %d, tool acted %d times; want refused", resp.StatusCode, f.cleared.Load())
	}
}
