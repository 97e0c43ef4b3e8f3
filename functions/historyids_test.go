package functions

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/adk/v2/agent/llmagent"

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

// check reports every part of messages (read from GET /Chat/{chatId} as
// named by what) whose ids differ from the streams', and every user message
// whose id is not one of users, and returns how many tool calls it saw.
// Call b1, which every chat of these tests asks approval for, must show its
// settled approval.
func (s *streamedIDs) check(t *testing.T, what string, messages []messageJSON, users ...string) (calls int) {
	t.Helper()
	for _, m := range messages {
		switch {
		case m.ID == "":
			t.Errorf("%s: a %s message with an empty id: %v", what, m.Role, m.Parts)
		case m.Role == "user" && !slices.Contains(users, m.ID):
			t.Errorf("%s: user message %q, want one of the page's ids %v", what, m.ID, users)
		case m.Role == "assistant" && !s.messages[m.ID]:
			t.Errorf("%s: assistant message %q, which no stream started (streams: %v)", what, m.ID, s.messages)
		}
		for _, p := range m.Parts {
			call, _ := p["toolCallId"].(string)
			if call == "" {
				continue
			}
			calls++
			if in := s.callIn[call]; in != m.ID {
				t.Errorf("%s: call %q in message %q, the stream showed it in %q", what, call, m.ID, in)
			}
			approval, _ := p["approval"].(map[string]any)
			if want := s.approval[call]; approval["id"] != want && (want != "" || approval != nil) {
				t.Errorf("%s: call %q approval %v, the stream asked approval %q", what, call, approval, want)
			}
			if call == "b1" && (approval == nil || approval["approved"] != true) {
				t.Errorf("%s: b1's approval = %v, want the settled approval", what, approval)
			}
		}
	}
	return calls
}

// chatJSON is GET /Chat/{chatId} as a client decodes it.
type chatJSON struct {
	Agent    string        `json:"agent"`
	Agents   []string      `json:"agents"`
	Messages []messageJSON `json:"messages"`
	Earlier  bool          `json:"earlier"`
}

type messageJSON struct {
	ID    string           `json:"id"`
	Role  string           `json:"role"`
	Parts []map[string]any `json:"parts"`
}

// messagesJSON reads GET /Chat/{chatId} with a query.
func (f *httpFixture) messagesJSON(user, chatID, query string) []messageJSON {
	f.t.Helper()
	return f.chatPage(user, chatID, query).Messages
}

// chatPage reads a page of GET /Chat/{chatId} with a query.
func (f *httpFixture) chatPage(user, chatID, query string) chatJSON {
	f.t.Helper()
	resp := f.do(http.MethodGet, NameChat+"/"+chatID+query, f.token(user), nil, nil)
	defer resp.Body.Close()
	var v chatJSON
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil || resp.StatusCode != http.StatusOK {
		f.t.Fatalf("GET /Chat/%s%s: status %d, %v", chatID, query, resp.StatusCode, err)
	}
	return v
}

// pages reads a chat's pages of limit messages, from the latest back to
// its first message, and returns them in order, earliest page first.
func (f *httpFixture) pages(user, chatID string, limit int) [][]messageJSON {
	f.t.Helper()
	var out [][]messageJSON
	query := "?limit=" + strconv.Itoa(limit)
	for {
		p := f.chatPage(user, chatID, query)
		out = append([][]messageJSON{p.Messages}, out...)
		if !p.Earlier {
			return out
		}
		if len(p.Messages) == 0 || len(out) > 1000 {
			f.t.Fatalf("GET /Chat/%s%s says there are earlier messages, and gives no way to them: %+v", chatID, query, p)
		}
		query = "?limit=" + strconv.Itoa(limit) + "&before=" + url.QueryEscape(p.Messages[0].ID)
	}
}

