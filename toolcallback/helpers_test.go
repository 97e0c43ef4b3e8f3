package toolcallback_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/adk/agent/llmagent"
	"google.golang.org/adk/model"
	"google.golang.org/adk/session"
	"google.golang.org/adk/tool"
	"google.golang.org/genai"

	"github.com/baton-run/baton/internal/firestoretest"
	"github.com/baton-run/baton/sessionstore"
	"github.com/baton-run/baton/toolcallback"
)

func TestMain(m *testing.M) { firestoretest.Main(m) }

// strictModel is a scripted model that checks every request the way Gemini
// does: each function call must be answered by exactly one response, in the
// content right after it, and every response must answer a call of the
// content right before it. A violation fails the test.
type strictModel struct {
	t        testing.TB
	mu       sync.Mutex
	script   []reply
	requests []*model.LLMRequest
	// gate, when set, is received from before answering (to hold the
	// model mid-invocation).
	gate chan struct{}
	// repeat, when set, answers once the script is exhausted.
	repeat reply
}

// reply produces the model's answer to a request.
type reply func(req *model.LLMRequest) *genai.Content

func (m *strictModel) Name() string { return "strict-scripted" }

func (m *strictModel) GenerateContent(ctx context.Context, req *model.LLMRequest, _ bool) iter.Seq2[*model.LLMResponse, error] {
	return func(yield func(*model.LLMResponse, error) bool) {
		if err := checkPairing(req.Contents); err != nil {
			m.t.Errorf("model request violates function call pairing: %v\n%s", err, dumpContents(req.Contents))
			yield(nil, err)
			return
		}
		m.mu.Lock()
		m.requests = append(m.requests, req)
		if len(m.script) == 0 && m.repeat != nil {
			m.script = append(m.script, m.repeat)
		}
		if len(m.script) == 0 {
			m.mu.Unlock()
			m.t.Errorf("model called more often than scripted:\n%s", dumpContents(req.Contents))
			yield(nil, errors.New("strict model: script exhausted"))
			return
		}
		next := m.script[0]
		m.script = m.script[1:]
		gate := m.gate
		m.mu.Unlock()
		if gate != nil {
			select {
			case <-gate:
			case <-ctx.Done():
				yield(nil, ctx.Err())
				return
			}
		}
		yield(&model.LLMResponse{Content: next(req), TurnComplete: true}, nil)
	}
}

func (m *strictModel) calls() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.requests)
}

func (m *strictModel) lastRequest() *model.LLMRequest {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.requests[len(m.requests)-1]
}

func checkPairing(contents []*genai.Content) error {
	for i, c := range contents {
		var calls, responses []string
		for _, p := range c.Parts {
			if p.FunctionCall != nil {
				calls = append(calls, p.FunctionCall.ID)
			}
			if p.FunctionResponse != nil {
				responses = append(responses, p.FunctionResponse.ID)
			}
		}
		if len(responses) > 0 {
			if i == 0 {
				return fmt.Errorf("content %d: responses %v with no call before them", i, responses)
			}
			prev := map[string]bool{}
			for _, p := range contents[i-1].Parts {
				if p.FunctionCall != nil {
					prev[p.FunctionCall.ID] = true
				}
			}
			for _, id := range responses {
				if !prev[id] {
					return fmt.Errorf("content %d: response %q answers no call of content %d", i, id, i-1)
				}
			}
		}
		if len(calls) == 0 {
			continue
		}
		if i+1 >= len(contents) {
			return fmt.Errorf("content %d: calls %v have no response", i, calls)
		}
		count := map[string]int{}
		n := 0
		for _, p := range contents[i+1].Parts {
			if p.FunctionResponse != nil {
				count[p.FunctionResponse.ID]++
				n++
			}
		}
		for _, id := range calls {
			if count[id] != 1 {
				return fmt.Errorf("content %d: call %q has %d responses in the next content, want 1", i, id, count[id])
			}
		}
		if n != len(calls) {
			return fmt.Errorf("content %d: %d calls but %d responses", i, len(calls), n)
		}
	}
	return nil
}

