package toolcallback

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/adk/v2/platform"

	"github.com/baton-run/baton/ledger"
)

// WorkRequest is a delivery of a background call's work: the queue's task
// names the call, which the worker reads from the ledger (the task carries
// nothing else, so a late or repeated delivery decides on the record as it
// now is).
type WorkRequest struct {
	UserID, SessionID, CallID string
	// Step is the task's step (workqueue.Task.Step): "" for the call's
	// work (a remote call's first message), "cancel" for the cancel of a
	// remote call's task, "reply-" and a question's id for the answer to a
	// remote task's question. A remote call's delivery does its own
	// step's send alone, so that two of its tasks delivered at once never
	// send the same thing twice.
	Step string
	// Deadline bounds this attempt's run of the tool (the delivery's own
	// deadline, less the time to record the result and resume the agent);
	// zero: only the call's expiry does.
	Deadline time.Time
}

// WorkOutcome is what a delivery did, and what the queue is to do next.
type WorkOutcome struct {
	// What names what the delivery found or did, for the log: "ran",
	// "retry", "held", "settled", "delivered", "gave-up", "cancelled",
	// "gone".
	What string
	// Retry asks the queue to deliver the task again, after RetryAfter
	// when it is not zero (else after the queue's backoff); otherwise the
	// delivery is acknowledged.
	Retry      bool
	RetryAfter time.Duration
	// Invocation is the agent resumed with the call's result, nil when
	// none was; the caller waits for it to end.
	Invocation *Invocation
}

// errWorkChanged: the record changed between the delivery's read and its
// write (another attempt claimed it, its enqueue was marked): read again.
var errWorkChanged = errors.New("background call changed since it was read")

// Work runs a delivery of a background call's work, on any instance: it
// reads the call's record and decides on it alone (planWork), so that
// deliveries that come at least once and out of order change the record
// once. A pending call that no attempt holds is claimed, its tool (found
// by name among the team member's Background tools) run with a context
// that ends when the call is closed, and its result recorded first writer
// wins and delivered to the agent through the answer's path (the agent is
// resumed once). A call another attempt holds is left to it (Retry, after
// the hold's end: if that attempt died, this delivery runs the work
// then); a call no longer pending is acknowledged, its result delivered
// first if the agent does not have it.
func (t *Team) Work(ctx context.Context, req WorkRequest) (_ *WorkOutcome, err error) {
	if err := validIDs("user id", req.UserID, "session id", req.SessionID, "call id", req.CallID); err != nil {
		return nil, err
	}
	ctx, span := tracer.Start(ctx, "baton.work", trace.WithAttributes(
		attribute.String("baton.session.id", req.SessionID), attribute.String("baton.call.id", req.CallID)))
	defer func() { endSpan(span, err) }()
	for range 3 {
		c, err := t.ledger.Get(ctx, req.UserID, req.SessionID, req.CallID)
		if errors.Is(err, ErrCallNotFound) {
			return &WorkOutcome{What: "gone"}, nil // deleted with its session: nothing to do
		}
		if err != nil {
			return nil, err
		}
		var out *WorkOutcome
		switch {
		case c.Kind == KindRemote && c.Remote != nil:
			out, err = t.engine(c.Agent).remoteWork(ctx, c, req.Step)
		case c.Kind != KindBackground || c.Work == nil:
			return &WorkOutcome{What: "gone"}, nil // not a background call: no work to run, ever
		default:
			out, err = t.engine(c.Agent).work(ctx, c, req.Deadline)
		}
		if !errors.Is(err, errWorkChanged) {
			return out, err
		}
	}
	return &WorkOutcome{What: "held", Retry: true}, nil
}

// workWay is what a delivery does with the call as read.
type workWay int

const (
	workSettled workWay = iota // no longer pending, the agent has it (or will): acknowledge
	workDeliver                // answered, the agent does not have it: deliver it, acknowledge
	workHeld                   // another attempt holds the work: retry after its hold
	workGiveUp                 // no attempt left: the last error is the call's answer
	workMissing                // the tool is not declared here: that is the call's answer
	workClaim                  // claim the work and run it
)

// planWork decides what a delivery does with c, as read at now. It reads
// and writes nothing.
func (e *engine) planWork(c *Call, now time.Time) workWay {
	switch {
	case c.Status == StatusResolved && !c.Resumed:
		return workDeliver
	case c.Status != StatusPending || !now.Before(c.Expires):
		// Settled, or expired and not closed yet: the sweeper closes it
		// and tells the model.
		return workSettled
	case c.Work.Held(now):
		return workHeld
	case c.Work.Attempt >= max(c.Work.MaxAttempts, 1):
		return workGiveUp
	case e.background[c.Tool] == nil:
		return workMissing
	}
	return workClaim
}

// work carries out what planWork decides for c; errWorkChanged when the
// record changed since it was read.
func (e *engine) work(ctx context.Context, c *Call, deadline time.Time) (*WorkOutcome, error) {
	now := platform.Now(ctx)
	switch e.planWork(c, now) {
	case workDeliver:
		res, err := e.resumeStep(ctx, c, c.ClientID, 0)
		if err != nil {
			return nil, err
		}
		return &WorkOutcome{What: "delivered", Invocation: res.Invocation}, nil
	case workHeld:
		return &WorkOutcome{What: "held", Retry: true, RetryAfter: c.Work.HeldUntil.Sub(now)}, nil
	case workGiveUp:
		text := c.Work.Error
		if text == "" {
			text = fmt.Sprintf("no result after %d attempts", c.Work.Attempt)
		}
		return e.finishWork(ctx, c, Answer{Error: text}, "gave-up")
	case workMissing:
		return e.finishWork(ctx, c, Answer{Error: fmt.Sprintf("the tool %q is not declared as a background tool of this deployment", c.Tool)}, "gave-up")
	case workClaim:
		return e.runWork(ctx, c, deadline)
	}
	return &WorkOutcome{What: "settled"}, nil
}

