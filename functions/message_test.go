package functions

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/session"
	"google.golang.org/genai"

	"github.com/baton-run/baton/internal/eventlist"
	"github.com/baton-run/baton/modeltest"
	"github.com/baton-run/baton/sessionstore"
	"github.com/baton-run/baton/uistream/uistreamtest"
	"github.com/baton-run/baton/usechat"
)

// TestResumeContinuesTurnMessage: a turn pauses on a browser tool, its
// resume pauses again on an approval, and the approval's resume ends it.
// Every stream of the turn starts with the same messageId, so the client
// continues one assistant message (the AI SDK's parser rejects a result for
// a tool call its message does not hold); Pending's history names the same
// message; the next turn starts another one.
func TestResumeContinuesTurnMessage(t *testing.T) {
	t.Parallel()
	f := newHTTPFixture(t, nil,
		modeltest.CallReply(modeltest.Call("c1", "change_bgm", map[string]any{"track": 2})),
		modeltest.CallReply(modeltest.Call("b1", "book_table", map[string]any{"people": 4})),
		modeltest.EchoReply,
		modeltest.TextReply("Hello again."),
	)
	messageID := func(chunks []map[string]any) string {
		t.Helper()
		id, _ := chunks[0]["messageId"].(string)
		if id == "" {
			t.Fatalf("start chunk = %v, want a messageId", chunks[0])
		}
		return id
	}
	turn := messageID(f.stream(f.turn("ada", "s1", "tab-a", "music, then a table")))

	resumed := f.stream(f.do(http.MethodPost, NameToolResult, f.token("ada"),
		map[string]any{"sessionId": "s1", "toolCallId": "c1", "clientId": "tab-a", "output": map[string]any{"playing": 2}}, nil), "c1")
	if got := messageID(resumed); got != turn {
		t.Errorf("browser resume's messageId = %q, want the turn's %q", got, turn)
	}
	approvals := chunksOfType(resumed, "tool-approval-request")
	if len(approvals) != 1 {
		t.Fatalf("tool-approval-request chunks = %v, want one", approvals)
	}

	// The approval's resume, as one JSON document.
	resp := f.do(http.MethodPost, NameToolResult, f.token("ada"), map[string]any{"sessionId": "s1", "toolCallId": approvals[0]["approvalId"],
		"clientId": "tab-a", "approved": true, "payload": map[string]any{"people": 6}}, map[string]string{"Accept": "application/json"})
	var doc struct {
		MessageID string           `json:"messageId"`
		Chunks    []map[string]any `json:"chunks"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	uistreamtest.Check(t, append(doc.Chunks, map[string]any{"type": "[DONE]"}), "c1", "b1")
	if got := messageID(doc.Chunks); got != turn || doc.MessageID != turn {
		t.Errorf("approval resume's messageId = %q (document %q), want the turn's %q", got, doc.MessageID, turn)
	}

	next := messageID(f.stream(f.turn("ada", "s1", "tab-a", "hi")))
	if next == turn {
		t.Errorf("the next turn's messageId = %q, the same as the previous turn's", next)
	}

	list := f.do(http.MethodGet, NamePending+"?sessionId=s1&clientId=tab-a", f.token("ada"), nil, nil)
	defer list.Body.Close()
	var p pendingResponse
	if err := json.NewDecoder(list.Body).Decode(&p); err != nil {
		t.Fatal(err)
	}
	want := []usechat.HistoryItem{
		{Role: "user", Text: "music, then a table"},
		{Role: "assistant", MessageID: turn, ToolCallID: "c1", ToolName: "change_bgm", Input: map[string]any{"track": float64(2)}, Output: map[string]any{"playing": float64(2)}},
		{Role: "assistant", MessageID: turn, ToolCallID: "b1", ApprovalID: approvals[0]["approvalId"].(string), ToolName: "book_table", Input: map[string]any{"people": float64(6)},
			Output: map[string]any{"booked": true, "people": float64(6)}, Approval: "approved"},
		{Role: "assistant", MessageID: turn, Text: `saw book_table={"booked":true,"people":6}`},
		{Role: "user", Text: "hi"},
		{Role: "assistant", MessageID: next, Text: "Hello again."},
	}
	if diff := cmp.Diff(want, p.History, cmpopts.IgnoreFields(usechat.HistoryItem{}, "Time")); diff != "" {
		t.Errorf("Pending history (-want +got):\n%s", diff)
	}
}

// TestHistoryAcrossSwitches: a conversation moved by two agent switches
// reads back as the streams showed it: records as the tool calls they were
// (with the arguments that ran), and each switch after the message that
// asked for it.
func TestHistoryAcrossSwitches(t *testing.T) {
	t.Parallel()
	ts := time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return ts.Add(time.Duration(s) * time.Second) }
	ev := func(id, inv, author string, s int, c *genai.Content) *session.Event {
		return &session.Event{ID: id, InvocationID: inv, Author: author, Timestamp: at(s), LLMResponse: model.LLMResponse{Content: c}}
	}
	parts := func(role string, ps ...*genai.Part) *genai.Content { return &genai.Content{Role: role, Parts: ps} }
	text := func(role, s string) *genai.Content { return genai.NewContentFromText(s, genai.Role(role)) }
	// The DJ's session: a browser call answered by the page.
	dj := eventlist.List{
		ev("1", "inv-1", "user", 1, text("user", "play track 2")),
		ev("2", "inv-1", "dj", 2, parts("model", &genai.Part{FunctionCall: &genai.FunctionCall{ID: "c1", Name: "change_bgm", Args: map[string]any{"track": float64(2)}}})),
		ev("3", "inv-2", "user", 3, parts("user", &genai.Part{FunctionResponse: &genai.FunctionResponse{ID: "c1", Name: "change_bgm", Response: map[string]any{"playing": float64(2)}}})),
		ev("4", "inv-2", "dj", 4, text("model", "Track 2 is on.")),
	}
	dj[1].LongRunningToolIDs = []string{"c1"}
	// Moved to the concierge, who answers one message.
	concierge := eventlist.List(sessionstore.MigrateHistory(t.Context(), dj, sessionstore.Migration{From: "dj", To: "concierge", At: at(5)}))
	concierge = append(concierge,
		ev("5", "inv-3", "user", 6, text("user", "what did the DJ do?")),
		ev("6", "inv-3", "concierge", 7, text("model", "It played track 2.")))
	// Moved back to the DJ, who answers one message.
	back := eventlist.List(sessionstore.MigrateHistory(t.Context(), concierge, sessionstore.Migration{From: "concierge", To: "dj", At: at(8)}))
	back = append(back,
		ev("7", "inv-4", "user", 9, text("user", "thanks")),
		ev("8", "inv-4", "dj", 10, text("model", "You're welcome.")))

	want := []usechat.HistoryItem{
		{Role: "user", Text: "play track 2"},
		{Role: "assistant", MessageID: "inv-1", ToolCallID: "c1", ToolName: "change_bgm", Input: map[string]any{"track": float64(2)}, Output: map[string]any{"playing": float64(2)}},
		{Role: "assistant", MessageID: "inv-1", Text: "Track 2 is on."},
		{Role: "user", Text: "what did the DJ do?"},
		{Role: "switch", MessageID: "inv-3", From: "dj", To: "concierge"},
		{Role: "assistant", MessageID: "inv-3", Text: "It played track 2."},
		{Role: "user", Text: "thanks"},
		{Role: "switch", MessageID: "inv-4", From: "concierge", To: "dj"},
		{Role: "assistant", MessageID: "inv-4", Text: "You're welcome."},
	}
	for _, tc := range []struct {
		name   string
		events eventlist.List
		want   []usechat.HistoryItem
	}{
		{"before any switch", dj, want[:3]},
		{"after one switch", concierge, want[:6]},
		{"after two switches", back, want},
	} {
		if diff := cmp.Diff(tc.want, usechat.History(tc.events, len(tc.events)), cmpopts.IgnoreFields(usechat.HistoryItem{}, "Time")); diff != "" {
			t.Errorf("%s: history (-want +got):\n%s", tc.name, diff)
		}
	}
}
