package functions

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"google.golang.org/genai"

	"github.com/baton-run/baton/internal/firestoretest"
	"github.com/baton-run/baton/internal/polltest"
	"github.com/baton-run/baton/modeltest"
	"github.com/baton-run/baton/sessionstore"
	"github.com/baton-run/baton/toolcallback"
)

// liveFixture is an httpFixture whose servers talk to a Gemini Live
// stand-in: live mode on.
func liveFixture(t *testing.T, mutate func(*Config), live *modeltest.LiveOptions, script ...modeltest.Reply) (*httpFixture, *modeltest.LiveServer) {
	t.Helper()
	if live.T == nil {
		live.T = t
	}
	standIn := modeltest.NewLiveServer(live)
	t.Cleanup(standIn.Close)
	f := newHTTPFixtureWith(t, func(f *httpFixture, so *ServerOptions) {
		so.Live, so.LiveSetup = liveClient(t, standIn), &genai.LiveConnectConfig{ResponseModalities: []genai.Modality{genai.ModalityText}}
	}, mutate, script...)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("logs:\n%s", f.logs.String())
		}
	})
	return f, standIn
}

func liveClient(t *testing.T, s *modeltest.LiveServer) *genai.Client {
	t.Helper()
	c, err := genai.NewClient(context.Background(), s.ClientConfig())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// liveInstance is another instance of f's functions on the same database,
// with live mode on the same stand-in.
func (f *httpFixture) liveInstance(standIn *modeltest.LiveServer) *httpFixture {
	f.t.Helper()
	client, _ := firestoretest.Reopen(f.t, f.client)
	other := &httpFixture{t: f.t, auth: f.auth, authAddr: f.authAddr, model: f.model, client: client, cfg: f.cfg, users: f.users}
	var err error
	other.server, err = NewServer(f.cfg, sessionstore.New(client, &sessionstore.Options{Root: f.cfg.Root}), f.members, &ServerOptions{Logger: NewLogger(f.logs), Auth: f.auth,
		SchedulerKeys: f.keys.Client(), Live: liveClient(f.t, standIn), LiveSetup: &genai.LiveConnectConfig{ResponseModalities: []genai.Modality{genai.ModalityText}}})
	if err != nil {
		f.t.Fatal(err)
	}
	other.srv = httptest.NewServer(other.server.Mux())
	f.t.Cleanup(other.srv.Close)
	return other
}

// wsClient is a live socket as a page holds it: the frames it was sent.
type wsClient struct {
	t      *testing.T
	ws     *websocket.Conn
	frames chan map[string]any
	seen   []map[string]any
	ended  error // why the reader stopped; read once frames is closed
}

// dialLive opens GET /Chat/{chatId}/live?device= and sends first.
func (f *httpFixture) dialLive(chatID, device string, first map[string]any) *wsClient {
	f.t.Helper()
	url := "ws" + strings.TrimPrefix(f.srv.URL, "http") + "/" + NameChat + "/" + chatID + "/live"
	if device != "" {
		url += "?device=" + device
	}
	ws, resp, err := websocket.DefaultDialer.DialContext(f.t.Context(), url, nil)
	if err != nil {
		f.t.Fatalf("dial %s: %v (%v)", url, err, resp)
	}
	f.t.Cleanup(func() { _ = ws.Close() })
	c := &wsClient{t: f.t, ws: ws, frames: make(chan map[string]any, 1000)}
	go func() {
		defer close(c.frames)
		for {
			kind, data, err := ws.ReadMessage()
			if err != nil {
				c.ended = err
				return
			}
			if kind == websocket.TextMessage {
				var m map[string]any
				if err := json.Unmarshal(data, &m); err != nil {
					f.t.Errorf("a text frame that is not JSON: %q", data)
				}
				c.frames <- m
			}
		}
	}()
	c.send(first)
	return c
}

func (c *wsClient) send(frame map[string]any) {
	c.t.Helper()
	if err := c.ws.WriteJSON(frame); err != nil {
		c.t.Fatalf("send %v: %v", frame, err)
	}
}

// next reads frames until one of type typ, and returns it; "closed"
// waits for the socket's close.
func (c *wsClient) next(typ string) map[string]any {
	c.t.Helper()
	timeout := time.After(15 * time.Second)
	for {
		select {
		case m, ok := <-c.frames:
			if !ok {
				if typ == "closed" {
					return nil
				}
				c.t.Fatalf("the socket closed waiting for %q; frames: %v", typ, c.seen)
			}
			c.seen = append(c.seen, m)
			if m["type"] == typ {
				return m
			}
		case <-timeout:
			c.t.Fatalf("after 15 s, still waiting for %q; frames: %v", typ, c.seen)
		}
	}
}

// find returns the first frame, among those read so far or the next ones,
// that match accepts.
func (c *wsClient) find(match func(map[string]any) bool) map[string]any {
	c.t.Helper()
	for _, m := range c.seen {
		if match(m) {
			return m
		}
	}
	timeout := time.After(15 * time.Second)
	for {
		select {
		case m, ok := <-c.frames:
			if !ok {
				c.t.Fatalf("the socket closed; frames: %v", c.seen)
			}
			c.seen = append(c.seen, m)
			if match(m) {
				return m
			}
		case <-timeout:
			c.t.Fatalf("after 15 s, no such frame; frames: %v", c.seen)
		}
	}
}

func textFrame(text string) map[string]any {
	return map[string]any{"content": map[string]any{"parts": []any{map[string]any{"text": text}}}}
}

// TestLiveAcrossInstances: a browser call made in a live conversation is
// answered on another instance, twenty times at once through POST
// /ToolResult and POST /Chat: the model gets it once, the transcript holds
// it once. Meanwhile a text turn is refused (409 live), and so is a second
// socket of another device; a stop from another tab ends the conversation.
func TestLiveAcrossInstances(t *testing.T) {
	t.Parallel()
	f, standIn := liveFixture(t, nil, &modeltest.LiveOptions{Script: []modeltest.Reply{
		modeltest.CallReply(modeltest.Call("", "change_bgm", map[string]any{"track": 2})), modeltest.EchoReply,
	}})
	f.token("ada") // signed up before the other instance shares f's users
	other := f.liveInstance(standIn)
	sock := f.dialLive("chat1", "tab-a", map[string]any{"auth": f.token("ada")})
	if ready := sock.next("ready"); ready["chatId"] != "chat1" || ready["resumed"] != false {
		t.Fatalf("ready = %v", ready)
	}
	sock.send(textFrame("play track 2"))
	call := sock.next("tool-call")
	id, _ := call["toolCallId"].(string)
	if call["toolName"] != "change_bgm" || call["kind"] != "browser" || call["deviceId"] != "tab-a" {
		t.Fatalf("tool-call = %v", call)
	}

	if resp := other.chat("ada", chatBody("chat1", "tab-b", userMessage("u9", "typed meanwhile"))); resp.StatusCode != http.StatusConflict || errorOf(t, resp).Code != "live" {
		t.Errorf("POST /Chat during the conversation: status %d, want 409 live", resp.StatusCode)
	}
	second := other.dialLive("chat1", "tab-b", map[string]any{"auth": f.token("ada")})
	if e := second.next("error"); e["code"] != "live" {
		t.Errorf("a second socket of another device: error %v, want code live", e)
	}
	second.next("end")
	second.next("closed")

	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			var resp *http.Response
			if i%2 == 0 {
				resp = other.do(http.MethodPost, NameToolResult, f.token("ada"), map[string]any{
					"sessionId": "chat1", "toolCallId": id, "clientId": "tab-a", "output": map[string]any{"playing": 2}}, nil)
			} else {
				resp = other.chat("ada", chatBody("chat1", "tab-a", userMessage("u1", "play track 2"), answered("m1", id, map[string]any{"playing": 2})))
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusAccepted {
				t.Errorf("answer %d: status %d", i, resp.StatusCode)
			}
		})
	}
	wg.Wait()
	sock.find(func(m map[string]any) bool {
		return m["type"] == "transcript" && m["text"] == `saw change_bgm={"playing":2}`
	})
	sock.find(func(m map[string]any) bool { return m["type"] == "tool-result" && m["toolCallId"] == id })
	responses := 0
	for _, c := range standIn.Conns() {
		responses += c.Count("toolResponse")
	}
	if responses != 1 {
		t.Errorf("the model was sent %d tool responses, want 1", responses)
	}

	resp := other.do(http.MethodDelete, NameChat+"/chat1/stream", f.token("ada"), nil, nil)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("DELETE /Chat/chat1/stream: status %d, want 200", resp.StatusCode)
	}
	if end := sock.next("end"); end["reason"] != "stopped" {
		t.Errorf("end = %v, want stopped", end)
	}
	sock.next("closed")
	view := f.do(http.MethodGet, NameChat+"/chat1", f.token("ada"), nil, nil)
	var got struct {
		Messages []map[string]any `json:"messages"`
	}
	if err := json.NewDecoder(view.Body).Decode(&got); err != nil {
		t.Fatal(err)
	}
	view.Body.Close()
	raw, _ := json.Marshal(got.Messages)
	if n := strings.Count(string(raw), `"output-available"`); n != 1 || !strings.Contains(string(raw), "play track 2") {
		t.Errorf("GET /Chat/chat1 after the conversation: %s\nwant the user's words and the call answered once", raw)
	}
}

