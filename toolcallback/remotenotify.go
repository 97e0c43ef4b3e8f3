package toolcallback

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"google.golang.org/adk/v2/platform"

	"github.com/baton-run/baton/a2aremote"
	"github.com/baton-run/baton/ledger"
	"github.com/baton-run/baton/userinput"
)

// ErrInvalidPushToken: a push notification's token is missing, forged,
// expired, or not the one given for the call it names.
var ErrInvalidPushToken = ledger.ErrInvalidToken

// ErrOtherTask: a push notification names a task other than its call's.
var ErrOtherTask = errors.New("notification for another task")

// remoteQuestionPrefix starts the id of a question a remote task asks;
// remoteAnswerField is the one field of its form.
const (
	remoteQuestionPrefix = "rq-"
	remoteAnswerField    = "answer"
)

// NotifyOutcome is what a push notification led to.
type NotifyOutcome struct {
	// What names it, for the log: "applied", "stale", "asked",
	// "answered", "closed".
	What string
	// Invocation is the agent resumed with the remote's result, nil when
	// none was; the caller waits for it to end.
	Invocation *Invocation
}

// Notify takes a push notification from a remote agent: token is the
// token the notification echoes (A2A-Notification-Token), body its
// content. The token names the call, and must be the one given for it
// (ErrInvalidPushToken otherwise); the task the body names must be the
// call's (ErrOtherTask); a call no longer pending is ErrExpired. Each
// refusal writes nothing. The body only wakes the call: its task is read
// from the remote (tasks/get) and applied as the remote now says it is,
// so that notifications that come twice or out of order, or whose body
// lies, change the record at most once per state of the task.
func (t *Team) Notify(ctx context.Context, token string, body []byte) (_ *NotifyOutcome, err error) {
	ctx, span := tracer.Start(ctx, "baton.remote.notify")
	defer func() { endSpan(span, err) }()
	if token == "" {
		return nil, fmt.Errorf("%w: no token", ErrInvalidPushToken)
	}
	c, err := t.ledger.ByPushToken(ctx, token)
	if err != nil {
		return nil, err
	}
	span.SetAttributes(attribute.String("baton.call.id", c.ID))
	n, err := a2aremote.DecodeNotification(body)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidAnswer, err)
	}
	if c.Remote.TaskID != "" && n.TaskID != c.Remote.TaskID {
		return nil, fmt.Errorf("%w: %w: call %q", ErrInvalidPushToken, ErrOtherTask, c.ID)
	}
	if c.Status != StatusPending {
		return nil, fmt.Errorf("%w: call %q is %s", ErrExpired, c.ID, c.Status)
	}
	e := t.engine(c.Agent)
	rt := e.remote[c.Tool]
	if rt == nil {
		return nil, fmt.Errorf("%w: %q is not a remote agent of this deployment", ErrCallNotFound, c.Tool)
	}
	task, err := rt.agent.Get(ctx, n.TaskID)
	if err != nil {
		return nil, err
	}
	out, err := e.applyTask(ctx, c, task)
	if err != nil {
		return nil, err
	}
	return &NotifyOutcome{What: out.What, Invocation: out.Invocation}, nil
}

// applyTask applies task, as its remote now describes it, to c, a remote
// call as read, first writer wins: a terminal state is the call's answer
// (which resumes the agent), a question opens a question to the person,
// any other state is the call's progress. A state not newer than the one
// recorded changes nothing, and a settled call takes nothing.
func (e *engine) applyTask(ctx context.Context, c *Call, task *a2aremote.Task) (*WorkOutcome, error) {
	for range 3 {
		out, err := e.applyOnce(ctx, c, task)
		if !errors.Is(err, ledger.ErrChanged) && !errors.Is(err, errWorkChanged) {
			return out, err
		}
		if c, err = e.ledger.Get(ctx, c.UserID, c.SessionID, c.ID); err != nil {
			return nil, err
		}
	}
	return nil, fmt.Errorf("%w: call %q keeps changing", ledger.ErrChanged, c.ID)
}

// remoteFresh reports whether task says something new of c's remote
// task: a state newer than the one recorded. The remote's timestamps
// order its states when both have one (its clock, never compared with
// Baton's); without, a different state is new. A terminal state is
// final, and always newer than any other; "submitted", the first, never
// is; a state without a time is never newer than one with.
func remoteFresh(c *Call, task *a2aremote.Task) bool {
	r := c.Remote
	switch {
	case ledgerFinal(r.State):
		return false
	case task.State.Terminal() || r.State == "":
		return true
	case task.State == a2aremote.Submitted:
		return false
	case !task.At.IsZero() && !r.StateAt.IsZero():
		return task.At.After(r.StateAt) || task.At.Equal(r.StateAt) && string(task.State) != r.State
	case task.At.IsZero() && !r.StateAt.IsZero():
		return false
	}
	return string(task.State) != r.State
}

func (e *engine) applyOnce(ctx context.Context, c *Call, task *a2aremote.Task) (*WorkOutcome, error) {
	now := platform.Now(ctx)
	if c.Status != StatusPending {
		return &WorkOutcome{What: "closed"}, nil
	}
	if !remoteFresh(c, task) {
		return &WorkOutcome{What: "stale"}, nil
	}
	u := ledger.RemoteUpdate{TaskID: task.ID, ContextID: task.ContextID, State: string(task.State), At: task.At}
	switch {
	case task.State.Terminal():
		e.closeRemoteQuestion(ctx, c)
		return e.finishWork(ctx, c, e.remoteResult(ctx, c, e.remote[c.Tool], task), "answered")
	case task.State.Asks():
		// Named by the message it follows: the call's (a notification may
		// come before the send is recorded, Sent 0) or an answer's.
		qid := remoteQuestionPrefix + c.ID + "-" + fmt.Sprint(max(c.Remote.Sent, 1))
		if err := e.askRemote(ctx, c, qid, task); err != nil {
			return nil, err
		}
		u.Question = qid
	default:
		if text := a2aremote.Text(task.Message); text != "" {
			u.Progress, _ = json.Marshal(text) // a string always encodes
		}
	}
	if _, err := e.ledger.RemoteState(ctx, c, u, now); err != nil {
		return nil, err
	}
	if u.Question != "" {
		return &WorkOutcome{What: "asked"}, nil
	}
	return &WorkOutcome{What: "applied"}, nil
}

