package toolcallback_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/adk/v2/platform"

	"github.com/baton-run/baton/a2aremote"
	"github.com/baton-run/baton/console"
	"github.com/baton-run/baton/internal/a2apeer"
	"github.com/baton-run/baton/internal/localtasks"
	"github.com/baton-run/baton/internal/polltest"
	"github.com/baton-run/baton/toolcallback"
	"github.com/baton-run/baton/workqueue"
)

// remoteFixture is a one-agent team (the agent "concierge") whose tool
// ask_events is the remote peer, with the queue served in process
// delivering to a worker door, and a push door serving Team.Notify.
type remoteFixture struct {
	*bgFixture
	peer   *a2apeer.Peer
	pushes atomic.Int32 // notifications the push door took
	push   *httptest.Server
	// answered receives once the push door has taken a notification that
	// answered the call, and the agent it resumed has ended.
	answered chan struct{}

	pushMu    sync.Mutex
	pushTeam  *toolcallback.Team // the instance the push door serves
	pushClock func() time.Time   // its clock; nil: the machine's
}

// setPush points the push door at team, whose clock is clock (nil: the
// machine's).
func (f *remoteFixture) setPush(team *toolcallback.Team, clock func() time.Time) {
	f.pushMu.Lock()
	defer f.pushMu.Unlock()
	f.pushTeam, f.pushClock = team, clock
}

func newRemoteFixture(t *testing.T, mode a2apeer.Mode, opts *toolcallback.Options, script ...reply) *remoteFixture {
	t.Helper()
	f := &remoteFixture{peer: a2apeer.Start(t, mode), answered: make(chan struct{}, 1)}
	f.push = httptest.NewServer(http.HandlerFunc(f.servePush))
	t.Cleanup(f.push.Close)
	if opts == nil {
		opts = &toolcallback.Options{}
	}
	opts.TokenKey = []byte("test-key")
	if opts.RemotePushURL == "" && mode != a2apeer.Silent {
		opts.RemotePushURL = f.push.URL + "/remote-push"
	}
	f.bgFixture = newWorkFixture(t, opts, nil, remoteTool(t, f.peer, nil), script...)
	f.setPush(f.team, nil)
	return f
}

