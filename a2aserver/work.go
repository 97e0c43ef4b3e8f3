package a2aserver

import (
	"context"
	"encoding/json"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"google.golang.org/adk/v2/platform"
	"google.golang.org/adk/v2/session"

	"github.com/baton-run/baton/sessionstore"
	"github.com/baton-run/baton/toolcallback"
	"github.com/baton-run/baton/transcript"
)

// workRecent is how many of the session's latest events the follow of
// background work reads first: the work's answer may have been stored
// before the follow began.
const workRecent = 50

// splitBackground sorts a task's pending calls into its background calls
// (the server's work, which no caller answers) and the others.
func splitBackground(calls []*toolcallback.Call) (work, others []*toolcallback.Call) {
	for _, c := range calls {
		if toolcallback.IsWork(c.Kind) {
			work = append(work, c)
		} else {
			others = append(others, c)
		}
	}
	return work, others
}

// taskWork is the follow of a task paused on background calls only: the
// task stays working, each progress report the worker stores goes out as
// a working status with a message, and once every call has its answer in
// the chat the resumed agent's text goes out as the task's artifact.
type taskWork struct {
	r        *run
	open     map[string]bool      // the calls whose answer is not in the chat yet
	shown    map[string]time.Time // when each call's progress last sent was stored
	answered bool                 // the chat holds an answer of one of the calls
	artifact a2a.ArtifactID
}

// followWork follows the task's background calls until their answers are
// in the chat and the agent they resumed has let the chat go (or another
// turn started in it). It reports false when the caller has left or the
// chat cannot be followed (logged): the task then stays working, and a
// later message on it takes it over once it is stale (awaitOwner).
func (r *run) followWork(ctx context.Context, calls []*toolcallback.Call) bool {
	chat, err := r.x.team.Follow(ctx, r.user, r.ec.ContextID)
	if err != nil {
		r.x.log.ErrorContext(ctx, "a2a follow background work", "task", r.ec.TaskID, "error", err)
		return false // the task stays working; a later message on it takes it over once stale
	}
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	tw := &taskWork{r: r, open: map[string]bool{}, shown: map[string]time.Time{}}
	for _, c := range calls {
		tw.open[c.ID] = true
	}
	progress := make(chan *toolcallback.Call)
	go func() {
		for c, err := range chat.Working(ctx) {
			if err != nil {
				r.x.log.WarnContext(ctx, "a2a follow background work", "task", r.ec.TaskID, "error", err)
				continue
			}
			select {
			case progress <- c:
			case <-ctx.Done():
				return
			}
		}
	}()
	changes := make(chan *sessionstore.Change)
	go func() {
		defer close(changes)
		for c, err := range chat.Watch(ctx, workRecent) {
			if err != nil {
				r.x.log.WarnContext(ctx, "a2a follow background work", "task", r.ec.TaskID, "error", err)
				return
			}
			select {
			case changes <- c:
			case <-ctx.Done():
				return
			}
		}
	}()
	return tw.follow(ctx, progress, changes)
}

// follow is followWork's loop over the work's progress and the chat's
// changes.
func (tw *taskWork) follow(ctx context.Context, progress <-chan *toolcallback.Call, changes <-chan *sessionstore.Change) bool {
	var expires <-chan time.Time // the resumed agent's lease, unrenewed
	for {
		select {
		case <-ctx.Done():
			return false
		case c := <-progress:
			if !tw.showProgress(c) {
				return false
			}
		case c, ok := <-changes:
			if !ok {
				return false // the watch failed: the task stays working, as above
			}
			over, alive := tw.take(c.Events)
			if !alive {
				return false
			}
			expires = nil
			busy := c.Busy && c.LeaseExpires.After(platform.Now(ctx))
			if over || (len(tw.open) == 0 && tw.answered && !busy) {
				return true
			}
			if busy {
				expires = time.After(time.Until(c.LeaseExpires) + time.Second)
			}
		case <-expires:
			if len(tw.open) == 0 && tw.answered {
				return true // the resumed agent's holder died: settle says what is left
			}
			expires = nil
		}
	}
}

// showProgress sends a call's new progress as a working status.
func (tw *taskWork) showProgress(c *toolcallback.Call) bool {
	if c == nil || !tw.open[c.ID] || c.Status != toolcallback.StatusPending || c.Work == nil ||
		len(c.Work.Progress) == 0 || c.Work.ProgressAt.Equal(tw.shown[c.ID]) {
		return true
	}
	tw.shown[c.ID] = c.Work.ProgressAt
	return tw.r.yield(a2a.NewStatusUpdateEvent(tw.r.ec, a2a.TaskStateWorking, progressMessage(tw.r.ec, c)), nil)
}

// take reads events the chat stored: the answers of the task's calls,
// then what the agent they resume says, sent as the task's artifact. It
// reports whether another turn started (the follow is over) and false
// when the caller has left.
func (tw *taskWork) take(events []*session.Event) (over, alive bool) {
	for _, ev := range events {
		if ev.Partial || ev.Content == nil {
			continue
		}
		if tw.answered && transcript.StartsTurn(ev) {
			return true, true
		}
		if ev.Author == "user" {
			for _, p := range ev.Content.Parts {
				if p != nil && p.FunctionResponse != nil && tw.open[p.FunctionResponse.ID] {
					delete(tw.open, p.FunctionResponse.ID)
					tw.answered = true
				}
			}
			continue
		}
		if tw.answered && !tw.r.emit(ev, &tw.artifact) {
			return false, false
		}
	}
	return false, true
}

// progressMessage is a call's latest progress as an agent message: a line
// of text as a text part, any other JSON value as a data part; each part
// names the call (metadata baton_call) and says it is progress
// (baton_progress), so a client can show it with the call.
func progressMessage(task a2a.TaskInfoProvider, c *toolcallback.Call) *a2a.Message {
	var part *a2a.Part
	var v any
	if err := json.Unmarshal(c.Work.Progress, &v); err != nil {
		part = a2a.NewTextPart(string(c.Work.Progress))
	} else if s, ok := v.(string); ok {
		part = a2a.NewTextPart(s)
	} else {
		part = a2a.NewDataPart(map[string]any{"progress": v})
	}
	part.SetMeta("baton_call", c.ID)
	part.SetMeta("baton_tool", c.Tool)
	part.SetMeta("baton_progress", true)
	return a2a.NewMessageForTask(a2a.MessageRoleAgent, task, part)
}
