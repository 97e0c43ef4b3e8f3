package toolcallback_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/genai"

	"github.com/baton-run/baton/internal/firestoretest"
	"github.com/baton-run/baton/modeltest"
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

// fixture is a one-agent team (the agent "assistant") with a browser tool,
// an any-device browser tool, an external tool and an approval-gated tool,
// on a fresh Firestore project. Tests talk to it through Team only, with
// chat ids; what they read back from storage they read through the chat.
type fixture struct {
	t        testing.TB
	client   *firestore.Client
	counter  *firestoretest.Counter
	model    *modeltest.Strict
	tools    []tool.Tool
	opts     *toolcallback.Options
	team     *toolcallback.Team
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
	f.sessions = sessionstore.New(f.client, nil)
	f.team = f.newInstance()
	return f
}

// newInstance builds another Team, with its own runner and session
// service, over the same database and model: a second serverless instance.
func (f *fixture) newInstance() *toolcallback.Team { return f.instanceOn(f.client) }

// instanceOn is newInstance over client, such as a reopened one whose
// calls a test's fault hook does not see.
func (f *fixture) instanceOn(client *firestore.Client) *toolcallback.Team {
	f.t.Helper()
	return f.instanceWith(client, f.model)
}

// turn sends user-1's message to chat from client and returns the
// invocation's events.
func (f *fixture) turn(team *toolcallback.Team, chat, client, text string) ([]*session.Event, error) {
	f.t.Helper()
	events, _, err := runTurn(f.t.Context(), team, textTurn(chat, client, text))
	return events, err
}

// runTurn is team.Turn with what the invocation streamed in place of the
// invocation: every event, or, when the stream fails, the events before
// the failure and its error. A refused turn streams nothing. A test that
// needs the invocation itself (to read events as they come, or to race
// it) calls Turn and collect.
func runTurn(ctx context.Context, team *toolcallback.Team, req toolcallback.TurnRequest) ([]*session.Event, *toolcallback.SwitchReport, error) {
	inv, report, err := team.Turn(ctx, req)
	if err != nil {
		return nil, nil, err
	}
	events, err := collect(inv)
	return events, report, err
}

// runRewind is team.Rewind as runTurn is team.Turn.
func runRewind(ctx context.Context, team *toolcallback.Team, req toolcallback.RewindRequest) ([]*session.Event, error) {
	inv, err := team.Rewind(ctx, req)
	if err != nil {
		return nil, err
	}
	return collect(inv)
}

// collect reads inv's events to the end: all of them, or those before the
// stream's error, with it.
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

// pending lists the calls of chat that client may answer.
func (f *fixture) pending(chat, client string) []*toolcallback.Call {
	f.t.Helper()
	state, err := f.team.Pending(f.t.Context(), toolcallback.PendingRequest{UserID: "user-1", ChatID: chat, ClientID: client})
	if err != nil {
		f.t.Fatalf("Pending() error = %v", err)
	}
	return state.Calls
}

// sessionOf returns the ADK session user-1's chat points at.
func (f *fixture) sessionOf(chat string) string { return activeSession(f.t, f.sessions, chat) }

func activeSession(t testing.TB, sessions *sessionstore.Service, chat string) string {
	t.Helper()
	c, err := sessions.GetChat(t.Context(), "app", "user-1", chat)
	if err != nil {
		t.Fatalf("GetChat(%q) error = %v", chat, err)
	}
	return c.SessionID
}

// history returns the stored events of the chat's active session.
func (f *fixture) history(chat string) []*session.Event {
	return storedEvents(f.t, f.sessions, f.sessionOf(chat))
}

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

// callField reads a field of a ledger record of the chat straight from
// Firestore.
func (f *fixture) callField(chat, callID, field string) any {
	f.t.Helper()
	snap, err := f.sessions.Client().Doc(f.sessions.SessionDoc("app", "user-1", f.sessionOf(chat)).Child("calls", callID).Path()).Get(f.t.Context())
	if err != nil {
		f.t.Fatalf("read call %q: %v", callID, err)
	}
	v, _ := snap.DataAt(field)
	return v
}

// callStatus reads a ledger record's status straight from Firestore.
func (f *fixture) callStatus(chat, callID string) string {
	return fmt.Sprint(f.callField(chat, callID, "status"))
}

// resume answers user-1's call in chat and returns the resumed events.
func resume(team *toolcallback.Team, ctx context.Context, chat, callID, client string, a toolcallback.Answer) (*toolcallback.ResumeOutcome, []*session.Event, error) {
	res, err := team.Resume(ctx, toolcallback.ResumeRequest{UserID: "user-1", ChatID: chat, CallID: callID, ClientID: client, Answer: a})
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

func textTurn(chat, client, text string) toolcallback.TurnRequest {
	return toolcallback.TurnRequest{UserID: "user-1", ChatID: chat, ClientID: client, Content: genai.NewContentFromText(text, genai.RoleUser)}
}

// mustStored is sess as sessionstore's handle.
func mustStored(t testing.TB, sess session.Session) *sessionstore.Session {
	t.Helper()
	ss, err := sessionstore.Of(sess)
	if err != nil {
		t.Fatal(err)
	}
	return ss
}

// claimWatch holds a turn's check (a Firestore call the claiming commit
// waits for) until the run's next append has started: it waits for the
// turn's staged claim (toolcallback.OnAwaitingClaim) or, had it not,
// sent a commit of its own.
type claimWatch struct {
	progressed chan struct{}
	held       atomic.Bool
}

// newClaimWatch returns a watch told by the Team opts builds.
func newClaimWatch(opts *toolcallback.Options) *claimWatch {
	w := &claimWatch{progressed: make(chan struct{}, 1)}
	toolcallback.OnAwaitingClaim(opts, w.step)
	return w
}

func (w *claimWatch) step() {
	select {
	case w.progressed <- struct{}{}:
	default:
	}
}

// hold makes the next call of method through counter wait until an
// append started; the turns before it, which waited for their own claims,
// are forgotten.
func (w *claimWatch) hold(t testing.TB, counter *firestoretest.Counter, method string) {
	select {
	case <-w.progressed:
	default:
	}
	counter.SetHook(func(m string, _ any) error {
		switch {
		case strings.HasSuffix(m, "/Commit"):
			w.step()
		case strings.HasSuffix(m, method) && w.held.CompareAndSwap(false, true):
			select {
			case <-w.progressed:
			case <-t.Context().Done():
			}
		}
		return nil
	})
}

// errorLog is a logger for Options.Logger that keeps the messages it got
// at ERROR.
type errorLog struct {
	mu     sync.Mutex
	errors []string
}

func (l *errorLog) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{Level: slog.LevelError}))
}

func (l *errorLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.errors = append(l.errors, string(p))
	return len(p), nil
}

// got is what was logged at ERROR so far.
func (l *errorLog) got() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.errors)
}
