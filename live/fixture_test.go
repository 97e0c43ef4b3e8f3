package live_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/genai"

	"github.com/baton-run/baton/internal/firestoretest"
	"github.com/baton-run/baton/internal/polltest"
	"github.com/baton-run/baton/internal/teamtest"
	"github.com/baton-run/baton/live"
	"github.com/baton-run/baton/modeltest"
	"github.com/baton-run/baton/sessionstore"
	"github.com/baton-run/baton/toolcallback"
)

func TestMain(m *testing.M) { firestoretest.Main(m) }

const (
	liveModel = "gemini-live-2.5-flash"
	user      = "ada"
	chat      = "chat-1"
	device    = "tab-a"
)

// world is the shared test world (a project on the emulator, the demo
// tools), the Gemini Live stand-in, and the tools of an app whose agent
// can play music (a browser tool), book a table (needs approval) and tell
// the weather (a server tool).
type world struct {
	t       testing.TB
	shared  *teamtest.World
	client  *firestore.Client
	counter *firestoretest.Counter
	model   *modeltest.LiveServer
	text    *modeltest.Strict // the agent's text model, for turns
	booked  *atomic.Int32
	tools   []tool.Tool
}

func newWorld(t testing.TB, opts *modeltest.LiveOptions) *world {
	t.Helper()
	shared := teamtest.New(t, nil)
	w := &world{t: t, shared: shared, client: shared.Client, counter: shared.Counter, text: shared.Model, booked: &shared.Tools.Booked}
	if opts.T == nil {
		opts.T = t
	}
	w.model = modeltest.NewLiveServer(opts)
	t.Cleanup(w.model.Close)
	w.tools = []tool.Tool{shared.Tools.BGM, shared.Tools.Book, shared.Tools.Weather}
	return w
}

// instance is one process of the app: a team on client (nil: the world's)
// and a runner of conversations on the stand-in.
type instance struct {
	team   *toolcallback.Team
	runner *live.Runner
}

func (w *world) instance(client *firestore.Client, opts *toolcallback.Options, setup *genai.LiveConnectConfig) *instance {
	t := w.t
	if client == nil {
		client = w.client
	}
	a := teamtest.Member(t, llmagent.Config{Name: "assistant", Model: w.text, Instruction: "Answer briefly.", Tools: w.tools})
	team := teamtest.NewTeam(t, sessionstore.New(client, nil), opts, a)
	gc, err := genai.NewClient(context.Background(), w.model.ClientConfig())
	if err != nil {
		t.Fatal(err)
	}
	if setup == nil {
		setup = textSetup()
	}
	var countTokens bool
	if opts != nil {
		countTokens = opts.CountTokens
	}
	r, err := live.New(team, live.Model{Client: gc, Name: liveModel, Setup: setup}, &live.Options{CountTokens: countTokens})
	if err != nil {
		t.Fatal(err)
	}
	return &instance{team: team, runner: r}
}

// textSetup has the model answer in text, with no transcription: the
// tests read its words as they come.
func textSetup() *genai.LiveConnectConfig {
	return &genai.LiveConnectConfig{ResponseModalities: []genai.Modality{genai.ModalityText}}
}

// open opens a conversation of user's chat on device, through in.
func (in *instance) open(t testing.TB, chatID, dev string) (*live.Conversation, *client) {
	t.Helper()
	c := newClient(t)
	conv, err := in.runner.Open(t.Context(), live.Request{UserID: user, ChatID: chatID, DeviceID: dev}, c)
	if err != nil {
		t.Fatalf("Open() error = %v", err)
	}
	t.Cleanup(conv.Close)
	return conv, c
}

// client records what a conversation sends.
type client struct {
	t     testing.TB
	mu    sync.Mutex
	msgs  []live.Message
	audio int // bytes
	more  chan struct{}
}

func newClient(t testing.TB) *client { return &client{t: t, more: make(chan struct{}, 1)} }

func (c *client) Audio(pcm []byte) error {
	c.mu.Lock()
	c.audio += len(pcm)
	c.mu.Unlock()
	c.poke()
	return nil
}

func (c *client) Send(m live.Message) error {
	if _, err := json.Marshal(m); err != nil {
		c.t.Errorf("message %T does not encode: %v", m, err)
	}
	c.mu.Lock()
	c.msgs = append(c.msgs, m)
	c.mu.Unlock()
	c.poke()
	return nil
}

