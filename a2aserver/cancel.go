package a2aserver

import (
	"context"
	"errors"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
)

// cancelHandler works around a2a-go v2.4.0's cluster-mode cancel of a task
// that waits for input: its Cancel reads the stored task first, takes the
// input-required snapshot for the end of the cancellation and answers
// "task cannot be canceled", while the cancellation it queued goes on. So
// on that answer this handler waits for the stored task to reach a final
// state, and answers with it when it is canceled.
type cancelHandler struct {
	a2asrv.RequestHandler
	store *TaskStore
}

func (h cancelHandler) CancelTask(ctx context.Context, req *a2a.CancelTaskRequest) (*a2a.Task, error) {
	task, err := h.RequestHandler.CancelTask(ctx, req)
	if !errors.Is(err, a2a.ErrTaskNotCancelable) {
		return task, err
	}
	for {
		stored, gerr := h.store.Get(ctx, req.ID)
		if gerr != nil {
			return nil, err
		}
		switch st := stored.Task.Status.State; {
		case st == a2a.TaskStateCanceled:
			return stored.Task, nil
		case st.Terminal():
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(100 * time.Millisecond):
		}
	}
}
