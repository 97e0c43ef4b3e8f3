package a2aserver

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"google.golang.org/genai"

	"github.com/baton-run/baton/internal/polltest"
	"github.com/baton-run/baton/modeltest"
)

func bgmAnswer(id string, track int) *genai.FunctionResponse {
	return &genai.FunctionResponse{ID: id, Name: "change_bgm", Response: map[string]any{"playing": track}}
}

// TestDuplicateAnswers: 20 identical answers to one input-required task,
// sent at once to two instances, resume the agent once.
func TestDuplicateAnswers(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 2, nil,
		modeltest.CallReply(modeltest.Call("c1", "change_bgm", map[string]any{"track": 2})),
		modeltest.TextReply("now playing track 2"))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	clients := []*a2aclient.Client{f.client(0, "ada"), f.client(1, "ada")}
	task := send(ctx, t, clients[0], textMessage("play track 2"))

	var wg sync.WaitGroup
	var mu sync.Mutex
	completed := 0
	for i := range 20 {
		wg.Go(func() {
			rctx, rcancel := context.WithTimeout(ctx, 30*time.Second)
			defer rcancel()
			res, err := clients[i%2].SendMessage(rctx, answerMessage(task, bgmAnswer("c1", 2)))
			if err != nil {
				return // a duplicate is told the task moved on
			}
			if got, ok := res.(*a2a.Task); ok && got.Status.State == a2a.TaskStateCompleted && artifactText(got) == "now playing track 2" {
				mu.Lock()
				completed++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if completed == 0 {
		t.Errorf("no duplicate answer saw the completed task")
	}
	if calls := f.model.Calls(); calls != 2 {
		t.Errorf("model called %d times, want 2 (the call, then one resume)", calls)
	}
	got, err := clients[1].GetTask(ctx, &a2a.GetTaskRequest{ID: task.ID})
	if err != nil || got.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("GetTask = %v, %v; want completed", got, err)
	}
}

// TestTwoCallStep: a model step that pauses on two calls keeps the task
// input-required until both are answered; then the agent resumes once.
func TestTwoCallStep(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 1, nil,
		modeltest.CallReply(
			modeltest.Call("c1", "change_bgm", map[string]any{"track": 1}),
			modeltest.Call("c2", "change_bgm", map[string]any{"track": 2})),
		modeltest.TextReply("both done"))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := f.client(0, "ada")
	task := send(ctx, t, c, textMessage("play 1 and 2"))
	if ids := pendingIDs(t, task); !slices.Equal(sorted(ids), []string{"c1", "c2"}) {
		t.Fatalf("pending calls = %v, want [c1 c2]", ids)
	}

	half := send(ctx, t, c, answerMessage(task, bgmAnswer("c1", 1)))
	if ids := pendingIDs(t, half); !slices.Equal(ids, []string{"c2"}) {
		t.Fatalf("after answering c1: pending calls = %v, want [c2]", ids)
	}
	if calls := f.model.Calls(); calls != 1 {
		t.Fatalf("model called %d times after one of two answers, want 1", calls)
	}

	done := send(ctx, t, c, answerMessage(task, bgmAnswer("c2", 2)))
	if done.Status.State != a2a.TaskStateCompleted || artifactText(done) != "both done" {
		t.Fatalf("after both answers: %s %q, want completed %q", done.Status.State, artifactText(done), "both done")
	}
	if calls := f.model.Calls(); calls != 2 {
		t.Errorf("model called %d times, want 2", calls)
	}
}

func sorted(s []string) []string { s = slices.Clone(s); slices.Sort(s); return s }

// TestCancelMidPause: canceling an input-required task answers its calls
// with an error response, so the chat's transcript stays valid (the strict
// model checks every request): the next message in the chat works.
func TestCancelMidPause(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 1, nil,
		modeltest.CallReply(modeltest.Call("c1", "change_bgm", map[string]any{"track": 2})),
		// The canceled call's error response resumes the agent once (Team
		// has no way to close a call without a model step).
		modeltest.TextReply("the music was not changed"),
		modeltest.TextReply("hello again"))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := f.client(0, "ada")
	task := send(ctx, t, c, textMessage("play track 2"))
	pendingIDs(t, task)

	canceled, err := c.CancelTask(ctx, &a2a.CancelTaskRequest{ID: task.ID})
	if err != nil || canceled.Status.State != a2a.TaskStateCanceled {
		t.Fatalf("CancelTask = %v, %v; want canceled", canceled, err)
	}
	if _, err := c.SendMessage(ctx, answerMessage(task, bgmAnswer("c1", 2))); err == nil {
		t.Errorf("an answer on the canceled task was accepted")
	}

	next := textMessage("hi")
	next.Message.ContextID = task.ContextID
	// The cancel's resume may still hold the chat.
	var res a2a.SendMessageResult
	polltest.Within(t, 20*time.Second, "the chat to take the next message", func() bool {
		res, err = c.SendMessage(ctx, next)
		return err == nil
	})
	if got := res.(*a2a.Task); got.Status.State != a2a.TaskStateCompleted || artifactText(got) != "hello again" {
		t.Fatalf("next message: %s %q, want completed %q", got.Status.State, artifactText(got), "hello again")
	}
	req := f.model.LastRequest()
	var errorResponse bool
	for _, content := range req.Contents {
		for _, p := range content.Parts {
			if fr := p.FunctionResponse; fr != nil && fr.ID == "c1" && strings.Contains(fr.Response["error"].(string), "cancel") {
				errorResponse = true
			}
		}
	}
	if !errorResponse {
		t.Errorf("the model never read c1's cancellation:\n%s", modeltest.DumpContents(req.Contents))
	}
}

