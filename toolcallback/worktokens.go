package toolcallback

import (
	"context"
	"iter"

	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/platform"

	"github.com/baton-run/baton/limits"
)

// A background call carries the daily token budget of the turn that made
// it (Work.TokensPerDay, stored with the call), so that the work's own
// model calls, made on whichever instance runs it and long after that
// turn, are held to the budget the user's turns are: TokensLeft checks it,
// SpendTokens counts what a call used, and BudgetedModel does both around
// an ADK model. The worker itself calls no model; the agent its result
// resumes counts its tokens as any invocation does.

type tokenBudgetKey struct{}

// withTokenBudget notes on ctx the daily token budget of the turn running
// on it (0: none), which the background calls it makes carry.
func withTokenBudget(ctx context.Context, budget int64) context.Context {
	if budget <= 0 {
		return ctx
	}
	return context.WithValue(ctx, tokenBudgetKey{}, budget)
}

func tokenBudget(ctx context.Context) int64 {
	b, _ := ctx.Value(tokenBudgetKey{}).(int64)
	return b
}

// TokensLeft returns what the user's daily token budget has left for the
// background call whose work runs on ctx, as read now (one aggregation
// query and one lookup), and whether a budget holds at all (false: the
// call's turn had none, and nothing was read). Once the budget is used up
// it returns a *limits.LimitError (limits.ErrBudgetExhausted).
func TokensLeft(ctx context.Context) (left int64, limited bool, err error) {
	w := workFrom(ctx)
	if w == nil {
		return 0, false, ErrNotInWork
	}
	budget := w.claimed.Work.TokensPerDay
	if budget <= 0 {
		return 0, false, nil
	}
	spent, err := w.e.limits.Spent(ctx, w.claimed.UserID, budget, platform.Now(ctx))
	return max(0, budget-spent), true, err
}

// SpendTokens counts n tokens that a model call of the work running on ctx
// used against the user's daily budget (limits.TokensUsed reads them from
// a response's usage metadata): one write to the user's day document,
// whatever the budget, so that the user's next turns count them too.
func SpendTokens(ctx context.Context, n int64) error {
	w := workFrom(ctx)
	if w == nil {
		return ErrNotInWork
	}
	return w.e.limits.AddTokens(ctx, w.claimed.UserID, n, platform.Now(ctx))
}

// BudgetedModel wraps m, a model a background tool calls itself, so that
// each request of it is held to the user's daily token budget: refused
// with a *limits.LimitError once TokensLeft finds it used up, and its
// usage counted with SpendTokens when it ends. Used outside a background
// call's work, a request is refused with ErrNotInWork.
func BudgetedModel(m model.LLM) model.LLM { return budgeted{m} }

type budgeted struct{ model.LLM }

func (b budgeted) GenerateContent(ctx context.Context, req *model.LLMRequest, stream bool) iter.Seq2[*model.LLMResponse, error] {
	return func(yield func(*model.LLMResponse, error) bool) {
		if _, _, err := TokensLeft(ctx); err != nil {
			yield(nil, err)
			return
		}
		var used int64
		defer func() {
			if err := SpendTokens(context.WithoutCancel(ctx), used); err != nil {
				workFrom(ctx).e.opts.Logger.Warn("count a background tool's model tokens", "tokens", used, "error", err)
			}
		}()
		for resp, err := range b.LLM.GenerateContent(ctx, req, stream) {
			if resp != nil && resp.UsageMetadata != nil && !resp.Partial {
				used = max(used, limits.TokensUsed(resp.UsageMetadata))
			}
			if !yield(resp, err) {
				return
			}
		}
	}
}
