package toolcallback_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"cloud.google.com/go/cloudtasks/apiv2/cloudtaskspb"
	"cloud.google.com/go/firestore"
	"cloud.google.com/go/firestore/apiv1/firestorepb"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/platform"
	"google.golang.org/adk/v2/session"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/fieldmaskpb"

	"github.com/baton-run/baton/internal/firestoretest"
	"github.com/baton-run/baton/internal/polltest"
	"github.com/baton-run/baton/sessionstore"
	"github.com/baton-run/baton/toolcallback"
	"github.com/baton-run/baton/workqueue"
)

// bgCrashLater is how much later than the doomed instance the recovering
// one's clock runs: past the dead holder's lease, the attempt's hold, the
// enqueue's grace and the answer's grace, so that every repair is due.
const bgCrashLater = 2 * time.Minute

// errKilled is what every call of the doomed instance gets once it died:
// Canceled, which no client retries (Unavailable would be retried until a
// deadline, as if the process were alive).
var errKilled = status.Error(codes.Canceled, "process killed")

// doom is an instance that dies right after its survive-th write (-1:
// never): a Firestore commit, the creation of a task, or whatever else a
// test counts as one. Every later call it makes fails (errKilled).
type doom struct {
	survive int
	dead    atomic.Bool
	died    chan struct{} // closed once dead
	// onWrite, when set, sees each write let through (under mu).
	onWrite func(what string)

	mu     sync.Mutex
	writes []string // the writes let through, by kind, in order
}

func newDoom(survive int) *doom { return &doom{survive: survive, died: make(chan struct{})} }

// write lets the doomed instance's next write through, or kills it.
func (d *doom) write(what string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.dead.Load() {
		return errKilled
	}
	if d.survive >= 0 && len(d.writes) >= d.survive {
		d.dead.Store(true)
		close(d.died)
		return errKilled
	}
	d.writes = append(d.writes, what)
	if d.onWrite != nil {
		d.onWrite(what)
	}
	return nil
}

// wrote are the writes let through so far.
func (d *doom) wrote() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.writes...)
}

// fail is nil while the instance lives, errKilled once it died.
func (d *doom) fail() error {
	if d.dead.Load() {
		return errKilled
	}
	return nil
}

// hook dooms f's instance: each Firestore commit (named by kind) and each
// task it creates is a write; every other call fails once it died.
func (d *doom) hook(f *bgFixture, kind func(req any) string) {
	f.counter.SetHook(func(method string, req any) error {
		if strings.HasSuffix(method, "/Commit") {
			return d.write(kind(req))
		}
		return d.fail()
	})
	f.setQueueFault(func(method string) error {
		if strings.HasSuffix(method, "/CreateTask") {
			return d.write("create task")
		}
		return d.fail()
	})
}

// successor is the instance that comes after f's dead one, on a client of
// its own, its clock bgCrashLater ahead (ctx carries it): the queue now
// delivers to it.
func (f *bgFixture) successor() (next *toolcallback.Team, client *firestore.Client, ctx context.Context, later func() time.Time) {
	t := f.t
	client, _ = firestoretest.Reopen(t, f.client)
	opts := *f.opts
	queue, err := workqueue.New(f.tasks.Client(), workqueue.Config{Queue: bgQueue, URL: f.doorURL, Invoker: "worker@test.iam.gserviceaccount.com"})
	if err != nil {
		t.Fatal(err)
	}
	opts.Queue = queue
	later = func() time.Time { return time.Now().Add(bgCrashLater) }
	next = f.newInstanceWith(client, &opts)
	f.door.set(next, later)
	return next, client, platform.WithTimeProvider(t.Context(), later), later
}

