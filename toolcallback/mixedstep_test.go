package toolcallback_test

import (
	"strings"
	"testing"

	"github.com/baton-run/baton/toolcallback"
)

// TestMixedStepResumeShowsPlaceholder pins what ADK v2.2.0 does when one
// model step holds a browser call and an approval, and both answers reach
// the agent in one user content (resumeStep's message): ADK runs the
// approved tool, but its contents builder (internal/llminternal
// shouldExcludeEvent) drops any event holding an adk_request_confirmation
// response, whole, so the browser's answer in the same content never
// reaches the model, which sees the tool's placeholder instead. ADK v1.7.0
// did the same.
//
// When this test fails because the model sees {"playing":3}, ADK or Baton
// has fixed the defect: turn the check around.
func TestMixedStepResumeShowsPlaceholder(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil,
		callReply(call("c1", "change_bgm", map[string]any{"track": 3}), call("b1", "book_table", map[string]any{"people": 4, "name": "Ada"})),
		echoReply,
	)
	if _, err := f.turn(f.engine, "s1", "tab-a", "play track 3 and book a table for 4"); err != nil {
		t.Fatalf("Turn() error = %v", err)
	}
	var approval string
	for _, c := range f.pending("s1", "tab-a") {
		if c.Kind == toolcallback.KindApproval {
			approval = c.ID
		}
	}
	if approval == "" {
		t.Fatalf("no approval pending after the turn")
	}
	res, _, err := resume(f.engine, t.Context(), "s1", "c1", "tab-a", toolcallback.Answer{Output: map[string]any{"playing": 3}})
	if err != nil || res.Invocation != nil {
		t.Fatalf("Resume(c1) = %+v, %v; want it recorded, waiting for the approval", res, err)
	}
	if _, _, err := resume(f.engine, t.Context(), "s1", approval, "tab-a", toolcallback.Answer{Approved: ptr(true)}); err != nil {
		t.Fatalf("Resume(approval) error = %v", err)
	}
	if got := f.booked.Load(); got != 1 {
		t.Errorf("approved tool ran %d times, want 1", got)
	}

	// Both answers are in the session, in one user event.
	var delivered bool
	for _, ev := range f.history("s1") {
		if ev.Author != "user" || ev.Content == nil {
			continue
		}
		var browser, confirmation bool
		for _, p := range ev.Content.Parts {
			if fr := p.FunctionResponse; fr != nil {
				browser = browser || (fr.ID == "c1" && fr.Response["playing"] == float64(3))
				confirmation = confirmation || fr.ID == approval
			}
		}
		delivered = delivered || (browser && confirmation)
	}
	if !delivered {
		t.Fatalf("no user event holds both the browser's answer and the confirmation")
	}

	// The model is called once more, and sees the placeholder for c1.
	if f.model.Calls() != 2 {
		t.Fatalf("model called %d times, want 2", f.model.Calls())
	}
	last := f.model.LastRequest().Contents
	got := dumpContents(last[len(last)-1:])
	if !strings.Contains(got, "response(c1 change_bgm map[baton_pending:") || strings.Contains(got, "playing") {
		t.Errorf("model's last content = %s, want c1 answered by the placeholder (ADK drops the user event)", got)
	}
	if !strings.Contains(got, "response(b1 book_table map[booked:true") {
		t.Errorf("model's last content = %s, want the approved tool's result for b1", got)
	}
}
