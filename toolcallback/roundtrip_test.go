package toolcallback_test

import (
	"strings"
	"testing"

	"github.com/baton-run/baton/toolcallback"
)

// TestBrowserRoundTrip: the turn pauses after one model call, and a second
// instance resumes it with the browser's answer.
func TestBrowserRoundTrip(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil,
		callReply(call("c1", "change_bgm", map[string]any{"track": 2})),
		echoReply,
	)
	events, err := f.turn(f.team, "s1", "tab-a", "change the music to track 2")
	if err != nil {
		t.Fatalf("Turn() error = %v", err)
	}
	if f.model.Calls() != 1 {
		t.Fatalf("model called %d times during the paused turn, want 1", f.model.Calls())
	}
	var sawCall bool
	for _, ev := range events {
		for _, id := range ev.LongRunningToolIDs {
			sawCall = sawCall || id == "c1"
		}
	}
	if !sawCall {
		t.Errorf("turn events do not mark c1 as long-running")
	}
	pending := f.pending("s1", "tab-a")
	if len(pending) != 1 || pending[0].ID != "c1" || pending[0].Kind != toolcallback.KindBrowser || pending[0].ClientID != "tab-a" {
		t.Fatalf("Pending() = %+v, want c1, browser, from tab-a", pending)
	}
	if got := f.callStatus("s1", "c1"); got != "pending" {
		t.Errorf("ledger status = %s, want pending", got)
	}

	other := f.newInstance()
	res, resumed, err := resume(other, t.Context(), "s1", "c1", "tab-a", toolcallback.Answer{Output: map[string]any{"playing": 2}})
	if err != nil {
		t.Fatalf("Resume() error = %v", err)
	}
	if res.Invocation == nil {
		t.Fatalf("Resume() did not resume the agent: %+v", res)
	}
	if got := finalText(resumed); !strings.Contains(got, `change_bgm={"playing":2}`) {
		t.Errorf("resumed answer = %q, want the model to have seen the browser's output", got)
	}
	if f.model.Calls() != 2 {
		t.Errorf("model called %d times in all, want 2", f.model.Calls())
	}
	if got := f.callStatus("s1", "c1"); got != "resolved" {
		t.Errorf("ledger status = %s, want resolved", got)
	}
	if p := f.pending("s1", "tab-a"); len(p) != 0 {
		t.Errorf("Pending() after resume = %d calls, want 0", len(p))
	}
}
