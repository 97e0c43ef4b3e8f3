package functions

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/tool"

	"github.com/baton-run/baton/a2aremote"
	"github.com/baton-run/baton/internal/polltest"
	"github.com/baton-run/baton/modeltest"
	"github.com/baton-run/baton/toolcallback"
)

// TestTwoBatons: a second Baton deployment is the remote agent of the
// first. A's assistant delegates to B's team over B's A2A function (as
// any A2A client, with B's development identity); A's worker sends the
// message with a push config naming A's push door, which B's push
// sender may reach (BATON_A2A_PUSH_ALLOW); B's answer, pushed, resumes A's
// agent once, through POST {A2A}/remote-push. A notification with a bad
// token is refused at the door.
func TestTwoBatons(t *testing.T) {
	t.Parallel()
	door := newWorkForwarder(t) // A's A2A function, known before A exists
	b := newHTTPFixtureWith(t, nil, func(c *Config) {
		c.DevIdentity, c.A2APushAllow = true, []string{door.srv.URL + "/"}
	}, modeltest.TextReply("jazz at the Blue Room tonight"))
	remote, err := toolcallback.Remote(toolcallback.RemoteConfig{Name: "ask_b", Description: "ask the other deployment",
		Agent:     a2aremote.Config{CardURL: b.srv.URL + "/" + NameA2A, Header: http.Header{"X-Baton-User": {"deployment-a"}}, AllowPrivate: true},
		PollEvery: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	a, _ := newWorkFixture(t, func(f *httpFixture, so *ServerOptions) {
		f.model.Script = []modeltest.Reply{modeltest.CallReply(modeltest.Call("c1", "ask_b", map[string]any{"message": "what is on tonight?"})),
			modeltest.EchoReply}
		root, err := llmagent.New(llmagent.Config{Name: "assistant", Model: f.model, Tools: []tool.Tool{remote}})
		if err != nil {
			t.Fatal(err)
		}
		f.members = []toolcallback.Member{{Agent: root, Remote: []*toolcallback.RemoteTool{remote}}}
		f.cfg.RemotePushURL = door.srv.URL + "/" + NameA2A + RemotePushPath
	})
	door.forwardTo(a)
	defer func() {
		if t.Failed() {
			t.Logf("A's log:\n%s\nB's log:\n%s", a.logs.String(), b.logs.String())
		}
	}()
	resp := a.turn("alice", "chat-1", "tab-1", "ask the other deployment what is on tonight")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("turn: %d %v", resp.StatusCode, errorOf(t, resp))
	}
	a.stream(resp, "c1")
	team := a.server.Team()
	polltest.Until(t, "A's agent resumed with B's answer", func() bool {
		p, err := team.Pending(t.Context(), toolcallback.PendingRequest{UserID: a.user("alice").UID, ChatID: "chat-1", History: 50})
		if err != nil {
			t.Fatal(err)
		}
		for ev := range p.History.All() {
			if ev.Content == nil {
				continue
			}
			for _, part := range ev.Content.Parts {
				if strings.Contains(part.Text, "jazz at the Blue Room tonight") && ev.Author == "assistant" {
					return true
				}
			}
		}
		return false
	})
	// A push with a forged token is refused at the door, and writes nothing.
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, a.srv.URL+"/"+NameA2A+RemotePushPath,
		strings.NewReader(`{"statusUpdate":{"taskId":"t","contextId":"c","status":{"state":"TASK_STATE_COMPLETED"}}}`))
	req.Header.Set("A2A-Notification-Token", "forged.token")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusUnauthorized {
		t.Errorf("a forged push was answered %d, want 401", res.StatusCode)
	}
}
