package toolcallback

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	"google.golang.org/adk/v2/platform"

	"github.com/baton-run/baton/a2aremote"
	"github.com/baton-run/baton/ledger"
	"github.com/baton-run/baton/userinput"
	"github.com/baton-run/baton/workqueue"
)

// offRequest reports whether calls of kind k are work off the request,
// which the queue carries: a background tool's, a remote agent's.
func offRequest(k Kind) bool { return IsWork(k) }

// IsWork reports whether calls of kind k are the server's work off the
// request (a background tool's, a remote agent's): no client answers
// them, and readers show their progress.
func IsWork(k Kind) bool { return k == KindBackground || k == KindRemote }

// remoteWay is what a delivery does with a remote call as read.
type remoteWay int

const (
	remoteSettled remoteWay = iota // nothing to send: acknowledge
	remoteDeliver                  // answered, the agent does not have it: deliver it
	remoteCancel                   // closed after its task was sent: cancel the task, once
	remoteMissing                  // the tool is not declared here: that is the call's answer
	remoteSend                     // pending, nothing sent: send the call's message
	remoteReply                    // pending, its question answered: send the answer
)

// planRemote decides what a delivery of the task step of c, a remote
// call, does, with q, its open question as read (nil when it has none, or
// its answer was sent). Each step sends only its own: the call's message
// (step ""), the answer to q (its "reply-" step), the cancel. It reads
// and writes nothing.
func (e *engine) planRemote(c, q *Call, step string) remoteWay {
	r := c.Remote
	switch {
	case c.Status == StatusResolved && !c.Resumed:
		return remoteDeliver
	case step == cancelStep && c.Status != StatusPending && c.Status != StatusResolved && r.TaskID != "" && !r.CancelSent && !ledgerFinal(r.State):
		return remoteCancel
	case c.Status != StatusPending:
		return remoteSettled
	case e.remote[c.Tool] == nil:
		return remoteMissing
	case step == "" && r.Sent == 0 && r.TaskID == "":
		return remoteSend
	case q != nil && step == replyStep(q) && q.Status == StatusResolved && q.Answer != nil && r.Replied != q.ID:
		return remoteReply
	}
	return remoteSettled
}

// cancelStep is the step of the task that cancels a remote call's task.
const cancelStep = "cancel"

// replyStep is the step of the task that sends the answer to q, a remote
// task's question.
func replyStep(q *Call) string { return "reply-" + q.ID }

// ledgerFinal reports whether a remote task in the recorded state is
// over.
func ledgerFinal(state string) bool { return a2aremote.State(state).Terminal() }

// remoteWork carries out what planRemote decides for c, for a delivery
// of its task step; errWorkChanged when the record changed since it was
// read.
func (e *engine) remoteWork(ctx context.Context, c *Call, step string) (*WorkOutcome, error) {
	var q *Call
	if r := c.Remote; c.Status == StatusPending && r.Question != "" && r.Question != r.Replied {
		var err error
		if q, err = e.ledger.Get(ctx, c.UserID, c.SessionID, r.Question); err != nil && !errors.Is(err, ErrCallNotFound) {
			return nil, err
		}
	}
	rt := e.remote[c.Tool]
	switch e.planRemote(c, q, step) {
	case remoteDeliver:
		res, err := e.resumeStep(ctx, c, c.ClientID, 0)
		if err != nil {
			return nil, err
		}
		return &WorkOutcome{What: "delivered", Invocation: res.Invocation}, nil
	case remoteCancel:
		return e.sendCancel(ctx, c)
	case remoteMissing:
		return e.finishWork(ctx, c, Answer{Error: fmt.Sprintf("the tool %q is not declared as a remote agent of this deployment", c.Tool)}, "gave-up")
	case remoteSend:
		return e.sendFirst(ctx, c, rt)
	case remoteReply:
		return e.sendReply(ctx, c, q, rt)
	}
	return &WorkOutcome{What: "settled"}, nil
}

// RemoteMessageID is the id of a message remote call c sends: its own
// (question ""), or its answer to question. The same send, repeated after
// a crash or a retry, has the same id, and no other call's send has it: a
// call's id is the model's, unique only within its session (an offline
// model, or another chat, may say "c1" again), while a remote that
// deduplicates by message id sees every chat of the deployment under one
// credential. So the id is derived from the app, user, session and call.
func RemoteMessageID(c *Call, question string) string {
	h := sha256.New()
	for _, s := range []string{c.App, c.UserID, c.SessionID, c.ID, question} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return "baton-" + hex.EncodeToString(h.Sum(nil)[:16])
}

