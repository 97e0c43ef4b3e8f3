package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/baton-run/baton/internal/authtest"
	"github.com/baton-run/baton/internal/emulator"
	"github.com/baton-run/baton/internal/polltest"
)

// TestTwoRunnersPeers: two runners, each started with the other's URL
// (go run ./local -peer), on the shared emulators, are each other's
// remote agent. A user of the first asks its concierge to have the other
// runner ask the first one a sum: the first's concierge delegates to the
// second's (ask_peer, as the runners' peer user, with an Auth emulator
// token), which delegates back to the first's, which answers; each
// answer is pushed back (BATON_A2A_PUSH_ALLOW names the peer), and the
// user's chat ends with the answer relayed twice.
func TestTwoRunnersPeers(t *testing.T) {
	t.Parallel()
	portA, err := emulator.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	portB, err := emulator.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	urlA, urlB := "http://127.0.0.1:"+portA, "http://127.0.0.1:"+portB
	// A user of this test's own (go run ./local calls it peer-runner):
	// the runners share the emulators with other tests, and their users'
	// turn limits with them.
	user := "peer-" + portA
	startInProcess(t, portA, peering{url: urlB, user: user})
	startInProcess(t, portB, peering{url: urlA, user: user})

	token := authtest.SignUp(t, os.Getenv(authtest.HostEnv)).IDToken
	req, _ := http.NewRequest(http.MethodPost, urlA+"/Turn", strings.NewReader(
		`{"sessionId":"peers-1","clientId":"tab","text":"ask the other runner to ask the other runner what is 12*7?"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "ask_peer") {
		t.Fatalf("Turn = %d %s, want the call of ask_peer", resp.StatusCode, body)
	}
	const want = "The other runner says: The other runner says: 12*7 = 84."
	var last string
	polltest.Until(t, "the first runner's chat to end with the answer relayed both ways", func() bool {
		req, _ := http.NewRequest(http.MethodGet, urlA+"/Chat/peers-1?limit=10", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		var chat struct {
			Messages []json.RawMessage `json:"messages"`
		}
		if resp.StatusCode != http.StatusOK || json.Unmarshal(raw, &chat) != nil || len(chat.Messages) == 0 {
			t.Fatalf("GET /Chat/peers-1 = %d %s", resp.StatusCode, raw)
		}
		last = string(chat.Messages[len(chat.Messages)-1])
		return strings.Contains(last, want)
	})
}
