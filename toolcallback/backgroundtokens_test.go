package toolcallback_test

import (
	"context"
	"errors"
	"iter"
	"testing"
	"time"

	"google.golang.org/adk/v2/model"
	"google.golang.org/genai"

	"github.com/baton-run/baton/internal/polltest"
	"github.com/baton-run/baton/limits"
	"github.com/baton-run/baton/sessionstore"
	"github.com/baton-run/baton/toolcallback"
)

// usageModel answers every request with a line and the usage of tokens.
type usageModel struct{ tokens int32 }

func (m usageModel) Name() string { return "usage" }

func (m usageModel) GenerateContent(context.Context, *model.LLMRequest, bool) iter.Seq2[*model.LLMResponse, error] {
	return func(yield func(*model.LLMResponse, error) bool) {
		yield(&model.LLMResponse{Content: genai.NewContentFromText("a song", genai.RoleModel),
			UsageMetadata: &genai.GenerateContentResponseUsageMetadata{TotalTokenCount: m.tokens}}, nil)
	}
}

// TestBackgroundTokenBudget: a background call carries the daily token
// budget of the turn that made it; the work's own model calls, through
// BudgetedModel, count their tokens in the user's day and are refused
// once the budget is used up, and the user's next turn finds it used up
// too. Without a budget nothing is read.
func TestBackgroundTokenBudget(t *testing.T) {
	t.Parallel()
	f := newBGFixture(t, nil, nil, playlistCall, echoReply)
	type outcome struct {
		calls int
		err   error
		left  []int64
	}
	done := make(chan outcome, 1)
	f.setWork(func(ctx context.Context, a playlistArgs) (playlistResult, error) {
		m := toolcallback.BudgetedModel(usageModel{tokens: 60})
		var out outcome
		for range 3 {
			left, limited, err := toolcallback.TokensLeft(ctx)
			if err == nil && !limited {
				err = errors.New("no budget held")
			}
			out.left = append(out.left, left)
			for _, err = range m.GenerateContent(ctx, &model.LLMRequest{}, false) {
			}
			if err != nil {
				out.err = err
				break
			}
			out.calls++
		}
		done <- out
		return playlistResult{Tracks: []string{"x"}}, nil
	})
	req := textTurn("chat", "tab-1", "make me a playlist")
	req.Limits = limits.Limits{UserTokensPerDay: 100}
	if _, _, err := runTurn(t.Context(), f.team, req); err != nil {
		t.Fatal(err)
	}
	if got := f.record("chat", "c1").Work.TokensPerDay; got != 100 {
		t.Errorf("the call's record carries a budget of %d tokens, want the turn's 100", got)
	}
	var out outcome
	select {
	case out = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("after 30 s, the work has not ended")
	}
	if out.calls != 2 || !errors.Is(out.err, limits.ErrBudgetExhausted) {
		t.Errorf("the work's model calls: %d, then %v; want 2 (60 + 60 tokens passes 100), then the budget's error", out.calls, out.err)
	}
	if len(out.left) < 2 || out.left[0] != 100 || out.left[1] != 40 {
		t.Errorf("TokensLeft before each call = %v, want 100 then 40", out.left)
	}
	f.waitDone("chat", "c1")
	polltest.Until(t, "the chat to be free", func() bool {
		_, _, err := runTurn(t.Context(), f.team, req)
		if errors.Is(err, sessionstore.ErrBusy) {
			return false
		}
		if !errors.Is(err, limits.ErrBudgetExhausted) {
			t.Errorf("the user's next turn error = %v, want the budget used up by the work", err)
		}
		return true
	})
}
