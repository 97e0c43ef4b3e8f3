package a2aserver

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/a2aproject/a2a-go/v2/a2asrv/taskstore"
	"github.com/google/uuid"

	"github.com/baton-run/baton/sessionstore"
)

// A message sent again with the id of one already taken (a caller's retry
// after a lost answer, a remote-agent worker's resend after a crash) runs
// nothing: the caller gets the task that message started or continued,
// as it stands, or its stream from now on. See doc.go, "Repeated
// messages".

// errDuplicateMessage: the message's id was taken already, by the task it
// names or, for a message that starts a task, in its context. The
// execution that finds it stores nothing; dedupeHandler answers with the
// task instead.
var errDuplicateMessage = errors.New("message already taken")

// idSpace is the namespace of the ids derived from a message id (UUID
// version 5), so that the same message derives the same ids on every
// instance.
var idSpace = uuid.MustParse("6f1c3a52-8d0e-4b7a-9a41-5be0c2d7e913")

// derivedID is the id the message msgID of user derives, in scope (a
// context id, or "" for the context itself).
func derivedID(user, scope, msgID string) string {
	return uuid.NewSHA1(idSpace, []byte(user+"\x00"+scope+"\x00"+msgID)).String()
}

// dedupeHandler answers a message sent again with the task the first one
// started or continued. It decides the ids of a message that starts a
// task (newTask), so that the same message names the same task, then lets
// a2a-go take the message; when the execution reports the message taken
// already (errDuplicateMessage), or a2a-go refuses it on a task that has
// ended, it answers with that task.
type dedupeHandler struct {
	a2asrv.RequestHandler
	store *TaskStore
}

// newTask derives the ids of a message that starts a task: its context,
// when the caller gave none, is derived from the user and the message id,
// and its task from the user, the context and the message id; the request
// carries the task id to the work queue, which runs the execution under it
// (localQueue.Write). It returns the task id, "" for a message on a task
// or one Baton refuses anyway (the interceptor says why).
func (h dedupeHandler) newTask(ctx context.Context, msg *a2a.Message) a2a.TaskID {
	c, _ := ctx.Value(userKey{}).(Caller)
	rq := requestOf(ctx)
	if msg == nil || msg.ID == "" || msg.TaskID != "" || c.User == "" || rq == nil {
		return ""
	}
	if msg.ContextID == "" {
		msg.ContextID = derivedID(c.User, "", msg.ID)
	}
	if sessionstore.ValidateID("context id", msg.ContextID) != nil {
		return ""
	}
	id := a2a.TaskID(derivedID(c.User, msg.ContextID, msg.ID))
	h.store.remember(h.store.key(c.User, id), h.store.taskRef(c.User, msg.ContextID, id))
	rq.newTask = id
	return id
}

// SendMessage sends a message, or answers a repeated one with its task.
func (h dedupeHandler) SendMessage(ctx context.Context, req *a2a.SendMessageRequest) (a2a.SendMessageResult, error) {
	fresh := h.newTask(ctx, req.Message)
	res, err := h.RequestHandler.SendMessage(ctx, req)
	if err == nil {
		return res, nil
	}
	id, ok := h.repeated(ctx, req.Message, fresh, err)
	if !ok {
		return nil, err
	}
	for {
		stored, err := h.store.Get(ctx, id)
		if err != nil {
			return nil, err
		}
		if req.Config != nil && req.Config.ReturnImmediately || settled(stored.Task, req.Message.ID) {
			return stored.Task, nil
		}
		// A blocking send waits for the task's next final state, reading it
		// as awaitOwner does: the execution may run on another instance.
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(settleEvery):
		}
	}
}

// settleEvery is how often a blocking send of a repeated message reads its
// task until the task settles.
const settleEvery = 250 * time.Millisecond

// SendStreamingMessage streams a message's task, or follows the task of a
// repeated one from now on, up to its next final state.
func (h dedupeHandler) SendStreamingMessage(ctx context.Context, req *a2a.SendMessageRequest) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		fresh := h.newTask(ctx, req.Message)
		for ev, err := range h.RequestHandler.SendStreamingMessage(ctx, req) {
			if err == nil {
				if !yield(ev, nil) {
					return
				}
				continue
			}
			id, ok := h.repeated(ctx, req.Message, fresh, err)
			if !ok {
				yield(nil, err)
				return
			}
			for ev, err := range h.RequestHandler.SubscribeToTask(ctx, &a2a.SubscribeToTaskRequest{ID: id}) {
				if !yield(ev, err) || err != nil || settled(ev, req.Message.ID) {
					return
				}
			}
			return
		}
	}
}