// remoteTool is the remote tool ask_events, delegating to p, sending
// header with each request.
func remoteTool(t testing.TB, p *a2apeer.Peer, header http.Header) *toolcallback.RemoteTool {
	t.Helper()
	rt, err := toolcallback.Remote(toolcallback.RemoteConfig{Name: "ask_events", Description: "ask the events agent",
		Agent: a2aremote.Config{CardURL: p.URL(), AllowPrivate: true, Header: header}, Timeout: time.Hour, PollEvery: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return rt
}

// servePush is the push callback as functions serves it.
func (f *remoteFixture) servePush(w http.ResponseWriter, r *http.Request) {
	f.pushMu.Lock()
	team, clock := f.pushTeam, f.pushClock
	f.pushMu.Unlock()
	ctx := r.Context()
	if clock != nil {
		ctx = platform.WithTimeProvider(ctx, clock)
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	out, err := team.Notify(ctx, r.Header.Get("A2A-Notification-Token"), body)
	f.pushes.Add(1)
	f.t.Logf("push: %s -> %+v, %v", body, out, err)
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
	f := newRemoteFixture(t, a2apeer.Works, nil, eventsCall, echoReply)
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
	f.peer.Release()
	got := f.waitResponse("chat", "c1")
	if !strings.Contains(toJSON(got), "jazz at the Blue Room") || !strings.Contains(toJSON(got), "Blue Room\"}") {
		t.Errorf("response = %s, want the remote's text and data", toJSON(got))
	}
	polltest.Until(t, "the agent's reply stored", func() bool {
		return strings.Contains(finalText(f.history("chat")), "jazz at the Blue Room")
	})
	ids, _ := f.peer.Took()
	if want := f.messageID("chat", "c1", ""); len(ids) != 1 || ids[0] != want {
		t.Errorf("messages the remote took = %v, want one, %s, its id derived from the call", ids, want)
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
	f := newRemoteFixture(t, a2apeer.Asks, nil, eventsCall, echoReply)
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
	ids, texts := f.peer.Took()
	if len(ids) != 2 || texts[1] != "Soho" || ids[0] != f.messageID("chat", "c1", "") || ids[1] != f.messageID("chat", "c1", q.ID) {
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
	f := newRemoteFixture(t, a2apeer.Silent, nil, eventsCall, echoReply)
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
	f.peer.Release()
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
	f := newRemoteFixture(t, a2apeer.Works, &toolcallback.Options{RemotePushURL: "http://127.0.0.1:1/unused"}, eventsCall, echoReply)
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
	f := newRemoteFixture(t, a2apeer.Works, nil, eventsCall, echoReply)
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
		return f.peer.Cancels() > 0
	})
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	name := f.queue.TaskName(workqueue.Task{App: "app", User: "user-1", Session: activeSession(t, f.sessions, "chat"), Call: "c1", Step: "cancel"})
	if _, err := f.tasks.Wait(ctx, localtasks.Is(name, localtasks.Completed)); err != nil {
		t.Fatalf("waiting for the cancel's task: %v", err)
	}
	cancels := f.peer.Cancels()
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
	f := newRemoteFixture(t, a2apeer.Works, nil, eventsCall, echoReply)
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
	f.peer.Release()
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
	f := newRemoteFixture(t, a2apeer.Works, nil, eventsCall, echoReply)
	f.refuseFirstEnqueue()
	if _, err := f.turnEvents("chat", "ask the events agent what is on tonight"); err != nil {
		t.Fatal(err)
	}
	if ids, _ := f.peer.Took(); len(ids) != 0 || f.tasks.Stats().Creates != 0 {
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
	f.peer.Release()
	f.waitResponse("chat", "c1")
	if ids, _ := f.peer.Took(); len(ids) != 1 {
		t.Errorf("messages the remote took = %v, want one", ids)
	}
	if n := len(f.responses("chat", "c1")); n != 1 {
		t.Errorf("%d responses to c1, want one", n)
	}
}

// messageID is the id of the message call of user-1's chat sends to the
// remote: its own (question ""), or its answer to question.
func (f *remoteFixture) messageID(chat, call, question string) string {
	f.t.Helper()
	c, err := f.sessions.GetChat(f.t.Context(), "app", "user-1", chat)
	if err != nil {
		f.t.Fatal(err)
	}
	return toolcallback.RemoteMessageID(&toolcallback.Call{App: "app", UserID: "user-1", SessionID: c.SessionID, ID: call}, question)
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
	f := newRemoteFixture(t, a2apeer.Asks, nil, eventsCall, echoReply, eventsCall)
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

// TestRemoteStoppedWhileSending: a call stopped while its message is on
// its way to the remote (the closer knows no task to cancel) has the task
// the message started cancelled by the delivery that learns it, once; the
// model is told of the stop alone.
func TestRemoteStoppedWhileSending(t *testing.T) {
	t.Parallel()
	f := newRemoteFixture(t, a2apeer.Works, nil, eventsCall, echoReply)
	f.bgFixture.remote = remoteTool(t, f.peer, http.Header{a2apeer.InstanceHeader: {"held"}})
	f.team = f.newInstance()
	f.door.set(f.team, nil)
	f.setPush(f.team, nil)
	sending, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	f.peer.SetGate(func(method, _ string) error {
		if method == "SendMessage" {
			once.Do(func() { close(sending) })
			<-release
		}
		return nil
	})
	if _, err := f.turnEvents("chat", "ask the events agent what is on tonight"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-sending:
	case <-time.After(time.Minute):
		t.Fatal("the message was never sent")
	}
	report, err := f.team.Stop(t.Context(), "user-1", "chat", 0)
	if err != nil || len(report.Cancelled) != 1 {
		t.Fatalf("Stop() = %+v, %v; want c1 cancelled", report, err)
	}
	close(release)
	polltest.Until(t, "the remote task the message started cancelled", func() bool {
		return f.peer.Cancels() > 0
	})
	if got := f.responses("chat", "c1"); len(got) != 1 || !strings.Contains(toJSON(got), "stopped") {
		t.Errorf("responses to c1 = %s, want the stop's alone", toJSON(got))
	}
	if n := f.peer.Cancelled(); n != 1 {
		t.Errorf("the remote was asked to cancel %d times, want once", n)
	}
}
