package a2aserver

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/functiontool"
	"google.golang.org/genai"

	"github.com/baton-run/baton/internal/polltest"
	"github.com/baton-run/baton/modeltest"
	"github.com/baton-run/baton/userinput"
)

// askingTool asks whether to clear the playlist (as an MCP server's
// multi-round-trip request does) and says what the answer was.
func askingTool(t *testing.T) tool.Tool {
	ask, err := functiontool.New(functiontool.Config{Name: "clear_playlist", Description: "clears the playlist, after asking"},
		func(ctx agent.Context, _ struct{}) (map[string]any, error) {
			reply, err := userinput.ReplyOf(ctx)
			if err != nil || reply != nil {
				if reply != nil {
					return map[string]any{"action": reply.Responses["confirm"].Action}, nil
				}
				return nil, err
			}
			return map[string]any{"status": "asking"}, userinput.Ask(ctx, userinput.Request{
				Tool: "clear_playlist", Message: "Clear it?", Round: 1, State: "s1",
				Requests: map[string]any{"confirm": map[string]any{"method": "elicitation/create"}}})
		})
	if err != nil {
		t.Fatal(err)
	}
	return ask
}

// TestInputRequired: a tool's question makes the task input-required and
// is listed as a call of baton_input; a function response with the
// responses answers it, and canceling the task cancels it.
func TestInputRequired(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		cancel bool
	}{{name: "answered"}, {name: "canceled", cancel: true}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, 1, nil, modeltest.CallReply(modeltest.Call("q1", "clear_playlist", map[string]any{})), modeltest.EchoReply)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			c := f.client(0, "ada")
			task := send(ctx, t, c, textMessage("clear the playlist"))
			ids := pendingIDs(t, task)
			var listed bool
			for _, p := range task.Status.Message.Parts {
				if data, ok := p.Data().(map[string]any); ok && data["name"] == userinput.ToolName && len(ids) == 1 && data["id"] == ids[0] {
					listed = true
				}
			}
			if !listed {
				t.Fatalf("input-required task lists %v; want one call of %s", task.Status.Message.Parts, userinput.ToolName)
			}
			if tc.cancel {
				if got, err := c.CancelTask(ctx, &a2a.CancelTaskRequest{ID: task.ID}); err != nil || got.Status.State != a2a.TaskStateCanceled {
					t.Fatalf("CancelTask = %v, %v", got, err)
				}
				// The cancellation runs the tool again with "cancel", whose
				// result the model reads.
				polltest.Until(t, "the model to read the cancellation", func() bool {
					req := f.model.LastRequest()
					return req != nil && strings.Contains(modeltest.DumpContents(req.Contents), "cancel")
				})
				return
			}
			done := send(ctx, t, c, answerMessage(task, &genai.FunctionResponse{ID: ids[0], Name: userinput.ToolName,
				Response: map[string]any{"responses": map[string]any{"confirm": map[string]any{"action": "accept", "content": map[string]any{"ok": true}}}}}))
			if done.Status.State != a2a.TaskStateCompleted || !strings.Contains(artifactText(done), `"action":"accept"`) {
				t.Fatalf("after the answer: %s %q; want completed with the tool's answer", done.Status.State, artifactText(done))
			}
		})
	}
}
