package toolcallback_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/baton-run/baton/sessionstore"
	"github.com/baton-run/baton/toolcallback"
)

// TestOperatorAnswer: an operator answers a browser call that only the
// tab that started the turn may answer, through Resume: the model gets
// the answer once, the record says who answered, and a second answer
// (the tab's own, late) gets the recorded outcome.
func TestOperatorAnswer(t *testing.T) {
	t.Parallel()
	f := pausedFixture(t, nil, textReply("Now playing track 2."))
	res, err := f.team.Resume(t.Context(), toolcallback.ResumeRequest{UserID: "user-1", ChatID: "s1", CallID: "c1",
		Operator: "ops@example.com", Answer: toolcallback.Answer{Output: map[string]any{"playing": 2}}})
	if err != nil {
		t.Fatalf("operator's Resume() error = %v", err)
	}
	if res.Invocation == nil {
		t.Fatal("operator's answer resumed nothing")
	}
	if _, err := collect(res.Invocation); err != nil {
		t.Fatal(err)
	}
	if got := f.callField("s1", "c1", "resolvedBy"); got != "operator:ops@example.com" {
		t.Errorf("resolvedBy = %v, want operator:ops@example.com", got)
	}
	if f.model.Calls() != 2 {
		t.Errorf("model called %d times, want 2", f.model.Calls())
	}
	_, _, err = resume(f.team, t.Context(), "s1", "c1", "tab-a", toolcallback.Answer{Output: map[string]any{"playing": 3}})
	var resolved *toolcallback.AlreadyResolvedError
	if !errors.As(err, &resolved) || resolved.Same {
		t.Errorf("the tab's late answer = %v, want an AlreadyResolvedError with another answer", err)
	}
}

// TestExpireCall: an operator's expiry closes the call first writer wins,
// and the model reads the operator's reason in the call's error response,
// through the resume path; a second expiry or a late answer is refused.
func TestExpireCall(t *testing.T) {
	t.Parallel()
	f := pausedFixture(t, nil, textReply("Sorry, the music service is down."))
	before := f.counter.Snapshot()
	if _, err := f.team.ExpireCall(t.Context(), "user-1", "s1", "c1", ""); !errors.Is(err, toolcallback.ErrInvalidAnswer) {
		t.Errorf("ExpireCall without a reason = %v, want ErrInvalidAnswer", err)
	}
	if w := f.counter.Snapshot().Sub(before).Writes; w != 0 {
		t.Errorf("refused expiry wrote %d documents", w)
	}
	res, err := f.team.ExpireCall(t.Context(), "user-1", "s1", "c1", "the music service is down for maintenance")
	if err != nil {
		t.Fatalf("ExpireCall() error = %v", err)
	}
	if res.Invocation == nil {
		t.Fatal("the expiry resumed nothing")
	}
	if _, err := collect(res.Invocation); err != nil {
		t.Fatal(err)
	}
	if got := f.callStatus("s1", "c1"); got != "expired" {
		t.Errorf("status = %s, want expired", got)
	}
	if req := dumpContents(f.model.LastRequest().Contents); !strings.Contains(req, "the music service is down for maintenance") {
		t.Errorf("the model did not read the reason:\n%s", req)
	}
	if _, err := f.team.ExpireCall(t.Context(), "user-1", "s1", "c1", "again"); !errors.Is(err, toolcallback.ErrExpired) {
		t.Errorf("second ExpireCall = %v, want ErrExpired", err)
	}
	if _, _, err := resume(f.team, t.Context(), "s1", "c1", "tab-a", toolcallback.Answer{Output: map[string]any{}}); !errors.Is(err, toolcallback.ErrExpired) {
		t.Errorf("late answer = %v, want ErrExpired", err)
	}
	if _, err := f.team.ExpireCall(t.Context(), "user-2", "s1", "c1", "x"); !errors.Is(err, sessionstore.ErrNotFound) {
		t.Errorf("ExpireCall of another user's chat = %v, want ErrNotFound", err)
	}
}

// TestReleaseLease: an operator releases a lease whose holder is alive
// after all; the holder's next renewal and append fail with ErrLeaseLost
// and write nothing, and the chat's next turn runs.
func TestReleaseLease(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil, echoReply, echoReply, echoReply)
	if _, err := f.turn(f.team, "s1", "tab-a", "hello"); err != nil {
		t.Fatal(err)
	}
	sid := f.sessionOf("s1")
	held, err := f.sessions.AcquireLease(t.Context(), sessionstore.LeaseRequest{App: "app", User: "user-1", SessionID: sid, Holder: "stalled/1", TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.turn(f.team, "s1", "tab-a", "are you there?"); !errors.Is(err, sessionstore.ErrBusy) {
		t.Fatalf("turn while held = %v, want busy", err)
	}
	report, err := f.team.ReleaseLease(t.Context(), "user-1", "s1", "ops@example.com")
	if err != nil {
		t.Fatalf("ReleaseLease() error = %v", err)
	}
	if !report.Held || report.Holder != "stalled/1" || !report.Live {
		t.Errorf("report = %+v, want the live lease of stalled/1", report)
	}
	sess, err := f.sessions.Read(t.Context(), sessionstore.ReadRequest{App: "app", User: "user-1", SessionID: sid, Lease: held})
	if !errors.Is(err, sessionstore.ErrLeaseLost) {
		t.Fatalf("read under the released lease = %v, want ErrLeaseLost", err)
	}
	_ = sess
	if _, err := f.turn(f.team, "s1", "tab-a", "are you there?"); err != nil {
		t.Errorf("turn after the release = %v", err)
	}
	again, err := f.team.ReleaseLease(t.Context(), "user-1", "s1", "ops@example.com")
	if err != nil || again.Held {
		t.Errorf("second ReleaseLease = %+v, %v; want nothing held", again, err)
	}
}