// approvedTurn runs chat1's first turn, u1, whose book_table call b1 is
// approved, and returns the ids its streams gave, u1 and the approval's
// message as the page sends it.
func approvedTurn(t *testing.T, f *httpFixture) (ids *streamedIDs, u1, approve map[string]any) {
	t.Helper()
	ids = &streamedIDs{messages: map[string]bool{}, callIn: map[string]string{}, approval: map[string]string{}}
	u1 = userMessage("u1", "book a table")
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
	approve = map[string]any{"id": first, "role": "assistant", "parts": []any{
		map[string]any{"type": "tool-book_table", "toolCallId": "b1", "state": "approval-responded",
			"input": map[string]any{"people": 4}, "approval": map[string]any{"id": approvalID, "approved": true}},
	}}
	if got := ids.add(t, f.stream(f.chat("ada", chatBody("chat1", "tab-a", u1, approve)), "b1")); got != first {
		t.Fatalf("the approval's resume streams message %q, want the turn's %q", got, first)
	}
	return ids, u1, approve
}

// TestChatHistoryIDsMatchStreams: a reloaded chat names every part as its
// streams did (message ids, tool call ids, approval ids), a settled
// approval included, in every page of it, whatever the pages' size; no
// message has an empty id.
func TestChatHistoryIDsMatchStreams(t *testing.T) {
	t.Parallel()
	f := newHTTPFixture(t, nil,
		modeltest.CallReply(modeltest.Call("b1", "book_table", map[string]any{"people": 4})),
		modeltest.EchoReply,
		modeltest.CallReply(modeltest.Call("c1", "change_bgm", map[string]any{"track": 2})),
		modeltest.EchoReply,
	)
	ids, u1, approve := approvedTurn(t, f)
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
	for limit := 1; limit <= 4; limit++ {
		var got []messageJSON
		for _, page := range f.pages("ada", "chat1", limit) {
			got = append(got, page...)
		}
		what := "limit=" + strconv.Itoa(limit)
		if diff := cmp.Diff(all, got); diff != "" {
			t.Errorf("%s: the pages, put together (-whole chat +pages):\n%s", what, diff)
		}
		if calls := ids.check(t, what, got, "u1", "u2"); calls != 2 {
			t.Errorf("%s: the pages show %d tool calls, want 2", what, calls)
		}
	}
}

// TestChatHistoryIDsAfterSwitch: once an agent switch has moved a chat's
// history to another agent (its calls become records, its events new
// ones), the reloaded chat still names its parts as the streams did: the
// user messages' page ids, the settled approval's id.
func TestChatHistoryIDsAfterSwitch(t *testing.T) {
	t.Parallel()
	addDJ := func(f *httpFixture, _ *ServerOptions) {
		f.members = append(f.members, f.world.Member(llmagent.Config{Name: "dj", Model: f.model}))
	}
	f := newHTTPFixtureWith(t, addDJ, nil,
		modeltest.CallReply(modeltest.Call("b1", "book_table", map[string]any{"people": 4})),
		modeltest.EchoReply,
		modeltest.EchoReply,
	)
	ids, u1, approve := approvedTurn(t, f)
	u2 := userMessage("u2", "play something")
	body := chatBody("chat1", "tab-a", u1, approve, u2)
	body["agent"] = "dj"
	ids.add(t, f.stream(f.chat("ada", body)))

	view := f.messages("ada", "chat1")
	if view.Agent != "dj" {
		t.Fatalf("GET /Chat/chat1 agent = %q, want dj after the switch", view.Agent)
	}
	if got := len(view.Messages); got != 4 {
		t.Fatalf("GET /Chat/chat1 = %d messages, want 4: %+v", got, view.Messages)
	}
	if calls := ids.check(t, "after the switch", view.Messages, "u1", "u2"); calls != 1 {
		t.Errorf("after the switch the history shows %d tool calls, want b1 only", calls)
	}
	if u := view.Messages[0]; u.Role != "user" || u.ID != "u1" {
		t.Errorf("first message = %s %q, want the user's u1", u.Role, u.ID)
	}
}
