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

	"cloud.google.com/go/firestore"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/tool"

	"github.com/baton-run/baton/internal/firestoretest"
	"github.com/baton-run/baton/internal/teamtest"
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

// The demo tools' arguments, as the shared test world declares them.
type (
	bgmArgs   = teamtest.BGMArgs
	tableArgs = teamtest.TableArgs
)

// fixture is a one-agent team (the agent "assistant") with the demo tools
// of the shared test world (a browser tool, an any-device browser tool, an
// external tool, an approval-gated tool, ...), on a fresh Firestore
// project. Tests talk to it through Team only, with chat ids; what they
// read back from storage they read through the chat.
type fixture struct {
	t        testing.TB
	world    *teamtest.World
	client   *firestore.Client
	counter  *firestoretest.Counter
	model    *modeltest.Strict
	tools    []tool.Tool
	opts     *toolcallback.Options
	team     *toolcallback.Team
	sessions *sessionstore.Service
	booked   *atomic.Int32 // runs of the approval-gated tool
	bookArgs *atomic.Value // its last arguments
}

func newFixture(t testing.TB, opts *toolcallback.Options, script ...reply) *fixture {
	t.Helper()
	w := teamtest.New(t, &teamtest.Options{Team: opts}, script...)
	return &fixture{t: t, world: w, client: w.Client, counter: w.Counter, model: w.Model, tools: w.Tools.All(),
		opts: w.TeamOptions(), team: w.Team, sessions: w.Sessions, booked: &w.Tools.Booked, bookArgs: &w.Tools.BookArgs}
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

// instanceWith is an instance of f's app over client whose agent answers
// with m.
func (f *fixture) instanceWith(client *firestore.Client, m model.LLM) *toolcallback.Team {
	f.t.Helper()
	return f.world.TeamOn(client, f.world.Member(llmagent.Config{Name: "assistant", Model: m, Tools: f.tools}))
}

// turn sends user-1's message to chat from client and returns the
// invocation's events.
func (f *fixture) turn(team *toolcallback.Team, chat, client, text string) ([]*session.Event, error) {
	f.t.Helper()
	events, _, err := runTurn(f.t.Context(), team, textTurn(chat, client, text))
	return events, err
}

// Shorthands for the shared world's collected turns.
var (
	runTurn   = teamtest.Turn
	runRewind = teamtest.Rewind
	collect   = teamtest.Collect
	finalText = teamtest.FinalText
)

// pending lists the calls of chat that client may answer.
func (f *fixture) pending(chat, client string) []*toolcallback.Call {
	f.t.Helper()
	return f.world.Pending("user-1", chat, client)
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
	return teamtest.Stored(t, sessions, "user-1", sid)
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
	return teamtest.Resume(ctx, team, toolcallback.ResumeRequest{UserID: "user-1", ChatID: chat, CallID: callID, ClientID: client, Answer: a})
}

func ptr[T any](v T) *T { return &v }

func asError[T error](err error, target *T) bool { return errors.As(err, target) }

func textTurn(chat, client, text string) toolcallback.TurnRequest {
	return teamtest.TextTurn("user-1", chat, client, text)
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
