package a2aserver

import (
	"context"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"
	"google.golang.org/adk/v2/model"
	"google.golang.org/genai"

	"github.com/baton-run/baton/modeltest"
	"github.com/baton-run/baton/toolcallback"
	"github.com/baton-run/baton/userinput"
)

// clientOf returns a2a-go's client of instance i speaking protocol
// version (a2a.Version or a2av0.Version), signed in as user.
func (f *fixture) clientOf(i int, user string, version a2a.ProtocolVersion) *a2aclient.Client {
	f.t.Helper()
	if version == a2av0.Version {
		return f.client(i, user)
	}
	hc := &http.Client{Transport: authTransport{user: user}}
	c, err := a2aclient.NewFromEndpoints(context.Background(),
		[]*a2a.AgentInterface{{URL: f.instances[i].srv.URL, ProtocolBinding: a2a.TransportProtocolJSONRPC, ProtocolVersion: a2a.Version}},
		a2aclient.WithJSONRPCTransport(hc))
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { c.Destroy() })
	return c
}

// withID gives a request's message a fixed id, as a caller that sends it
// again does.
func withID(req *a2a.SendMessageRequest, id string) *a2a.SendMessageRequest {
	req.Message.ID = id
	return req
}

// streamTask streams req and returns the task its events name and the
// last state they report.
func streamTask(ctx context.Context, t *testing.T, c *a2aclient.Client, req *a2a.SendMessageRequest) (a2a.TaskID, a2a.TaskState) {
	t.Helper()
	var id a2a.TaskID
	var state a2a.TaskState
	for ev, err := range c.SendStreamingMessage(ctx, req) {
		if err != nil {
			t.Fatalf("SendStreamingMessage: %v", err)
		}
		if info := ev.TaskInfo(); id == "" {
			id = info.TaskID
		} else if info.TaskID != id {
			t.Fatalf("stream names task %q after %q", info.TaskID, id)
		}
		switch e := ev.(type) {
		case *a2a.Task:
			state = e.Status.State
		case *a2a.TaskStatusUpdateEvent:
			state = e.Status.State
		}
	}
	return id, state
}

// TestRepeatedMessage: a message sent again with the id of one the server
// took runs nothing, over A2A 1.0 and 0.3, by message/send and by
// message/stream: the message that started a task answers with that task
// as it stands (input-required, later completed), and the answer to a
// question, sent again, with the task it continued, whether the task waits
// on another call or has completed.
func TestRepeatedMessage(t *testing.T) {
	t.Parallel()
	for _, version := range []a2a.ProtocolVersion{a2a.Version, a2av0.Version} {
		t.Run(string(version), func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, 1, nil,
				modeltest.CallReply(modeltest.Call("q1", "clear_playlist", map[string]any{})),
				modeltest.CallReply(modeltest.Call("c2", "change_bgm", map[string]any{"track": 2})),
				modeltest.TextReply("cleared, and track 2 is on"))
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			c := f.clientOf(0, "ada", version)
			start := func() *a2a.SendMessageRequest { return withID(textMessage("clear the playlist"), "m-start") }

			task := send(ctx, t, c, start())
			if ids := pendingIDs(t, task); len(ids) != 1 {
				t.Fatalf("pending calls = %v, want the question", ids)
			}
			again := send(ctx, t, c, start())
			if again.ID != task.ID || again.Status.State != a2a.TaskStateInputRequired {
				t.Fatalf("the first message again: task %q %s, want %q input-required", again.ID, again.Status.State, task.ID)
			}
			if id, state := streamTask(ctx, t, c, start()); id != task.ID || state != a2a.TaskStateInputRequired {
				t.Fatalf("the first message again, streamed: task %q %s, want %q input-required", id, state, task.ID)
			}
			if n := f.model.Calls(); n != 1 {
				t.Fatalf("model called %d times after the first message and its repeats, want 1", n)
			}

			reply := func() *a2a.SendMessageRequest {
				return withID(answerMessage(task, &genai.FunctionResponse{ID: pendingIDs(t, task)[0], Name: userinput.ToolName,
					Response: map[string]any{"responses": map[string]any{"confirm": map[string]any{"action": "accept"}}}}), "m-reply")
			}
			next := send(ctx, t, c, reply())
			if ids := pendingIDs(t, next); len(ids) != 1 || ids[0] != "c2" {
				t.Fatalf("after the reply: pending %v, want [c2]", ids)
			}
			for _, streamed := range []bool{false, true} {
				id, state := task.ID, a2a.TaskState("")
				if streamed {
					id, state = streamTask(ctx, t, c, reply())
				} else {
					got := send(ctx, t, c, reply())
					id, state = got.ID, got.Status.State
					if ids := pendingIDs(t, got); len(ids) != 1 || ids[0] != "c2" {
						t.Fatalf("the reply again: pending %v, want [c2]", ids)
					}
				}
				if id != task.ID || state != a2a.TaskStateInputRequired {
					t.Fatalf("the reply again (streamed %v): task %q %s, want %q input-required", streamed, id, state, task.ID)
				}
			}
			if n := f.model.Calls(); n != 2 {
				t.Fatalf("model called %d times after the reply and its repeats, want 2", n)
			}

			answer := func() *a2a.SendMessageRequest { return withID(answerMessage(task, bgmAnswer("c2", 2)), "m-answer") }
			if done := send(ctx, t, c, answer()); done.Status.State != a2a.TaskStateCompleted {
				t.Fatalf("after the answer: %s, want completed", done.Status.State)
			}
			for name, req := range map[string]func() *a2a.SendMessageRequest{"the answer": answer, "the reply": reply, "the first message": start} {
				got := send(ctx, t, c, req())
				if got.ID != task.ID || got.Status.State != a2a.TaskStateCompleted || artifactText(got) != "cleared, and track 2 is on" {
					t.Fatalf("%s again after the end: task %q %s %q, want %q completed", name, got.ID, got.Status.State, artifactText(got), task.ID)
				}
				if id, state := streamTask(ctx, t, c, req()); id != task.ID || state != a2a.TaskStateCompleted {
					t.Fatalf("%s again after the end, streamed: task %q %s, want %q completed", name, id, state, task.ID)
				}
			}
			if n := f.model.Calls(); n != 3 {
				t.Fatalf("model called %d times in all, want 3", n)
			}
		})
	}
}

