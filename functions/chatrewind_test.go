package functions

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"google.golang.org/adk/v2/model"
	"google.golang.org/genai"

	"github.com/baton-run/baton/modeltest"
)

// numberedReplies answers each request "re: " and the last user text,
// numbered, so that every answer differs.
func numberedReplies() modeltest.Reply {
	var n atomic.Int32
	return func(req *model.LLMRequest) *genai.Content {
		last := ""
		for _, c := range req.Contents {
			for _, p := range c.Parts {
				if c.Role == genai.RoleUser && p.Text != "" {
					last = p.Text
				}
			}
		}
		return genai.NewContentFromText(fmt.Sprintf("re: %s #%d", last, n.Add(1)), genai.RoleModel)
	}
}

// pageChat is a useChat page's list of messages, sent with the stock
// transport (full history) or the demo page's newest-message-only body.
type pageChat struct {
	f        *httpFixture
	newest   bool
	messages []map[string]any
}

func (c *pageChat) body(trigger, messageID string) map[string]any {
	msgs := c.messages
	if c.newest && len(msgs) > 0 {
		msgs = msgs[len(msgs)-1:]
	}
	b := chatBody("chat1", "tab-a", msgs...)
	b["trigger"] = trigger
	if messageID != "" {
		b["messageId"] = messageID
	}
	return b
}

// post sends the body and, on a stream, adds its assistant message.
func (c *pageChat) post(trigger, messageID string) (id, answer string) {
	c.f.t.Helper()
	chunks := c.f.stream(c.f.devChat(c.body(trigger, messageID)))
	id, _ = chunksOfType(chunks, "start")[0]["messageId"].(string)
	answer = text(chunks)
	c.messages = append(c.messages, map[string]any{"id": id, "role": "assistant",
		"parts": []any{map[string]any{"type": "text", "text": answer, "state": "done"}}})
	return id, answer
}

func (c *pageChat) send(id, text string) (string, string) {
	c.messages = append(c.messages, userMessage(id, text))
	return c.post("submit-message", "")
}

// cutAt keeps the messages before the one with id (useChat's
// regenerate() and edit do the same on the page).
func (c *pageChat) cutAt(id string) {
	for i, m := range c.messages {
		if m["id"] == id {
			c.messages = c.messages[:i]
			return
		}
	}
	c.f.t.Fatalf("no message %q on the page", id)
}

// shown is GET /Chat/chat1 as "role:id:text" lines.
func (c *pageChat) shown() []string {
	c.f.t.Helper()
	resp := c.f.do(http.MethodGet, NameChat+"/chat1", "", nil, map[string]string{"X-Baton-User": "ada"})
	defer resp.Body.Close()
	var v chatJSON
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil || resp.StatusCode != http.StatusOK {
		c.f.t.Fatalf("GET /Chat/chat1: status %d, %v", resp.StatusCode, err)
	}
	var out []string
	for _, m := range v.Messages {
		texts := []string{}
		for _, p := range m.Parts {
			if t, ok := p["text"].(string); ok {
				texts = append(texts, t)
			}
		}
		out = append(out, m.Role+":"+m.ID+":"+strings.Join(texts, ""))
	}
	return out
}

