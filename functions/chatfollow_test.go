package functions

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/adk/v2/model"
	"google.golang.org/genai"

	"github.com/baton-run/baton/modeltest"
)

// TestChatLiveWaitFollowsTurn: a live tab's wait, opened while the chat is
// idle, follows the next turn to its end even when the turn stores nothing
// for longer than the previous turn's lease would have lasted.
func TestChatLiveWaitFollowsTurn(t *testing.T) {
	t.Parallel()
	gate, called := make(chan struct{}), make(chan struct{})
	f := newHTTPFixture(t, nil, modeltest.TextReply("hello"), func(req *model.LLMRequest) *genai.Content {
		close(called) // the second turn has started
		<-gate        // and its model answers only when the test says
		return modeltest.TextReply("counted to ten")(req)
	})
	turn := chunksOfType(f.stream(f.chat("ada", chatBody("chat1", "tab-a", userMessage("u1", "hi")))), "start")[0]["messageId"].(string)

	waiting := make(chan *http.Response)
	go func() {
		waiting <- f.do(http.MethodGet, NameChat+"/chat1/stream", f.token("ada"), nil, map[string]string{waitHeader: "20", seenHeader: turn})
	}()
	time.Sleep(500 * time.Millisecond) // the wait sees the chat idle first
	done := make(chan struct{})
	go func() {
		defer close(done)
		resp := f.chat("ada", chatBody("chat1", "tab-a", userMessage("u1", "hi"), userMessage("u2", "count slowly")))
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body) // the turn runs to its end
	}()
	within(t, called, "the second turn to call the model")
	// Longer than a stale lease (the first turn's, let go) lasts plus the
	// follower's second of grace.
	time.Sleep(2500 * time.Millisecond)
	close(gate)
	within(t, done, "the second turn")
	var resp *http.Response
	select {
	case resp = <-waiting:
	case <-time.After(30 * time.Second):
		t.Fatal("the live wait did not answer")
	}
	got := f.stream(resp)
	if id := chunksOfType(got, "start")[0]["messageId"]; id == turn {
		t.Errorf("live wait streamed message %v, the turn it had seen", id)
	}
	if !strings.Contains(text(got), "counted to ten") {
		t.Errorf("live wait's stream text = %q, want the second turn followed to its end", text(got))
	}
}