// askRemote records the question task asks as qid, an in-call question
// of c's chat (the same form an MCP server's question shows, answerable
// from any of the user's devices, on any instance, after a reload): its
// answer is sent back to the task (remoteAnswered). It names c's chat,
// so that the chat's listing counts it as waiting for the person until
// it is answered or closed. Asking again (a notification repeated) finds
// it recorded and changes nothing.
func (e *engine) askRemote(ctx context.Context, c *Call, qid string, task *a2aremote.Task) error {
	text := a2aremote.Text(task.Message)
	if rt := e.remote[c.Tool]; rt != nil {
		if s := rt.questionSurfaces(task.Message); s != "" {
			text = strings.TrimSpace(text + "\n\n" + s)
		}
	}
	if text == "" {
		text = "The remote agent needs more information to go on."
	}
	req := userinput.Request{Server: c.Tool, Tool: c.Tool, Message: text, Round: c.Remote.Sent, Requests: map[string]any{
		remoteAnswerField: map[string]any{"method": "elicitation/create", "params": map[string]any{
			"mode": "form", "message": text,
			"requestedSchema": map[string]any{"type": "object", "required": []any{remoteAnswerField},
				"properties": map[string]any{remoteAnswerField: map[string]any{"type": "string", "title": "Your answer"}}},
		}},
	}}
	now := platform.Now(ctx)
	q := &Call{
		ID: qid, App: c.App, Agent: c.Agent, UserID: c.UserID, SessionID: c.SessionID, Chat: c.Chat, Invocation: c.Invocation,
		ClientID: c.ClientID, Tool: c.Tool, Kind: KindInput, Step: qid, OriginalID: c.ID, AnyDevice: true,
		Input: &req, InCall: true, Status: StatusPending, Created: now, Expires: c.Expires, Resumed: true,
	}
	err := e.ledger.Ask(ctx, q)
	if err == nil {
		return nil
	}
	if _, gerr := e.ledger.Get(ctx, c.UserID, c.SessionID, qid); gerr == nil {
		return nil // asked before: a notification repeated, or a crash after the question
	}
	return err
}

// closeRemoteQuestion cancels the question c's task left open, if any:
// the task ended without its answer, or c was closed (a stop, a new
// message, its expiry), and the chat's listing stops counting it. Best
// effort: the question expires with the call anyway, and the listing
// counts no expired question.
func (e *engine) closeRemoteQuestion(ctx context.Context, c *Call) {
	r := c.Remote
	if r.Question == "" || r.Question == r.Replied {
		return
	}
	q, err := e.ledger.Get(ctx, c.UserID, c.SessionID, r.Question)
	if err != nil || q.Status != StatusPending {
		return
	}
	if _, err := e.ledger.Cancel(ctx, q, platform.Now(ctx)); err != nil {
		e.opts.Logger.Info("close a remote agent's question", "call", c.ID, "error", err)
	}
}

// toPoll reports whether the sweeper reads c's remote task now: a pending
// remote call whose message was sent, before its expiry.
func toPoll(c *Call, now time.Time) bool {
	return c.Kind == KindRemote && c.Remote != nil && c.Status == StatusPending && c.Remote.TaskID != "" && now.Before(c.Expires)
}

// poll reads c's remote task and applies it, as a notification would;
// when that changes nothing, it moves the sweeper's next look to the next
// poll. An answered question whose answer was not queued (a crash after
// the answer) is queued again. It reports whether the agent was resumed.
func (e *engine) poll(ctx context.Context, c *Call, now time.Time) (*WorkOutcome, error) {
	rt := e.remote[c.Tool]
	if rt == nil {
		return nil, fmt.Errorf("remote agent %q is not declared here", c.Tool)
	}
	if r := c.Remote; r.Question != "" && r.Question != r.Replied {
		if q, err := e.ledger.Get(ctx, c.UserID, c.SessionID, r.Question); err == nil && q.Status == StatusResolved {
			e.remoteAnswered(ctx, q)
		}
	}
	task, err := rt.agent.Get(ctx, c.Remote.TaskID)
	if err != nil {
		return nil, err
	}
	out, err := e.applyTask(ctx, c, task)
	if err != nil || out.What != "stale" {
		return out, err
	}
	if _, err := e.ledger.Polled(ctx, c, now); err != nil && !errors.Is(err, ledger.ErrChanged) {
		return nil, err
	}
	return out, nil
}

// remoteQuestions is docs, a session's open records read while no turn
// runs, with the open question of each pending remote call among them:
// a remote task's question stays open after the turn that made the call
// ended, unlike a question a running tool asks (AskInCall). It costs a
// read per remote call waiting on its question.
func (e *engine) remoteQuestions(ctx context.Context, docs []*Call) ([]*Call, error) {
	out := docs
	for _, d := range docs {
		r := d.Remote
		if d.Kind != KindRemote || r == nil || d.Status != StatusPending || r.Question == "" || r.Question == r.Replied {
			continue
		}
		q, err := e.ledger.Get(ctx, d.UserID, d.SessionID, r.Question)
		if errors.Is(err, ErrCallNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if q.Status == StatusPending {
			out = append(out, q)
		}
	}
	return out, nil
}