// TestChatRegenerateAndEdit: regenerate the last answer and edit the first
// message of a three-turn chat through Chat, with the stock transport's
// full-history body and with the newest message only; each request sent
// again replays its answer without calling the model; a message the chat
// does not have is 404, one a rewind took back is 409.
func TestChatRegenerateAndEdit(t *testing.T) {
	t.Parallel()
	for _, newest := range []bool{false, true} {
		t.Run(fmt.Sprintf("newest-only=%v", newest), func(t *testing.T) {
			t.Parallel()
			f := newHTTPFixture(t, func(c *Config) { c.DevIdentity = true })
			f.model.Repeat = numberedReplies()
			c := &pageChat{f: f, newest: newest}
			a1, _ := c.send("u1", "first")
			a2, _ := c.send("u2", "second")
			a3, _ := c.send("u3", "third")

			// Regenerate the last answer, as regenerate({messageId}) sends it.
			c.cutAt(a3)
			r3, answer := c.post("regenerate-message", a3)
			if r3 == a3 || answer != "re: third #4" {
				t.Fatalf("regenerate = message %q %q; want a new message answering the third again", r3, answer)
			}
			want := []string{"user:u1:first", "assistant:" + a1 + ":re: first #1", "user:u2:second", "assistant:" + a2 + ":re: second #2",
				"user:u3:third", "assistant:" + r3 + ":re: third #4"}
			if got := c.shown(); strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("GET /Chat after regenerate:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			calls := f.model.Calls()
			c.messages = c.messages[:len(c.messages)-1]
			again := f.stream(f.devChat(c.body("regenerate-message", a3)))
			if id := chunksOfType(again, "start")[0]["messageId"]; id != r3 || text(again) != answer {
				t.Errorf("same regenerate again = %v %q, want the replay of %s %q", id, text(again), r3, answer)
			}

			// Edit the first message: sendMessage({text, messageId: "u1"}).
			c.cutAt("u1")
			c.messages = append(c.messages, userMessage("u1", "first, edited"))
			e1, answer := c.post("submit-message", "u1")
			if answer != "re: first, edited #5" {
				t.Fatalf("edit answered %q", answer)
			}
			want = []string{"user:u1:first, edited", "assistant:" + e1 + ":re: first, edited #5"}
			if got := c.shown(); strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("GET /Chat after edit:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			calls++
			c.messages = c.messages[:len(c.messages)-1]
			again = f.stream(f.devChat(c.body("submit-message", "u1")))
			if id := chunksOfType(again, "start")[0]["messageId"]; id != e1 || text(again) != answer {
				t.Errorf("same edit again = %v %q, want the replay of %s %q", id, text(again), e1, answer)
			}
			if n := f.model.Calls(); n != calls {
				t.Errorf("requests sent again called the model %d times, want 0", n-calls)
			}

			before := f.counter.Snapshot()
			for _, tc := range []struct {
				name   string
				body   map[string]any
				status int
				code   string
			}{
				{"regenerate an unknown message", c.body("regenerate-message", "nope"), http.StatusNotFound, "not_found"},
				{"edit an unknown message", editBody("nope"), http.StatusNotFound, "not_found"},
				{"regenerate an answer taken back", c.body("regenerate-message", a2), http.StatusConflict, "rewound"},
				{"edit a message taken back", editBody("u2"), http.StatusConflict, "rewound"},
			} {
				resp := f.devChat(tc.body)
				if e := errorOf(t, resp); resp.StatusCode != tc.status || e.Code != tc.code {
					t.Errorf("%s: status %d %+v, want %d %s", tc.name, resp.StatusCode, e, tc.status, tc.code)
				}
			}
			if n := f.model.Calls(); n != calls {
				t.Errorf("refused requests called the model %d times", n-calls)
			}
			if w := f.counter.Snapshot().Sub(before).Writes; w != 0 {
				t.Errorf("refused requests wrote %d documents, want none", w)
			}
		})
	}
}

// editBody is an edit of the message id, to "edited".
func editBody(id string) map[string]any {
	b := chatBody("chat1", "tab-a", userMessage(id, "edited"))
	b["messageId"] = id
	return b
}

// TestTurnReplace: Turn's regenerate and edit, named by the messageId a
// Turn response gave.
func TestTurnReplace(t *testing.T) {
	t.Parallel()
	f := newHTTPFixture(t, func(c *Config) { c.DevIdentity = true })
	f.model.Repeat = numberedReplies()
	post := func(body map[string]any) (*http.Response, string, string) {
		t.Helper()
		body["sessionId"], body["clientId"] = "s1", "tab-a"
		resp := f.do(http.MethodPost, NameTurn, "", body, map[string]string{"X-Baton-User": "ada", "Accept": "application/json"})
		if resp.StatusCode != http.StatusOK {
			return resp, "", ""
		}
		defer resp.Body.Close()
		var doc struct {
			MessageID string           `json:"messageId"`
			Chunks    []map[string]any `json:"chunks"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
			t.Fatal(err)
		}
		return resp, doc.MessageID, text(doc.Chunks)
	}
	_, first, _ := post(map[string]any{"text": "first"})
	_, second, _ := post(map[string]any{"text": "second"})
	if _, id, answer := post(map[string]any{"replace": second}); id == "" || id == second || answer != "re: second #3" {
		t.Errorf("regenerate = %q %q, want a new answer to the second message", id, answer)
	}
	_, edited, answer := post(map[string]any{"replace": first, "text": "first, edited"})
	if answer != "re: first, edited #4" {
		t.Errorf("edit answered %q", answer)
	}
	calls := f.model.Calls()
	for _, tc := range []struct {
		name   string
		body   map[string]any
		status int
		code   string
	}{
		{"the same edit again", map[string]any{"replace": first, "text": "first, edited"}, http.StatusConflict, "already_taken"},
		{"a turn taken back", map[string]any{"replace": second}, http.StatusConflict, "rewound"},
		{"an unknown turn", map[string]any{"replace": "nope"}, http.StatusNotFound, "not_found"},
		{"with an agent", map[string]any{"replace": edited, "agent": "dj"}, http.StatusBadRequest, "invalid_request"},
	} {
		resp, _, _ := post(tc.body)
		if e := errorOf(t, resp); resp.StatusCode != tc.status || e.Code != tc.code {
			t.Errorf("%s: status %d %+v, want %d %s", tc.name, resp.StatusCode, e, tc.status, tc.code)
		}
	}
	if n := f.model.Calls(); n != calls {
		t.Errorf("refused requests called the model %d times", n-calls)
	}
}