// sendOnceFree sends user-1's text to "chat" on team once the chat is
// free: the resumed agent may still hold its lease a moment after its
// answer is stored, and a person told "busy, retry" retries.
func sendOnceFree(ctx context.Context, t testing.TB, team *toolcallback.Team, text string) {
	t.Helper()
	polltest.Until(t, "the next message to be taken", func() bool {
		_, _, err := runTurn(ctx, team, textTurn("chat", "tab-1", text))
		if errors.Is(err, sessionstore.ErrBusy) {
			return false
		}
		if err != nil {
			t.Fatalf("turn after the crash error = %v", err)
		}
		return true
	})
}

// bgCrash is one run of a background call's whole path (the turn that
// makes the call, the queue's delivery, the work, its answer and the
// resumed agent) on an instance that dies right after its survive-th
// write (a Firestore commit, or the creation of a task): every later call
// it makes fails, and its work stops. Another instance, later, takes over
// through what it finds: the queue's retries, the sweeper, the next
// message.
type bgCrash struct {
	*bgFixture
	*doom
	reported chan struct{} // closed once a progress report of the doomed instance was stored
	once     sync.Once

	reader *toolcallback.Team // what check reads the chat through: the instance alive at the end

	// running and most count the runs of the work at once.
	running, most atomic.Int32
}

// commitKind names what a commit of the background path writes.
func commitKind(req any) string {
	commit, _ := req.(*firestorepb.CommitRequest)
	for _, w := range commit.GetWrites() {
		paths := w.GetUpdateMask().GetFieldPaths()
		switch {
		case !strings.Contains(w.GetUpdate().GetName(), "/calls/"):
		case w.GetCurrentDocument().GetExists() == false && w.GetUpdateMask() == nil:
			return "event with its record"
		case containsPath(paths, "work.progress"):
			return "progress"
		case containsPath(paths, "work.attempt"):
			return "claim"
		case containsPath(paths, "answer"):
			return "answer"
		case containsPath(paths, "work.enqueued"):
			return "mark enqueued"
		case containsPath(paths, "resumed"):
			return "mark resumed"
		case containsPath(paths, "work.heldUntil"):
			return "hold renewed"
		}
	}
	return "session"
}

func containsPath(paths []string, p string) bool {
	for _, q := range paths {
		if strings.Trim(q, "`") == p {
			return true
		}
	}
	return false
}

// work is the doomed path's work: it reports progress and, on the doomed
// instance, returns once that report is stored (or fails once the
// instance died: its process is gone); after the crash it returns at once.
func (c *bgCrash) work(ctx context.Context, a playlistArgs) (playlistResult, error) {
	n := c.running.Add(1)
	defer c.running.Add(-1)
	for m := c.most.Load(); n > m && !c.most.CompareAndSwap(m, n); m = c.most.Load() {
	}
	doomed := !c.dead.Load()
	if err := toolcallback.Progress(ctx, "half way"); err != nil {
		return playlistResult{}, err
	}
	if doomed {
		select {
		case <-c.reported:
		case <-c.died:
			return playlistResult{}, errors.New("the process died")
		case <-ctx.Done():
			return playlistResult{}, ctx.Err()
		}
	}
	return playlistResult{Tracks: []string{"rain", "tide"}}, nil
}

// runBGCrash runs the background path on an instance that dies after
// survive writes (-1: never) and, when it dies, the recovery.
func runBGCrash(t *testing.T, survive int) *bgCrash {
	c := &bgCrash{doom: newDoom(survive), reported: make(chan struct{})}
	c.onWrite = func(what string) {
		if what == "progress" {
			c.once.Do(func() { close(c.reported) })
		}
	}
	c.bgFixture = newBGFixture(t, nil, nil, playlistCall)
	c.model.Repeat = echoReply
	c.retryForever()
	c.setWork(c.work)
	c.hook(c.bgFixture, commitKind)
	if _, err := c.turnEvents("chat", "make me a calm playlist"); err != nil && !c.dead.Load() {
		t.Fatalf("turn error = %v, with no crash", err)
	}
	// The path is finished once the resumed agent ended: its last writes
	// (the mark that the call was resumed, the lease's release) follow
	// the reply the chat shows.
	polltest.Until(t, "the doomed instance to die or to finish the path", func() bool {
		return c.dead.Load() || (c.door.resumed.Load() > 0 && c.settled(t.Context(), c.team))
	})
	c.reader = c.team
	if c.dead.Load() {
		c.recover()
	}
	return c
}

