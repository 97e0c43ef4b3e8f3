package limits

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// refusals counts turns refused for a limit (baton.limits.refused, by
// which: user_rate, chat_rate, user_budget, live_segments,
// service_tokens, new_anonymous), on OpenTelemetry's global meter
// provider.
var refusals = sync.OnceValue(func() metric.Int64Counter {
	c, _ := otel.Meter("github.com/baton-run/baton/limits").Int64Counter("baton.limits.refused",
		metric.WithUnit("{turn}"), metric.WithDescription("Turns and live segments refused for a limit, a budget or a cap"))
	return c
})

// refuse is the refusal of a turn for err (of scope, at limit, to be
// tried again after retry), counted.
func refuse(err error, scope string, limit int64, retry time.Duration) *LimitError {
	which := scope + "_rate"
	switch {
	case errors.Is(err, ErrBudgetExhausted):
		which = "user_budget"
	case errors.Is(err, ErrLiveSegments):
		which = "live_segments"
	case errors.Is(err, ErrServiceBudget):
		which = "service_tokens"
	case errors.Is(err, ErrNewAnonymous):
		which = "new_anonymous"
	}
	refusals().Add(context.Background(), 1, metric.WithAttributes(attribute.String("baton.limit", which)))
	return &LimitError{Err: err, Scope: scope, Limit: limit, RetryAfter: retry}
}
