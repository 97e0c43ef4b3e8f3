package agent

import (
	"context"
	"iter"
	"strings"
	"sync"
	"testing"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/runner"
	"google.golang.org/adk/v2/session"
	"google.golang.org/genai"
)

// toolWatch wraps the offline model and records, for each request, the
// calls it answered with that name no tool of the request.
type toolWatch struct {
	Offline
	mu      sync.Mutex
	unknown []string
	calls   []string
}

func (w *toolWatch) GenerateContent(ctx context.Context, req *model.LLMRequest, stream bool) iter.Seq2[*model.LLMResponse, error] {
	return func(yield func(*model.LLMResponse, error) bool) {
		for resp, err := range w.Offline.GenerateContent(ctx, req, stream) {
			if resp != nil && resp.Content != nil {
				for _, p := range resp.Content.Parts {
					if fc := p.FunctionCall; fc != nil {
						w.mu.Lock()
						w.calls = append(w.calls, fc.Name)
						if _, ok := req.Tools[fc.Name]; !ok {
							w.unknown = append(w.unknown, fc.Name)
						}
						w.mu.Unlock()
					}
				}
			}
			if !yield(resp, err) {
				return
			}
		}
	}
}

// TestSuggestionsCallOnlyTheAgentsTools: every agent of the demo has
// suggestions, and for each of them the offline model's first answer,
// as ADK builds the request for that agent, calls its tools and no tool
// it lacks: none is answered "this agent has no … tool".
func TestSuggestionsCallOnlyTheAgentsTools(t *testing.T) {
	watch := &toolWatch{}
	// The events agent as the local runner gives it (nothing is dialled
	// until a call is sent).
	events, err := EventsTool("http://127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	members, err := TeamWithMCP(watch, nil, events)
	if err != nil {
		t.Fatal(err)
	}
	suggestions := Suggestions()
	for _, m := range members {
		name := m.Agent.Name()
		if len(suggestions[name]) < 3 {
			t.Errorf("agent %s has %d suggestions, want at least 3", name, len(suggestions[name]))
		}
		r, err := runner.New(runner.Config{AppName: "app", Agent: m.Agent, SessionService: session.InMemoryService(), AutoCreateSession: true})
		if err != nil {
			t.Fatal(err)
		}
		for i, say := range suggestions[name] {
			before := len(watch.calls)
			msg := genai.NewContentFromText(say, genai.RoleUser)
			for ev, err := range r.Run(t.Context(), "u", name+string(rune('a'+i)), msg, agent.RunConfig{}) {
				if err != nil {
					t.Fatalf("%s, %q: %v", name, say, err)
				}
				if ev.Author != name {
					continue
				}
				if text := genaiText(ev.Content); strings.Contains(text, "this agent has no") {
					t.Errorf("%s, %q: answered %q", name, say, text)
				}
				break // the model's first answer; its tools are not run
			}
			if len(watch.calls) == before {
				t.Errorf("%s, %q: no tool call, want one of the agent's tools", name, say)
			}
		}
	}
	if len(watch.unknown) > 0 {
		t.Errorf("the offline model called tools the agent lacks: %q", watch.unknown)
	}
	if len(members) != len(suggestions) {
		t.Errorf("suggestions for %d agents, the team has %d", len(suggestions), len(members))
	}
}

func genaiText(c *genai.Content) string {
	var b strings.Builder
	if c != nil {
		for _, p := range c.Parts {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}