// settled reports whether ev leaves its task in a final state reached
// after message msgID. A task still input-required whose history ends
// with that message, a message on the task (not its first), has taken it
// (a2a-go adds it before the execution starts) but not run it yet: the
// execution's first status moves the status message that lists the
// calls into the history, after it.
func settled(ev a2a.Event, msgID string) bool {
	if task, ok := ev.(*a2a.Task); ok && task.Status.State == a2a.TaskStateInputRequired &&
		len(task.History) > 1 && task.History[len(task.History)-1].ID == msgID {
		return false
	}
	return isFinal(ev)
}

// taskAwait bounds how long a repeated message waits for the task of the
// first one to be stored: the execution that took the message creates it
// right after the turn's commit, so only one that died in between leaves
// the caller waiting this long (and then answered with an error).
const taskAwait = 15 * time.Second

// repeated reports whether err, the answer to msg, means that msg was
// taken already, and by which task: the execution said so
// (errDuplicateMessage), or a2a-go refused the message (invalid params,
// as on a task that has ended) and the task's history holds it. fresh is
// the task a message that starts one derived (newTask).
func (h dedupeHandler) repeated(ctx context.Context, msg *a2a.Message, fresh a2a.TaskID, err error) (a2a.TaskID, bool) {
	taken := errors.Is(err, errDuplicateMessage)
	if msg == nil || !taken && !errors.Is(err, a2a.ErrInvalidParams) {
		return "", false
	}
	id := msg.TaskID
	if id == "" {
		id = fresh
	}
	c, _ := ctx.Value(userKey{}).(Caller)
	if id == "" || c.User == "" || sessionstore.ValidateID("task id", string(id)) != nil {
		return "", false
	}
	task, err := h.store.await(ctx, c.User, id, taken)
	if err != nil {
		return "", false
	}
	return id, slices.ContainsFunc(task.History, func(m *a2a.Message) bool { return m.ID == msg.ID })
}

// await reads task id of user; when wait is set, a task not stored yet is
// read again every awaitEvery, up to taskAwait (the way awaitOwner waits
// for an execution on another instance).
func (s *TaskStore) await(ctx context.Context, user string, id a2a.TaskID, wait bool) (*a2a.Task, error) {
	ctx, cancel := context.WithTimeout(ctx, taskAwait)
	defer cancel()
	for {
		stored, err := s.Get(ctx, id)
		switch {
		case err == nil:
			return stored.Task, nil
		case !wait || !errors.Is(err, a2a.ErrTaskNotFound):
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("await task %s: %w", id, ctx.Err())
		case <-time.After(awaitEvery):
		}
	}
}

// awaitEvery is how often await reads a task not stored yet.
const awaitEvery = 100 * time.Millisecond

// markAccepted records that this instance's Update stored msg in its task
// (the write that accepts a message on a task).
func (s *TaskStore) markAccepted(msg *a2a.Message) { s.accepted.Store(msg, true) }

// takeAccepted reports whether msg was stored in its task by this
// execution, and forgets it. a2a-go stores a message in its task before
// the execution starts, except when the task's history holds a message
// with its id already: then the execution runs on a message it did not
// store, which is a message sent again.
func (s *TaskStore) takeAccepted(msg *a2a.Message) bool {
	_, ok := s.accepted.LoadAndDelete(msg)
	return ok
}

// refuseDuplicate ends an execution of a message sent again, without a
// write: it hands a2a-go the task's status as an event the store refuses
// (a concurrent modification marked errDuplicateMessage), so a2a-go ends
// the execution with that error, or answers with the task if it has ended
// meanwhile, and leaves the task as it is.
func (r *run) refuseDuplicate() {
	st := r.ec.StoredTask.Status
	ev := a2a.NewStatusUpdateEvent(r.ec, st.State, st.Message)
	r.x.store.refused.Store(ev, true)
	r.yield(ev, nil)
}

// refusedEvent is the store's answer to an event refuseDuplicate handed it
// (nil for any other event).
func (s *TaskStore) refusedEvent(ev a2a.Event) error {
	if _, ok := s.refused.LoadAndDelete(ev); !ok {
		return nil
	}
	return fmt.Errorf("%w: %w", errDuplicateMessage, taskstore.ErrConcurrentModification)
}

// duplicateAppend says why a message could not be added to its task
// (conflict, the update's answer): when the task holds a message with its
// id now, another request took it at the same time (errDuplicateMessage).
func (s *TaskStore) duplicateAppend(ctx context.Context, task *a2a.Task, msg *a2a.Message, conflict error) error {
	stored, err := s.Get(ctx, task.ID)
	if err == nil && slices.ContainsFunc(stored.Task.History, func(m *a2a.Message) bool { return m.ID == msg.ID }) {
		return fmt.Errorf("%w: %w", errDuplicateMessage, conflict)
	}
	return conflict
}