func dumpContents(contents []*genai.Content) string {
	var b strings.Builder
	for i, c := range contents {
		fmt.Fprintf(&b, "  [%d] %s:", i, c.Role)
		for _, p := range c.Parts {
			switch {
			case p.Text != "":
				fmt.Fprintf(&b, " text(%q)", p.Text)
			case p.FunctionCall != nil:
				fmt.Fprintf(&b, " call(%s %s %v)", p.FunctionCall.ID, p.FunctionCall.Name, p.FunctionCall.Args)
			case p.FunctionResponse != nil:
				fmt.Fprintf(&b, " response(%s %s %v)", p.FunctionResponse.ID, p.FunctionResponse.Name, p.FunctionResponse.Response)
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}

// callReply makes the model call tools, all in one step.
func callReply(calls ...*genai.FunctionCall) reply {
	return func(*model.LLMRequest) *genai.Content {
		c := &genai.Content{Role: genai.RoleModel}
		for _, fc := range calls {
			c.Parts = append(c.Parts, &genai.Part{FunctionCall: fc})
		}
		return c
	}
}

func call(id, name string, args map[string]any) *genai.FunctionCall {
	return &genai.FunctionCall{ID: id, Name: name, Args: args}
}

// echoReply answers with text describing the responses of the request's
// last content, so tests can see what the model was given.
func echoReply(req *model.LLMRequest) *genai.Content {
	var parts []string
	last := req.Contents[len(req.Contents)-1]
	for _, p := range last.Parts {
		if p.FunctionResponse != nil {
			b, _ := json.Marshal(p.FunctionResponse.Response)
			parts = append(parts, p.FunctionResponse.Name+"="+string(b))
		}
		if p.Text != "" {
			parts = append(parts, "text="+p.Text)
		}
	}
	return genai.NewContentFromText("saw "+strings.Join(parts, "; "), genai.RoleModel)
}

func textReply(s string) reply {
	return func(*model.LLMRequest) *genai.Content { return genai.NewContentFromText(s, genai.RoleModel) }
}

type bgmArgs struct {
	Track int `json:"track"`
}

type tableArgs struct {
	People int    `json:"people"`
	Name   string `json:"name"`
}

// fixture is one app with a browser tool, an any-device browser tool, an
// external tool and an approval-gated tool, on a fresh Firestore project.
type fixture struct {
	t        testing.TB
	client   *firestore.Client
	counter  *firestoretest.Counter
	model    *strictModel
	tools    []tool.Tool
	opts     *toolcallback.Options
	engine   *toolcallback.Engine
	sessions *sessionstore.Service
	booked   atomic.Int32 // runs of the approval-gated tool
	bookArgs atomic.Value // its last arguments
}

func newFixture(t testing.TB, opts *toolcallback.Options, script ...reply) *fixture {
	t.Helper()
	f := &fixture{t: t, model: &strictModel{t: t, script: script}}
	f.client, f.counter = firestoretest.NewCountingClient(t)
	if opts == nil {
		opts = &toolcallback.Options{}
	}
	if opts.TokenKey == nil {
		opts.TokenKey = []byte("test-key-0123456789abcdef0123456789")
	}
	f.opts = opts
	bgm, err := toolcallback.Browser[bgmArgs](toolcallback.BrowserConfig{Name: "change_bgm", Description: "switch the page's music track"})
	if err != nil {
		t.Fatal(err)
	}
	loc, err := toolcallback.Browser[struct{}](toolcallback.BrowserConfig{Name: "get_location", Description: "the browser's location", AnyDevice: true, Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	ext, err := toolcallback.External[struct {
		Query string `json:"query"`
	}](toolcallback.ExternalConfig{Name: "ask_crm", Description: "ask the CRM"})
	if err != nil {
		t.Fatal(err)
	}
	book, err := toolcallback.Approval(toolcallback.ApprovalConfig[tableArgs]{Name: "book_table", Description: "book a table"},
		func(_ tool.Context, a tableArgs) (map[string]any, error) {
			f.booked.Add(1)
			f.bookArgs.Store(a)
			return map[string]any{"booked": true, "people": a.People}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	f.tools = []tool.Tool{bgm, loc, ext, book}
	f.engine, f.sessions = f.newInstance()
	return f
}

// newInstance builds another Engine, runner and session service over the
// same database and model: a second serverless instance.
func (f *fixture) newInstance() (*toolcallback.Engine, *sessionstore.Service) {
	f.t.Helper()
	a, err := llmagent.New(llmagent.Config{Name: "assistant", Model: f.model, Tools: f.tools})
	if err != nil {
		f.t.Fatal(err)
	}
	sessions := sessionstore.New(f.client, nil)
	e, err := toolcallback.New(f.client, sessions, "app", a, f.opts)
	if err != nil {
		f.t.Fatal(err)
	}
	return e, sessions
}

// turn sends a message and returns the invocation's events.
func (f *fixture) turn(e *toolcallback.Engine, sid, client, text string) ([]*session.Event, error) {
	f.t.Helper()
	inv, err := e.Turn(f.t.Context(), toolcallback.TurnRequest{UserID: "user-1", SessionID: sid, ClientID: client,
		Content: genai.NewContentFromText(text, genai.RoleUser)})
	if err != nil {
		return nil, err
	}
	return collect(inv)
}

func collect(inv *toolcallback.Invocation) ([]*session.Event, error) {
	var out []*session.Event
	for ev, err := range inv.Events() {
		if err != nil {
			return out, err
		}
		out = append(out, ev)
	}
	return out, nil
}

// finalText is the text of the last event that has some.
func finalText(events []*session.Event) string {
	text := ""
	for _, ev := range events {
		if ev.Partial || ev.Content == nil {
			continue
		}
		for _, p := range ev.Content.Parts {
			if p.Text != "" {
				text = p.Text
			}
		}
	}
	return text
}

func (f *fixture) pending(sid, client string) []*toolcallback.Call {
	f.t.Helper()
	calls, err := f.engine.Pending(f.t.Context(), "user-1", sid, client)
	if err != nil {
		f.t.Fatalf("Pending() error = %v", err)
	}
	return calls
}

// history returns the stored session's events.
func (f *fixture) history(sid string) []*session.Event {
	f.t.Helper()
	got, err := f.sessions.Get(f.t.Context(), &session.GetRequest{AppName: "app", UserID: "user-1", SessionID: sid})
	if err != nil {
		f.t.Fatalf("Get(%q) error = %v", sid, err)
	}
	var out []*session.Event
	for ev := range got.Session.Events().All() {
		out = append(out, ev)
	}
	return out
}

// callStatus reads a ledger record's status straight from Firestore.
func (f *fixture) callStatus(sid, callID string) string {
	f.t.Helper()
	snap, err := f.sessions.SessionRef("app", "user-1", sid).Collection("calls").Doc(callID).Get(f.t.Context())
	if err != nil {
		f.t.Fatalf("read call %q: %v", callID, err)
	}
	s, _ := snap.DataAt("status")
	return fmt.Sprint(s)
}

func resume(e *toolcallback.Engine, ctx context.Context, sid, callID, client string, a toolcallback.Answer) (*toolcallback.Resumption, []*session.Event, error) {
	res, err := e.Resume(ctx, toolcallback.Result{UserID: "user-1", SessionID: sid, CallID: callID, ClientID: client, Answer: a})
	if err != nil {
		return res, nil, err
	}
	if res.Invocation == nil {
		return res, nil, nil
	}
	events, err := collect(res.Invocation)
	return res, events, err
}

func ptr[T any](v T) *T { return &v }

func asError[T error](err error, target *T) bool { return errors.As(err, target) }

func newSession(sid string) *session.CreateRequest {
	return &session.CreateRequest{AppName: "app", UserID: "user-1", SessionID: sid}
}

func textTurn(sid, client, text string) toolcallback.TurnRequest {
	return toolcallback.TurnRequest{UserID: "user-1", SessionID: sid, ClientID: client, Content: genai.NewContentFromText(text, genai.RoleUser)}
}
