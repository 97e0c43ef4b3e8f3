package toolcallback_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/genai"

	"github.com/baton-run/baton/internal/firestoretest"
	"github.com/baton-run/baton/internal/modeltest"
	"github.com/baton-run/baton/sessionstore"
	"github.com/baton-run/baton/toolcallback"
)

func TestMain(m *testing.M) { firestoretest.Main(m) }

// Shorthands for the scripted model's helpers.
type reply = modeltest.Reply

var (
	callReply    = modeltest.CallReply
	echoReply    = modeltest.EchoReply
	textReply    = modeltest.TextReply
	call         = modeltest.Call
	dumpContents = modeltest.DumpContents
)

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
	model    *modeltest.Strict
	tools    []tool.Tool
	opts     *toolcallback.Options
	engine   *toolcallback.Engine
	sessions *sessionstore.Service
	booked   atomic.Int32 // runs of the approval-gated tool
	bookArgs atomic.Value // its last arguments
}

func newFixture(t testing.TB, opts *toolcallback.Options, script ...reply) *fixture {
	t.Helper()
	f := &fixture{t: t, model: &modeltest.Strict{T: t, Script: script}}
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
		func(_ agent.Context, a tableArgs) (map[string]any, error) {
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
func (f *fixture) history(sid string) []*session.Event { return storedEvents(f.t, f.sessions, sid) }

// storedEvents returns user-1's stored session sid's events.
func storedEvents(t testing.TB, sessions *sessionstore.Service, sid string) []*session.Event {
	t.Helper()
	got, err := sessions.Get(t.Context(), &session.GetRequest{AppName: "app", UserID: "user-1", SessionID: sid})
	if err != nil {
		t.Fatalf("Get(%q) error = %v", sid, err)
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
	res, err := e.Resume(ctx, toolcallback.Result{UserID: "user-1", ChatID: sid, CallID: callID, ClientID: client, Answer: a})
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