// runWork claims the work of c, runs its tool, and records what came of
// it: a result or an error as the call's answer, a retryable error as the
// attempt's (the call stays pending, and the queue delivers it again), or
// nothing when the call was closed while the tool ran (the closer tells
// the model).
func (e *engine) runWork(ctx context.Context, c *Call, deadline time.Time) (*WorkOutcome, error) {
	now := platform.Now(ctx)
	hold := 10 * e.opts.ProgressInterval
	held, err := e.ledger.Claim(ctx, c, "attempt-"+platform.NewUUID(ctx), now.Add(hold), now)
	if errors.Is(err, ledger.ErrChanged) {
		return nil, errWorkChanged
	}
	if err != nil {
		return nil, err
	}
	if deadline.IsZero() || c.Expires.Before(deadline) {
		deadline = c.Expires
	}
	w := newWorkRun(e, held, hold)
	result, runErr := w.execute(ctx, e.background[c.Tool], deadline)
	// What follows is written whether or not the delivery's caller is
	// still there: the work is done.
	ctx = context.WithoutCancel(ctx)
	held = w.latest()
	switch {
	case w.isClosed():
		return &WorkOutcome{What: "cancelled"}, nil
	case runErr != nil && !platform.Now(ctx).Before(c.Expires):
		return &WorkOutcome{What: "settled"}, nil // its time ran out: the sweeper tells the model
	case runErr != nil && (isRetryable(runErr) || errors.Is(runErr, context.DeadlineExceeded) || errors.Is(runErr, context.Canceled)) &&
		held.Work.Attempt < held.Work.MaxAttempts:
		if err := e.releaseWork(ctx, held, runErr); errors.Is(err, ledger.ErrChanged) {
			return &WorkOutcome{What: "cancelled"}, nil
		} else if err != nil {
			return nil, err
		}
		e.opts.Logger.Info("background call's attempt failed; the queue retries it", "call", c.ID, "attempt", held.Work.Attempt, "error", runErr)
		return &WorkOutcome{What: "retry", Retry: true}, nil
	case runErr != nil:
		return e.finishWork(ctx, held, Answer{Error: errorText(runErr)}, "ran")
	}
	if b, err := json.Marshal(result); err != nil || len(b) > e.opts.MaxAnswerBytes {
		return e.finishWork(ctx, held, Answer{Error: fmt.Sprintf("the tool's result is larger than %d bytes", e.opts.MaxAnswerBytes)}, "ran")
	}
	if result == nil {
		result = map[string]any{}
	}
	return e.finishWork(ctx, held, Answer{Output: result}, "ran")
}

// errorText is what the model reads of a tool's error.
func errorText(err error) string {
	if errors.Is(err, errToolPanicked) {
		return errToolPanicked.Error()
	}
	return err.Error()
}

// finishWork records a as the answer of c, as its attempt last wrote or
// read it (first writer wins: a call closed meanwhile records nothing),
// and resumes the agent through the answer's path once the call's model
// step is complete.
func (e *engine) finishWork(ctx context.Context, c *Call, a Answer, what string) (*WorkOutcome, error) {
	remote := c.Kind == KindRemote
	answered, err := e.ledger.Answer(ctx, c, a, "", platform.Now(ctx))
	if errors.Is(err, ledger.ErrChanged) {
		if c, err = e.stillHeld(ctx, c); err == nil {
			answered, err = e.ledger.Answer(ctx, c, a, "", platform.Now(ctx))
		}
	}
	if errors.Is(err, ledger.ErrChanged) {
		if what == "gave-up" || remote {
			// A remote call's record changes under its answer (a
			// notification, a reply recorded): the caller reads it
			// again, and answers it while it is still pending, rather
			// than dropping the remote's last state.
			return nil, errWorkChanged
		}
		return &WorkOutcome{What: "cancelled"}, nil
	}
	if err != nil {
		return nil, err
	}
	res, err := e.resumeStep(ctx, answered, c.ClientID, e.opts.ResumeWait)
	if err != nil {
		// The answer is recorded: the sweeper resumes the step after the
		// answer's grace.
		e.opts.Logger.Warn("resume after a background call's result; the sweeper will", "call", c.ID, "error", err)
		return &WorkOutcome{What: what}, nil
	}
	return &WorkOutcome{What: what, Invocation: res.Invocation}, nil
}

// stillHeld is c, whose version the attempt's last write made stale
// without the attempt learning it (a progress report that landed as its
// request failed), as read again, when it is still pending and held by
// the same attempt; ErrChanged otherwise.
func (e *engine) stillHeld(ctx context.Context, c *Call) (*Call, error) {
	now, err := e.ledger.Get(ctx, c.UserID, c.SessionID, c.ID)
	if err != nil {
		return nil, err
	}
	if now.Status != StatusPending || now.Work == nil || c.Work == nil || now.Work.Holder != c.Work.Holder {
		return nil, fmt.Errorf("%w: call %q is %s", ledger.ErrChanged, c.ID, now.Status)
	}
	return now, nil
}

// releaseWork lets go of the work of c, held by the attempt, which failed
// with runErr and is retried.
func (e *engine) releaseWork(ctx context.Context, c *Call, runErr error) error {
	_, err := e.ledger.Release(ctx, c, runErr.Error())
	if errors.Is(err, ledger.ErrChanged) {
		if c, err = e.stillHeld(ctx, c); err == nil {
			_, err = e.ledger.Release(ctx, c, runErr.Error())
		}
	}
	return err
}
