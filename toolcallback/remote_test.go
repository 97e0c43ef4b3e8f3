package toolcallback_test

import (
	"context"
	"iter"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	cloudtasks "cloud.google.com/go/cloudtasks/apiv2"
	"cloud.google.com/go/cloudtasks/apiv2/cloudtaskspb"
	"cloud.google.com/go/firestore"
	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/a2aproject/a2a-go/v2/a2asrv/push"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/platform"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/baton-run/baton/a2aremote"
	"github.com/baton-run/baton/console"
	"github.com/baton-run/baton/internal/firestoretest"
	"github.com/baton-run/baton/internal/localtasks"
	"github.com/baton-run/baton/internal/polltest"
	"github.com/baton-run/baton/modeltest"
	"github.com/baton-run/baton/sessionstore"
	"github.com/baton-run/baton/toolcallback"
	"github.com/baton-run/baton/workqueue"
)

// peerMode is how the test's remote agent behaves.
type peerMode int

const (
	peerWorks  peerMode = iota // reports working, then completes once released; pushes
	peerAsks                   // asks a question, completes with the answer; pushes
	peerSilent                 // as peerWorks, but sends no push notifications
)

// remotePeer is a real a2a-go server agent (a2asrv over JSON-RPC, with
// its own push sender), the remote the tests delegate to.
type remotePeer struct {
	t       testing.TB
	mode    peerMode
	srv     *httptest.Server
	release chan struct{} // closed: a working task completes

	// result, when set, gives the parts of the result's artifact, given
	// the peer's URL (it serves GET /files/menu.txt).
	result func(url string) []*a2a.Part
	// question, when set, are parts of its question's message after its
	// text.
	question []*a2a.Part

	mu       sync.Mutex
	messages []string // ids of the messages it took
	texts    []string
	cancels  int
}

func newRemotePeer(t testing.TB, mode peerMode) *remotePeer {
	p := &remotePeer{t: t, mode: mode, release: make(chan struct{})}
	mux := http.NewServeMux()
	p.srv = httptest.NewServer(mux)
	t.Cleanup(p.srv.Close)
	card := &a2a.AgentCard{
		Name: "events", Description: "what is on in town", Version: "1",
		SupportedInterfaces: []*a2a.AgentInterface{a2a.NewAgentInterface(p.srv.URL, a2a.TransportProtocolJSONRPC)},
		DefaultInputModes:   []string{"text"}, DefaultOutputModes: []string{"text"},
		Capabilities: a2a.AgentCapabilities{PushNotifications: mode != peerSilent},
	}
	opts := []a2asrv.RequestHandlerOption{}
	if mode != peerSilent {
		opts = append(opts, a2asrv.WithPushNotifications(push.NewInMemoryStore(),
			push.NewHTTPPushSender(&push.HTTPSenderConfig{AllowPrivateNetworks: true})))
	}
	mux.Handle(a2asrv.WellKnownAgentCardPath, a2asrv.NewStaticAgentCardHandler(card))
	mux.Handle("/", a2asrv.NewJSONRPCHandler(a2asrv.NewHandler(p, opts...)))
	mux.HandleFunc("GET /files/menu.txt", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte(menuText))
	})
	return p
}

func (p *remotePeer) took() (ids, texts []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.messages...), append([]string(nil), p.texts...)
}

func (p *remotePeer) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		p.mu.Lock()
		p.messages = append(p.messages, ec.Message.ID)
		text := ""
		for _, part := range ec.Message.Parts {
			text += part.Text()
		}
		p.texts = append(p.texts, text)
		p.mu.Unlock()
		agentSays := func(s string) *a2a.Message { return a2a.NewMessage(a2a.MessageRoleAgent, a2a.NewTextPart(s)) }
		if ec.StoredTask == nil {
			if !yield(a2a.NewSubmittedTask(ec, ec.Message), nil) {
				return
			}
			if p.mode == peerAsks {
				asks := agentSays("Which part of town?")
				asks.Parts = append(asks.Parts, p.question...)
				yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateInputRequired, asks), nil)
				return
			}
		}
		if !yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateWorking, agentSays("looking at the listings")), nil) {
			return
		}
		if p.mode != peerAsks {
			select {
			case <-p.release:
			case <-ctx.Done():
				return
			}
		}
		answer := "jazz at the Blue Room"
		if p.mode == peerAsks {
			answer += " in " + text
		}
		parts := []*a2a.Part{a2a.NewTextPart(answer), a2a.NewDataPart(map[string]any{"venue": "Blue Room"})}
		if p.result != nil {
			parts = p.result(p.srv.URL)
		}
		if !yield(a2a.NewArtifactEvent(ec, parts...), nil) {
			return
		}
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCompleted, nil), nil)
	}
}

