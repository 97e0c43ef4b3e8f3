package functions

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/baton-run/baton/internal/polltest"
	"github.com/baton-run/baton/modeltest"
)

// TestChatStop: DELETE /Chat/{chatId}/stream on another instance stops
// the running turn; the caller's stream and a live tab's both end with
// finish, the answer marked stopped in the streams and in GET
// /Chat/{chatId}; the chat takes its next message; a stop with nothing
// running is 204; another user's chat is 404.
func TestChatStop(t *testing.T) {
	t.Parallel()
	gate := make(chan struct{})
	f := newHTTPFixture(t, nil, modeltest.TextReply("never sent"), modeltest.TextReply("after the stop"))
	f.model.Gate = gate // set before the first request; closed once stopped
	posted := make(chan []map[string]any, 1)
	go func() {
		posted <- f.stream(f.chat("ada", chatBody("chat1", "tab-a", userMessage("u1", "count slowly to 20"))))
	}()
	polltest.Until(t, "the turn to call the model", func() bool { return f.model.Calls() == 1 })
	// The model is asked beside the commit that stores the message: the
	// chat exists once that commit landed.
	polltest.Until(t, "the turn's message stored", func() bool {
		resp := f.do(http.MethodGet, NameChat+"/chat1", f.token("ada"), nil, nil)
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})

	other := f.secondInstance()
	followed := make(chan []map[string]any, 1)
	follower := other.do(http.MethodGet, NameChat+"/chat1/stream", f.token("ada"), nil, nil)
	go func() { followed <- other.stream(follower) }()

	resp := other.do(http.MethodDelete, NameChat+"/chat1/stream", f.token("ada"), nil, nil)
	var got stopReply
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("DELETE: status %d, %v", resp.StatusCode, err)
	}
	resp.Body.Close()
	if !got.Running || !got.Ended {
		t.Errorf("DELETE = %+v, want a running turn that ended", got)
	}
	close(gate)
	for name, ch := range map[string]chan []map[string]any{"the caller's stream": posted, "the live tab's stream": followed} {
		select {
		case chunks := <-ch: // f.stream checked it ends with finish
			if md := chunksOfType(chunks, "message-metadata"); len(md) != 1 || md[0]["messageMetadata"].(map[string]any)["stopped"] != true {
				t.Errorf("%s: message metadata %v, want stopped", name, md)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("%s did not end", name)
		}
	}

	resp = f.do(http.MethodGet, NameChat+"/chat1", f.token("ada"), nil, nil)
	var view struct {
		Messages []struct {
			Role     string         `json:"role"`
			Metadata map[string]any `json:"metadata"`
		} `json:"messages"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&view); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if n := len(view.Messages); n != 2 || view.Messages[1].Metadata["stopped"] != true {
		t.Errorf("GET /Chat/chat1 messages = %+v, want the answer marked stopped", view.Messages)
	}

	next := f.stream(f.chat("ada", chatBody("chat1", "tab-a", userMessage("u2", "thanks"))))
	if txt := text(next); txt != "after the stop" {
		t.Errorf("next turn's text = %q, want the model's answer", txt)
	}
	for _, tt := range []struct {
		name, path, user string
		want             int
	}{
		{"nothing running", NameChat + "/chat1/stream", "ada", http.StatusNoContent},
		{"another user's chat", NameChat + "/chat1/stream", "bob", http.StatusNotFound},
		{"an unknown chat", NameChat + "/nochat/stream", "ada", http.StatusNotFound},
		{"Turn's shape", NameTurn + "/chat1", "ada", http.StatusNoContent},
		{"Turn without a session", NameTurn, "ada", http.StatusBadRequest},
	} {
		resp := f.do(http.MethodDelete, tt.path, f.token(tt.user), nil, nil)
		resp.Body.Close()
		if resp.StatusCode != tt.want {
			t.Errorf("%s: DELETE /%s status %d, want %d", tt.name, tt.path, resp.StatusCode, tt.want)
		}
	}
}
