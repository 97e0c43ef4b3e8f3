package agent

import (
	"context"
	"iter"
	"os"
	"regexp"
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

// pageSuggestions reads the suggestions the demo page offers from its
// source, so that the test follows the page.
func pageSuggestions(t *testing.T) []string {
	t.Helper()
	src, err := os.ReadFile("../web/src/App.jsx")
	if err != nil {
		t.Fatal(err)
	}
	block := regexp.MustCompile(`(?s)const SUGGESTIONS = \[(.*?)\];`).FindSubmatch(src)
	if block == nil {
		t.Fatal("no SUGGESTIONS in App.jsx")
	}
	var out []string
	for _, m := range regexp.MustCompile(`'([^']*)'|"([^"]*)"`).FindAllSubmatch(block[1], -1) {
		out = append(out, string(m[1])+string(m[2]))
	}
	if len(out) < 3 {
		t.Fatalf("suggestions = %q, want the page's list", out)
	}
	return out
}

// TestSuggestionsCallOnlyTheAgentsTools: for every suggestion on the page
// and every agent of the demo, the offline model's first answer calls no
// tool the agent lacks (the concierge has no change_bgm), as ADK builds
// the request.
func TestSuggestionsCallOnlyTheAgentsTools(t *testing.T) {
	watch := &toolWatch{}
	members, err := TeamWithModel(watch)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range members {
		r, err := runner.New(runner.Config{AppName: "app", Agent: m.Agent, SessionService: session.InMemoryService(), AutoCreateSession: true})
		if err != nil {
			t.Fatal(err)
		}
		for i, say := range pageSuggestions(t) {
			msg := genai.NewContentFromText(say, genai.RoleUser)
			for ev, err := range r.Run(t.Context(), "u", m.Agent.Name()+string(rune('a'+i)), msg, agent.RunConfig{}) {
				if err != nil {
					t.Fatalf("%s, %q: %v", m.Agent.Name(), say, err)
				}
				if ev.Author == m.Agent.Name() {
					break // the model's first answer; its tools are not run
				}
			}
		}
	}
	if len(watch.unknown) > 0 {
		t.Errorf("the offline model called tools the agent lacks: %q", watch.unknown)
	}
	if len(watch.calls) == 0 {
		t.Error("no suggestion made a tool call: the test checked nothing")
	}
}
