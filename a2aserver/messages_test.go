package a2aserver

import (
	"context"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"

	"github.com/baton-run/baton/modeltest"
)

// taskIDsChecker checks that every status and artifact event, and every
// message of the agent, names its task and the task's context.
type taskIDsChecker struct {
	t      *testing.T
	what   string
	task   a2a.TaskID
	ctxID  string
	checks int
}

func (c *taskIDsChecker) message(where string, m *a2a.Message) {
	c.t.Helper()
	if m == nil || m.Role != a2a.MessageRoleAgent {
		return
	}
	c.checks++
	if m.TaskID != c.task || m.ContextID != c.ctxID {
		c.t.Errorf("%s: %s message %q names task %q in context %q, want task %q in context %q",
			c.what, where, m.ID, m.TaskID, m.ContextID, c.task, c.ctxID)
	}
}

func (c *taskIDsChecker) ids(where string, task a2a.TaskID, ctxID string) {
	c.t.Helper()
	c.checks++
	if task != c.task || ctxID != c.ctxID {
		c.t.Errorf("%s: %s names task %q in context %q, want task %q in context %q", c.what, where, task, ctxID, c.task, c.ctxID)
	}
}

func (c *taskIDsChecker) event(ev a2a.Event) {
	c.t.Helper()
	switch e := ev.(type) {
	case *a2a.Task:
		c.taskDoc(e)
	case *a2a.TaskStatusUpdateEvent:
		c.ids("status update "+string(e.Status.State), e.TaskID, e.ContextID)
		c.message("status "+string(e.Status.State), e.Status.Message)
	case *a2a.TaskArtifactUpdateEvent:
		c.ids("artifact update", e.TaskID, e.ContextID)
	case *a2a.Message:
		c.message("streamed", e)
	}
}

func (c *taskIDsChecker) taskDoc(task *a2a.Task) {
	c.t.Helper()
	c.ids("task", task.ID, task.ContextID)
	c.message("status "+string(task.Status.State), task.Status.Message)
	for _, m := range task.History {
		c.message("history", m)
	}
}

// stream sends a message as a stream, checks every event and returns the
// last state it reported.
func (c *taskIDsChecker) stream(ctx context.Context, client *a2aclient.Client, req *a2a.SendMessageRequest) a2a.TaskState {
	c.t.Helper()
	var state a2a.TaskState
	for ev, err := range client.SendStreamingMessage(ctx, req) {
		if err != nil {
			c.t.Fatalf("%s: SendStreamingMessage: %v", c.what, err)
		}
		if c.task == "" {
			info := ev.TaskInfo()
			c.task, c.ctxID = info.TaskID, info.ContextID
		}
		c.event(ev)
		switch e := ev.(type) {
		case *a2a.Task:
			state = e.Status.State
		case *a2a.TaskStatusUpdateEvent:
			state = e.Status.State
		}
	}
	return state
}

// TestMessagesNameTheirTask: the status and artifact messages of a paused,
// a completed and a canceled task carry the task's id and context id, as
// streamed and as stored.
func TestMessagesNameTheirTask(t *testing.T) {
	f := newFixture(t, 1, nil,
		modeltest.CallReply(modeltest.Call("c1", "change_bgm", map[string]any{"track": 2})),
		modeltest.TextReply("now playing track 2"),
		modeltest.CallReply(modeltest.Call("c2", "change_bgm", map[string]any{"track": 3})),
		modeltest.TextReply("the music was not changed"))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := f.client(0, "ada")
	history := 100

	paused := &taskIDsChecker{t: t, what: "paused task"}
	if got := paused.stream(ctx, c, textMessage("play track 2")); got != a2a.TaskStateInputRequired {
		t.Fatalf("first message ends in %s, want input-required", got)
	}
	task, err := c.GetTask(ctx, &a2a.GetTaskRequest{ID: paused.task, HistoryLength: &history})
	if err != nil {
		t.Fatal(err)
	}
	paused.taskDoc(task)

	completed := &taskIDsChecker{t: t, what: "completed task", task: paused.task, ctxID: paused.ctxID}
	if got := completed.stream(ctx, c, answerMessage(task, bgmAnswer("c1", 2))); got != a2a.TaskStateCompleted {
		t.Fatalf("the answer ends in %s, want completed", got)
	}
	if task, err = c.GetTask(ctx, &a2a.GetTaskRequest{ID: paused.task, HistoryLength: &history}); err != nil {
		t.Fatal(err)
	}
	completed.taskDoc(task)
	if artifactText(task) != "now playing track 2" {
		t.Errorf("artifacts = %q, want the agent's text", artifactText(task))
	}

	canceled := &taskIDsChecker{t: t, what: "canceled task"}
	next := textMessage("play track 3")
	next.Message.ContextID = paused.ctxID
	if got := canceled.stream(ctx, c, next); got != a2a.TaskStateInputRequired {
		t.Fatalf("second task ends in %s, want input-required", got)
	}
	done, err := c.CancelTask(ctx, &a2a.CancelTaskRequest{ID: canceled.task})
	if err != nil || done.Status.State != a2a.TaskStateCanceled || done.Status.Message == nil {
		t.Fatalf("CancelTask = %v, %v; want canceled with a message", done, err)
	}
	canceled.taskDoc(done)
	if task, err = c.GetTask(ctx, &a2a.GetTaskRequest{ID: canceled.task, HistoryLength: &history}); err != nil {
		t.Fatal(err)
	}
	canceled.taskDoc(task)

	for _, ch := range []*taskIDsChecker{paused, completed, canceled} {
		if ch.checks < 3 {
			t.Errorf("%s: %d ids checked, want the status and artifact events", ch.what, ch.checks)
		}
	}
}

// TestErrorContentType: a JSON-RPC error is application/json on 1.0 and on
// 0.3 method names, whichever part of the server answers it.
func TestErrorContentType(t *testing.T) {
	f := newFixture(t, 1, nil)
	tests := []struct {
		name string
		body string
	}{
		{"1.0 unknown task", `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"no-such-task"}}`},
		{"0.3 unknown task", `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"no-such-task"}}`},
		{"1.0 unknown method", `{"jsonrpc":"2.0","id":1,"method":"Explode","params":{}}`},
		{"0.3 unknown method", `{"jsonrpc":"2.0","id":1,"method":"tasks/explode","params":{}}`},
		{"1.0 invalid params", `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":"hi"}`},
		{"0.3 invalid params", `{"jsonrpc":"2.0","id":1,"method":"message/send","params":"hi"}`},
		{"0.3 invalid id", `{"jsonrpc":"2.0","id":1,"method":"tasks/cancel","params":{"id":"a/b"}}`},
		{"not JSON", `{"jsonrpc":`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, _, raw := f.postRPCError(t, tt.body)
			if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type = %q, want application/json (%s)", ct, raw)
			}
		})
	}
}