// TestTaskNotFound: an unknown task and another user's task are not found,
// whatever is asked of them.
func TestTaskNotFound(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 1, nil, modeltest.CallReply(modeltest.Call("c1", "change_bgm", map[string]any{"track": 2})))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	task := send(ctx, t, f.client(0, "ada"), textMessage("play track 2"))
	eve := f.client(0, "eve")
	unknown := &a2a.Task{ID: "no-such-task", ContextID: task.ContextID}
	for _, tt := range []struct {
		name string
		task *a2a.Task
	}{{"unknown task", unknown}, {"another user's task", task}} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := eve.GetTask(ctx, &a2a.GetTaskRequest{ID: tt.task.ID}); !errors.Is(err, a2a.ErrTaskNotFound) {
				t.Errorf("GetTask error = %v, want ErrTaskNotFound", err)
			}
			if _, err := eve.CancelTask(ctx, &a2a.CancelTaskRequest{ID: tt.task.ID}); !errors.Is(err, a2a.ErrTaskNotFound) {
				t.Errorf("CancelTask error = %v, want ErrTaskNotFound", err)
			}
			if _, err := eve.SendMessage(ctx, answerMessage(tt.task, bgmAnswer("c1", 2))); !errors.Is(err, a2a.ErrTaskNotFound) {
				t.Errorf("SendMessage answering its call: error = %v, want ErrTaskNotFound", err)
			}
			for _, err := range eve.SubscribeToTask(ctx, &a2a.SubscribeToTaskRequest{ID: tt.task.ID}) {
				if !errors.Is(err, a2a.ErrTaskNotFound) {
					t.Errorf("SubscribeToTask error = %v, want ErrTaskNotFound", err)
				}
				break
			}
		})
	}
	// Ada's call is still hers to answer.
	got, err := f.client(0, "ada").GetTask(ctx, &a2a.GetTaskRequest{ID: task.ID})
	if err != nil || got.Status.State != a2a.TaskStateInputRequired {
		t.Errorf("ada's task after eve's attempts: %v, %v; want input-required", got, err)
	}
}

// TestBadRequests: malformed JSON-RPC, invalid ids and oversize bodies get
// JSON-RPC errors, and nothing is written.
func TestBadRequests(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 1, &Options{MaxBodyBytes: 4096})
	big := `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"m","role":"user","parts":[{"kind":"text","text":"` +
		strings.Repeat("x", 5000) + `"}]}}}`
	tests := []struct {
		name   string
		body   string
		status int
		code   int
	}{
		{"not JSON", `{"jsonrpc":`, http.StatusOK, -32700},
		{"params not an object", `{"jsonrpc":"2.0","id":1,"method":"message/send","params":"hi"}`, http.StatusOK, -32602},
		{"unknown method", `{"jsonrpc":"2.0","id":1,"method":"tasks/explode","params":{}}`, http.StatusOK, -32601},
		{"task id with a slash", `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"m","role":"user","taskId":"a/b","parts":[{"kind":"text","text":"hi"}]}}}`, http.StatusOK, -32602},
		{"context id with a slash", `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"m","role":"user","contextId":"a/b","parts":[{"kind":"text","text":"hi"}]}}}`, http.StatusOK, -32602},
		{"answer without a task", `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"m","role":"user","parts":[{"kind":"data","data":{"id":"c1","name":"change_bgm","response":{}},"metadata":{"adk_type":"function_response"}}]}}}`, http.StatusOK, -32602},
		{"no parts", `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"m","role":"user","parts":[]}}}`, http.StatusOK, -32602},
		{"oversize body", big, http.StatusRequestEntityTooLarge, -32600},
	}
	counter := f.instances[0].counter
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := counter.Writes()
			resp, code, raw := f.postRPCError(t, tt.body)
			if resp.StatusCode != tt.status || code != tt.code {
				t.Errorf("status %d code %d, want %d and %d (%s)", resp.StatusCode, code, tt.status, tt.code, raw)
			}
			if w := counter.Writes() - before; w != 0 {
				t.Errorf("%d documents written, want none", w)
			}
		})
	}
}

// webhook records the notifications it receives.
type webhook struct {
	mu    sync.Mutex
	got   []string // task state of each notification
	token []string
}

func (h *webhook) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var task struct {
		Status struct {
			State string `json:"state"`
		} `json:"status"`
	}
	json.NewDecoder(r.Body).Decode(&task)
	h.mu.Lock()
	h.got = append(h.got, task.Status.State)
	h.token = append(h.token, r.Header.Get("X-A2A-Notification-Token"))
	h.mu.Unlock()
}

func (h *webhook) states() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.got)
}
