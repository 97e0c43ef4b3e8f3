package toolcallback_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"cloud.google.com/go/firestore/apiv1/firestorepb"
	"google.golang.org/adk/v2/session"

	"github.com/baton-run/baton/internal/a2apeer"
	"github.com/baton-run/baton/internal/polltest"
	"github.com/baton-run/baton/ledger"
	"github.com/baton-run/baton/sessionstore"
	"github.com/baton-run/baton/toolcallback"
)

// remoteCrash is one run of a remote call's whole path on an instance
// that dies right after its survive-th write (-1: never): a Firestore
// commit, the creation of a task, or a message or a cancel sent to the
// remote. Every later call it makes fails: its Firestore and queue calls,
// its requests to the remote (refused by the peer's gate), and so the
// notifications and deliveries the doors hand it. Another instance, later,
// takes over through what it finds: the queue's retries, the sweeper's
// polls and repairs, the next message.
//
// The path is the remote's question (the remote asks, the person
// answers from another tab, the answer goes back, the remote completes)
// or, with stop, a stop while the remote works (the call closed, its
// cancel queued, sent and recorded).
type remoteCrash struct {
	*remoteFixture
	*doom
	t      *testing.T
	stop   bool
	reader *toolcallback.Team // the instance alive at the end
	// records is the session service records are read through: the
	// instance's alive at the end.
	records *sessionstore.Service

	namesMu sync.Mutex
	names   map[string]string // messageName's
}

// doomedWrote reports whether the doomed instance made a write named
// what: a message or a cancel it sent may be sent again once it died
// before recording it.
func (c *remoteCrash) doomedWrote(what string) bool {
	return c.survive >= 0 && containsPath(c.wrote(), what)
}

// remoteCommitKind names what a commit of the remote path writes.
func remoteCommitKind(req any) string {
	commit, _ := req.(*firestorepb.CommitRequest)
	for _, w := range commit.GetWrites() {
		name := w.GetUpdate().GetName()
		if !strings.Contains(name, "/calls/") {
			continue
		}
		question := strings.Contains(name, "/calls/rq-")
		paths := w.GetUpdateMask().GetFieldPaths()
		fields := w.GetUpdate().GetFields()
		remote := fields["remote"].GetMapValue().GetFields()
		state, replied := remote["state"].GetStringValue(), remote["replied"].GetStringValue()
		switch {
		case w.GetCurrentDocument().GetExists() == false && w.GetUpdateMask() == nil && question:
			return "question record"
		case w.GetCurrentDocument().GetExists() == false && w.GetUpdateMask() == nil:
			return "event with its record"
		case containsPath(paths, "answer") && question:
			return "question answered"
		case containsPath(paths, "answer"):
			return "call answered"
		case containsPath(paths, "remote.cancelSent"):
			return "cancel recorded"
		case containsPath(paths, "remote.state") && state == "input-required" && replied != "":
			return "reply recorded"
		case containsPath(paths, "remote.state") && state == "input-required":
			return "question on the call"
		case containsPath(paths, "remote.state"):
			return "state " + state
		case containsPath(paths, "remote.sent"):
			return "send recorded"
		case containsPath(paths, "status"):
			return "close"
		case containsPath(paths, "work.enqueued"):
			return "mark enqueued"
		case containsPath(paths, "resumed"):
			return "mark resumed"
		case containsPath(paths, "sweepAt"):
			return "poll recorded"
		}
	}
	return "session"
}

// runRemoteCrash runs the remote path on an instance that dies after
// survive writes (-1: never) and, when it dies, the recovery.
func runRemoteCrash(t *testing.T, stop bool, survive int) *remoteCrash {
	mode := a2apeer.Asks
	if stop {
		mode = a2apeer.Works
	}
	c := &remoteCrash{doom: newDoom(survive), t: t, stop: stop}
	c.remoteFixture = newRemoteFixture(t, mode, nil, eventsCall)
	c.records = c.sessions
	c.model.Repeat = echoReply
	c.retryForever()
	// The doomed instance's requests to the remote pass the peer's gate:
	// a message or a cancel sent is one of its writes.
	c.bgFixture.remote = remoteTool(t, c.peer, http.Header{a2apeer.InstanceHeader: {"doomed"}})
	c.team = c.newInstance()
	c.door.set(c.team, nil)
	c.setPush(c.team, nil)
	c.peer.SetGate(func(method, message string) error {
		switch method {
		case "SendMessage":
			return c.write("send " + c.messageName(message))
		case "CancelTask":
			return c.write("send cancel")
		}
		return c.fail()
	})
	c.hook(c.bgFixture, remoteCommitKind)
	if _, err := c.turnEvents("chat", "ask the events agent what is on tonight"); err != nil && !c.dead.Load() {
		t.Fatalf("turn error = %v, with no crash", err)
	}
	c.act(c.team, func() bool { return c.dead.Load() })
	polltest.Until(t, "the doomed instance to die or to finish the path", func() bool {
		return c.dead.Load() || c.finished(t.Context(), c.team)
	})
	if c.stop && !c.dead.Load() {
		// The model hears of the stop with the next message.
		if _, _, err := runTurn(t.Context(), c.team, textTurn("chat", "tab-1", "are you there?")); err != nil && !c.dead.Load() {
			t.Fatalf("turn after the stop error = %v", err)
		}
	}
	c.reader = c.team
	if c.dead.Load() {
		c.recover()
	}
	return c
}