func (c *client) poke() {
	select {
	case c.more <- struct{}{}:
	default:
	}
}

func (c *client) messages() []live.Message {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.msgs)
}

// await waits for the n-th message (from 1) that match accepts, and
// returns it. It returns as soon as the message comes; the bound, the
// polls' (polltest.Timeout), matters only when it never does, and is
// generous: a background call's result travels through the queue and the
// worker, which a loaded machine slowed past 15 s.
func (c *client) await(what string, n int, match func(live.Message) bool) live.Message {
	c.t.Helper()
	timeout := time.After(polltest.Timeout)
	for {
		seen := 0
		for _, m := range c.messages() {
			if match(m) {
				if seen++; seen == n {
					return m
				}
			}
		}
		select {
		case <-c.more:
		case <-timeout:
			c.t.Fatalf("after %s, still waiting for %s #%d; messages:\n%s", polltest.Timeout, what, n, dumpMessages(c.messages()))
		}
	}
}

func (c *client) toolCall(n int) live.ToolCall {
	c.t.Helper()
	return c.await("a tool call", n, func(m live.Message) bool { _, ok := m.(live.ToolCall); return ok }).(live.ToolCall)
}

func (c *client) ready() live.Ready {
	c.t.Helper()
	return c.await("ready", 1, func(m live.Message) bool { _, ok := m.(live.Ready); return ok }).(live.Ready)
}

// said waits for the n-th final words of the assistant.
func (c *client) said(n int) live.Transcript {
	c.t.Helper()
	return c.await("the assistant's words", n, func(m live.Message) bool {
		tr, ok := m.(live.Transcript)
		return ok && tr.Role == "assistant" && tr.Final
	}).(live.Transcript)
}

func (c *client) turnsComplete(n int) {
	c.t.Helper()
	c.await("turn-complete", n, func(m live.Message) bool { s, ok := m.(live.Signal); return ok && s.Type == "turn-complete" })
}

func dumpMessages(msgs []live.Message) string {
	var b strings.Builder
	for _, m := range msgs {
		j, _ := json.Marshal(m)
		fmt.Fprintf(&b, "%s\n", j)
	}
	return b.String()
}

// events reads the chat's session as stored, whole.
func (w *world) events(chatID string) []*session.Event {
	w.t.Helper()
	return w.shared.History(user, chatID)
}

// storedLines is the stored conversation, one line per part: "user: hi",
// "assistant: call change_bgm", "user: response change_bgm {...}".
func storedLines(events []*session.Event) string {
	var b strings.Builder
	for _, ev := range events {
		if ev.Content == nil {
			continue
		}
		for _, p := range ev.Content.Parts {
			who := ev.Author
			switch {
			case p.Text != "":
				fmt.Fprintf(&b, "%s: %s\n", who, p.Text)
			case p.FunctionCall != nil:
				fmt.Fprintf(&b, "%s: call %s\n", who, p.FunctionCall.Name)
			case p.FunctionResponse != nil:
				r, _ := json.Marshal(p.FunctionResponse.Response)
				fmt.Fprintf(&b, "%s: response %s %s\n", who, p.FunctionResponse.Name, r)
			}
		}
	}
	return b.String()
}

func genaiText(s string) *genai.Content { return genai.NewContentFromText(s, genai.RoleUser) }

// until waits for a message match accepts, and reports whether one came
// before stop closed (or 10 s passed).
func (c *client) until(stop <-chan struct{}, match func(live.Message) bool) bool {
	timeout := time.After(10 * time.Second)
	for {
		if slices.ContainsFunc(c.messages(), match) {
			return true
		}
		select {
		case <-c.more:
		case <-stop:
			return slices.ContainsFunc(c.messages(), match)
		case <-timeout:
			return false
		}
	}
}

// calls are the tool calls the client was shown.
func (c *client) calls() []live.ToolCall {
	var out []live.ToolCall
	for _, m := range c.messages() {
		if tc, ok := m.(live.ToolCall); ok {
			out = append(out, tc)
		}
	}
	return out
}

func signal(typ string) func(live.Message) bool {
	return func(m live.Message) bool { s, ok := m.(live.Signal); return ok && s.Type == typ }
}

func isToolCall(m live.Message) bool { _, ok := m.(live.ToolCall); return ok }

// audioBytes is how much of the model's voice the client got.
func (c *client) audioBytes() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.audio
}
