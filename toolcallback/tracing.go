package toolcallback

import (
	"go.opentelemetry.io/otel"
	otelcodes "go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// tracer names the engine's spans: baton.invocation (one agent run, the
// parent of ADK's invoke_agent) and baton.resume. Package ledger adds
// baton.ledger.read, baton.ledger.query, baton.ledger.answer and
// baton.ledger.mark_resumed, the session store the lease, read and
// append spans (a paused call's ledger record is written by the append,
// counted in its baton.ledger.records attribute). It comes from the global
// provider; without one the spans cost nothing.
var tracer = otel.Tracer("github.com/baton-run/baton/toolcallback")

// endSpan records err, if any, on span and ends it. Call it deferred with
// the operation's named error result.
func endSpan(span trace.Span, err error) {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(otelcodes.Error, err.Error())
	}
	span.End()
}