// act is what the person does on team while the path runs, until gone
// reports the instance gone: with stop, they stop the chat once the remote
// works; else they answer the remote's question from another tab.
func (c *remoteCrash) act(team *toolcallback.Team, gone func() bool) {
	t := c.t
	if c.stop {
		polltest.Until(t, "the remote to work on the call", func() bool { return gone() || c.working(team) })
		if gone() {
			return
		}
		if _, err := team.Stop(t.Context(), "user-1", "chat", 0); err != nil && !gone() {
			t.Fatalf("Stop() error = %v", err)
		}
		return
	}
	var q *toolcallback.Call
	polltest.Until(t, "the remote's question to be open", func() bool {
		q = c.question(team)
		return gone() || q != nil
	})
	if q == nil || gone() {
		return
	}
	if _, err := answerAs(t.Context(), team, q.ID, "Soho"); err != nil && !gone() && !errors.Is(err, toolcallback.ErrAlreadyResolved) {
		t.Fatalf("answer the question: %v", err)
	}
}

// answerAs answers the question qid of user-1's chat from tab-2, on team.
func answerAs(ctx context.Context, team *toolcallback.Team, qid, text string) (*toolcallback.ResumeOutcome, error) {
	return team.Resume(ctx, toolcallback.ResumeRequest{UserID: "user-1", ChatID: "chat", CallID: qid, ClientID: "tab-2",
		Answer: toolcallback.Answer{Output: map[string]any{"responses": map[string]any{
			"answer": map[string]any{"action": "accept", "content": map[string]any{"answer": text}}}}}})
}

// pendingCalls are the open calls of the chat as team reads it; nil when
// it cannot.
func pendingCalls(ctx context.Context, team *toolcallback.Team) []*toolcallback.Call {
	state, err := team.Pending(ctx, toolcallback.PendingRequest{UserID: "user-1", ChatID: "chat"})
	if err != nil {
		return nil
	}
	return state.Calls
}

// working reports whether c1 is pending and its remote working, as team
// reads it.
func (c *remoteCrash) working(team *toolcallback.Team) bool {
	for _, call := range pendingCalls(c.t.Context(), team) {
		if call.ID == "c1" && call.Remote != nil && call.Remote.State == "working" {
			return true
		}
	}
	return false
}

// question is the remote's question open in the chat, as team reads it.
func (c *remoteCrash) question(team *toolcallback.Team) *toolcallback.Call {
	for _, call := range pendingCalls(c.t.Context(), team) {
		if call.InCall && call.Kind == toolcallback.KindInput && call.Status == toolcallback.StatusPending {
			return call
		}
	}
	return nil
}

// messageID is the id of the message the test names "baton-c1" (c1's
// own) or "baton-c1-rq-c1-1" (its answer to the question rq-c1-1), read
// through the instance alive at the end.
func (c *remoteCrash) messageID(name string) string {
	question, _ := strings.CutPrefix(name, "baton-c1")
	chat, err := c.records.GetChat(c.t.Context(), "app", "user-1", "chat")
	if err != nil {
		c.t.Fatal(err)
	}
	return toolcallback.RemoteMessageID(&toolcallback.Call{App: "app", UserID: "user-1", SessionID: chat.SessionID, ID: "c1"},
		strings.TrimPrefix(question, "-"))
}

// messageName names message id as the test does (messageID) by the order
// the doomed instance first sends each: the call's own message comes
// first, the answer to the question second (the gate cannot read the
// record: the instance it would read through may be the one killed).
func (c *remoteCrash) messageName(id string) string {
	c.namesMu.Lock()
	defer c.namesMu.Unlock()
	if c.names == nil {
		c.names = map[string]string{}
	}
	if name, ok := c.names[id]; ok {
		return name
	}
	name := []string{"baton-c1", "baton-c1-rq-c1-1", "another message"}[min(len(c.names), 2)]
	c.names[id] = name
	return name
}