// TestRepeatedMessageAtOnce: the same message sent eight times at once,
// to two instances, over both protocol versions, runs one turn, and every
// sender gets that turn's task; so does an answer sent eight times at
// once, which resumes the agent once.
func TestRepeatedMessageAtOnce(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 2, nil)
	// A model without memory: the same message, run speculatively by a
	// sender whose turn then loses the race, gets the same answer.
	f.model.Repeat = func(req *model.LLMRequest) *genai.Content {
		for _, p := range req.Contents[len(req.Contents)-1].Parts {
			if p.FunctionResponse != nil {
				return modeltest.TextReply("now playing track 2")(req)
			}
		}
		return modeltest.CallReply(modeltest.Call("c1", "change_bgm", map[string]any{"track": 2}))(req)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	clients := []*a2aclient.Client{f.clientOf(0, "ada", a2a.Version), f.clientOf(1, "ada", a2av0.Version)}
	// ADK v2.2.0's runner sets its root agent's mode on the agent's first
	// run without a lock: a first message before the race keeps two first
	// runs from racing there.
	for _, c := range clients {
		send(ctx, t, c, textMessage("warm up"))
	}

	race := func(req func() *a2a.SendMessageRequest) []*a2a.Task {
		tasks := make([]*a2a.Task, 8)
		var wg sync.WaitGroup
		for i := range tasks {
			wg.Go(func() {
				res, err := clients[i%2].SendMessage(ctx, req())
				if err != nil {
					t.Errorf("sender %d: %v", i, err)
					return
				}
				tasks[i], _ = res.(*a2a.Task)
			})
		}
		wg.Wait()
		for i, task := range tasks {
			if task == nil || task.ID != tasks[0].ID {
				t.Fatalf("sender %d got task %v, want the one task all got (%v)", i, task, tasks[0])
			}
		}
		return tasks
	}

	tasks := race(func() *a2a.SendMessageRequest { return withID(textMessage("play track 2"), "m-play") })
	for i, task := range tasks {
		if ids := pendingIDs(t, task); len(ids) != 1 || ids[0] != "c1" {
			t.Fatalf("sender %d: pending %v, want [c1]", i, ids)
		}
	}
	chat := tasks[0].ContextID
	if n := userMessages(t, f, chat); n != 1 {
		t.Fatalf("the chat holds %d user messages after one message sent eight times, want 1", n)
	}

	calls := f.model.Calls()
	tasks = race(func() *a2a.SendMessageRequest { return withID(answerMessage(tasks[0], bgmAnswer("c1", 2)), "m-answer") })
	for i, task := range tasks {
		if task.Status.State != a2a.TaskStateCompleted || artifactText(task) != "now playing track 2" {
			t.Fatalf("sender %d of the answer: %s %q, want completed %q", i, task.Status.State, artifactText(task), "now playing track 2")
		}
	}
	if n := f.model.Calls() - calls; n != 1 {
		t.Fatalf("model called %d times for one answer sent eight times, want 1 (one resume)", n)
	}
}

// userMessages counts the user's messages (text) in a chat of ada's.
func userMessages(t *testing.T, f *fixture, chat string) int {
	t.Helper()
	state, err := f.instances[0].team.Pending(t.Context(), toolcallback.PendingRequest{UserID: "ada", ChatID: chat, History: -1})
	if err != nil {
		t.Fatalf("Pending(%q): %v", chat, err)
	}
	n := 0
	for ev := range state.History.All() {
		if ev.Author == "user" && ev.Content != nil && slices.ContainsFunc(ev.Content.Parts, func(p *genai.Part) bool { return p.Text != "" }) {
			n++
		}
	}
	return n
}