// retryForever makes the queue deliver each task until an instance takes
// it, every second or two.
func (f *bgFixture) retryForever() {
	if _, err := f.tasks.Client().UpdateQueue(f.t.Context(), &cloudtaskspb.UpdateQueueRequest{
		Queue: &cloudtaskspb.Queue{Name: bgQueue, RetryConfig: &cloudtaskspb.RetryConfig{MaxAttempts: -1,
			MinBackoff: durationpb.New(time.Second), MaxBackoff: durationpb.New(2 * time.Second)}},
		UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"retry_config"}},
	}); err != nil {
		f.t.Fatal(err)
	}
}

// settled reports whether, as team reads the chat, nothing waits any
// more: no call is pending, and the call's answer was delivered once and
// answered by the agent, or the call was never stored.
func (c *bgCrash) settled(ctx context.Context, team *toolcallback.Team) bool {
	return chatSettled(ctx, team)
}

// chatSettled reports whether, as team reads user-1's chat "chat",
// nothing waits any more: no call is pending, and c1's answer was
// delivered once and answered by the agent, or c1 was never stored.
func chatSettled(ctx context.Context, team *toolcallback.Team) bool {
	state, err := team.Pending(ctx, toolcallback.PendingRequest{UserID: "user-1", ChatID: "chat", History: -1})
	if errors.Is(err, sessionstore.ErrNotFound) {
		return true // the chat was never stored: the next message starts it
	}
	if err != nil || len(state.Calls) > 0 {
		return false
	}
	events := listEvents(state.History)
	if !holdsCall(events, "c1") {
		return true // the call was never stored: the next message repairs the turn
	}
	return len(answersTo(events, "c1")) == 1 && events[len(events)-1].Author != "user"
}

func listEvents(h session.Events) []*session.Event {
	var out []*session.Event
	for ev := range h.All() {
		out = append(out, ev)
	}
	return out
}

