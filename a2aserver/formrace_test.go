package a2aserver

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"cloud.google.com/go/firestore/apiv1/firestorepb"
	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/baton-run/baton/modeltest"
)

// formRaceDeadline is each caller's own deadline in the form races: far
// above what an answer takes, so that a caller reaching it waited on
// something that never came.
const formRaceDeadline = 20 * time.Second

// formRaceOutcome is what one caller of a form race got back.
type formRaceOutcome struct {
	task    *a2a.Task
	err     error
	elapsed time.Duration
}

// formRace has 20 callers press the Book button of one waiting form at
// once, alternately on each of f's two instances, each with its own
// deadline; fault, when set, runs on both instances' Firestore calls
// during the race.
func formRace(t *testing.T, f *fixture, fault func(method string, req any) error) []formRaceOutcome {
	t.Helper()
	clients := []*a2aclient.Client{f.client(0, "ada"), f.client(1, "ada")}
	task := send(t.Context(), t, clients[0], textMessage("a form"))
	if ids := pendingIDs(t, task); len(ids) != 1 || ids[0] != "f1" {
		t.Fatalf("pending calls = %v, want [f1]", ids)
	}
	if fault != nil {
		for _, in := range f.instances {
			in.counter.SetHook(fault)
			t.Cleanup(func() { in.counter.SetHook(nil) })
		}
	}
	outcomes := make([]formRaceOutcome, 20)
	var wg sync.WaitGroup
	for i := range outcomes {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), formRaceDeadline)
			defer cancel()
			start := time.Now()
			res, err := clients[i%2].SendMessage(ctx, &a2a.SendMessageRequest{Message: a2a.NewMessageForTask(a2a.MessageRoleUser, task, bookAction(`{"name":"Ada"}`))})
			got, _ := res.(*a2a.Task)
			outcomes[i] = formRaceOutcome{task: got, err: err, elapsed: time.Since(start)}
		})
	}
	wg.Wait()
	return outcomes
}

// tasksIn checks that every caller was answered before its deadline, with
// a task or an error, and returns the tasks they got.
func tasksIn(t *testing.T, outcomes []formRaceOutcome) []*a2a.Task {
	t.Helper()
	var tasks []*a2a.Task
	var report []string
	for i, o := range outcomes {
		switch {
		case errors.Is(o.err, context.DeadlineExceeded) || o.elapsed >= formRaceDeadline:
			t.Errorf("caller %d (instance %d) got no answer within %v: %v", i, i%2, formRaceDeadline, o.err)
		case o.err != nil:
			report = append(report, fmt.Sprintf("caller %d: %v", i, o.err))
		case o.task != nil:
			tasks = append(tasks, o.task)
			report = append(report, fmt.Sprintf("caller %d: task %s", i, o.task.Status.State))
		default:
			t.Errorf("caller %d got neither a task nor an error", i)
		}
	}
	if t.Failed() {
		t.Logf("what the callers got:\n%s", strings.Join(report, "\n"))
	}
	return tasks
}

// TestDuplicateFormAnswers: 20 presses of one waiting form's button, sent
// at once to two instances (issue 47, item 15). Every caller is answered
// before its deadline, with the completed task or an error saying the
// answer was taken; at least one receives the completed task; the agent
// resumes once.
func TestDuplicateFormAnswers(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 2, nil,
		modeltest.CallReply(modeltest.Call("f1", "show_surface", map[string]any{"messages": decode(t, formMessages), "wait": true})),
		modeltest.TextReply("booked"))
	completed := 0
	for _, got := range tasksIn(t, formRace(t, f, nil)) {
		if got.Status.State != a2a.TaskStateCompleted || !strings.Contains(artifactText(got), "booked") {
			t.Errorf("a caller got the task %s with %q; want it completed, booked", got.Status.State, artifactText(got))
			continue
		}
		completed++
	}
	if completed == 0 {
		t.Error("no caller received the completed task")
	}
	if calls := f.model.Calls(); calls != 2 {
		t.Errorf("model called %d times, want 2 (the form, then one resume)", calls)
	}
}

// TestFormAnswerUnbroadcastEnd: the same race while every event of the
// task fails to be stored, as the emulator answers a write among many
// with "call already cancelled". a2a-go then ends the execution that took
// the answer by marking its task failed, with a result it never hands to
// the event queue; before eventQueues.finish, the caller that sent that
// answer waited for an event that never came, until its deadline. Callers
// whose own run, or whose first read of the task, came after it ended get
// the failed task too.
func TestFormAnswerUnbroadcastEnd(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 2, nil,
		modeltest.CallReply(modeltest.Call("f1", "show_surface", map[string]any{"messages": decode(t, formMessages), "wait": true})),
		modeltest.TextReply("booked"))
	var failed atomic.Int32
	lostEvents := func(_ string, req any) error {
		commit, ok := req.(*firestorepb.CommitRequest)
		if !ok {
			return nil
		}
		for _, w := range commit.GetWrites() {
			if strings.Contains(w.GetUpdate().GetName(), "/"+eventsCollection+"/") {
				failed.Add(1)
				return status.Error(codes.Canceled, "call already cancelled")
			}
		}
		return nil
	}
	tasks := tasksIn(t, formRace(t, f, lostEvents))
	if failed.Load() == 0 {
		t.Fatal("no event write was failed: the race did not reach the fault")
	}
	if len(tasks) == 0 {
		t.Error("no caller received the task; want at least the answer's taker to get it, failed")
	}
	for _, got := range tasks {
		if got.Status.State != a2a.TaskStateFailed {
			t.Errorf("a caller got the task %s; want it failed, as a2a-go marks it when its events cannot be stored", got.Status.State)
		}
	}
}
