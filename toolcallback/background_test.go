package toolcallback_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	cloudtasks "cloud.google.com/go/cloudtasks/apiv2"
	"cloud.google.com/go/cloudtasks/apiv2/cloudtaskspb"
	"cloud.google.com/go/firestore"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/platform"
	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/api/option"
	"google.golang.org/genai"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/baton-run/baton/internal/firestoretest"
	"github.com/baton-run/baton/internal/localtasks"
	"github.com/baton-run/baton/internal/polltest"
	"github.com/baton-run/baton/modeltest"
	"github.com/baton-run/baton/sessionstore"
	"github.com/baton-run/baton/toolcallback"
	"github.com/baton-run/baton/workqueue"
)

const (
	bgLocation = "projects/test/locations/here"
	bgQueue    = bgLocation + "/queues/work"
)

type playlistArgs struct {
	Mood  string `json:"mood"`
	Songs int    `json:"songs"`
}

type playlistResult struct {
	Tracks []string `json:"tracks"`
}

// bgFixture is a one-agent team (the agent "dj") with a background tool,
// prepare_playlist, whose work each test scripts (work), on a fresh
// Firestore project, with a Cloud Tasks API served in process whose queue
// delivers the work to a worker door (the team's Work over HTTP, as the
// Work function serves it) on the instance the test points it at.
type bgFixture struct {
	t        testing.TB
	client   *firestore.Client
	counter  *firestoretest.Counter
	sessions *sessionstore.Service
	model    *modeltest.Strict
	opts     *toolcallback.Options
	tasks    *localtasks.Server
	queue    *workqueue.Queue
	tool     *toolcallback.BackgroundTool
	remote   *toolcallback.RemoteTool // set: the agent is "concierge", with this tool alone
	team     *toolcallback.Team
	door     *workDoor
	doorURL  string       // where the queue delivers
	runs     atomic.Int32 // runs of the tool's work

	mu         sync.Mutex
	work       func(ctx context.Context, a playlistArgs) (playlistResult, error)
	queueFault func(method string) error
}

// bgQueueConfig is the retry config of the fixture's queue.
var bgQueueConfig = &cloudtaskspb.RetryConfig{MaxAttempts: 10, MinBackoff: durationpb.New(time.Second), MaxBackoff: durationpb.New(4 * time.Second)}

func newBGFixture(t testing.TB, opts *toolcallback.Options, tasksOpts *localtasks.Options, script ...reply) *bgFixture {
	t.Helper()
	return newWorkFixture(t, opts, tasksOpts, nil, script...)
}