// answersTo are the responses from the user's side to call id.
func answersTo(events []*session.Event, id string) []map[string]any {
	var out []map[string]any
	for _, ev := range events {
		if ev.Author != "user" || ev.Content == nil {
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

// recover plays the instance that comes after the dead one, later: the
// queue now delivers to it and its sweeper runs until nothing waits; then
// the user sends another message.
func (c *bgCrash) recover() {
	t := c.t
	next, _, ctx, later := c.successor()
	c.reader = next
	polltest.Until(t, "the call to be settled and delivered after the crash", func() bool {
		if _, err := next.Sweep(ctx, later()); err != nil {
			t.Logf("sweep after the crash: %v", err)
		}
		return c.settled(ctx, next)
	})
	sendOnceFree(ctx, t, next, "are you there?")
	// The model may make the call only now (the doomed instance died
	// before asking it): its work runs here too.
	polltest.Until(t, "the chat to be settled after the next message", func() bool {
		if _, err := next.Sweep(ctx, later()); err != nil {
			t.Logf("sweep after the crash: %v", err)
		}
		return c.settled(ctx, next)
	})
}

// check: no call lost, none answered twice, the work never ran twice at
// once, the agent read the work's result, and every message has an
// answer.
func (c *bgCrash) check() {
	t := c.t
	state, err := c.reader.Pending(t.Context(), toolcallback.PendingRequest{UserID: "user-1", ChatID: "chat", History: -1})
	if err != nil {
		t.Fatal(err)
	}
	events := listEvents(state.History)
	if m := c.most.Load(); m > 1 {
		t.Errorf("the work ran %d times at once", m)
	}
	if holdsCall(events, "c1") {
		answers := answersTo(events, "c1")
		if len(answers) != 1 || !strings.Contains(toJSON(answers[0]), "rain") {
			t.Errorf("answers to c1 = %v, want the work's result, once", answers)
		}
		// The agent read the result: the resumed agent answered it, or,
		// when the crash cut the resumed agent short (Baton's note closes
		// that turn, as for any invocation), the next message's request
		// carries it in the history the model is given.
		if !modelSaw(c.model.LastRequest(), "c1", "rain") {
			t.Errorf("the model was never given the work's result:\n%s", dumpBGEvents(events))
		}
	}
	checkAnswered(t, events)
}

// checkAnswered checks that every user message of events is followed by
// an answer.
func checkAnswered(t testing.TB, events []*session.Event) {
	t.Helper()
	waiting := ""
	for _, ev := range events {
		text := ""
		if ev.Content != nil && len(ev.Content.Parts) > 0 {
			text = ev.Content.Parts[0].Text
		}
		switch {
		case ev.Author == "user" && text != "" && waiting != "":
			t.Errorf("user message %q follows %q with no answer between", text, waiting)
		case ev.Author == "user" && text != "":
			waiting = text
		case ev.Author != "user":
			waiting = ""
		}
	}
	if waiting != "" {
		t.Errorf("the chat ends on the unanswered message %q", waiting)
	}
}

// modelSaw reports whether req gives the model the response to call id
// holding want.
func modelSaw(req *model.LLMRequest, id, want string) bool {
	if req == nil {
		return false
	}
	for _, c := range req.Contents {
		for _, p := range c.Parts {
			if p.FunctionResponse != nil && p.FunctionResponse.ID == id && strings.Contains(toJSON(p.FunctionResponse.Response), want) {
				return true
			}
		}
	}
	return false
}

func dumpBGEvents(events []*session.Event) string {
	var b strings.Builder
	for _, ev := range events {
		if ev.Content == nil {
			continue
		}
		for _, p := range ev.Content.Parts {
			switch {
			case p.Text != "":
				fmt.Fprintf(&b, "%s: %s\n", ev.Author, p.Text)
			case p.FunctionCall != nil:
				fmt.Fprintf(&b, "%s: call %s %s\n", ev.Author, p.FunctionCall.ID, p.FunctionCall.Name)
			case p.FunctionResponse != nil:
				fmt.Fprintf(&b, "%s: response %s %s\n", ev.Author, p.FunctionResponse.ID, toJSON(p.FunctionResponse.Response))
			}
		}
	}
	return b.String()
}

// TestBackgroundCrashAtEveryWrite: a background call's path killed right
// after each of its writes (the message's commit, the event stored with
// its record, the task's creation, the mark that it is enqueued, the
// attempt's claim, each progress report, the answer, and the resumed
// agent's commits) leaves a state the next instance repairs: the queue
// delivers again (a claim whose holder died lapses), the sweeper creates
// a task the crash did not and delivers an answer not delivered, and the
// next message closes what a turn left. No call is lost, none is answered
// twice, the work never runs twice at once, and every message is
// answered.
func TestBackgroundCrashAtEveryWrite(t *testing.T) {
	t.Parallel()
	whole := runBGCrash(t, -1)
	whole.check()
	writes := whole.wrote()
	t.Logf("the path's %d writes: %s", len(writes), strings.Join(writes, ", "))
	for _, want := range []string{"event with its record", "create task", "mark enqueued", "claim", "progress", "answer", "mark resumed"} {
		if !containsPath(writes, want) {
			t.Errorf("the path made no %q write: %v", want, writes)
		}
	}
	for n := range writes {
		t.Run(fmt.Sprintf("dies-at-%d-%s", n, strings.ReplaceAll(writes[n], " ", "-")), func(t *testing.T) {
			t.Parallel()
			runBGCrash(t, n).check()
		})
	}
}
