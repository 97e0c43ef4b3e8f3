package sessionstore

import (
	"context"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	otelcodes "go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// tracer names the store's spans: baton.session.get, baton.session.create,
// baton.session.append, baton.lease.acquire, baton.lease.renew and
// baton.lease.release. It comes from the global provider, which the
// functions (or a test) install; without one the spans cost nothing.
var tracer = otel.Tracer("github.com/baton-run/baton/sessionstore")

// startSpan starts a span for one store operation on a session.
func startSpan(ctx context.Context, name, sessionID string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	return tracer.Start(ctx, name, trace.WithAttributes(append(attrs, attribute.String("baton.session.id", sessionID))...))
}

// endSpan records err, if any, on span and ends it. Call it deferred with
// the operation's named error result.
func endSpan(span trace.Span, err error) {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(otelcodes.Error, err.Error())
	}
	span.End()
}
