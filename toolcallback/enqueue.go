package toolcallback

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"google.golang.org/adk/v2/platform"

	"github.com/baton-run/baton/ledger"
	"github.com/baton-run/baton/workqueue"
)

// admitWork lets through the background calls among paused that the
// queue can take and the user's bound allows, and refuses the others
// (tools.refuse: their tool answers the model with the reason instead of
// pausing). The bound costs one aggregation query (ledger.Running) per
// event that holds background calls, when the event is stored; calls of
// two chats racing at the edge may both pass.
func (e *engine) admitWork(ctx context.Context, user string, paused []pausedCall, tools *pausingTools) ([]pausedCall, error) {
	n := 0
	for _, d := range paused {
		if d.spec.Kind == KindBackground {
			n++
		}
		if d.spec.Kind == KindRemote && e.opts.Queue == nil {
			tools.refuse(d.id, "refused: this deployment sends nothing to remote agents (no queue is configured)")
		}
	}
	if e.opts.Queue == nil {
		paused = slices.DeleteFunc(slices.Clone(paused), func(d pausedCall) bool { return d.spec.Kind == KindRemote })
	}
	if n == 0 {
		return paused, nil
	}
	room, why := n, ""
	switch {
	case e.opts.Queue == nil:
		room, why = 0, "refused: this deployment runs no background work (no queue is configured)"
	case e.opts.BackgroundPerUser > 0:
		running, err := e.ledger.Running(ctx, user)
		if err != nil {
			return nil, err
		}
		room = max(0, e.opts.BackgroundPerUser-int(running))
		why = fmt.Sprintf("refused: the user already has %d background tasks running, the most allowed at once; "+
			"try again once one has finished", running)
	}
	out := paused[:0:0]
	for _, d := range paused {
		if d.spec.Kind == KindBackground {
			if room == 0 {
				tools.refuse(d.id, why)
				continue
			}
			room--
		}
		out = append(out, d)
	}
	return out, nil
}

// taskOf is the queue's task of c, a background call (a remote call's
// send).
func taskOf(c *Call) workqueue.Task {
	return workqueue.Task{App: c.App, User: c.UserID, Session: c.SessionID, Call: c.ID}
}

// cancelTaskOf is the queue's task that cancels c's remote task: its step
// "cancel", a named task created once.
func cancelTaskOf(c *Call) workqueue.Task {
	t := taskOf(c)
	t.Step = cancelStep
	return t
}

// toBeEnqueued reports whether c, as read, has a task to create and mark:
// a pending background or remote call's work, or the cancel of a remote
// call closed while its task ran (CancelDue).
func toBeEnqueued(c *Call) bool {
	return offRequest(c.Kind) && c.Work != nil && c.Work.Enqueued.IsZero() && (c.Status == StatusPending || c.CancelDue())
}

// enqueueWork hands the work of the background calls among calls, just
// stored, to the queue. A failure is logged and left to the repair: the
// sweeper (or the chat's next request) creates the task of a record left
// to be enqueued past the grace.
func (e *engine) enqueueWork(ctx context.Context, calls []*Call) {
	for _, c := range calls {
		if !offRequest(c.Kind) {
			continue
		}
		if err := e.enqueue(ctx, c, taskOf(c)); err != nil {
			e.opts.Logger.Warn("enqueue background call; the sweeper will", "call", c.ID, "session", c.SessionID, "error", err)
		}
	}
}

// enqueue creates task, the task of c (a pending background call's, or
// the cancel of a closed remote call's task), and marks its record
// enqueued. The task's name is the call's (and step's), so doing it again
// (a repair after a crash) queues nothing twice. A record that changed
// meanwhile is read again: its work claimed, the call settled, or the
// cancel sent needs no mark.
func (e *engine) enqueue(ctx context.Context, c *Call, task workqueue.Task) error {
	if e.opts.Queue == nil {
		return errors.New("no queue")
	}
	if err := e.opts.Queue.Enqueue(ctx, task); err != nil {
		return err
	}
	for range 3 {
		_, err := e.ledger.Enqueued(ctx, c, platform.Now(ctx))
		if !errors.Is(err, ledger.ErrChanged) {
			return err
		}
		if c, err = e.ledger.Get(ctx, c.UserID, c.SessionID, c.ID); err != nil {
			return err
		}
		if !toBeEnqueued(c) {
			return nil
		}
	}
	return fmt.Errorf("mark call %q enqueued: the record keeps changing", c.ID)
}

// toEnqueue reports whether c is a background call whose task should have
// been created by now and is not marked so: a crash between its commit
// and its enqueue, or a queue that failed. A remote call closed while its
// task ran is one too, for its cancel, from the grace after its closing.
func (e *engine) toEnqueue(c *Call, now time.Time) bool {
	if !toBeEnqueued(c) {
		return false
	}
	if c.Status != StatusPending {
		return !now.Before(c.Resolved.Add(e.opts.EnqueueGrace))
	}
	return !now.Before(c.Created.Add(e.opts.EnqueueGrace)) && now.Before(c.Expires)
}

// enqueueDue creates the task toEnqueue found due for c: its work's, or
// its remote task's cancel.
func (e *engine) enqueueDue(ctx context.Context, c *Call) error {
	if c.Status != StatusPending {
		return e.enqueue(ctx, c, cancelTaskOf(c))
	}
	return e.enqueue(ctx, c, taskOf(c))
}

// repairEnqueues creates the tasks of those of calls left to be enqueued
// past the grace (toEnqueue): the repair a request that read the
// session's open records makes on its way. Failures are logged; the
// sweeper tries again.
func (e *engine) repairEnqueues(ctx context.Context, calls []*Call) {
	for _, c := range calls {
		if !e.toEnqueue(c, platform.Now(ctx)) {
			continue
		}
		if err := e.enqueueDue(ctx, c); err != nil {
			e.opts.Logger.Warn("repair the enqueue of a background call", "call", c.ID, "session", c.SessionID, "error", err)
		}
	}
}

// dropWork deletes the tasks of the background calls among calls, which
// the caller just closed (those answered are left alone): a task not yet
// delivered never is. A remote call's task is cancelled instead, and the
// question it left open closed. Best effort: a delivery that comes anyway finds the
// call closed and does nothing.
func (e *engine) dropWork(ctx context.Context, calls []*Call) {
	if e.opts.Queue == nil {
		return
	}
	for _, c := range calls {
		if c.Kind == KindRemote && c.Status != StatusResolved {
			e.closeRemoteQuestion(ctx, c)
			e.cancelRemote(ctx, c)
			continue
		}
		if c.Kind != KindBackground || c.Status == StatusResolved {
			continue
		}
		if err := e.opts.Queue.Delete(ctx, taskOf(c)); err != nil {
			e.opts.Logger.Info("delete the task of a closed background call", "call", c.ID, "error", err)
		}
	}
}