// newWorkFixture is newBGFixture whose team's agent is, with remote set,
// "concierge" with that remote agent as its one tool (remote_test.go)
// rather than "dj" with prepare_playlist.
func newWorkFixture(t testing.TB, opts *toolcallback.Options, tasksOpts *localtasks.Options, remote *toolcallback.RemoteTool, script ...reply) *bgFixture {
	t.Helper()
	f := &bgFixture{t: t, model: &modeltest.Strict{T: t, Script: script}, remote: remote}
	f.client, f.counter = firestoretest.NewCountingClient(t)
	f.sessions = sessionstore.New(f.client, nil)
	log := testLog(t)
	issuer, err := localtasks.NewIssuer()
	if err != nil {
		t.Fatal(err)
	}
	to := localtasks.Options{TimeScale: 0.05}
	if tasksOpts != nil {
		to = *tasksOpts
	}
	to.Signer = issuer.Sign
	to.Logger = log
	if f.tasks, err = localtasks.Start(t.Context(), &to); err != nil {
		t.Fatal(err)
	}
	f.door = &workDoor{log: log}
	srv := httptest.NewServer(f.door)
	t.Cleanup(srv.Close)
	f.doorURL = srv.URL + "/work"
	t.Cleanup(f.tasks.Stop) // before the door closes: Stop cancels what it waits for
	if _, err := f.tasks.Client().CreateQueue(t.Context(), &cloudtaskspb.CreateQueueRequest{Parent: bgLocation,
		Queue: &cloudtaskspb.Queue{Name: bgQueue, RetryConfig: bgQueueConfig}}); err != nil {
		t.Fatal(err)
	}
	// The team's client goes through queueFault, which a test sets to make
	// the queue fail as seen from the team.
	client, err := cloudtasks.NewClient(t.Context(), append(f.tasks.ClientOptions(),
		option.WithGRPCDialOption(grpc.WithUnaryInterceptor(f.intercept)))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	if f.queue, err = workqueue.New(client, workqueue.Config{Queue: bgQueue, URL: f.doorURL,
		Invoker: "worker@test.iam.gserviceaccount.com"}); err != nil {
		t.Fatal(err)
	}
	if opts == nil {
		opts = &toolcallback.Options{}
	}
	opts.Queue = f.queue
	if opts.Logger == nil {
		opts.Logger = log
	}
	if opts.ProgressInterval == 0 {
		opts.ProgressInterval = 50 * time.Millisecond
	}
	f.opts = opts
	f.tool, err = toolcallback.Background(toolcallback.BackgroundConfig{Name: "prepare_playlist", Description: "prepare a playlist",
		MaxAttempts: 3, Timeout: time.Hour}, func(ctx context.Context, a playlistArgs) (playlistResult, error) {
		f.runs.Add(1)
		f.mu.Lock()
		work := f.work
		f.mu.Unlock()
		if work == nil {
			return playlistResult{Tracks: []string{a.Mood + "-1", a.Mood + "-2"}}, nil
		}
		return work(ctx, a)
	})
	if err != nil {
		t.Fatal(err)
	}
	f.team = f.newInstance()
	f.door.set(f.team, nil)
	return f
}

// setQueueFault makes the team's calls of the queue go through fault
// first: a call it fails is not sent.
func (f *bgFixture) setQueueFault(fault func(method string) error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.queueFault = fault
}

// refuseFirstEnqueue has the queue refuse its first task creation, as a
// queue unreachable between a call's commit and its enqueue would.
func (f *bgFixture) refuseFirstEnqueue() {
	var refused atomic.Bool
	f.setQueueFault(func(method string) error {
		if strings.HasSuffix(method, "/CreateTask") && refused.CompareAndSwap(false, true) {
			return status.Error(codes.Unavailable, "queue unreachable")
		}
		return nil
	})
}

func (f *bgFixture) intercept(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	f.mu.Lock()
	fault := f.queueFault
	f.mu.Unlock()
	if fault != nil {
		if err := fault(method); err != nil {
			return err
		}
	}
	return invoker(ctx, method, req, reply, cc, opts...)
}

// setWork scripts the tool's work.
func (f *bgFixture) setWork(work func(ctx context.Context, a playlistArgs) (playlistResult, error)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.work = work
}

// newInstance builds another Team over the same database, model and
// queue: a second serverless instance.
func (f *bgFixture) newInstance() *toolcallback.Team { return f.newInstanceOn(f.client) }

// newInstanceOn is newInstance over client.
func (f *bgFixture) newInstanceOn(client *firestore.Client) *toolcallback.Team {
	return f.newInstanceWith(client, f.opts)
}

// newInstanceWith is newInstance over client, with opts.
func (f *bgFixture) newInstanceWith(client *firestore.Client, opts *toolcallback.Options) *toolcallback.Team {
	f.t.Helper()
	name, tools := "dj", []tool.Tool{f.tool}
	if f.remote != nil {
		name, tools = "concierge", []tool.Tool{f.remote}
	}
	a, err := llmagent.New(llmagent.Config{Name: name, Model: f.model, Tools: tools})
	if err != nil {
		f.t.Fatal(err)
	}
	member := toolcallback.Member{Agent: a, Background: []*toolcallback.BackgroundTool{f.tool}}
	if f.remote != nil {
		member = toolcallback.Member{Agent: a, Remote: []*toolcallback.RemoteTool{f.remote}}
	}
	team, err := toolcallback.NewTeam(sessionstore.New(client, nil), "app", []toolcallback.Member{member}, opts)
	if err != nil {
		f.t.Fatal(err)
	}
	return team
}

// taskName is the queue's task of call id in chat's session.
func (f *bgFixture) taskName(chat, id string) string {
	return f.queue.TaskName(workqueue.Task{App: "app", User: "user-1", Session: activeSession(f.t, f.sessions, chat), Call: id})
}

// waitTask waits for an event of kind k of the task of call id.
func (f *bgFixture) waitTask(chat, id string, k localtasks.Kind) localtasks.Event {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(f.t.Context(), 30*time.Second)
	defer cancel()
	e, err := f.tasks.Wait(ctx, localtasks.Is(f.taskName(chat, id), k))
	if err != nil {
		f.t.Fatalf("waiting for %s of the task of %s: %v", k, id, err)
	}
	return e
}

// waitDone waits for the delivery of the task of call id to be answered
// for good: completed, or dropped because the task was deleted (a call
// closed while its work ran).
func (f *bgFixture) waitDone(chat, id string) localtasks.Event {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(f.t.Context(), 30*time.Second)
	defer cancel()
	name := f.taskName(chat, id)
	e, err := f.tasks.Wait(ctx, func(e localtasks.Event) bool {
		return e.Task == name && (e.Kind == localtasks.Completed || e.Kind == localtasks.Dropped)
	})
	if err != nil {
		f.t.Fatalf("waiting for the delivery of the task of %s to end: %v", id, err)
	}
	return e
}

// record reads the ledger record of call id of chat.
func (f *bgFixture) record(chat, id string) *toolcallback.Call {
	f.t.Helper()
	state, err := f.team.Pending(f.t.Context(), toolcallback.PendingRequest{UserID: "user-1", ChatID: chat})
	if err != nil {
		f.t.Fatal(err)
	}
	for _, c := range state.Calls {
		if c.ID == id {
			return c
		}
	}
	return nil
}

// history is the stored events of chat's session.
func (f *bgFixture) history(chat string) []*session.Event {
	return storedEvents(f.t, f.sessions, activeSession(f.t, f.sessions, chat))
}

// responses are the answers to call id stored in chat: the function
// responses a resume, a closer or a repair gave the agent (the tool's
// own placeholder, a pausing tool's, is not one).
func (f *bgFixture) responses(chat, id string) []map[string]any {
	return f.responsesBy(chat, id, true)
}

// toolResponses are all the function responses to call id stored in
// chat, the tool's own included.
func (f *bgFixture) toolResponses(chat, id string) []map[string]any {
	return f.responsesBy(chat, id, false)
}

func (f *bgFixture) responsesBy(chat, id string, answers bool) []map[string]any {
	var out []map[string]any
	for _, ev := range f.history(chat) {
		if answers && ev.Author != "user" || ev.Content == nil {
			continue
		}
		for _, p := range ev.Content.Parts {
			if p.FunctionResponse != nil && p.FunctionResponse.ID == id {
				out = append(out, p.FunctionResponse.Response)
			}
		}
	}
	return out
}

// deliver delivers the task of call id of chat once more, as the queue
// would, and returns the door's status.
func (f *bgFixture) deliver(chat, id string) int {
	f.t.Helper()
	body := toJSON(workqueue.Task{App: "app", User: "user-1", Session: activeSession(f.t, f.sessions, chat), Call: id})
	rec := httptest.NewRecorder()
	f.door.ServeHTTP(rec, httptest.NewRequestWithContext(f.t.Context(), http.MethodPost, "/work", strings.NewReader(body)))
	return rec.Code
}

// workDoor serves the queue's deliveries as the Work function does: the
// task's call to the team's Work, the outcome as the status the queue
// reads; it waits for the resumed agent to end.
type workDoor struct {
	log   *slog.Logger
	mu    sync.Mutex
	team  *toolcallback.Team
	clock func() time.Time
	// outcomes receives what each delivery did.
	outcomes chan string
	// resumed counts the deliveries that resumed the agent, once the
	// resumed agent ended (its lease released).
	resumed atomic.Int32
}

// set points the door at team, whose clock is clock (nil: the machine's).
func (d *workDoor) set(team *toolcallback.Team, clock func() time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.team, d.clock = team, clock
}

func (d *workDoor) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	d.mu.Lock()
	team, outcomes, clock := d.team, d.outcomes, d.clock
	d.mu.Unlock()
	ctx := r.Context()
	if clock != nil {
		ctx = platform.WithTimeProvider(ctx, clock)
	}
	body, _ := io.ReadAll(r.Body)
	task, err := workqueue.Decode(body)
	if err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	out, err := team.Work(ctx, toolcallback.WorkRequest{UserID: task.User, SessionID: task.Session, CallID: task.Call, Step: task.Step})
	if err != nil {
		d.log.Info("delivery", "call", task.Call, "error", err)
		w.WriteHeader(http.StatusInternalServerError)
		return
	}
	if out.Invocation != nil {
		_ = out.Invocation.Wait()
		d.resumed.Add(1)
	}
	if outcomes != nil {
		outcomes <- out.What
	}
	d.log.Info("delivery", "call", task.Call, "what", out.What, "retry", out.Retry)
	switch {
	case out.Retry && out.RetryAfter > 0:
		w.Header().Set("Retry-After", strconv.Itoa(int(out.RetryAfter.Seconds())+1))
		w.WriteHeader(http.StatusTooManyRequests)
		return
	case out.Retry:
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	w.WriteHeader(http.StatusOK)
}

// playlistCall is the model's call of prepare_playlist, id c1.
var playlistCall = callReply(call("c1", "prepare_playlist", map[string]any{"mood": "calm", "songs": 2}))

// TestBackgroundCall: a background tool's call pauses the turn, which
// ends at once with the call stored and its task queued; the queue
// delivers the work to the worker, which runs the tool once and resumes
// the agent with its result, which the model reads.
func TestBackgroundCall(t *testing.T) {
	t.Parallel()
	f := newBGFixture(t, nil, nil, playlistCall, echoReply)
	release := make(chan struct{})
	f.setWork(func(ctx context.Context, a playlistArgs) (playlistResult, error) {
		select {
		case <-release:
		case <-ctx.Done():
			return playlistResult{}, ctx.Err()
		}
		return playlistResult{Tracks: []string{"rain", "tide"}}, nil
	})
	events, err := f.turnEvents("chat", "make me a calm playlist")
	if err != nil {
		t.Fatal(err)
	}
	if !holdsCall(events, "c1") {
		t.Fatalf("the turn's events hold no call c1: %v", events)
	}
	// The turn ended with the work still to do: the call is pending.
	if c := f.record("chat", "c1"); c == nil || c.Kind != toolcallback.KindBackground || c.Status != toolcallback.StatusPending {
		t.Fatalf("record of c1 = %+v, want a pending background call", c)
	}
	close(release)
	f.waitTask("chat", "c1", localtasks.Completed)
	got := f.responses("chat", "c1")
	if len(got) != 1 || !strings.Contains(toJSON(got[0]), `"rain"`) {
		t.Fatalf("responses to c1 = %v, want the playlist once", got)
	}
	if text := finalText(f.history("chat")); !strings.Contains(text, "prepare_playlist=") || !strings.Contains(text, "rain") {
		t.Errorf("the model's answer %q does not read the tool's result", text)
	}
	if n := f.runs.Load(); n != 1 {
		t.Errorf("the work ran %d times, want once", n)
	}
}

// turnEvents runs user-1's message in chat from tab-1 and returns its
// events.
func (f *bgFixture) turnEvents(chat, text string) ([]*session.Event, error) {
	f.t.Helper()
	events, _, err := runTurn(f.t.Context(), f.team, textTurn(chat, "tab-1", text))
	return events, err
}

func holdsCall(events []*session.Event, id string) bool {
	for _, ev := range events {
		if ev.Content == nil {
			continue
		}
		for _, p := range ev.Content.Parts {
			if p.FunctionCall != nil && p.FunctionCall.ID == id {
				return true
			}
		}
	}
	return false
}

// errBusy is a retryable failure of the scripted work.
var errBusy = errors.New("the catalogue is busy")

var _ = genai.RoleUser
var _ = polltest.Until

func toJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// testLog is a logger whose lines go to t's log while t runs, and nowhere
// after: the worker's goroutines may outlive a test by a little.
func testLog(t testing.TB) *slog.Logger {
	w := &testLogWriter{t: t}
	t.Cleanup(func() {
		w.mu.Lock()
		w.done = true
		w.mu.Unlock()
	})
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type testLogWriter struct {
	t    testing.TB
	mu   sync.Mutex
	done bool
}

func (w *testLogWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		w.t.Log(strings.TrimSpace(string(p)))
	}
	return len(p), nil
}
