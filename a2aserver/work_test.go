package a2aserver

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/cloudtasks/apiv2/cloudtaskspb"
	"github.com/a2aproject/a2a-go/v2/a2a"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/genai"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/baton-run/baton/a2aremote"
	"github.com/baton-run/baton/internal/a2apeer"
	"github.com/baton-run/baton/internal/firestoretest"
	"github.com/baton-run/baton/internal/localtasks"
	"github.com/baton-run/baton/modeltest"
	"github.com/baton-run/baton/sessionstore"
	"github.com/baton-run/baton/toolcallback"
	"github.com/baton-run/baton/workqueue"
)

// newWorkFixture is a one-instance deployment whose agent has a background
// tool, prepare_playlist, running work; a Cloud Tasks API served in
// process delivers its calls to the team's Work.
func newWorkFixture(t *testing.T, work func(ctx context.Context, a struct {
	Mood string `json:"mood"`
}) (map[string]any, error), script ...modeltest.Reply) *fixture {
	t.Helper()
	playlist, err := toolcallback.Background(toolcallback.BackgroundConfig{Name: "prepare_playlist", Description: "prepare a playlist"}, work)
	if err != nil {
		t.Fatal(err)
	}
	return newQueuedFixture(t, func(m model.LLM) toolcallback.Member {
		root, err := llmagent.New(llmagent.Config{Name: "dj", Description: "plays music", Model: m, Tools: []tool.Tool{playlist}})
		if err != nil {
			t.Fatal(err)
		}
		return toolcallback.Member{Agent: root, Background: []*toolcallback.BackgroundTool{playlist}}
	}, script...)
}

// newQueuedFixture is a one-instance deployment of the team member
// member makes with the fixture's model, with a Cloud Tasks API served in
// process delivering its calls' tasks to the team's Work, and a push
// door (the A2A function's /remote-push) serving the remote agents'
// notifications to the team's Notify.
func newQueuedFixture(t *testing.T, member func(m model.LLM) toolcallback.Member, script ...modeltest.Reply) *fixture {
	t.Helper()
	f := &fixture{t: t, model: &modeltest.Strict{T: t, Script: script}}
	issuer, err := localtasks.NewIssuer()
	if err != nil {
		t.Fatal(err)
	}
	tasks, err := localtasks.Start(t.Context(), &localtasks.Options{Signer: issuer.Sign, TimeScale: 0.05})
	if err != nil {
		t.Fatal(err)
	}
	const queueName = "projects/test/locations/here/queues/work"
	if _, err := tasks.Client().CreateQueue(t.Context(), &cloudtaskspb.CreateQueueRequest{Parent: "projects/test/locations/here",
		Queue: &cloudtaskspb.Queue{Name: queueName, RetryConfig: &cloudtaskspb.RetryConfig{MaxAttempts: 5,
			MinBackoff: durationpb.New(time.Second), MaxBackoff: durationpb.New(2 * time.Second)}}}); err != nil {
		t.Fatal(err)
	}
	var team *toolcallback.Team
	door := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		task, err := workqueue.Decode(body)
		if err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		out, err := team.Work(r.Context(), toolcallback.WorkRequest{UserID: task.User, SessionID: task.Session, CallID: task.Call, Step: task.Step})
		if err != nil || out.Retry {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		if out.Invocation != nil {
			_ = out.Invocation.Wait()
		}
	}))
	t.Cleanup(door.Close)
	t.Cleanup(tasks.Stop) // before the door closes
	queue, err := workqueue.New(tasks.Client(), workqueue.Config{Queue: queueName, URL: door.URL + "/work", Invoker: "worker@test.iam.gserviceaccount.com"})
	if err != nil {
		t.Fatal(err)
	}
	push := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		out, err := team.Notify(r.Context(), r.Header.Get("A2A-Notification-Token"), body)
		if err != nil {
			t.Logf("push refused: %v", err)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		if out.Invocation != nil {
			_ = out.Invocation.Wait()
		}
	}))
	t.Cleanup(push.Close)
	client, counter := firestoretest.NewCountingClient(t)
	sessions := sessionstore.New(client, nil)
	team, err = toolcallback.NewTeam(sessions, "app", []toolcallback.Member{member(f.model)},
		&toolcallback.Options{InvocationTimeout: 30 * time.Second, Queue: queue, ProgressInterval: 50 * time.Millisecond,
			TokenKey: []byte("test-key"), RemotePushURL: push.URL + "/remote-push"})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(New(client, sessions, team, bearerAuth, nil))
	t.Cleanup(srv.Close)
	f.instances = append(f.instances, &instance{srv: srv, client: client, counter: counter, team: team})
	return f
}