// sendFirst sends c's message to its remote, with the push config, and
// applies the task the remote answered with. A refusal is the call's
// answer; another failure is retried by the queue.
func (e *engine) sendFirst(ctx context.Context, c *Call, rt *RemoteTool) (*WorkOutcome, error) {
	text, _ := c.Args["message"].(string)
	m := a2aremote.Message{ID: RemoteMessageID(c, ""), Text: text}
	if token, _, err := e.ledger.PushToken(c); err == nil && e.opts.RemotePushURL != "" {
		m.PushURL, m.PushToken = e.opts.RemotePushURL, token
	}
	task, err := rt.agent.Send(ctx, m)
	if out, done := e.sendFailed(ctx, c, "send", err); done {
		return out, nil
	}
	sent, err := e.ledger.RemoteSent(ctx, c, task.ID, task.ContextID, 1, platform.Now(ctx))
	for i := 0; errors.Is(err, ledger.ErrChanged) && i < 3; i++ {
		// A notification came first (or the enqueue's mark): record the
		// send on the record as it now is.
		if c, err = e.ledger.Get(ctx, c.UserID, c.SessionID, c.ID); err != nil {
			return nil, err
		}
		if c.Status != StatusPending && c.Remote.TaskID == "" {
			return e.cancelUnrecorded(ctx, c, rt, task.ID)
		}
		if c.Status != StatusPending || c.Remote.Sent > 0 {
			return &WorkOutcome{What: "sent"}, nil
		}
		sent, err = e.ledger.RemoteSent(ctx, c, task.ID, task.ContextID, 1, platform.Now(ctx))
	}
	if err != nil {
		return nil, err
	}
	return e.applyTask(ctx, sent, task)
}

// sendReply sends the person's answer to q, the question c's task asked,
// as the task's next message, and applies the task the remote answered
// with.
func (e *engine) sendReply(ctx context.Context, c, q *Call, rt *RemoteTool) (*WorkOutcome, error) {
	m := a2aremote.Message{ID: RemoteMessageID(c, q.ID), TaskID: c.Remote.TaskID, ContextID: c.Remote.ContextID, Text: replyText(q)}
	task, err := rt.agent.Send(ctx, m)
	if err != nil && !errors.Is(err, a2aremote.ErrRefused) {
		// An earlier attempt's reply may have been taken though its answer
		// was lost (a2a-go answers "execution in progress" to a message
		// that comes while the task's last execution winds down): a task
		// that no longer asks needs no reply.
		if t, gerr := rt.agent.Get(ctx, c.Remote.TaskID); gerr == nil && !t.State.Asks() {
			task, err = t, nil
		}
	}
	if out, done := e.sendFailed(ctx, c, "reply", err); done {
		return out, nil
	}
	replied, err := e.recordReply(ctx, c, q)
	if err != nil || replied == nil {
		return &WorkOutcome{What: "sent"}, err
	}
	return e.applyTask(ctx, replied, task)
}

// recordReply records that the answer to q went to c's remote task, on
// the record as it now is: a notification applied meanwhile (the task
// working on the answer) changes the record under the send, which must
// not send the answer again. It returns nil when there is nothing left to
// record (the call closed, or the reply recorded by another delivery).
func (e *engine) recordReply(ctx context.Context, c, q *Call) (*Call, error) {
	for range 3 {
		replied, err := e.ledger.RemoteState(ctx, c, ledger.RemoteUpdate{State: c.Remote.State, At: c.Remote.StateAt,
			Replied: q.ID, Sent: c.Remote.Sent + 1}, platform.Now(ctx))
		if !errors.Is(err, ledger.ErrChanged) {
			return replied, err
		}
		if c, err = e.ledger.Get(ctx, c.UserID, c.SessionID, c.ID); err != nil {
			return nil, err
		}
		if c.Status != StatusPending || c.Remote.Replied == q.ID {
			return nil, nil
		}
	}
	return nil, fmt.Errorf("%w: call %q keeps changing", ledger.ErrChanged, c.ID)
}

// sendFailed is what a send's error err leads to, done when there is
// one: a refusal is the call's answer, any other failure is retried by
// the queue after its backoff (the call's expiry bounds the retries).
func (e *engine) sendFailed(ctx context.Context, c *Call, what string, err error) (*WorkOutcome, bool) {
	if err == nil {
		return nil, false
	}
	if errors.Is(err, a2aremote.ErrRefused) {
		out, ferr := e.finishWork(ctx, c, Answer{Error: "the remote agent refused the request: " + err.Error()}, "ran")
		if ferr != nil {
			e.opts.Logger.Warn("record a remote agent's refusal", "call", c.ID, "error", ferr)
			return &WorkOutcome{What: "retry", Retry: true}, true
		}
		return out, true
	}
	e.opts.Logger.Info("remote agent: "+what+" failed; the queue retries it", "call", c.ID, "error", err)
	return &WorkOutcome{What: "retry", Retry: true}, true
}

