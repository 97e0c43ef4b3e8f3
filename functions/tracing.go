package functions

import (
	"context"
	"encoding/binary"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	cloudtrace "github.com/GoogleCloudPlatform/opentelemetry-operations-go/exporter/trace"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	otelcodes "go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// Values of BATON_TRACE_EXPORT.
const (
	TraceExportNone       = "none"       // spans are not recorded (unless a local processor asks)
	TraceExportCloudTrace = "cloudtrace" // spans go to Cloud Trace in cfg.Project
)

// tracer names the request spans: one server span per request, named after
// the function (Turn, ToolResult, Pending, Sweep). The engine's, the
// store's, ADK's and the Firestore client's spans hang under it.
var tracer = otel.Tracer("github.com/baton-run/baton/functions")

// InstallTracing sets the process's global tracer provider, which the
// functions, toolcallback, sessionstore, ADK and the Firestore client all
// report to, with an exporter chosen by cfg.TraceExport plus processors
// (the local runner's summary; a test's recorder). With nothing to export
// to and no processor it installs nothing, and spans cost nothing.
//
// Call it once per process, before serving: OpenTelemetry's global
// provider forwards to the first provider set, and ADK takes its tracer
// from it at init. shutdown flushes and stops the exporter.
func InstallTracing(ctx context.Context, cfg Config, processors ...sdktrace.SpanProcessor) (shutdown func(context.Context) error, err error) {
	var opts []sdktrace.TracerProviderOption
	switch cfg.TraceExport {
	case "", TraceExportNone:
	case TraceExportCloudTrace:
		exp, err := cloudtrace.New(cloudtrace.WithProjectID(cfg.Project), cloudtrace.WithContext(ctx))
		if err != nil {
			return nil, fmt.Errorf("cloud trace exporter: %w", err)
		}
		opts = append(opts, sdktrace.WithBatcher(exp))
	default:
		return nil, fmt.Errorf("BATON_TRACE_EXPORT=%q: want %s or %s", cfg.TraceExport, TraceExportNone, TraceExportCloudTrace)
	}
	for _, p := range processors {
		opts = append(opts, sdktrace.WithSpanProcessor(p))
	}
	if len(opts) == 0 {
		return func(context.Context) error { return nil }, nil
	}
	// A request that arrives sampled (Cloud Run's front end decides) is
	// recorded; one with no trace context starts a sampled trace.
	tp := sdktrace.NewTracerProvider(append(opts, sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.AlwaysSample())))...)
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagation.TraceContext{})
	return tp.Shutdown, nil
}

// startRequestSpan starts the request's server span. Its trace is the
// caller's: from a W3C traceparent header, or else from Cloud Run's
// X-Cloud-Trace-Context; without either it starts a trace of its own.
func startRequestSpan(r *http.Request, name string) (context.Context, trace.Span) {
	ctx := propagation.TraceContext{}.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
	if !trace.SpanContextFromContext(ctx).IsValid() {
		if sc, ok := cloudTraceContext(r.Header.Get("X-Cloud-Trace-Context")); ok {
			ctx = trace.ContextWithRemoteSpanContext(ctx, sc)
		}
	}
	return tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(
		attribute.String("http.request.method", r.Method), attribute.String("url.path", r.URL.Path)))
}

// endRequestSpan notes the status the request was answered with.
func endRequestSpan(span trace.Span, status int) {
	span.SetAttributes(attribute.Int("http.response.status_code", status))
	if status >= 500 {
		span.SetStatus(otelcodes.Error, http.StatusText(status))
	}
	span.End()
}

// cloudTraceContext parses X-Cloud-Trace-Context: TRACE_ID/SPAN_ID;o=OPTIONS,
// with a 32-hex-digit trace id and a decimal span id. A header without a
// usable span id still names the trace (its parent span is then unknown).
func cloudTraceContext(h string) (trace.SpanContext, bool) {
	rest, opts, _ := strings.Cut(h, ";")
	traceHex, spanDec, _ := strings.Cut(rest, "/")
	tid, err := trace.TraceIDFromHex(strings.ToLower(traceHex))
	if err != nil {
		return trace.SpanContext{}, false
	}
	n, err := strconv.ParseUint(spanDec, 10, 64)
	if err != nil || n == 0 {
		n = 1
	}
	var sid trace.SpanID
	binary.BigEndian.PutUint64(sid[:], n)
	var flags trace.TraceFlags
	if opts == "o=1" {
		flags = trace.FlagsSampled
	}
	return trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: flags, Remote: true}), true
}