// recordOf reads the ledger record of call id of the chat's session
// directly (a closed record is no longer listed); nil when there is none.
func (c *remoteCrash) recordOf(ctx context.Context, id string) *toolcallback.Call {
	chat, err := c.records.GetChat(ctx, "app", "user-1", "chat")
	if err != nil {
		return nil
	}
	rec, err := ledger.New(c.records, "app", nil).Get(ctx, "user-1", chat.SessionID, id)
	if err != nil {
		return nil
	}
	return rec
}

// finished reports whether the path is over as team reads the chat: the
// chat is settled (chatSettled) and, with stop, the cancel of a remote
// task the call started was sent and recorded.
func (c *remoteCrash) finished(ctx context.Context, team *toolcallback.Team) bool {
	if !chatSettled(ctx, team) {
		return false
	}
	if !c.stop {
		return true
	}
	rec := c.recordOf(ctx, "c1")
	return rec == nil || rec.Remote == nil || rec.Remote.TaskID == "" || rec.Remote.CancelSent
}

// recover plays the instance that comes after the dead one, later: the
// queue and the remote's notifications now reach it, its sweeper runs,
// and the person acts on it (answers the question still open, stops the
// chat if the remote still works) until nothing waits; then the user
// sends another message.
func (c *remoteCrash) recover() {
	t := c.t
	c.bgFixture.remote = remoteTool(t, c.peer, nil) // its requests are its own: no gate
	next, client, ctx, later := c.successor()
	c.setPush(next, later)
	c.reader, c.records = next, sessionstore.New(client, nil)
	settle := func(what string) {
		var swept toolcallback.SweepReport
		defer func() {
			if t.Failed() {
				c.explain(ctx, next, swept)
			}
		}()
		polltest.Until(t, what, func() bool {
			var err error
			if swept, err = next.Sweep(ctx, later()); err != nil {
				t.Logf("sweep after the crash: %v", err)
			}
			if c.stop && c.working(next) {
				if _, err := next.Stop(ctx, "user-1", "chat", 0); err != nil {
					t.Logf("Stop() after the crash: %v", err)
				}
			}
			if q := c.question(next); !c.stop && q != nil {
				if _, err := answerAs(ctx, next, q.ID, "Soho"); err != nil {
					t.Logf("answer after the crash: %v", err)
				}
			}
			return c.finished(ctx, next)
		})
	}
	settle("the path to be finished after the crash")
	sendOnceFree(ctx, t, next, "are you there?")
	// The model may make the call only now (the doomed instance died
	// before asking it): its path runs here too.
	settle("the chat to be settled after the next message")
	if c.stop {
		sendOnceFree(ctx, t, next, "and now?") // the model hears of a stop with the next message
	}
}

// explain logs what the recovery found when it gave up waiting: c1's
// record, the chat's open calls and its session's lease, at the test's
// time and at the recovery's (later), the last sweep's report, and the
// chat's events.
func (c *remoteCrash) explain(later context.Context, next *toolcallback.Team, swept toolcallback.SweepReport) {
	t := c.t
	ctx := context.WithoutCancel(t.Context())
	t.Logf("the last sweep after the crash: %+v", swept)
	if rec := c.recordOf(ctx, "c1"); rec != nil {
		t.Logf("c1: status %s, resumed %v, remote %+v, work %+v", rec.Status, rec.Resumed, rec.Remote, rec.Work)
	}
	for _, at := range []struct {
		name string
		ctx  context.Context
	}{{"now", ctx}, {"later", context.WithoutCancel(later)}} {
		state, err := next.Pending(at.ctx, toolcallback.PendingRequest{UserID: "user-1", ChatID: "chat", History: -1})
		if err != nil {
			t.Logf("pending (%s): %v", at.name, err)
			continue
		}
		for _, call := range state.Calls {
			t.Logf("pending (%s): %s %s %s", at.name, call.ID, call.Kind, call.Status)
		}
		if at.name == "now" {
			t.Logf("events:\n%s", dumpBGEvents(listEvents(state.History)))
		}
	}
	if chat, err := c.records.GetChat(ctx, "app", "user-1", "chat"); err == nil {
		if sess, err := c.records.Get(ctx, &session.GetRequest{AppName: "app", UserID: "user-1", SessionID: chat.SessionID}); err == nil {
			if ss, ok := sess.Session.(*sessionstore.Session); ok {
				t.Logf("session %s: lease holder now %q, later %q; may have open records %v", chat.SessionID,
					ss.LiveHolder(ctx), ss.LiveHolder(later), ss.MayHaveOpenDocs())
			}
		}
	}
}

