package a2aserver

import (
	"context"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"google.golang.org/genai"

	"github.com/baton-run/baton/modeltest"
)

// TestTwoInstances: a task sent on one instance is read, answered and
// followed on the other.
func TestTwoInstances(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 2, nil,
		modeltest.CallReply(modeltest.Call("c1", "change_bgm", map[string]any{"track": 2})),
		modeltest.TextReply("now playing track 2"))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a, b := f.client(0, "ada"), f.client(1, "ada")

	task := send(ctx, t, a, textMessage("play track 2"))
	ids := pendingIDs(t, task)
	if len(ids) != 1 || ids[0] != "c1" {
		t.Fatalf("pending calls = %v, want [c1]", ids)
	}

	got, err := b.GetTask(ctx, &a2a.GetTaskRequest{ID: task.ID})
	if err != nil {
		t.Fatalf("GetTask on the other instance: %v", err)
	}
	if got.Status.State != a2a.TaskStateInputRequired || got.ContextID != task.ContextID {
		t.Fatalf("GetTask = %s in %q, want input-required in %q", got.Status.State, got.ContextID, task.ContextID)
	}

	// Follow the task on instance 0 while instance 1 takes the answer.
	// The subscription's first event is the task as stored; every later
	// event reaches it, so the answer is sent only once that one arrived.
	followed := make(chan []a2a.Event, 1)
	subscribed := make(chan struct{})
	go func() {
		var evs []a2a.Event
		defer func() {
			if len(evs) == 0 {
				close(subscribed)
			}
			followed <- evs
		}()
		for ev, err := range a.SubscribeToTask(ctx, &a2a.SubscribeToTaskRequest{ID: task.ID}) {
			if err != nil {
				t.Errorf("SubscribeToTask: %v", err)
				return
			}
			if evs = append(evs, ev); len(evs) == 1 {
				close(subscribed)
			}
		}
	}()
	<-subscribed

	done := send(ctx, t, b, answerMessage(task, &genai.FunctionResponse{ID: "c1", Name: "change_bgm", Response: map[string]any{"playing": 2}}))
	if done.Status.State != a2a.TaskStateCompleted || artifactText(done) != "now playing track 2" {
		t.Fatalf("after the answer: %s %q, want completed %q", done.Status.State, artifactText(done), "now playing track 2")
	}

	evs := <-followed
	if len(evs) == 0 {
		t.Fatal("the subscription on the other instance saw nothing")
	}
	last := evs[len(evs)-1]
	var state a2a.TaskState
	switch e := last.(type) {
	case *a2a.TaskStatusUpdateEvent:
		state = e.Status.State
	case *a2a.Task:
		state = e.Status.State
	}
	if state != a2a.TaskStateCompleted {
		t.Fatalf("subscription's last event %T in state %q, want completed", last, state)
	}
}
