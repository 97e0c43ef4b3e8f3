package devserver

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	otelcodes "go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// summary is the span processor behind -trace: when a request's span ends
// it prints the request's spans as a tree, one line each with its
// duration, indented under its parent, children in start order.
type summary struct {
	w     io.Writer
	grace time.Duration // how long a request's late spans may trail it

	mu     sync.Mutex
	traces map[trace.TraceID][]sdktrace.ReadOnlySpan
}

func newSummary(w io.Writer) *summary {
	return &summary{w: w, grace: 100 * time.Millisecond, traces: map[trace.TraceID][]sdktrace.ReadOnlySpan{}}
}

func (s *summary) OnStart(context.Context, sdktrace.ReadWriteSpan) {}

func (s *summary) OnEnd(span sdktrace.ReadOnlySpan) {
	id := span.SpanContext().TraceID()
	s.mu.Lock()
	s.traces[id] = append(s.traces[id], span)
	s.mu.Unlock()
	if span.Parent().IsValid() && !span.Parent().IsRemote() {
		return
	}
	// The trace's local root ended: a request's trace is printed, any
	// other (the sweeper's) dropped.
	show := span.SpanKind() == trace.SpanKindServer
	time.AfterFunc(s.grace, func() { s.flush(id, show) })
}

func (s *summary) flush(id trace.TraceID, show bool) {
	s.mu.Lock()
	spans := s.traces[id]
	delete(s.traces, id)
	s.mu.Unlock()
	if !show || len(spans) == 0 {
		return
	}
	known := map[trace.SpanID]bool{}
	children := map[trace.SpanID][]sdktrace.ReadOnlySpan{}
	for _, sp := range spans {
		known[sp.SpanContext().SpanID()] = true
	}
	var roots []sdktrace.ReadOnlySpan
	for _, sp := range spans {
		if p := sp.Parent().SpanID(); known[p] {
			children[p] = append(children[p], sp)
		} else {
			roots = append(roots, sp)
		}
	}
	byStart := func(a, b sdktrace.ReadOnlySpan) int { return a.StartTime().Compare(b.StartTime()) }
	var b strings.Builder
	fmt.Fprintf(&b, "trace %s\n", id)
	var walk func(sp sdktrace.ReadOnlySpan, depth int)
	walk = func(sp sdktrace.ReadOnlySpan, depth int) {
		mark := ""
		if sp.Status().Code == otelcodes.Error {
			mark = "  ERROR " + sp.Status().Description
		}
		name := strings.Replace(sp.Name(), "cloud.google.com/go/firestore.", "firestore.", 1)
		fmt.Fprintf(&b, "%s%-*s %8s%s\n", strings.Repeat("  ", depth+1), 44-2*depth, name,
			sp.EndTime().Sub(sp.StartTime()).Round(100*time.Microsecond), mark)
		kids := children[sp.SpanContext().SpanID()]
		slices.SortFunc(kids, byStart)
		for _, k := range kids {
			walk(k, depth+1)
		}
	}
	slices.SortFunc(roots, byStart)
	for _, r := range roots {
		walk(r, 0)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	io.WriteString(s.w, b.String())
}

func (s *summary) Shutdown(context.Context) error   { return nil }
func (s *summary) ForceFlush(context.Context) error { return nil }