// TestLiveRefusedBeforeTheModel: a socket without a valid identity in its
// first frame is refused before any model connection opens; a user's
// socket on a chat id another user has opens the user's own chat, which
// holds nothing of the other's.
func TestLiveRefusedBeforeTheModel(t *testing.T) {
	t.Parallel()
	f, standIn := liveFixture(t, nil, &modeltest.LiveOptions{Repeat: modeltest.EchoReply},
		modeltest.CallReply(modeltest.Call("c1", "change_bgm", map[string]any{"track": 2})))
	f.stream(f.chat("ada", chatBody("chat1", "tab-a", userMessage("u1", "change the music to track 2"))))
	for _, tc := range []struct {
		name   string
		device string
		first  map[string]any
		code   string
	}{
		{"a first frame with no identity", "tab-a", textFrame("hi"), "unauthenticated"},
		{"a token that is none", "tab-a", map[string]any{"auth": "not-a-token"}, "unauthenticated"},
		{"a development identity where tokens are checked", "tab-a", map[string]any{"user": "ada"}, "unauthenticated"},
		{"no device", "", map[string]any{"auth": f.token("ada")}, "invalid_request"},
	} {
		sock := f.dialLive("chat1", tc.device, tc.first)
		if e := sock.next("error"); e["code"] != tc.code {
			t.Errorf("%s: error %v, want code %s", tc.name, e, tc.code)
		}
		if end := sock.next("end"); end["reason"] != "closed" {
			t.Errorf("%s: end %v, want closed", tc.name, end)
		}
		sock.next("closed")
	}
	if n := len(standIn.Conns()); n != 0 {
		t.Fatalf("the model saw %d connections from refused sockets, want none", n)
	}

	sock := f.dialLive("chat1", "tab-b", map[string]any{"auth": f.token("bob")})
	if ready := sock.next("ready"); len(ready["calls"].([]any)) != 0 {
		t.Errorf("bob's socket on chat1: ready %v, want none of ada's calls", ready)
	}
	sock.send(map[string]any{"close": true})
	sock.next("end")
	if seen := modeltest.DumpContents(standIn.Conn(0).Seen()); seen != "" {
		t.Errorf("bob's model session was seeded with:\n%s\nwant nothing of ada's chat", seen)
	}
	state, err := f.server.team.Pending(t.Context(), toolcallback.PendingRequest{UserID: f.user("ada").UID, ChatID: "chat1"})
	if err != nil || len(state.Calls) != 1 {
		t.Errorf("ada's chat after bob's socket: %d calls pending, %v; want c1", len(state.Calls), err)
	}
}

