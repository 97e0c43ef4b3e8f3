package usechat

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/session"
	"google.golang.org/genai"

	"github.com/baton-run/baton/internal/eventlist"
	"github.com/baton-run/baton/sessionstore"
	"github.com/baton-run/baton/toolcallback"
	"github.com/baton-run/baton/transcript"
)

// TestUIMessagesJSON: GET /Chat/{chatId}'s messages, part by part, as a
// page decodes them: user and assistant text, an agent switch, the
// model's thought summary (a reasoning part), a server call that failed,
// an open browser call and an open approval.
func TestUIMessagesJSON(t *testing.T) {
	t.Parallel()
	ts := time.Date(2026, 11, 25, 9, 0, 0, 0, time.UTC)
	ev := func(id, inv, author string, s int, parts ...*genai.Part) *session.Event {
		role := genai.RoleModel
		if author == "user" {
			role = genai.RoleUser
		}
		e := &session.Event{ID: id, InvocationID: inv, Author: author, Timestamp: ts.Add(time.Duration(s) * time.Second),
			LLMResponse: model.LLMResponse{Content: &genai.Content{Role: role, Parts: parts}}}
		return e
	}
	call := func(id, name string, args map[string]any) *genai.Part {
		return &genai.Part{FunctionCall: &genai.FunctionCall{ID: id, Name: name, Args: args}}
	}
	old := eventlist.List{
		ev("1", "inv-1", "user", 1, genai.NewPartFromText("hi")),
		ev("2", "inv-1", "dj", 2, genai.NewPartFromText("hello")),
	}
	events := eventlist.List(sessionstore.MigrateHistory(t.Context(), old, sessionstore.Migration{From: "dj", To: "assistant", At: ts.Add(3 * time.Second)}))
	user := ev("3", "inv-2", "user", 4, genai.NewPartFromText("weather, music and a table"))
	user.Actions.StateDelta = map[string]any{transcript.MessageIDKey: "u2"}
	calls := ev("4", "inv-2", "assistant", 5, &genai.Part{Text: "three tools, then answer", Thought: true}, call("w1", "get_weather", map[string]any{"city": "Oslo"}),
		call("c1", "change_bgm", map[string]any{"track": float64(2)}), call("b1", "book_table", nil))
	calls.LongRunningToolIDs = []string{"c1"}
	events = append(events, user, calls,
		ev("5", "inv-2", "assistant", 6, &genai.Part{FunctionResponse: &genai.FunctionResponse{ID: "w1", Name: "get_weather", Response: map[string]any{"error": "no forecast"}}}))
	open := []*toolcallback.Call{
		{ID: "c1", OriginalID: "c1", Kind: toolcallback.KindBrowser, ClientID: "tab-a"},
		{ID: "conf-1", OriginalID: "b1", Kind: toolcallback.KindApproval, ClientID: "tab-a"},
	}
	raw, err := json.Marshal(uiMessages(events, len(events), open))
	if err != nil {
		t.Fatal(err)
	}
	var got any
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	var want any
	// A message moved by a switch is named by its new event's id (the
	// migration keeps no client message id).
	if err := json.Unmarshal([]byte(strings.Replace(`[
	 {"id": "MIGRATED", "role": "user", "parts": [{"type": "text", "text": "hi"}]},
	 {"id": "inv-1", "role": "assistant", "parts": [{"type": "text", "text": "hello", "state": "done"}]},
	 {"id": "u2", "role": "user", "parts": [{"type": "text", "text": "weather, music and a table"}]},
	 {"id": "inv-2", "role": "assistant", "parts": [
	  {"type": "data-agent", "data": {"switched": true, "from": "dj", "to": "assistant"}},
	  {"type": "reasoning", "text": "three tools, then answer", "state": "done"},
	  {"type": "tool-get_weather", "toolCallId": "w1", "state": "output-error", "input": {"city": "Oslo"}, "errorText": "no forecast", "providerExecuted": true},
	  {"type": "tool-change_bgm", "toolCallId": "c1", "state": "input-available", "input": {"track": 2}, "providerExecuted": false,
	   "callProviderMetadata": {"baton": {"deviceId": "tab-a"}}},
	  {"type": "tool-book_table", "toolCallId": "b1", "state": "approval-requested", "input": {}, "providerExecuted": true,
	   "approval": {"id": "conf-1"}, "callProviderMetadata": {"baton": {"deviceId": "tab-a"}}}]}
	]`, "MIGRATED", events[0].ID, 1)), &want); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("uiMessages JSON (-want +got):\n%s", diff)
	}
}

