package a2aserver

import (
	"context"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"google.golang.org/adk/v2/model"
	"google.golang.org/genai"
)

// TestThoughtSummary: the model's thought summary reaches an A2A client as
// the agent message of a working status, its text part marked adk_thought
// (as ADK's A2A conversion marks thoughts); the artifact holds the answer
// alone.
func TestThoughtSummary(t *testing.T) {
	f := newFixture(t, 1, nil, func(*model.LLMRequest) *genai.Content {
		return &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{{Text: "no tool needed", Thought: true}, {Text: "hello"}}}
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var thoughts, answer []string
	for ev, err := range f.client(0, "ada").SendStreamingMessage(ctx, textMessage("hi")) {
		if err != nil {
			t.Fatalf("SendStreamingMessage: %v", err)
		}
		switch e := ev.(type) {
		case *a2a.TaskStatusUpdateEvent:
			if m := e.Status.Message; e.Status.State == a2a.TaskStateWorking && m != nil {
				for _, p := range m.Parts {
					if p.Meta()["adk_thought"] == true {
						thoughts = append(thoughts, p.Text())
					}
				}
			}
		case *a2a.TaskArtifactUpdateEvent:
			for _, p := range e.Artifact.Parts {
				answer = append(answer, p.Text())
			}
		}
	}
	if len(thoughts) != 1 || thoughts[0] != "no tool needed" {
		t.Errorf("thought summaries streamed = %q, want [no tool needed]", thoughts)
	}
	if len(answer) != 1 || answer[0] != "hello" {
		t.Errorf("artifact parts = %q, want [hello]", answer)
	}
}