// sendCancel cancels c's remote task, once: the call was closed (a stop,
// a new message, a rewind, its expiry) after its message was sent.
func (e *engine) sendCancel(ctx context.Context, c *Call) (*WorkOutcome, error) {
	rt := e.remote[c.Tool]
	if rt == nil {
		return &WorkOutcome{What: "settled"}, nil
	}
	if err := rt.agent.Cancel(ctx, c.Remote.TaskID); err != nil && !errors.Is(err, a2aremote.ErrRefused) {
		e.opts.Logger.Info("remote agent: cancel failed; the queue retries it", "call", c.ID, "error", err)
		return &WorkOutcome{What: "retry", Retry: true}, nil
	}
	// The record changes under a cancel just sent (the closer's mark that
	// it queued it, the mark that the agent was told): record the cancel
	// on the record as it now is, never sending it again.
	for range 3 {
		_, err := e.ledger.CancelSent(ctx, c, platform.Now(ctx))
		if !errors.Is(err, ledger.ErrChanged) {
			if err != nil {
				return nil, err
			}
			return &WorkOutcome{What: "cancelled"}, nil
		}
		if c, err = e.ledger.Get(ctx, c.UserID, c.SessionID, c.ID); err != nil {
			return nil, err
		}
		if c.Remote == nil || c.Remote.CancelSent {
			return &WorkOutcome{What: "cancelled"}, nil
		}
	}
	return nil, fmt.Errorf("%w: call %q keeps changing", ledger.ErrChanged, c.ID)
}

// cancelUnrecorded cancels task, the remote task c's message started, c
// having been closed while the message was on its way: the closer knew no
// task to cancel, and only this delivery knows it. It cancels at once and
// records the cancel sent on the closed record. A process that dies
// between the send's answer and the cancel still leaves the task running
// (docs/remote-agents.md, "What is not done yet").
func (e *engine) cancelUnrecorded(ctx context.Context, c *Call, rt *RemoteTool, task string) (*WorkOutcome, error) {
	if err := rt.agent.Cancel(ctx, task); err != nil && !errors.Is(err, a2aremote.ErrRefused) {
		e.opts.Logger.Info("remote agent: cancel of a task started after its call closed failed; the queue retries it",
			"call", c.ID, "task", task, "error", err)
		return &WorkOutcome{What: "retry", Retry: true}, nil
	}
	if _, err := e.ledger.CancelSent(ctx, c, platform.Now(ctx)); err != nil && !errors.Is(err, ledger.ErrChanged) {
		return nil, err
	}
	return &WorkOutcome{What: "cancelled"}, nil
}

// cancelRemote queues the cancel of c's remote task, a call just closed
// (its task's step "cancel": a named task, created once), and marks it
// queued. A call whose message was never sent has nothing to cancel: its
// first task, if not delivered yet, finds it closed. The write that
// closed the call left its cancel "to be enqueued" (ledger's CancelDue):
// a closer that dies, or a queue that fails, before the mark leaves the
// cancel to the sweeper after the grace.
func (e *engine) cancelRemote(ctx context.Context, c *Call) {
	if e.opts.Queue == nil || c.Remote == nil || c.Remote.CancelSent {
		return
	}
	if c.Remote.TaskID == "" {
		if err := e.opts.Queue.Delete(ctx, taskOf(c)); err != nil {
			e.opts.Logger.Info("delete the task of a closed remote call", "call", c.ID, "error", err)
		}
		return
	}
	if err := e.enqueue(ctx, c, cancelTaskOf(c)); err != nil {
		e.opts.Logger.Warn("queue the cancel of a remote task; the sweeper will", "call", c.ID, "error", err)
	}
}

// isRemoteQuestion reports whether c is a question a remote task asked
// (remoteQuestion).
func isRemoteQuestion(c *Call) bool {
	return c != nil && c.InCall && c.Kind == KindInput && len(c.ID) > len(remoteQuestionPrefix) && c.ID[:len(remoteQuestionPrefix)] == remoteQuestionPrefix
}

// remoteAnswered queues the sending of the answer to q, a remote task's
// question just answered, to the task (its step "reply-" and the
// question's id). A crash before that is repaired by the sweeper's next
// read of the call.
func (e *engine) remoteAnswered(ctx context.Context, q *Call) {
	if e.opts.Queue == nil {
		return
	}
	t := workqueue.Task{App: q.App, User: q.UserID, Session: q.SessionID, Call: q.OriginalID, Step: replyStep(q)}
	if err := e.opts.Queue.Enqueue(ctx, t); err != nil {
		e.opts.Logger.Warn("queue the answer to a remote agent's question; the sweeper will", "call", q.OriginalID, "error", err)
	}
}

// replyText is the person's answer to q as the remote task reads it.
func replyText(q *Call) string {
	if q.Answer == nil {
		return ""
	}
	if q.Answer.Error != "" {
		return "The person could not answer: " + q.Answer.Error
	}
	responses, err := userinput.Responses(q.Answer.Output["responses"])
	if err != nil {
		return ""
	}
	r, ok := responses[remoteAnswerField]
	switch {
	case !ok || r.Action == "cancel":
		return "The person cancelled the question without answering."
	case r.Action == "decline":
		return "The person declined to answer."
	}
	if s, ok := r.Content[remoteAnswerField].(string); ok {
		return s
	}
	return fmt.Sprint(r.Content[remoteAnswerField])
}
