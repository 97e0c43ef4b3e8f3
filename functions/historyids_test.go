package functions

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"testing"

	"github.com/baton-run/baton/modeltest"
	"github.com/baton-run/baton/uistream/uistreamtest"
)

// streamedIDs are the ids a chat's streams gave its parts: the message
// each tool call was shown in, and the approval id each approval was asked
// with.
type streamedIDs struct {
	messages map[string]bool   // assistant message ids
	callIn   map[string]string // message id, by tool call id
	approval map[string]string // approval id, by tool call id
}

func (s *streamedIDs) add(t *testing.T, chunks []map[string]any) string {
	t.Helper()
	id, _ := chunksOfType(chunks, "start")[0]["messageId"].(string)
	if id == "" {
		t.Fatalf("stream without a message id: %v", chunks)
	}
	s.messages[id] = true
	for _, c := range chunksOfType(chunks, "tool-input-available") {
		s.callIn[c["toolCallId"].(string)] = id
	}
	for _, c := range chunksOfType(chunks, "tool-approval-request") {
		s.approval[c["toolCallId"].(string)] = c["approvalId"].(string)
	}
	return id
}

// chatJSON is GET /Chat/{chatId} as a client decodes it.
type chatJSON struct {
	Agent    string        `json:"agent"`
	Agents   []string      `json:"agents"`
	Messages []messageJSON `json:"messages"`
}

type messageJSON struct {
	ID    string           `json:"id"`
	Role  string           `json:"role"`
	Parts []map[string]any `json:"parts"`
}

// messagesJSON reads GET /Chat/{chatId} with a query.
func (f *httpFixture) messagesJSON(user, chatID, query string) []messageJSON {
	f.t.Helper()
	resp := f.do(http.MethodGet, NameChat+"/"+chatID+query, f.token(user), nil, nil)
	defer resp.Body.Close()
	var v chatJSON
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil || resp.StatusCode != http.StatusOK {
		f.t.Fatalf("GET /Chat/%s%s: status %d, %v", chatID, query, resp.StatusCode, err)
	}
	return v.Messages
}

// TestChatHistoryIDsMatchStreams: a reloaded chat names every part as its
// streams did (message ids, tool call ids, approval ids), a settled
// approval included, whatever window of history it asks for; no message
// has an empty id.
func TestChatHistoryIDsMatchStreams(t *testing.T) {
	t.Parallel()
	f := newHTTPFixture(t, nil,
		modeltest.CallReply(modeltest.Call("b1", "book_table", map[string]any{"people": 4})),
		modeltest.EchoReply,
		modeltest.CallReply(modeltest.Call("c1", "change_bgm", map[string]any{"track": 2})),
		modeltest.EchoReply,
	)
	ids := &streamedIDs{messages: map[string]bool{}, callIn: map[string]string{}, approval: map[string]string{}}
	u1 := userMessage("u1", "book a table")
	// A page's stream sends an approval's call again, naming the device
	// that decides (uistream.Encoder.SetDevice), which Check refuses.
	resp := f.chat("ada", chatBody("chat1", "tab-a", u1))
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("POST /Chat: status %d, %v: %s", resp.StatusCode, err, body)
	}
	first := ids.add(t, uistreamtest.Parse(t, string(body)))
	approvalID := ids.approval["b1"]
	if approvalID == "" || approvalID == "b1" {
		t.Fatalf("the stream asked approval of b1 as %q, want the confirmation's own id", approvalID)
	}
	approve := map[string]any{"id": first, "role": "assistant", "parts": []any{
		map[string]any{"type": "tool-book_table", "toolCallId": "b1", "state": "approval-responded",
			"input": map[string]any{"people": 4}, "approval": map[string]any{"id": approvalID, "approved": true}},
	}}
	if got := ids.add(t, f.stream(f.chat("ada", chatBody("chat1", "tab-a", u1, approve)), "b1")); got != first {
		t.Fatalf("the approval's resume streams message %q, want the turn's %q", got, first)
	}
	u2 := userMessage("u2", "music please")
	second := ids.add(t, f.stream(f.chat("ada", chatBody("chat1", "tab-a", u1, approve, u2))))
	msgs := []map[string]any{u1, approve, u2, answered(second, "c1", map[string]any{"playing": 2})}
	if got := ids.add(t, f.stream(f.chat("ada", chatBody("chat1", "tab-a", msgs...)), "c1")); got != second {
		t.Fatalf("the browser answer's resume streams message %q, want the turn's %q", got, second)
	}

	all := f.messagesJSON("ada", "chat1", "")
	if len(all) != 4 {
		t.Fatalf("GET /Chat/chat1 = %d messages, want 4: %+v", len(all), all)
	}
	cutMidTurn := false
	for n := 1; ; n++ {
		window := f.messagesJSON("ada", "chat1", "?history="+strconv.Itoa(n))
		if len(window) > 0 && window[0].Role == "assistant" {
			cutMidTurn = true
		}
		calls := 0
		for _, m := range window {
			switch {
			case m.ID == "":
				t.Errorf("history=%d: a %s message with an empty id: %v", n, m.Role, m.Parts)
			case m.Role == "user" && m.ID != "u1" && m.ID != "u2":
				t.Errorf("history=%d: user message %q, want the page's id u1 or u2", n, m.ID)
			case m.Role == "assistant" && !ids.messages[m.ID]:
				t.Errorf("history=%d: assistant message %q, which no stream started (streams: %v)", n, m.ID, ids.messages)
			}
			for _, p := range m.Parts {
				call, _ := p["toolCallId"].(string)
				if call == "" {
					continue
				}
				calls++
				if in := ids.callIn[call]; in != m.ID {
					t.Errorf("history=%d: call %q in message %q, the stream showed it in %q", n, call, m.ID, in)
				}
				approval, _ := p["approval"].(map[string]any)
				if want := ids.approval[call]; approval["id"] != want && (want != "" || approval != nil) {
					t.Errorf("history=%d: call %q approval %v, the stream asked approval %q", n, call, approval, want)
				}
				if call == "b1" && (approval == nil || approval["approved"] != true) {
					t.Errorf("history=%d: b1's approval = %v, want the settled approval", n, approval)
				}
			}
		}
		if len(window) == len(all) && calls == 2 && window[0].ID == "u1" {
			break
		}
		if n > 30 {
			t.Fatalf("history=%d still does not show the whole chat", n)
		}
	}
	if !cutMidTurn {
		t.Errorf("no window started in the middle of a turn; the test checks nothing of the kind")
	}
}
