package toolcallback_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/genai"

	"github.com/baton-run/baton/toolcallback"
)

// TestMixedSteps: when one model step holds calls of different kinds,
// every recorded answer reaches the model exactly once, whatever order
// the answers come in. (ADK runs approved tools from the latest user event
// only and hides that event from the model; answers sent in it would be
// replaced by their placeholders.)
func TestMixedSteps(t *testing.T) {
	t.Parallel()
	bgm := call("c1", "change_bgm", map[string]any{"track": 3})
	crm := call("x1", "ask_crm", map[string]any{"query": "vip?"})
	book4 := call("b1", "book_table", map[string]any{"people": 4, "name": "Ada"})
	book5 := call("b2", "book_table", map[string]any{"people": 5, "name": "Bo"})
	answers := map[string]toolcallback.Answer{
		"c1": {Output: map[string]any{"playing": 3}},
		"x1": {Output: map[string]any{"vip": true}},
		"b1": {Approved: ptr(true)},
		"b2": {Approved: ptr(true)},
	}
	// What the model must be given for each call once the step resumes.
	want := map[string]map[string]any{
		"c1": {"playing": float64(3)},
		"x1": {"vip": true},
		"b1": {"booked": true, "people": float64(4)},
		"b2": {"booked": true, "people": float64(5)},
	}
	steps := []struct {
		name  string
		calls []*genai.FunctionCall
	}{
		{"browser+approval", []*genai.FunctionCall{bgm, book4}},
		{"external+approval", []*genai.FunctionCall{crm, book4}},
		{"two-approvals+browser", []*genai.FunctionCall{book4, bgm, book5}},
	}
	for _, step := range steps {
		for _, order := range permutations(len(step.calls)) {
			var ids []string
			for _, i := range order {
				ids = append(ids, step.calls[i].ID)
			}
			t.Run(step.name+"/"+strings.Join(ids, ","), func(t *testing.T) {
				t.Parallel()
				f := newFixture(t, nil, callReply(step.calls...), echoReply)
				if _, err := f.turn(f.team, "s1", "tab-a", "do all of it"); err != nil {
					t.Fatalf("Turn() error = %v", err)
				}
				answerID := map[string]string{} // model call id -> id the answer carries
				for _, c := range f.pending("s1", "tab-a") {
					answerID[c.OriginalID] = c.ID
				}
				for n, id := range ids {
					res, _, err := resume(f.team, t.Context(), "s1", answerID[id], "tab-a", answers[id])
					if err != nil {
						t.Fatalf("Resume(%s) error = %v", id, err)
					}
					if last := n == len(ids)-1; last != (res.Invocation != nil) {
						t.Fatalf("Resume(%s): resumed = %v, want %v (only the step's last answer resumes)", id, res.Invocation != nil, last)
					}
				}
				if f.model.Calls() != 2 {
					t.Fatalf("model called %d times, want 2", f.model.Calls())
				}
				got := map[string]map[string]any{}
				for _, c := range f.model.LastRequest().Contents {
					for _, p := range c.Parts {
						if fr := p.FunctionResponse; fr != nil {
							if _, dup := got[fr.ID]; dup {
								t.Errorf("call %s answered twice", fr.ID)
							}
							got[fr.ID] = fr.Response
						}
					}
				}
				wantHere := map[string]map[string]any{}
				for _, c := range step.calls {
					wantHere[c.ID] = want[c.ID]
				}
				if diff := cmp.Diff(wantHere, got); diff != "" {
					t.Errorf("responses the model was given (-want +got):\n%s\n%s", diff, dumpContents(f.model.LastRequest().Contents))
				}
				approvals := 0
				for _, c := range step.calls {
					if c.Name == "book_table" {
						approvals++
					}
				}
				if n := int(f.booked.Load()); n != approvals {
					t.Errorf("approved tool ran %d times, want %d", n, approvals)
				}
			})
		}
	}
}

// permutations returns every order of 0..n-1.
func permutations(n int) [][]int {
	if n == 1 {
		return [][]int{{0}}
	}
	var out [][]int
	for _, p := range permutations(n - 1) {
		for i := 0; i <= len(p); i++ {
			q := append(append(append([]int{}, p[:i]...), n-1), p[i:]...)
			out = append(out, q)
		}
	}
	return out
}
