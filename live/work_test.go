package live_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/cloudtasks/apiv2/cloudtaskspb"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/genai"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/baton-run/baton/a2aremote"
	"github.com/baton-run/baton/internal/a2apeer"
	"github.com/baton-run/baton/internal/localtasks"
	"github.com/baton-run/baton/live"
	"github.com/baton-run/baton/modeltest"
	"github.com/baton-run/baton/sessionstore"
	"github.com/baton-run/baton/toolcallback"
	"github.com/baton-run/baton/workqueue"
)

type mood struct {
	Mood string `json:"mood"`
}

// workInstance is an instance whose agent has a background tool,
// prepare_playlist, running work; a Cloud Tasks API served in process
// delivers its calls to the team's Work.
func (w *world) workInstance(work func(ctx context.Context, a mood) (map[string]any, error)) *instance {
	t := w.t
	playlist, err := toolcallback.Background(toolcallback.BackgroundConfig{Name: "prepare_playlist", Description: "prepare a playlist"}, work)
	if err != nil {
		t.Fatal(err)
	}
	return w.queuedInstance([]tool.Tool{playlist}, toolcallback.Member{Background: []*toolcallback.BackgroundTool{playlist}})
}

// queuedInstance is an instance whose agent has tools, which member
// (its agent left for this to set) declares as the queue's work; a Cloud
// Tasks API served in process delivers its calls' tasks to the team's
// Work, and a push door serves remote agents' notifications to its
// Notify.
func (w *world) queuedInstance(tools []tool.Tool, member toolcallback.Member) *instance {
	t := w.t
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
	door := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		task, err := workqueue.Decode(body)
		if err != nil {
			rw.WriteHeader(http.StatusBadRequest)
			return
		}
		out, err := team.Work(r.Context(), toolcallback.WorkRequest{UserID: task.User, SessionID: task.Session, CallID: task.Call, Step: task.Step})
		if err != nil || out.Retry {
			rw.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	t.Cleanup(door.Close)
	push := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if _, err := team.Notify(r.Context(), r.Header.Get("A2A-Notification-Token"), body); err != nil {
			rw.WriteHeader(http.StatusUnauthorized)
		}
	}))
	t.Cleanup(push.Close)
	t.Cleanup(tasks.Stop) // before the door closes
	queue, err := workqueue.New(tasks.Client(), workqueue.Config{Queue: queueName, URL: door.URL + "/work", Invoker: "worker@test.iam.gserviceaccount.com"})
	if err != nil {
		t.Fatal(err)
	}
	if member.Agent, err = llmagent.New(llmagent.Config{Name: "assistant", Model: w.text, Instruction: "Answer briefly.", Tools: tools}); err != nil {
		t.Fatal(err)
	}
	team, err = toolcallback.NewTeam(sessionstore.New(w.client, nil), "app", []toolcallback.Member{member},
		&toolcallback.Options{TokenKey: []byte("test-key-0123456789abcdef0123456789"), Queue: queue, ProgressInterval: 50 * time.Millisecond,
			RemotePushURL: push.URL + "/remote-push"})
	if err != nil {
		t.Fatal(err)
	}
	gc, err := genai.NewClient(context.Background(), w.model.ClientConfig())
	if err != nil {
		t.Fatal(err)
	}
	r, err := live.New(team, live.Model{Client: gc, Name: liveModel, Setup: textSetup()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return &instance{team: team, runner: r}
}

// TestBackgroundProgressFrames: a background call made in live mode is
// shown as a call of kind background; the progress its worker stores
// reaches the client as tool-progress frames of that call; its result
// then reaches the model, and the client sees the call's result.
func TestBackgroundProgressFrames(t *testing.T) {
	w := newWorld(t, &modeltest.LiveOptions{Script: []modeltest.Reply{
		modeltest.CallReply(modeltest.Call("", "prepare_playlist", map[string]any{"mood": "calm"})), modeltest.EchoReply, modeltest.EchoReply,
	}})
	seen := make(chan struct{})
	in := w.workInstance(func(ctx context.Context, a mood) (map[string]any, error) {
		if err := toolcallback.Progress(ctx, "picked rain"); err != nil {
			return nil, err
		}
		select { // the work goes on until the client has its progress
		case <-seen:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return map[string]any{"tracks": []string{"rain", "tide"}}, nil
	})
	conv, cl := in.open(t, chat, device)
	if err := conv.Text("make me a calm playlist"); err != nil {
		t.Fatal(err)
	}
	call := cl.toolCall(1)
	if call.Kind != string(toolcallback.KindBackground) || call.ToolName != "prepare_playlist" {
		t.Fatalf("tool call = %+v, want prepare_playlist of kind background", call)
	}
	progress := cl.await("the work's progress", 1, func(m live.Message) bool {
		p, ok := m.(live.ToolProgress)
		return ok && p.ToolCallID == call.ToolCallID
	}).(live.ToolProgress)
	close(seen)
	var line string
	if err := json.Unmarshal(progress.Progress, &line); err != nil || line != "picked rain" || progress.ToolName != "prepare_playlist" {
		t.Errorf("progress = %+v (%s), want prepare_playlist's report", progress, progress.Progress)
	}
	result := cl.await("the work's result", 1, func(m live.Message) bool {
		r, ok := m.(live.ToolResult)
		return ok && r.ToolCallID == call.ToolCallID
	}).(live.ToolResult)
	if b, _ := json.Marshal(result.Output); string(b) != `{"tracks":["rain","tide"]}` {
		t.Errorf("result = %+v, want the work's", result)
	}
}

// TestRemoteProgressFrames: a remote agent's call made in live mode is
// shown as a call of kind remote; the remote's working status reaches the
// client as a tool-progress frame of that call; the remote's result then
// reaches the model, and the client sees the call's result.
func TestRemoteProgressFrames(t *testing.T) {
	w := newWorld(t, &modeltest.LiveOptions{Script: []modeltest.Reply{
		modeltest.CallReply(modeltest.Call("", "ask_events", map[string]any{"message": "what is on tonight?"})), modeltest.EchoReply, modeltest.EchoReply,
	}})
	peer := a2apeer.Start(t, a2apeer.Works)
	events, err := toolcallback.Remote(toolcallback.RemoteConfig{Name: "ask_events", Description: "ask the events agent",
		Agent: a2aremote.Config{CardURL: peer.URL(), AllowPrivate: true}, Timeout: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	in := w.queuedInstance([]tool.Tool{events}, toolcallback.Member{Remote: []*toolcallback.RemoteTool{events}})
	conv, cl := in.open(t, chat, device)
	if err := conv.Text("ask the events agent what is on tonight"); err != nil {
		t.Fatal(err)
	}
	call := cl.toolCall(1)
	if call.Kind != string(toolcallback.KindRemote) || call.ToolName != "ask_events" {
		t.Fatalf("tool call = %+v, want ask_events of kind remote", call)
	}
	progress := cl.await("the remote's progress", 1, func(m live.Message) bool {
		p, ok := m.(live.ToolProgress)
		return ok && p.ToolCallID == call.ToolCallID
	}).(live.ToolProgress)
	peer.Release()
	var line string
	if err := json.Unmarshal(progress.Progress, &line); err != nil || !strings.Contains(line, "looking at the listings") || progress.ToolName != "ask_events" {
		t.Errorf("progress = %+v (%s), want the remote's working message", progress, progress.Progress)
	}
	result := cl.await("the remote's result", 1, func(m live.Message) bool {
		r, ok := m.(live.ToolResult)
		return ok && r.ToolCallID == call.ToolCallID
	}).(live.ToolResult)
	if b, _ := json.Marshal(result.Output); !strings.Contains(string(b), "jazz at the Blue Room") {
		t.Errorf("result = %s, want the remote's", b)
	}
}
