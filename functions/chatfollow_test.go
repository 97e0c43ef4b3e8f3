package functions

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/adk/v2/model"
	"google.golang.org/genai"

	"github.com/baton-run/baton/modeltest"
	"github.com/baton-run/baton/usechat"
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
		waiting <- f.do(http.MethodGet, NameChat+"/chat1/stream", f.token("ada"), nil, map[string]string{usechat.WaitHeader: "20", usechat.SeenHeader: turn})
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

// TestChatReplayAsksApprovalFirst: a reloaded page's resume replays a
// turn waiting for a decision, and the call needing it comes first with
// its request for approval, naming the device that decides: never before
// it as a call that runs, which a page shows as "running…" for a moment.
func TestChatReplayAsksApprovalFirst(t *testing.T) {
	t.Parallel()
	f := newHTTPFixture(t, nil, modeltest.CallReply(
		modeltest.Call("w1", "get_weather", map[string]any{"city": "Oslo"}),
		modeltest.Call("b1", "book_table", map[string]any{"people": 4})))
	// Read, not checked: a page's turn sends an approval's call again,
	// naming the device that decides, which uistreamtest.Check refuses.
	resp := f.chat("ada", chatBody("chat1", "tab-a", userMessage("u1", "weather and a table")))
	if _, err := io.Copy(io.Discard, resp.Body); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("POST /Chat: status %d, %v", resp.StatusCode, err)
	}
	resp.Body.Close()

	replay := f.stream(f.do(http.MethodGet, NameChat+"/chat1/stream", f.token("ada"), nil, nil), "b1")
	var seen []string
	for _, c := range replay {
		if c["toolCallId"] != "b1" {
			continue
		}
		kind := c["type"].(string)
		if kind == "tool-input-available" {
			meta, _ := c["providerMetadata"].(map[string]any)
			baton, _ := meta["baton"].(map[string]any)
			kind += " for " + fmt.Sprint(baton["deviceId"])
		}
		seen = append(seen, kind)
	}
	want := []string{"tool-input-available for tab-a", "tool-approval-request"}
	if diff := cmp.Diff(want, seen); diff != "" {
		t.Errorf("the replay's chunks of b1 (-want +got):\n%s", diff)
	}
	if in := chunksOfType(replay, "tool-input-available"); len(in) != 2 || in[0]["toolCallId"] != "w1" {
		t.Errorf("the replay's calls = %v, want w1, then b1", in)
	}
}
