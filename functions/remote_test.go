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

// TestTwoBatons: two Baton deployments, each the other's remote agent, in
// a nested chain. A's assistant delegates to B's team over B's A2A
// function (with B's development identity, as deployment-a); B's agent,
// working on that message, delegates to A's team over A's A2A function
// (with an ID token of A's Auth emulator, as deployment-b); A's agent
// answers B's question in a chat of deployment-b; A's push resumes B's
// agent, which completes A's message; B's push resumes A's agent. Each
// worker sends its message with a push config naming its deployment's
// push door, which the other's push sender may reach
// (BATON_A2A_PUSH_ALLOW). Every model is called exactly as often as the
// chain needs (A three times, B twice): no turn or resume runs twice. A
// notification with a bad token is refused at the door.
func TestTwoBatons(t *testing.T) {
	t.Parallel()
	doorA, doorB := newWorkForwarder(t), newWorkForwarder(t) // each deployment's A2A function, known before it exists
	askB, err := toolcallback.Remote(toolcallback.RemoteConfig{Name: "ask_b", Description: "ask the other deployment",
		Agent:     a2aremote.Config{CardURL: doorB.srv.URL + "/" + NameA2A, Header: http.Header{"X-Baton-User": {"deployment-a"}}, AllowPrivate: true},
		PollEvery: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	a, _ := newWorkFixture(t, func(f *httpFixture, so *ServerOptions) {
		f.model.Script = []modeltest.Reply{modeltest.CallReply(modeltest.Call("c1", "ask_b", map[string]any{"message": "what is on tonight?"})),
			modeltest.TextReply("alice likes jazz"), modeltest.EchoReply}
		root, err := llmagent.New(llmagent.Config{Name: "assistant", Model: f.model, Tools: []tool.Tool{askB}})
		if err != nil {
			t.Fatal(err)
		}
		f.members = []toolcallback.Member{{Agent: root, Remote: []*toolcallback.RemoteTool{askB}}}
		f.cfg.RemotePushURL, f.cfg.A2APushAllow = doorA.srv.URL+"/"+NameA2A+RemotePushPath, []string{doorB.srv.URL + "/"}
	})
	doorA.forwardTo(a)
	askA, err := toolcallback.Remote(toolcallback.RemoteConfig{Name: "ask_a", Description: "ask the first deployment",
		Agent: a2aremote.Config{CardURL: doorA.srv.URL + "/" + NameA2A, Header: http.Header{"Authorization": {"Bearer " + a.token("deployment-b")}},
			AllowPrivate: true},
		PollEvery: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := newWorkFixture(t, func(f *httpFixture, so *ServerOptions) {
		f.model.Script = []modeltest.Reply{modeltest.CallReply(modeltest.Call("d1", "ask_a", map[string]any{"message": "what does the user like?"})),
			modeltest.EchoReply}
		root, err := llmagent.New(llmagent.Config{Name: "events", Model: f.model, Tools: []tool.Tool{askA}})
		if err != nil {
			t.Fatal(err)
		}
		f.members = []toolcallback.Member{{Agent: root, Remote: []*toolcallback.RemoteTool{askA}}}
		f.cfg.DevIdentity = true
		f.cfg.RemotePushURL, f.cfg.A2APushAllow = doorB.srv.URL+"/"+NameA2A+RemotePushPath, []string{doorA.srv.URL + "/"}
	})
	doorB.forwardTo(b)
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
	polltest.Until(t, "A's agent resumed with B's answer, which holds A's answer to B", func() bool {
		p, err := team.Pending(t.Context(), toolcallback.PendingRequest{UserID: a.user("alice").UID, ChatID: "chat-1", History: 50})
		if err != nil {
			t.Fatal(err)
		}
		for ev := range p.History.All() {
			if ev.Content == nil || ev.Author != "assistant" {
				continue
			}
			for _, part := range ev.Content.Parts {
				if strings.Contains(part.Text, "ask_b=") && strings.Contains(part.Text, "alice likes jazz") {
					return true
				}
			}
		}
		return false
	})
	if na, nb := a.model.Calls(), b.model.Calls(); na != 3 || nb != 2 {
		t.Errorf("models called A %d, B %d times; want 3 and 2 (each turn and resume once)", na, nb)
	}
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
