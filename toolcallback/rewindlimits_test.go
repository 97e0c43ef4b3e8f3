package toolcallback_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"google.golang.org/genai"

	"github.com/baton-run/baton/limits"
	"github.com/baton-run/baton/toolcallback"
)

// TestRewindCountsAsTurn: a regenerate runs the model, so the caller's
// limits hold it like a turn: over the chat's limit it is refused, writing
// nothing and calling no model; once the window has moved on it runs. The
// same request sent again after it was served is a replay, which no limit
// refuses.
func TestRewindCountsAsTurn(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	f.model.Repeat = textReply("ok")
	at := limitClock(t)
	lim := limits.Limits{ChatTurnsPerMinute: 2}
	turn := limitedTurn("ada", "c1", lim)
	turn.MessageID = "m1"
	events, _, err := runTurn(at(0), f.team, turn)
	if err != nil {
		t.Fatal(err)
	}
	// regenerate replaces the assistant message answer (a turn's id) and
	// returns the new answer's.
	regenerate := func(ctx context.Context, answer string) (string, error) {
		events, err := runRewind(ctx, f.team, toolcallback.RewindRequest{UserID: "ada", ChatID: "c1", ClientID: "tab", Message: answer, Limits: lim})
		if err != nil {
			return "", err
		}
		if len(events) == 0 {
			return "", errors.New("the regenerated turn streamed nothing")
		}
		return events[len(events)-1].InvocationID, nil
	}
	second, err := regenerate(at(time.Second), events[len(events)-1].InvocationID)
	if err != nil {
		t.Fatalf("the chat's second turn, a regenerate: %v", err)
	}
	calls, writes := f.model.Calls(), f.counter.Writes()
	_, err = regenerate(at(2*time.Second), second)
	wantLimited(t, err, limits.ErrRateLimited, "chat", 58*time.Second)
	if f.model.Calls() != calls || f.counter.Writes() != writes {
		t.Errorf("the refused regenerate called the model (%d calls, was %d) or wrote (%d writes, was %d)",
			f.model.Calls(), calls, f.counter.Writes(), writes)
	}
	if _, err := regenerate(at(61*time.Second), second); err != nil {
		t.Fatalf("a regenerate after the window: %v", err)
	}
	edit := toolcallback.RewindRequest{UserID: "ada", ChatID: "c1", ClientID: "tab", Message: "m1", Content: genai.NewContentFromText("hello", genai.RoleUser), Limits: lim}
	if _, err := runRewind(at(62*time.Second), f.team, edit); err != nil {
		t.Fatalf("an edit, the second turn of the window: %v", err)
	}
	// The chat is at its limit, but the same edit again is a replay.
	if _, err := f.team.Rewind(at(63*time.Second), edit); !errors.Is(err, toolcallback.ErrMessageTaken) {
		t.Errorf("the same edit again, at the limit: %v, want ErrMessageTaken (a replay)", err)
	}
}