// TestHistoryWindowNamesItsTurn: a window that starts inside a turn, at
// the event Baton writes to deliver a step's other answers before an
// approval (an invocation id of its own), names the turn's message as its
// streams did, and the settled approval by its confirmation's id.
func TestHistoryWindowNamesItsTurn(t *testing.T) {
	t.Parallel()
	ts := time.Date(2026, 11, 25, 9, 0, 0, 0, time.UTC)
	ev := func(id, inv, author string, s int, parts ...*genai.Part) *session.Event {
		return &session.Event{ID: id, InvocationID: inv, Author: author, Timestamp: ts.Add(time.Duration(s) * time.Second),
			LLMResponse: model.LLMResponse{Content: &genai.Content{Role: genai.RoleModel, Parts: parts}}}
	}
	response := func(id, name string, resp map[string]any) *genai.Part {
		return &genai.Part{FunctionResponse: &genai.FunctionResponse{ID: id, Name: name, Response: resp}}
	}
	calls := ev("2", "inv-1", "assistant", 2,
		&genai.Part{FunctionCall: &genai.FunctionCall{ID: "c1", Name: "change_bgm", Args: map[string]any{"track": float64(2)}}},
		&genai.Part{FunctionCall: &genai.FunctionCall{ID: "b1", Name: "book_table", Args: map[string]any{"people": float64(4)}}})
	calls.LongRunningToolIDs = []string{"c1"}
	confirm := ev("3", "inv-1", "assistant", 3, &genai.Part{FunctionCall: &genai.FunctionCall{ID: "conf-1", Name: "adk_request_confirmation",
		Args: map[string]any{"originalFunctionCall": map[string]any{"id": "b1", "name": "book_table", "args": map[string]any{"people": float64(4)}},
			"toolConfirmation": map[string]any{"confirmed": false}}}})
	confirm.LongRunningToolIDs = []string{"conf-1"}
	events := eventlist.List{
		ev("1", "inv-1", "user", 1, genai.NewPartFromText("music and a table")),
		calls,
		confirm,
		ev("4", "baton-answers-x", "user", 4, response("c1", "change_bgm", map[string]any{"playing": float64(2)})),
		ev("5", "inv-1", "user", 5, response("conf-1", "adk_request_confirmation", map[string]any{"confirmed": true})),
		ev("6", "inv-1", "assistant", 6, response("b1", "book_table", map[string]any{"booked": true})),
		ev("7", "inv-1", "assistant", 7, genai.NewPartFromText("done")),
	}
	for shown := 1; shown <= len(events); shown++ {
		for _, item := range history(events, shown) {
			if item.Role == "assistant" && item.MessageID != "inv-1" {
				t.Errorf("history(%d): %+v in message %q, want the turn's inv-1", shown, item, item.MessageID)
			}
			if item.ToolCallID == "b1" && item.Approval != "" && item.ApprovalID != "conf-1" {
				t.Errorf("history(%d): b1's approval id %q, want the confirmation's conf-1", shown, item.ApprovalID)
			}
		}
	}
	if got := history(events, 4); len(got) != 1 || got[0].Text != "done" {
		t.Errorf("history(4) = %+v, want the turn's text only", got)
	}
}
