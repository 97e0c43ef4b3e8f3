package devserver

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"

	"github.com/baton-run/baton/functions"
	"github.com/baton-run/baton/internal/authtest"
	"github.com/baton-run/baton/internal/firestoretest"
	"github.com/baton-run/baton/modeltest"
	"github.com/baton-run/baton/toolcallback"
)

func TestMain(m *testing.M) { firestoretest.Main(m, authtest.Stop) }

// start runs opts on a free port against the test emulator, in development
// identity mode, and stops it when the test ends.
func start(t *testing.T, opts *Options) string {
	t.Helper()
	firestoretest.NewClient(t) // the shared emulator, started or skipped as the harness decides
	t.Setenv("BATON_DEV_IDENTITY", "true")
	t.Setenv("GOOGLE_CLOUD_PROJECT", "test-devserver")
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	opts.Addr = "127.0.0.1:0"
	opts.Logger = functions.NewLogger(io.Discard)
	opts.Ready = func(url string) { ready <- url }
	go func() { done <- Run(ctx, opts) }()
	select {
	case url := <-ready:
		t.Cleanup(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run() = %v", err)
			}
		})
		return url
	case err := <-done:
		cancel()
		t.Fatalf("Run() = %v before serving", err)
	}
	return ""
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Baton-User", "ada")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// TestUserTeam serves a team of the user's own, as a user's main does, and
// reaches every function's sub-paths on the one port: a chat turn, its
// messages, its resume stream, and the agent card below /A2A and at the
// host's well-known path.
func TestUserTeam(t *testing.T) {
	model := &modeltest.Strict{T: t, Repeat: modeltest.TextReply("hello from my team")}
	url := start(t, &Options{Team: func(context.Context) ([]toolcallback.Member, error) {
		first, err := llmagent.New(llmagent.Config{Name: "first", Description: "answers first", Model: model})
		if err != nil {
			return nil, err
		}
		second, err := llmagent.New(llmagent.Config{Name: "second", Description: "answers second", Model: model})
		if err != nil {
			return nil, err
		}
		return []toolcallback.Member{{Agent: first}, {Agent: second}}, nil
	}})

	body := `{"id":"chat1","trigger":"submit-message","deviceId":"tab","messages":[` +
		`{"id":"u1","role":"user","parts":[{"type":"text","text":"hi"}]}]}`
	req, _ := http.NewRequest(http.MethodPost, url+"/Chat", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Baton-User", "ada")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	turn, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(turn), "hello from my team") {
		t.Fatalf("POST /Chat = %d %s, want the team's answer", resp.StatusCode, turn)
	}
	if status, msgs := get(t, url+"/Chat/chat1"); status != http.StatusOK || !strings.Contains(msgs, "hello from my team") {
		t.Errorf("GET /Chat/chat1 = %d %s, want the chat's messages", status, msgs)
	}
	// The turn has ended: the resume stream says nothing runs (a route
	// missing from the mux would answer 404).
	if status, s := get(t, url+"/Chat/chat1/stream"); status != http.StatusNoContent {
		t.Errorf("GET /Chat/chat1/stream = %d %s, want 204", status, s)
	}
	for _, path := range []string{"/A2A/.well-known/agent-card.json", "/.well-known/agent-card.json"} {
		status, raw := get(t, url+path)
		var card struct {
			URL    string `json:"url"`
			Skills []struct {
				Name string `json:"name"`
			} `json:"skills"`
		}
		json.Unmarshal([]byte(raw), &card)
		if status != http.StatusOK || card.URL != url+"/A2A" || !strings.Contains(raw, "answers second") {
			t.Errorf("GET %s = %d %s, want the team's card naming %s/A2A", path, status, raw, url)
		}
	}
}

func TestRunNeedsOneTeam(t *testing.T) {
	err := Run(context.Background(), &Options{})
	if err == nil || !strings.Contains(err.Error(), "exactly one of Agent, Team and TeamWithMCP") {
		t.Errorf("Run(no agents) = %v, want an error naming the options", err)
	}
}

// TestLiveStandIn: without Gemini credentials, live mode talks to the
// Gemini Live stand-in with the rules given: a socket on the one port gets
// the model's voice (binary frames) and its words.
func TestLiveStandIn(t *testing.T) {
	for _, k := range []string{"GOOGLE_API_KEY", "GEMINI_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI"} {
		t.Setenv(k, "")
	}
	model := &modeltest.Strict{T: t, Repeat: modeltest.TextReply("hello live")}
	url := start(t, &Options{Agent: func(context.Context) (agent.Agent, error) {
		return llmagent.New(llmagent.Config{Name: "voice", Model: model})
	}, LiveRules: model})
	ws, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(url, "http")+"/Chat/live-"+strconv.FormatInt(time.Now().UnixNano(), 36)+"/live?device=tab", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	for _, frame := range []string{`{"user":"ada"}`, `{"content":{"parts":[{"text":"hi"}]}}`} {
		if err := ws.WriteMessage(websocket.TextMessage, []byte(frame)); err != nil {
			t.Fatal(err)
		}
	}
	_ = ws.SetReadDeadline(time.Now().Add(15 * time.Second))
	audio, said := 0, ""
	for said == "" {
		kind, data, err := ws.ReadMessage()
		if err != nil {
			t.Fatalf("after %d bytes of audio: %v", audio, err)
		}
		var m map[string]any
		switch {
		case kind == websocket.BinaryMessage:
			audio += len(data)
		case json.Unmarshal(data, &m) != nil:
			t.Fatalf("a text frame that is not JSON: %q", data)
		case m["type"] == "error":
			t.Fatalf("error frame %v", m)
		case m["type"] == "transcript" && m["role"] == "assistant" && m["final"] == true:
			said, _ = m["text"].(string)
		}
	}
	if said != "hello live" || audio == 0 {
		t.Errorf("the stand-in said %q with %d bytes of audio, want hello live, spoken", said, audio)
	}
}