// TestLiveReplaced: the device that holds a chat's live conversation
// opens another socket (its tab reconnects): the older conversation ends
// as replaced, the new one opens. Development identity names the user in
// the first frame.
func TestLiveReplaced(t *testing.T) {
	t.Parallel()
	f, _ := liveFixture(t, func(c *Config) { c.DevIdentity = true }, &modeltest.LiveOptions{Repeat: modeltest.EchoReply})
	first := f.dialLive("chat1", "tab-a", map[string]any{"user": "ada"})
	first.next("ready")
	second := f.dialLive("chat1", "tab-a", map[string]any{"user": "ada"})
	if end := first.next("end"); end["reason"] != "replaced" {
		t.Errorf("the older socket: end %v, want replaced", end)
	}
	second.next("ready")
	second.send(textFrame("still there?"))
	if said := second.find(func(m map[string]any) bool {
		return m["type"] == "transcript" && m["role"] == "assistant" && m["final"] == true
	}); said["text"] != "saw text=still there?" {
		t.Errorf("the model said %v", said)
	}
}

// TestCloseLive: an instance about to stop (SIGTERM) ends its live
// conversations: the client is told, and the chat is free at once for a
// socket on another instance.
func TestCloseLive(t *testing.T) {
	t.Parallel()
	f, standIn := liveFixture(t, func(c *Config) { c.DevIdentity = true }, &modeltest.LiveOptions{Repeat: modeltest.EchoReply})
	sock := f.dialLive("chat1", "tab-a", map[string]any{"user": "ada"})
	sock.next("ready")
	f.server.CloseLive()
	if end := sock.next("end"); end["reason"] != "closed" {
		t.Errorf("end = %v, want closed", end)
	}
	other := f.liveInstance(standIn).dialLive("chat1", "tab-b", map[string]any{"user": "ada"})
	other.next("ready")
}

// TestLiveFrameTooLarge pins what docs/http-api.md says of a frame over
// BATON_MAX_BODY_BYTES: the socket is closed with 1009, with neither an
// error nor an end frame, and the conversation ends as when the client
// leaves: the chat is released, and another device's socket opens.
func TestLiveFrameTooLarge(t *testing.T) {
	t.Parallel()
	f, _ := liveFixture(t, func(c *Config) { c.DevIdentity = true }, &modeltest.LiveOptions{Repeat: modeltest.EchoReply})
	sock := f.dialLive("chat1", "tab-a", map[string]any{"user": "ada"})
	sock.next("ready")
	if err := sock.ws.WriteMessage(websocket.BinaryMessage, make([]byte, f.server.cfg.MaxBodyBytes+1)); err != nil {
		t.Fatal(err)
	}
	sock.next("closed")
	for _, m := range sock.seen {
		if m["type"] == "error" || m["type"] == "end" {
			t.Errorf("frame %v before the close, want none", m)
		}
	}
	if !websocket.IsCloseError(sock.ended, websocket.CloseMessageTooBig) {
		t.Errorf("the socket ended with %v, want a close with 1009", sock.ended)
	}
	polltest.Until(t, "the conversation to end", func() bool {
		f.server.conversations.mu.Lock()
		defer f.server.conversations.mu.Unlock()
		return len(f.server.conversations.m) == 0
	})
	other := f.dialLive("chat1", "tab-b", map[string]any{"user": "ada"})
	other.next("ready")
}
