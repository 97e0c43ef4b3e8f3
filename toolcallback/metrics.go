package toolcallback

import (
	"context"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"google.golang.org/genai"
)

// The team's metrics, on OpenTelemetry's global meter provider (which
// functions.InstallMetrics sets; without one they cost nothing). Their
// attributes are bounded: an agent's name, a kind of call, a token type,
// a model name; never a user, a chat or a call id. docs/operator.md lists
// them with their meanings.
type meters struct {
	invocations metric.Int64Counter     // baton.invocations {gen_ai.agent.name, baton.invocation}
	firstEvent  metric.Float64Histogram // baton.invocation.first_event.duration (s)
	tokens      metric.Int64Histogram   // gen_ai.client.token.usage {gen_ai.token.type, gen_ai.agent.name, gen_ai.response.model}
	paused      metric.Int64Counter     // baton.calls.paused {baton.call.kind}
	resumed     metric.Int64Counter     // baton.calls.resumed {baton.call.kind}
	duplicates  metric.Int64Counter     // baton.answers.duplicate {baton.call.kind}
	sweeps      metric.Int64Counter     // baton.sweep.runs
	expired     metric.Int64Counter     // baton.sweep.expired
	overdue     metric.Int64Gauge       // baton.calls.overdue
	segments    metric.Int64Counter     // baton.live.segments {gen_ai.agent.name}
}

// instruments are made once, from the global provider: OpenTelemetry's
// global instruments forward to a provider set later.
var instruments = sync.OnceValue(func() *meters {
	m := otel.Meter("github.com/baton-run/baton/toolcallback")
	var ms meters
	ms.invocations, _ = m.Int64Counter("baton.invocations", metric.WithUnit("{invocation}"),
		metric.WithDescription("Agent invocations started: turns and resumes"))
	ms.firstEvent, _ = m.Float64Histogram("baton.invocation.first_event.duration", metric.WithUnit("s"),
		metric.WithDescription("Time from an invocation's start to its first event (what a client's stream first shows)"))
	ms.tokens, _ = m.Int64Histogram("gen_ai.client.token.usage", metric.WithUnit("{token}"),
		metric.WithDescription("Model tokens per response, by input and output"))
	ms.paused, _ = m.Int64Counter("baton.calls.paused", metric.WithUnit("{call}"), metric.WithDescription("Calls paused (ledger records written)"))
	ms.resumed, _ = m.Int64Counter("baton.calls.resumed", metric.WithUnit("{call}"), metric.WithDescription("Calls whose outcome an invocation delivered to the agent"))
	ms.duplicates, _ = m.Int64Counter("baton.answers.duplicate", metric.WithUnit("{answer}"),
		metric.WithDescription("Answers refused because the call already had one (first writer wins)"))
	ms.sweeps, _ = m.Int64Counter("baton.sweep.runs", metric.WithUnit("{run}"), metric.WithDescription("Sweep runs"))
	ms.expired, _ = m.Int64Counter("baton.sweep.expired", metric.WithUnit("{call}"), metric.WithDescription("Calls a sweep expired"))
	ms.overdue, _ = m.Int64Gauge("baton.calls.overdue", metric.WithUnit("{call}"),
		metric.WithDescription("Calls the last sweep found due for longer than five minutes (at most a sweep's batch)"))
	ms.segments, _ = m.Int64Counter("baton.live.segments", metric.WithUnit("{segment}"), metric.WithDescription("Live segments opened"))
	return &ms
})

func agentAttr(agent string) attribute.KeyValue { return attribute.String("gen_ai.agent.name", agent) }

func kindAttr(k Kind) metric.MeasurementOption {
	return metric.WithAttributes(attribute.String("baton.call.kind", string(k)))
}

// countInvocation counts an invocation of agent (a resume when it
// delivers calls) and returns what its first event calls.
func countInvocation(ctx context.Context, agent string, resumed []*Call, start time.Time) func() {
	m := instruments()
	kind := "turn"
	if len(resumed) > 0 {
		kind = "resume"
	}
	attrs := metric.WithAttributes(agentAttr(agent), attribute.String("baton.invocation", kind))
	m.invocations.Add(ctx, 1, attrs)
	for _, c := range resumed {
		m.resumed.Add(ctx, 1, kindAttr(c.Kind))
	}
	var once sync.Once
	return func() {
		once.Do(func() { m.firstEvent.Record(ctx, time.Since(start).Seconds(), attrs) })
	}
}

// countTokenUsage records a model response's usage.
func countTokenUsage(ctx context.Context, agent, model string, u *genai.GenerateContentResponseUsageMetadata) {
	if u == nil {
		return
	}
	m := instruments()
	for _, t := range []struct {
		typ string
		n   int32
	}{{"input", u.PromptTokenCount}, {"output", u.CandidatesTokenCount + u.ThoughtsTokenCount}} {
		if t.n > 0 {
			m.tokens.Record(ctx, int64(t.n), metric.WithAttributes(attribute.String("gen_ai.token.type", t.typ),
				attribute.String("gen_ai.operation.name", "chat"), agentAttr(agent), attribute.String("gen_ai.response.model", model)))
		}
	}
}

// countPaused counts calls paused.
func countPaused(ctx context.Context, calls []*Call) {
	for _, c := range calls {
		instruments().paused.Add(ctx, 1, kindAttr(c.Kind))
	}
}

// countSweep records a sweep run, what it expired, and how many calls it
// found overdue.
func countSweep(ctx context.Context, r SweepReport, overdue int) {
	m := instruments()
	m.sweeps.Add(ctx, 1)
	m.expired.Add(ctx, int64(r.Expired))
	m.overdue.Record(ctx, int64(overdue))
}
