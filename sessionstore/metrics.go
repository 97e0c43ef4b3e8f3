package sessionstore

import (
	"context"
	"sync"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// takeovers counts leases taken from a holder that had not released them
// (baton.lease.takeovers, by why: "expired", a holder that died, or
// "taken", a live holder the caller replaced), on OpenTelemetry's global
// meter provider.
var takeovers = sync.OnceValue(func() metric.Int64Counter {
	c, _ := otel.Meter("github.com/baton-run/baton/sessionstore").Int64Counter("baton.lease.takeovers",
		metric.WithUnit("{lease}"), metric.WithDescription("Leases taken over from a holder that had not released them"))
	return c
})

func countTakeover(ctx context.Context, why string) {
	takeovers().Add(ctx, 1, metric.WithAttributes(attribute.String("baton.takeover", why)))
}
