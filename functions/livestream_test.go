package functions

import (
	"github.com/baton-run/baton/usechat"
	"net/http"
	"strings"
	"testing"

	"github.com/baton-run/baton/modeltest"
)

// TestResumeSaysALiveConversationHolds: while a live conversation holds
// the chat, the stream GET /Chat/{chatId}/stream (useChat's resume)
// answers with says so (X-Baton-Live: true, exposed to pages of other
// origins), so that a second tab, whose resume follows the conversation
// and so cannot send, can say why (issue 47, item 7). A turn's own stream
// does not say so, and once the conversation is over nothing holds the
// chat (204).
func TestResumeSaysALiveConversationHolds(t *testing.T) {
	t.Parallel()
	f, _ := liveFixture(t, func(c *Config) { c.AllowedOrigins = []string{testOrigin} }, &modeltest.LiveOptions{Repeat: modeltest.EchoReply},
		modeltest.TextReply("hello"))
	turn := f.chat("ada", chatBody("chat1", "tab-a", userMessage("u1", "hello")))
	if got := turn.Header.Get(usechat.LiveHeader); got != "" {
		t.Errorf("a turn's stream: %s %q, want none", usechat.LiveHeader, got)
	}
	f.stream(turn)

	sock := f.dialLive("chat1", "tab-a", map[string]any{"auth": f.token("ada")})
	sock.next("ready")
	resp := f.do(http.MethodGet, NameChat+"/chat1/stream", f.token("ada"), nil, map[string]string{"Origin": testOrigin})
	if resp.StatusCode != http.StatusOK || resp.Header.Get(usechat.LiveHeader) != "true" {
		t.Errorf("the resume while live: status %d, %s %q, want 200 and true", resp.StatusCode, usechat.LiveHeader, resp.Header.Get(usechat.LiveHeader))
	}
	if exposed := resp.Header.Get("Access-Control-Expose-Headers"); !strings.Contains(exposed, usechat.LiveHeader) {
		t.Errorf("Access-Control-Expose-Headers %q, want it to expose %s", exposed, usechat.LiveHeader)
	}
	resp.Body.Close()

	sock.send(map[string]any{"close": true})
	sock.next("end")
	sock.next("closed")
	after := f.do(http.MethodGet, NameChat+"/chat1/stream", f.token("ada"), nil, nil)
	after.Body.Close()
	if after.StatusCode != http.StatusNoContent {
		t.Errorf("the resume once the conversation ended: status %d, want 204", after.StatusCode)
	}
}