func (p *remotePeer) Cancel(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		p.mu.Lock()
		p.cancels++
		p.mu.Unlock()
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCanceled, nil), nil)
	}
}

// remoteFixture is a one-agent team (the agent "concierge") whose tool
// ask_events is the remote peer, with the queue served in process
// delivering to a worker door, and a push door serving Team.Notify.
type remoteFixture struct {
	*bgFixture
	peer   *remotePeer
	remote *toolcallback.RemoteTool
	pushes atomic.Int32 // notifications the push door took
	push   *httptest.Server
	// answered receives once the push door has taken a notification that
	// answered the call, and the agent it resumed has ended.
	answered chan struct{}
}

func newRemoteFixture(t *testing.T, mode peerMode, opts *toolcallback.Options, script ...reply) *remoteFixture {
	t.Helper()
	f := &remoteFixture{bgFixture: &bgFixture{t: t, model: &modeltest.Strict{T: t, Script: script}}, peer: newRemotePeer(t, mode),
		answered: make(chan struct{}, 1)}
	f.client, f.counter = firestoretest.NewCountingClient(t)
	f.sessions = sessionstore.New(f.client, nil)
	log := testLog(t)
	issuer, err := localtasks.NewIssuer()
	if err != nil {
		t.Fatal(err)
	}
	if f.tasks, err = localtasks.Start(t.Context(), &localtasks.Options{TimeScale: 0.05, Signer: issuer.Sign, Logger: log}); err != nil {
		t.Fatal(err)
	}
	f.door = &workDoor{log: log}
	srv := httptest.NewServer(f.door)
	t.Cleanup(srv.Close)
	f.doorURL = srv.URL + "/work"
	f.push = httptest.NewServer(http.HandlerFunc(f.servePush))
	t.Cleanup(f.push.Close)
	t.Cleanup(f.tasks.Stop)
	if _, err := f.tasks.Client().CreateQueue(t.Context(), &cloudtaskspb.CreateQueueRequest{Parent: bgLocation,
		Queue: &cloudtaskspb.Queue{Name: bgQueue, RetryConfig: bgQueueConfig}}); err != nil {
		t.Fatal(err)
	}
	// The team's client goes through queueFault (bgFixture.intercept),
	// which a test sets to make the queue fail as seen from the team.
	client, err := cloudtasks.NewClient(t.Context(), append(f.tasks.ClientOptions(),
		option.WithGRPCDialOption(grpc.WithUnaryInterceptor(f.intercept)))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	if f.queue, err = workqueue.New(client, workqueue.Config{Queue: bgQueue, URL: f.doorURL, Invoker: "worker@test.iam.gserviceaccount.com"}); err != nil {
		t.Fatal(err)
	}
	if opts == nil {
		opts = &toolcallback.Options{}
	}
	opts.Queue, opts.TokenKey, opts.Logger = f.queue, []byte("test-key"), log
	if opts.RemotePushURL == "" && mode != peerSilent {
		opts.RemotePushURL = f.push.URL + "/remote-push"
	}
	f.opts = opts
	if f.remote, err = toolcallback.Remote(toolcallback.RemoteConfig{Name: "ask_events", Description: "ask the events agent",
		Agent: a2aremote.Config{CardURL: f.peer.srv.URL, AllowPrivate: true}, Timeout: time.Hour, PollEvery: time.Second}); err != nil {
		t.Fatal(err)
	}
	f.team = f.remoteInstance(f.client)
	f.door.set(f.team, nil)
	return f
}

func (f *remoteFixture) remoteInstance(client *firestore.Client) *toolcallback.Team {
	f.t.Helper()
	a, err := llmagent.New(llmagent.Config{Name: "concierge", Model: f.model, Tools: []tool.Tool{f.remote}})
	if err != nil {
		f.t.Fatal(err)
	}
	team, err := toolcallback.NewTeam(sessionstore.New(client, nil), "app",
		[]toolcallback.Member{{Agent: a, Remote: []*toolcallback.RemoteTool{f.remote}}}, f.opts)
	if err != nil {
		f.t.Fatal(err)
	}
	return team
}

// servePush is the push callback as functions serves it.
func (f *remoteFixture) servePush(w http.ResponseWriter, r *http.Request) {
	body := make([]byte, 1<<16)
	n, _ := r.Body.Read(body)
	out, err := f.team.Notify(r.Context(), r.Header.Get("A2A-Notification-Token"), body[:n])
	f.pushes.Add(1)
	f.t.Logf("push: %s -> %+v, %v", body[:n], out, err)
	if err != nil {
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	if out.Invocation != nil {
		_ = out.Invocation.Wait()
	}
	if out.What == "answered" {
		select {
		case f.answered <- struct{}{}:
		default:
		}
	}
	w.WriteHeader(http.StatusOK)
}

// waitResponse waits for the answer to call id to be stored in chat.
func (f *remoteFixture) waitResponse(chat, id string) map[string]any {
	f.t.Helper()
	var got []map[string]any
	polltest.Until(f.t, "the remote's answer stored", func() bool {
		got = f.responses(chat, id)
		return len(got) > 0
	})
	return got[0]
}

var eventsCall = callReply(call("c1", "ask_events", map[string]any{"message": "what is on tonight?"}))

// TestRemoteAgentPushes: a remote agent's call pauses the turn (its
// record stored with the call); the queue sends the message once, with a
// message id derived from the call; the remote's working update shows as
// the call's progress, and its completion, pushed, resumes the agent
// once with the result's text and data.
func TestRemoteAgentPushes(t *testing.T) {
	t.Parallel()
	f := newRemoteFixture(t, peerWorks, nil, eventsCall, echoReply)
	events, err := f.turnEvents("chat", "ask the events agent what is on tonight")
	if err != nil {
		t.Fatal(err)
	}
	if !holdsCall(events, "c1") {
		t.Fatalf("the turn did not make the call: %v", events)
	}
	polltest.Until(t, "the remote's working state recorded as progress", func() bool {
		c := f.record("chat", "c1")
		return c != nil && c.Remote != nil && c.Remote.State == "working" && c.Work != nil && strings.Contains(string(c.Work.Progress), "listings") &&
			c.Remote.Sent == 1
	})
	if c := f.record("chat", "c1"); c.Status != toolcallback.StatusPending || c.Remote.TaskID == "" || c.Remote.Sent != 1 {
		t.Fatalf("record while the remote works = %+v %+v, want pending, its task sent once", c, c.Remote)
	}
	close(f.peer.release)
	got := f.waitResponse("chat", "c1")
	if !strings.Contains(toJSON(got), "jazz at the Blue Room") || !strings.Contains(toJSON(got), "Blue Room\"}") {
		t.Errorf("response = %s, want the remote's text and data", toJSON(got))
	}
	polltest.Until(t, "the agent's reply stored", func() bool {
		return strings.Contains(finalText(f.history("chat")), "jazz at the Blue Room")
	})
	ids, _ := f.peer.took()
	if len(ids) != 1 || !strings.Contains(ids[0], "c1") {
		t.Errorf("messages the remote took = %v, want one, its id derived from the call", ids)
	}
	if f.pushes.Load() == 0 {
		t.Error("no push notification reached the push door")
	}
	if n := len(f.responses("chat", "c1")); n != 1 {
		t.Errorf("%d responses to c1, want one", n)
	}
}

// answerQuestion answers the remote's question qid of chat from a tab
// other than the one that started the turn.
func (f *remoteFixture) answerQuestion(chat, qid, text string) (*toolcallback.ResumeOutcome, error) {
	return f.team.Resume(f.t.Context(), toolcallback.ResumeRequest{UserID: "user-1", ChatID: chat, CallID: qid, ClientID: "tab-2",
		Answer: toolcallback.Answer{Output: map[string]any{"responses": map[string]any{
			"answer": map[string]any{"action": "accept", "content": map[string]any{"answer": text}}}}}})
}

// openQuestion waits for the remote's question to be open in chat, as
// the pages list it (Pending), and returns it.
func (f *remoteFixture) openQuestion(chat string) *toolcallback.Call {
	f.t.Helper()
	var q *toolcallback.Call
	polltest.Until(f.t, "the remote's question open", func() bool {
		state, err := f.team.Pending(f.t.Context(), toolcallback.PendingRequest{UserID: "user-1", ChatID: chat})
		if err != nil {
			f.t.Fatal(err)
		}
		for _, c := range state.Calls {
			if c.InCall && c.Kind == toolcallback.KindInput && c.Status == toolcallback.StatusPending {
				q = c
			}
		}
		return q != nil
	})
	return q
}

// TestRemoteAgentAsks: a remote task in input-required becomes a
// question to the person through the ledger (an in-call question, as an
// MCP server's, listed by Pending for any tab), answerable from another
// tab; the answer goes back to the remote task as its next message, once,
// and the remote's completion then resumes the agent once.
func TestRemoteAgentAsks(t *testing.T) {
	t.Parallel()
	f := newRemoteFixture(t, peerAsks, nil, eventsCall, echoReply)
	if _, err := f.turnEvents("chat", "ask the events agent what is on tonight"); err != nil {
		t.Fatal(err)
	}
	q := f.openQuestion("chat")
	if q.OriginalID != "c1" || q.Input == nil || !strings.Contains(q.Input.Message, "Which part of town?") || !q.AnyDevice {
		t.Fatalf("question = %+v, want the remote's question about c1, for any device", q)
	}
	// A repeated notification of the same question asks nothing new.
	if _, err := f.team.Sweep(t.Context(), time.Now().Add(2*time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := f.answerQuestion("chat", q.ID, "Soho"); err != nil {
		t.Fatalf("answer the question: %v", err)
	}
	got := f.waitResponse("chat", "c1")
	if !strings.Contains(toJSON(got), "jazz at the Blue Room in Soho") {
		t.Errorf("response = %s, want the remote's answer using the person's", toJSON(got))
	}
	ids, texts := f.peer.took()
	if len(ids) != 2 || texts[1] != "Soho" || ids[1] == ids[0] || !strings.Contains(ids[1], q.ID) {
		t.Errorf("messages the remote took = %v %q, want the call's, then the answer with an id of its own", ids, texts)
	}
	if _, err := f.answerQuestion("chat", q.ID, "Soho again"); err == nil {
		t.Error("a second answer to the question was accepted")
	}
	if n := len(f.responses("chat", "c1")); n != 1 {
		t.Errorf("%d responses to c1, want one", n)
	}
}

// TestRemoteAgentPolled: a remote that sends no push notifications is
// read by the sweeper (tasks/get) at the tool's PollEvery: its working
// state shows as progress, and its completion resumes the agent once.
func TestRemoteAgentPolled(t *testing.T) {
	t.Parallel()
	f := newRemoteFixture(t, peerSilent, nil, eventsCall, echoReply)
	if _, err := f.turnEvents("chat", "ask the events agent what is on tonight"); err != nil {
		t.Fatal(err)
	}
	polltest.Until(t, "the message sent", func() bool {
		c := f.record("chat", "c1")
		return c != nil && c.Remote.TaskID != ""
	})
	var last *toolcallback.Call
	var report toolcallback.SweepReport
	defer func() {
		if t.Failed() && last != nil {
			t.Logf("last record: %+v %+v; last sweep %+v", last, last.Remote, report)
		}
	}()
	polltest.Until(t, "the sweeper reading the remote's working state", func() bool {
		var err error
		if report, err = f.team.Sweep(t.Context(), time.Now().Add(2*time.Second)); err != nil {
			t.Fatal(err)
		}
		last = f.record("chat", "c1")
		return last.Remote.State == "working"
	})
	close(f.peer.release)
	polltest.Until(t, "the sweeper reading the remote's result", func() bool {
		if _, err := f.team.Sweep(t.Context(), time.Now().Add(2*time.Second)); err != nil {
			t.Fatal(err)
		}
		return len(f.responses("chat", "c1")) > 0
	})
	if got := toJSON(f.responses("chat", "c1")); !strings.Contains(got, "jazz at the Blue Room") {
		t.Errorf("response = %s", got)
	}
	if f.pushes.Load() != 0 {
		t.Errorf("%d pushes from a remote that sends none", f.pushes.Load())
	}
}

// TestRemoteNotifyRefused: a notification with no token, a forged one, a
// call token (not a push token), another call's push token for this
// call's task, or one that comes after the call closed, is refused and
// changes nothing.
func TestRemoteNotifyRefused(t *testing.T) {
	t.Parallel()
	f := newRemoteFixture(t, peerWorks, &toolcallback.Options{RemotePushURL: "http://127.0.0.1:1/unused"}, eventsCall, echoReply)
	if _, err := f.turnEvents("chat", "ask the events agent what is on tonight"); err != nil {
		t.Fatal(err)
	}
	polltest.Until(t, "the message sent", func() bool {
		c := f.record("chat", "c1")
		return c != nil && c.Remote.TaskID != ""
	})
	before := f.record("chat", "c1")
	token, err := f.team.PushToken(before)
	if err != nil {
		t.Fatal(err)
	}
	body := []byte(`{"statusUpdate":{"taskId":"` + before.Remote.TaskID + `","contextId":"x","status":{"state":"TASK_STATE_COMPLETED"}}}`)
	other := []byte(`{"statusUpdate":{"taskId":"another-task","contextId":"x","status":{"state":"TASK_STATE_COMPLETED"}}}`)
	callToken, err := f.team.Token(before)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		token string
		body  []byte
	}{
		{"no token", "", body},
		{"forged", token[:len(token)-4] + "AAAA", body},
		{"a call token", callToken, body},
		{"another task", token, other},
	} {
		if _, err := f.team.Notify(t.Context(), tc.token, tc.body); err == nil {
			t.Errorf("%s: accepted", tc.name)
		}
	}
	after := f.record("chat", "c1")
	if after.Status != toolcallback.StatusPending || after.Remote.State != before.Remote.State || !after.Remote.StateAt.Equal(before.Remote.StateAt) {
		t.Errorf("after refused notifications: %+v %+v", after, after.Remote)
	}
	// Closed: a stop cancels the call, then a notification comes.
	if _, err := f.team.Stop(t.Context(), "user-1", "chat", 0); err != nil {
		t.Fatal(err)
	}
	if _, err := f.team.Notify(t.Context(), token, body); err == nil {
		t.Error("a notification after the call closed was accepted")
	}
	if got := f.responses("chat", "c1"); len(got) != 1 || !strings.Contains(toJSON(got), "stopped") {
		t.Errorf("responses to c1 = %s, want the stop's alone", toJSON(got))
	}
}

// TestRemoteAgentCancel: a stop while the remote works cancels the
// remote task (tasks/cancel) once, through the queue, and the model is
// told once; the remote's own "canceled" notification after that
// changes nothing.
func TestRemoteAgentCancel(t *testing.T) {
	t.Parallel()
	f := newRemoteFixture(t, peerWorks, nil, eventsCall, echoReply)
	if _, err := f.turnEvents("chat", "ask the events agent what is on tonight"); err != nil {
		t.Fatal(err)
	}
	polltest.Until(t, "the remote working", func() bool {
		c := f.record("chat", "c1")
		return c != nil && c.Remote.State == "working"
	})
	report, err := f.team.Stop(t.Context(), "user-1", "chat", 0)
	if err != nil || len(report.Cancelled) != 1 {
		t.Fatalf("Stop() = %+v, %v; want c1 cancelled", report, err)
	}
	polltest.Until(t, "the remote task cancelled", func() bool {
		f.peer.mu.Lock()
		defer f.peer.mu.Unlock()
		return f.peer.cancels > 0
	})
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	name := f.queue.TaskName(workqueue.Task{App: "app", User: "user-1", Session: activeSession(t, f.sessions, "chat"), Call: "c1", Step: "cancel"})
	if _, err := f.tasks.Wait(ctx, localtasks.Is(name, localtasks.Completed)); err != nil {
		t.Fatalf("waiting for the cancel's task: %v", err)
	}
	f.peer.mu.Lock()
	cancels := f.peer.cancels
	f.peer.mu.Unlock()
	if cancels != 1 {
		t.Errorf("the remote was asked to cancel %d times, want once", cancels)
	}
	if got := f.responses("chat", "c1"); len(got) != 1 || !strings.Contains(toJSON(got), "stopped") {
		t.Errorf("responses to c1 = %s, want the stop's alone", toJSON(got))
	}
}

// TestRemoteCallCost measures what a delegated call costs in Firestore
// operations, from the turn that makes it to the agent's reply to the
// remote's result, with a remote that pushes (submitted, working,
// completed): go test -run TestRemoteCallCost -v ./toolcallback. The
// figures (docs/cost.md) vary by a few with the order in which the
// notifications and the worker's own write land.
func TestRemoteCallCost(t *testing.T) {
	f := newRemoteFixture(t, peerWorks, nil, eventsCall, echoReply)
	f.counter.Reset()
	if _, err := f.turnEvents("chat", "ask the events agent what is on tonight"); err != nil {
		t.Fatal(err)
	}
	turn := f.counter.Snapshot()
	polltest.Until(t, "the remote working, its send recorded", func() bool {
		c := f.record("chat", "c1")
		return c != nil && c.Remote.State == "working" && c.Remote.Sent == 1
	})
	sent := f.counter.Snapshot()
	f.counter.Reset()
	close(f.peer.release)
	select {
	case <-f.answered:
	case <-time.After(time.Minute):
		t.Fatal("no notification answered the call")
	}
	done := f.counter.Snapshot()
	if !strings.Contains(finalText(f.history("chat")), "jazz at the Blue Room") {
		t.Fatal("the agent's reply is not stored")
	}
	t.Logf("the turn that makes the call: %+v", turn)
	t.Logf("from the turn to the remote working (send, notifications; the test's reads of the record included): %+v", sent)
	t.Logf("from the remote's completion to the agent's reply: %+v", done)
	t.Logf("push notifications taken: %d", f.pushes.Load())
}

// TestRemoteSendRepairedAndIdempotent: a call whose send task was not
// created after its commit (the queue failed, or the process died in
// between) is sent once the sweeper repairs it after the grace; the
// queue's delivery repeated afterwards sends nothing again; the answer
// resumes the agent once.
func TestRemoteSendRepairedAndIdempotent(t *testing.T) {
	t.Parallel()
	f := newRemoteFixture(t, peerWorks, nil, eventsCall, echoReply)
	var refused atomic.Bool
	f.setQueueFault(func(method string) error {
		if strings.HasSuffix(method, "/CreateTask") && refused.CompareAndSwap(false, true) {
			return status.Error(codes.Unavailable, "queue unreachable")
		}
		return nil
	})
	if _, err := f.turnEvents("chat", "ask the events agent what is on tonight"); err != nil {
		t.Fatal(err)
	}
	if ids, _ := f.peer.took(); len(ids) != 0 || f.tasks.Stats().Creates != 0 {
		t.Fatalf("sent %v with %d tasks, want nothing before the repair", ids, f.tasks.Stats().Creates)
	}
	later := time.Now().Add(time.Minute)
	report, err := f.team.Sweep(platform.WithTimeProvider(t.Context(), func() time.Time { return later }), later)
	if err != nil || report.Enqueued != 1 {
		t.Fatalf("Sweep() after the grace = %+v, %v; want c1's send enqueued", report, err)
	}
	polltest.Until(t, "the message sent", func() bool {
		c := f.record("chat", "c1")
		return c != nil && c.Remote.Sent == 1
	})
	// The queue delivers the send again (at least once): nothing is sent.
	if code := f.deliver("chat", "c1"); code != http.StatusOK {
		t.Errorf("a repeated delivery was answered %d", code)
	}
	close(f.peer.release)
	f.waitResponse("chat", "c1")
	if ids, _ := f.peer.took(); len(ids) != 1 {
		t.Errorf("messages the remote took = %v, want one", ids)
	}
	if n := len(f.responses("chat", "c1")); n != 1 {
		t.Errorf("%d responses to c1, want one", n)
	}
}

// listedWaiting is how many questions chat's listing says wait for the
// person, and the chat's state there.
func (f *remoteFixture) listedWaiting(chat string) (int, toolcallback.ChatState) {
	f.t.Helper()
	list, err := f.team.ListChats(f.t.Context(), toolcallback.ListRequest{UserID: "user-1", ClientID: "tab-2", Limit: 10})
	if err != nil {
		f.t.Fatal(err)
	}
	for _, c := range list.Chats {
		if c.ID == chat {
			return c.Waiting.Questions, c.State
		}
	}
	f.t.Fatalf("chat %q not listed", chat)
	return 0, ""
}

// consoleWaiting reports whether the operator's console lists chat among
// the chats waiting for a person, with a pending question.
func (f *remoteFixture) consoleWaiting(chat string) bool {
	f.t.Helper()
	page, err := console.New(f.team, f.sessions, nil).Chats(f.t.Context(), console.ChatQuery{State: console.StateWaiting, Limit: 10})
	if err != nil {
		f.t.Fatal(err)
	}
	for _, r := range page.Rows {
		if r.Chat == chat {
			return true
		}
	}
	return false
}

// TestRemoteQuestionListed: a remote task's question counts in the chat
// list as a question waiting for the person (on any of their devices),
// and the chat is "waiting", as in the console's list of chats waiting
// for a person; once answered it no longer counts. A question still open
// when the call is stopped stops counting too.
func TestRemoteQuestionListed(t *testing.T) {
	t.Parallel()
	f := newRemoteFixture(t, peerAsks, nil, eventsCall, echoReply, eventsCall)
	if _, err := f.turnEvents("chat", "ask the events agent what is on tonight"); err != nil {
		t.Fatal(err)
	}
	q := f.openQuestion("chat")
	if n, state := f.listedWaiting("chat"); n != 1 || state != toolcallback.ChatWaiting {
		t.Errorf("listed while the remote asks: %d questions, state %q; want 1, %q", n, state, toolcallback.ChatWaiting)
	}
	if !f.consoleWaiting("chat") {
		t.Error("the console does not list the chat as waiting for a person")
	}
	if _, err := f.answerQuestion("chat", q.ID, "Soho"); err != nil {
		t.Fatal(err)
	}
	f.waitResponse("chat", "c1")
	if n, state := f.listedWaiting("chat"); n != 0 || state == toolcallback.ChatWaiting {
		t.Errorf("listed once answered: %d questions, state %q; want none", n, state)
	}

	// Stopped while it asks: the question closes with the call.
	if _, err := f.turnEvents("chat-2", "ask the events agent again"); err != nil {
		t.Fatal(err)
	}
	f.openQuestion("chat-2")
	if n, _ := f.listedWaiting("chat-2"); n != 1 {
		t.Fatalf("listed while the remote asks: %d questions, want 1", n)
	}
	if _, err := f.team.Stop(t.Context(), "user-1", "chat-2", 0); err != nil {
		t.Fatal(err)
	}
	if n, state := f.listedWaiting("chat-2"); n != 0 || state == toolcallback.ChatWaiting {
		t.Errorf("listed once stopped: %d questions, state %q; want none", n, state)
	}
	if f.consoleWaiting("chat-2") {
		t.Error("the console lists the stopped chat as waiting for a person")
	}
}