// TestTaskRemoteProgress: a task whose turn pauses on a remote agent's
// call (an a2a-go agent that pushes) stays working, and the remote's
// working status reaches Baton's A2A caller as a working status with a
// message naming the call; the remote's result resumes the agent, whose
// answer is the task's artifact, and the task completes.
func TestTaskRemoteProgress(t *testing.T) {
	t.Parallel()
	peer := a2apeer.Start(t, a2apeer.Works)
	events, err := toolcallback.Remote(toolcallback.RemoteConfig{Name: "ask_events", Description: "ask the events agent",
		Agent: a2aremote.Config{CardURL: peer.URL(), AllowPrivate: true}, Timeout: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	f := newQueuedFixture(t, func(m model.LLM) toolcallback.Member {
		root, err := llmagent.New(llmagent.Config{Name: "concierge", Description: "knows the town", Model: m, Tools: []tool.Tool{events}})
		if err != nil {
			t.Fatal(err)
		}
		return toolcallback.Member{Agent: root, Remote: []*toolcallback.RemoteTool{events}}
	}, modeltest.CallReply(modeltest.Call("c1", "ask_events", map[string]any{"message": "what is on tonight?"})), modeltest.EchoReply)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	states, progress, artifact := streamProgress(ctx, t, f, "ask the events agent what is on tonight", "c1", peer.Release)
	if !strings.Contains(progress, "looking at the listings") {
		t.Errorf("progress the caller saw = %q, want the remote's working message", progress)
	}
	if !strings.Contains(artifact, "jazz at the Blue Room") {
		t.Errorf("artifact = %q, want the resumed agent's answer on the remote's result", artifact)
	}
	checkWorkedThrough(t, states, "a remote call")
}

// checkWorkedThrough checks that a task whose turn paused on what (a
// call no caller answers) never asked its caller, and completed last.
func checkWorkedThrough(t *testing.T, states []a2a.TaskState, what string) {
	t.Helper()
	for _, s := range states {
		if s == a2a.TaskStateInputRequired {
			t.Errorf("states = %v: %s is no caller's to answer", states, what)
		}
	}
	if n := len(states); n == 0 || states[n-1] != a2a.TaskStateCompleted {
		t.Errorf("states = %v, want the task completed last", states)
	}
}

// streamProgress sends text to f's first instance as ada, streaming, and
// returns the task's states, the progress of call it saw (seen is called
// once the first came), and its artifacts' text.
func streamProgress(ctx context.Context, t *testing.T, f *fixture, text, call string, seen func()) (states []a2a.TaskState, progress, artifact string) {
	t.Helper()
	var p, a strings.Builder
	for ev, err := range f.client(0, "ada").SendStreamingMessage(ctx, textMessage(text)) {
		if err != nil {
			t.Fatalf("SendStreamingMessage: %v (states %v, progress %q, artifact %q)", err, states, p.String(), a.String())
		}
		switch e := ev.(type) {
		case *a2a.TaskStatusUpdateEvent:
			states = append(states, e.Status.State)
			if m := e.Status.Message; e.Status.State == a2a.TaskStateWorking && m != nil {
				for _, part := range m.Parts {
					if part.Meta()["baton_progress"] == true && part.Meta()["baton_call"] == call {
						if p.Len() == 0 {
							seen()
						}
						p.WriteString(part.Text())
					}
				}
			}
		case *a2a.TaskArtifactUpdateEvent:
			for _, part := range e.Artifact.Parts {
				a.WriteString(part.Text())
			}
		}
	}
	return states, p.String(), a.String()
}

// TestTaskBackgroundProgress: a task whose turn pauses on a background
// call stays working, not input-required (no caller answers it); each
// progress report the worker stores reaches the caller as a working
// status with a message naming the call; the agent the work's result
// resumes answers in the task's artifact, and the task completes.
func TestTaskBackgroundProgress(t *testing.T) {
	t.Parallel()
	seen := make(chan struct{})
	f := newWorkFixture(t, func(ctx context.Context, a struct {
		Mood string `json:"mood"`
	}) (map[string]any, error) {
		if err := toolcallback.Progress(ctx, "picked rain"); err != nil {
			return nil, err
		}
		select { // the work goes on until the caller has seen its progress
		case <-seen:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return map[string]any{"tracks": []string{"rain", "tide"}}, nil
	}, func(*model.LLMRequest) *genai.Content {
		return &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{{FunctionCall: &genai.FunctionCall{ID: "c1", Name: "prepare_playlist",
			Args: map[string]any{"mood": "calm"}}}}}
	}, modeltest.EchoReply)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	states, progress, artifact := streamProgress(ctx, t, f, "make me a calm playlist", "c1", func() { close(seen) })
	if !strings.Contains(progress, "picked rain") {
		t.Errorf("progress the caller saw = %q, want the work's report", progress)
	}
	if !strings.Contains(artifact, `prepare_playlist={"tracks":["rain","tide"]}`) {
		t.Errorf("artifact = %q, want the resumed agent's answer on the work's result", artifact)
	}
	checkWorkedThrough(t, states, "a background call")
}
