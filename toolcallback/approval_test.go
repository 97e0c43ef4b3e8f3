package toolcallback_test

import (
	"strings"
	"testing"

	"github.com/baton-run/baton/toolcallback"
)

func TestApproval(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		answer     toolcallback.Answer
		wantRuns   int32
		wantPeople int
		wantSeen   string
	}{
		{"approve with edited payload", toolcallback.Answer{Approved: ptr(true), Payload: map[string]any{"people": 6}}, 1, 6, `book_table={"booked":true,"people":6}`},
		{"approve as asked", toolcallback.Answer{Approved: ptr(true)}, 1, 4, `book_table={"booked":true,"people":4}`},
		{"reject", toolcallback.Answer{Approved: ptr(false)}, 0, 0, `book_table={"error":`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, nil,
				callReply(call("b1", "book_table", map[string]any{"people": 4, "name": "Ada"})),
				echoReply,
			)
			if _, err := f.turn(f.team, "s1", "tab-a", "book a table for 4"); err != nil {
				t.Fatalf("Turn() error = %v", err)
			}
			if f.booked.Load() != 0 {
				t.Fatalf("tool ran before approval")
			}
			pending := f.pending("s1", "tab-a")
			if len(pending) != 1 || pending[0].Kind != toolcallback.KindApproval || pending[0].OriginalID != "b1" || pending[0].Tool != "book_table" {
				t.Fatalf("Pending() = %+v, want one approval for b1 (book_table)", pending)
			}
			if pending[0].Args["people"] != float64(4) {
				t.Errorf("approval args = %v, want the model's arguments", pending[0].Args)
			}
			_, events, err := resume(f.team, t.Context(), "s1", pending[0].ID, "tab-a", tc.answer)
			if err != nil {
				t.Fatalf("Resume() error = %v", err)
			}
			if got := f.booked.Load(); got != tc.wantRuns {
				t.Errorf("tool ran %d times, want %d", got, tc.wantRuns)
			}
			if tc.wantRuns > 0 {
				if got := f.bookArgs.Load().(tableArgs); got.People != tc.wantPeople || got.Name != "Ada" {
					t.Errorf("tool ran with %+v, want people=%d name=Ada", got, tc.wantPeople)
				}
			}
			if got := finalText(events); !strings.Contains(got, tc.wantSeen) {
				t.Errorf("model answer = %q, want it to contain %q", got, tc.wantSeen)
			}
			// A retried answer runs nothing again.
			_, _, err = resume(f.team, t.Context(), "s1", pending[0].ID, "tab-a", tc.answer)
			var already *toolcallback.AlreadyResolvedError
			if !asError(err, &already) || !already.Same {
				t.Errorf("retried Resume() error = %v, want AlreadyResolvedError with Same", err)
			}
			if got := f.booked.Load(); got != tc.wantRuns {
				t.Errorf("after retry the tool ran %d times, want %d", got, tc.wantRuns)
			}
		})
	}
}