// check: no call lost, none answered twice, the remote ran each message
// once (and was sent one twice only when the process died between sending
// it and recording it), the question was asked once and answered once,
// a stopped call's remote task was cancelled once, the model read the
// call's outcome, and every message has an answer.
func (c *remoteCrash) check() {
	t := c.t
	if c.dead.Load() && c.reader == c.team {
		// It died at one of its last writes (the resumed agent's), after
		// the chat looked settled: the next instance takes over.
		c.recover()
	}
	state, err := c.reader.Pending(t.Context(), toolcallback.PendingRequest{UserID: "user-1", ChatID: "chat", History: -1})
	if err != nil {
		t.Fatal(err)
	}
	events := listEvents(state.History)
	checkAnswered(t, events)
	if !holdsCall(events, "c1") {
		return
	}
	want := "Blue Room"
	if c.stop {
		want = "error"
	}
	if answers := answersTo(events, "c1"); len(answers) != 1 || !strings.Contains(toJSON(answers[0]), want) {
		t.Errorf("answers to c1 = %v, want one holding %q", answers, want)
	}
	if !modelSaw(c.model.LastRequest(), "c1", want) {
		t.Errorf("the model was never given c1's outcome:\n%s", dumpBGEvents(events))
	}
	names := []string{"baton-c1"}
	if !c.stop {
		names = append(names, "baton-c1-rq-c1-1")
	}
	var ids []string
	for _, name := range names {
		id := c.messageID(name)
		ids = append(ids, id)
		sends, runs := c.peer.Sends(id)
		if runs != 1 || sends < 1 || sends > 2 || sends == 2 && !c.doomedWrote("send "+name) {
			t.Errorf("message %s: taken %d times, run %d times; want run once, sent again only by the instance after the one that sent it died (its writes: %v)",
				name, sends, runs, c.wrote())
		}
	}
	if got, _ := c.peer.Took(); len(got) != len(ids) {
		t.Errorf("the remote ran the messages %v, want %v", got, ids)
	}
	if c.stop {
		cancels, requests := c.peer.Cancels(), c.peer.Cancelled()
		if cancels != 1 || requests < 1 || requests > 2 || requests == 2 && !c.doomedWrote("send cancel") {
			t.Errorf("the remote took %d requests to cancel, cancelled %d times; want once, sent again only by the instance after the one that sent it died (its writes: %v)",
				requests, cancels, c.wrote())
		}
		if rec := c.recordOf(t.Context(), "c1"); rec == nil || !rec.Remote.CancelSent {
			t.Errorf("c1's cancel is not recorded: %+v", rec)
		}
		return
	}
	if q := c.recordOf(t.Context(), "rq-c1-1"); q == nil || q.Status != toolcallback.StatusResolved {
		t.Errorf("the remote's question = %+v, want it answered", q)
	}
	if q := c.recordOf(t.Context(), "rq-c1-2"); q != nil {
		t.Errorf("the remote's question was asked again: %+v", q)
	}
}

// TestRemoteCrashAtEveryWrite: a remote call's path killed right after
// each of its writes leaves a state the next instance repairs. The path
// with a question: the event stored with its record, the send's task
// created and marked, the message sent and recorded, the remote's states
// (the question's record, the question on the call), the person's answer,
// the reply's task, the reply sent and recorded, the call's answer and
// the resumed agent's commits. The path with a stop: the same up to the
// remote working, then the call closed, its cancel's task created and
// marked, the cancel sent and recorded. The remote runs each message once
// (a message sent again after a death between its send and its record
// carries the same id), the question is asked once and answered once, the
// cancel is taken once, the caller hears the outcome once, and every
// message is answered.
func TestRemoteCrashAtEveryWrite(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		stop bool
		want []string
	}{
		{"question", false, []string{"event with its record", "create task", "mark enqueued", "send baton-c1", "send recorded",
			"question record", "question on the call", "question answered", "send baton-c1-rq-c1-1", "reply recorded", "call answered", "mark resumed"}},
		{"stop", true, []string{"event with its record", "create task", "mark enqueued", "send baton-c1", "send recorded",
			"state working", "close", "send cancel", "cancel recorded", "mark resumed"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			whole := runRemoteCrash(t, tc.stop, -1)
			whole.check()
			writes := whole.wrote()
			t.Logf("the path's %d writes: %s", len(writes), strings.Join(writes, ", "))
			for _, want := range tc.want {
				if !containsPath(writes, want) {
					t.Errorf("the path made no %q write: %v", want, writes)
				}
			}
			for n := range writes {
				t.Run(fmt.Sprintf("dies-at-%d-%s", n, strings.ReplaceAll(writes[n], " ", "-")), func(t *testing.T) {
					t.Parallel()
					runRemoteCrash(t, tc.stop, n).check()
				})
			}
		})
	}
}
