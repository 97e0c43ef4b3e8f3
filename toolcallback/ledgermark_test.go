package toolcallback_test

import (
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"cloud.google.com/go/firestore/apiv1/firestorepb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/baton-run/baton/internal/firestoretest"
	"github.com/baton-run/baton/toolcallback"
)

// TestTurnAfterLostResumeRecord: a resume delivered its answer and the
// model replied, but the write recording that the agent has the answer
// (resumed) was lost. The session document still says ledger records may
// be open, so the next turn looks the ledger up instead of taking the
// short path, and records the call as resumed; the turn after that takes
// the short path again (no ledger query).
func TestTurnAfterLostResumeRecord(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil, callReply(call("c1", "change_bgm", map[string]any{"track": 2})), textReply("playing"),
		textReply("next"), textReply("and next"))
	if _, err := f.turn(f.team, "s1", "tab-a", "play track 2"); err != nil {
		t.Fatal(err)
	}
	lost := errors.New("injected: lost the resumed record")
	f.counter.SetHook(func(method string, req any) error {
		if c, ok := req.(*firestorepb.CommitRequest); ok {
			for _, w := range c.Writes {
				if slices.Contains(w.GetUpdateMask().GetFieldPaths(), "resumed") {
					return status.Error(codes.PermissionDenied, lost.Error()) // not retried by the client
				}
			}
		}
		return nil
	})
	if _, events, err := resume(f.team, t.Context(), "s1", "c1", "tab-a", toolcallback.Answer{Output: map[string]any{"playing": 2}}); err != nil || finalText(events) != "playing" {
		t.Fatalf("Resume() = %q, %v; want the model's reply", finalText(events), err)
	}
	f.counter.SetHook(nil)
	if resumed := f.callField("s1", "c1", "resumed"); resumed != false {
		t.Fatalf("resumed after the lost write = %v, want false (the test's premise)", resumed)
	}

	var queries atomic.Int64
	f.counter.SetHook(func(method string, _ any) error {
		if strings.HasSuffix(method, "/RunQuery") {
			queries.Add(1)
		}
		return nil
	})
	if _, err := f.turn(f.team, "s1", "tab-a", "next"); err != nil {
		t.Fatal(err)
	}
	if resumed := f.callField("s1", "c1", "resumed"); resumed != true {
		t.Errorf("resumed after the next turn = %v, want true: the turn must look the ledger up", resumed)
	}
	queries.Store(0)
	if _, err := f.turn(f.team, "s1", "tab-a", "and next"); err != nil {
		t.Fatal(err)
	}
	if n := queries.Load(); n != 0 {
		t.Errorf("the turn after that queried the ledger %d times, want 0: the settled turn clears the mark", n)
	}
}

// TestShortResumeLosesRace: a second answer to the same call lands between
// the short resume's read and its commit. The commit (answer, lease and
// delivery in one) fails and writes nothing; the request then finds the
// call answered and reports it, and the answer is delivered once.
func TestShortResumeLosesRace(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil, callReply(call("c1", "change_bgm", map[string]any{"track": 2})), textReply("the other answer won"))
	if _, err := f.turn(f.team, "s1", "tab-a", "play track 2"); err != nil {
		t.Fatal(err)
	}
	// Another instance, on a client the fault hook does not see.
	client2, _ := firestoretest.Reopen(t, f.client)
	other := f.instanceOn(client2)
	var raced atomic.Bool
	f.counter.SetHook(func(method string, req any) error {
		c, ok := req.(*firestorepb.CommitRequest)
		if !ok || raced.Load() {
			return nil
		}
		for _, w := range c.Writes {
			if strings.HasSuffix(w.GetUpdate().GetName(), "/calls/c1") && slices.Contains(w.GetUpdateMask().GetFieldPaths(), "answer") {
				raced.Store(true)
				if _, events, err := resume(other, t.Context(), "s1", "c1", "tab-a", toolcallback.Answer{Output: map[string]any{"playing": 3}}); err != nil || finalText(events) != "the other answer won" {
					t.Errorf("competing Resume() = %q, %v", finalText(events), err)
				}
			}
		}
		return nil
	})
	_, _, err := resume(f.team, t.Context(), "s1", "c1", "tab-a", toolcallback.Answer{Output: map[string]any{"playing": 2}})
	f.counter.SetHook(nil)
	if !raced.Load() {
		t.Fatal("the resume made no commit recording its answer: the race was not run")
	}
	var already *toolcallback.AlreadyResolvedError
	if !errors.As(err, &already) || already.Same {
		t.Fatalf("Resume() losing the race error = %v, want AlreadyResolvedError with another answer", err)
	}
	delivered := 0
	for _, ev := range f.history("s1") {
		if ev.Author == "user" && ev.Content != nil && len(ev.Content.Parts) > 0 && ev.Content.Parts[0].FunctionResponse != nil {
			delivered++
			if got := ev.Content.Parts[0].FunctionResponse.Response["playing"]; got != float64(3) {
				t.Errorf("delivered answer = %v, want the winner's 3", got)
			}
		}
	}
	if delivered != 1 {
		t.Errorf("answers delivered = %d, want 1", delivered)
	}
}
