package functions

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/baton-run/baton/modeltest"
)

// spans records every span of the test binary. OpenTelemetry's global
// provider, which ADK reads at init, can be set once per process, so
// TestMain installs it; tests running in parallel share the recorder and
// tell their spans apart by trace id.
var spans = tracetest.NewSpanRecorder()

func installTestTracing() {
	if _, err := InstallTracing(context.Background(), Config{TraceExport: TraceExportNone}, spans); err != nil {
		panic(err)
	}
}

// spanTree is one trace's ended spans.
type spanTree struct {
	byID  map[trace.SpanID]sdktrace.ReadOnlySpan
	spans []sdktrace.ReadOnlySpan
}

// traceOf waits until the trace holds an ended span named root (the request
// span ends just after the response's last byte) and returns the trace.
func traceOf(t *testing.T, id trace.TraceID, root string, paths ...string) *spanTree {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		tr := &spanTree{byID: map[trace.SpanID]sdktrace.ReadOnlySpan{}}
		for _, s := range spans.Ended() {
			if s.SpanContext().TraceID() == id {
				tr.byID[s.SpanContext().SpanID()] = s
				tr.spans = append(tr.spans, s)
			}
		}
		// The invocation's last spans (the lease's release) may end after
		// the response does: wait for every path asked for, not just the root.
		complete := !slices.ContainsFunc(paths, func(p string) bool { return len(tr.find(p)) == 0 })
		if slices.ContainsFunc(tr.spans, func(s sdktrace.ReadOnlySpan) bool { return s.Name() == root }) && complete {
			return tr
		}
		if time.Now().After(deadline) {
			if len(tr.spans) > 0 {
				return tr // the caller's checks say what is missing
			}
			t.Fatalf("trace %s: no %s span ended; have %d spans", id, root, len(tr.spans))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// path names a span by its ancestry, root first, each name cut at its
// first space ("invoke_agent assistant" is invoke_agent).
func (tr *spanTree) path(s sdktrace.ReadOnlySpan) string {
	var names []string
	for ok := true; ok; s, ok = tr.byID[s.Parent().SpanID()] {
		name, _, _ := strings.Cut(s.Name(), " ")
		names = append(names, name)
	}
	slices.Reverse(names)
	return strings.Join(names, " > ")
}

// find returns the spans at path.
func (tr *spanTree) find(path string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range tr.spans {
		if tr.path(s) == path {
			out = append(out, s)
		}
	}
	return out
}

func (tr *spanTree) paths() []string {
	var out []string
	for _, s := range tr.spans {
		if p := tr.path(s); !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

func boolAttr(s sdktrace.ReadOnlySpan, key string) (bool, bool) {
	for _, kv := range s.Attributes() {
		if kv.Key == attribute.Key(key) {
			return kv.Value.AsBool(), true
		}
	}
	return false, false
}

func intAttr(s sdktrace.ReadOnlySpan, key string) (int64, bool) {
	for _, kv := range s.Attributes() {
		if kv.Key == attribute.Key(key) {
			return kv.Value.AsInt64(), true
		}
	}
	return 0, false
}

// TestSpanTree: a turn that pauses on a browser call and the resume that
// answers it are each one trace, continuing the caller's (traceparent on
// the turn, X-Cloud-Trace-Context on the result), with Baton's spans for
// the lease, the session, the ledger and the resume around ADK's, and the
// request log lines carry the same trace id.
func TestSpanTree(t *testing.T) {
	t.Parallel()
	f := newHTTPFixture(t, nil,
		modeltest.CallReply(modeltest.Call("c1", "change_bgm", map[string]any{"track": 2})),
		modeltest.EchoReply,
	)
	// Trace ids of this run only: the recorder is the binary's, so a fixed
	// id would also collect an earlier run's spans (go test -count=2).
	const turnParent = "00f067aa0ba902b7"
	turnTrace, resumeTrace := newTraceID(t), newTraceID(t)
	f.stream(f.do(http.MethodPost, NameTurn, f.token("ada"),
		map[string]any{"sessionId": "s1", "clientId": "tab-a", "text": "change the music to track 2"},
		map[string]string{"traceparent": "00-" + turnTrace + "-" + turnParent + "-01"}))
	f.stream(f.do(http.MethodPost, NameToolResult, f.token("ada"),
		map[string]any{"sessionId": "s1", "toolCallId": "c1", "clientId": "tab-a", "output": map[string]any{"playing": 2}},
		map[string]string{"X-Cloud-Trace-Context": resumeTrace + "/12345;o=1"}), "c1")

	id, _ := trace.TraceIDFromHex(turnTrace)
	turnPaths := []string{
		"Turn > baton.session.get",
		"Turn > baton.invocation > invoke_agent > generate_content",
		"Turn > baton.invocation > invoke_agent > execute_tool",
		"Turn > baton.invocation > baton.session.append",
		"Turn > baton.invocation > baton.lease.release",
	}
	turn := traceOf(t, id, NameTurn, turnPaths...)
	root := turn.find(NameTurn)
	if len(root) != 1 || root[0].SpanKind() != trace.SpanKindServer || root[0].Parent().SpanID().String() != turnParent {
		t.Errorf("Turn spans = %v, want one server span whose parent is the traceparent's %s", root, turnParent)
	}
	for _, p := range turnPaths {
		if len(turn.find(p)) == 0 {
			t.Errorf("turn trace has no span at %q; it has:\n%s", p, strings.Join(turn.paths(), "\n"))
		}
	}
	// The session is read before the invocation and handed to ADK's
	// runner, which reads none itself.
	if got := turn.find("Turn > baton.invocation > baton.session.get"); len(got) != 0 {
		t.Errorf("the invocation read the session again (%d spans); the turn's read should be handed to it", len(got))
	}
	// The lease is taken by the append of the user message (which, in a
	// new chat, creates the chat and the session too).
	taken := 0
	for _, s := range turn.find("Turn > baton.invocation > baton.session.append") {
		if b, ok := boolAttr(s, "baton.lease.take"); ok && b {
			taken++
		}
	}
	if taken != 1 {
		t.Errorf("appends taking the lease = %d, want 1", taken)
	}
	// The model's call to change_bgm is stored with its ledger record.
	ledgered := 0
	for _, s := range turn.find("Turn > baton.invocation > baton.session.append") {
		if n, _ := intAttr(s, "baton.ledger.records"); n > 0 {
			ledgered += int(n)
		}
	}
	if ledgered != 1 {
		t.Errorf("turn's appends wrote %d ledger records, want 1 (the paused call)", ledgered)
	}

	id, _ = trace.TraceIDFromHex(resumeTrace)
	resumePaths := []string{
		// One read of the chat, the session and the call; the answer is
		// recorded by the append that takes the lease and delivers it.
		"ToolResult > baton.session.get",
		"ToolResult > baton.resume > baton.ledger.query",
		"ToolResult > baton.resume > baton.invocation > baton.session.append",
		"ToolResult > baton.resume > baton.invocation > invoke_agent > generate_content",
		"ToolResult > baton.resume > baton.invocation > baton.ledger.mark_resumed",
		"ToolResult > baton.resume > baton.invocation > baton.lease.release",
	}
	resume := traceOf(t, id, NameToolResult, resumePaths...)
	for _, p := range resumePaths {
		if len(resume.find(p)) == 0 {
			t.Errorf("resume trace has no span at %q; it has:\n%s", p, strings.Join(resume.paths(), "\n"))
		}
	}

	want := map[string]bool{
		"projects/" + testProject + "/traces/" + turnTrace:   false,
		"projects/" + testProject + "/traces/" + resumeTrace: false,
	}
	for _, line := range strings.Split(strings.TrimSpace(f.logs.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if tr, ok := m["logging.googleapis.com/trace"].(string); ok && m["message"] == "request" {
			if _, known := want[tr]; known {
				want[tr] = true
			}
		}
	}
	for tr, seen := range want {
		if !seen {
			t.Errorf("no request log line with trace %s:\n%s", tr, f.logs.String())
		}
	}
}

// newTraceID returns a random W3C trace id, in hex.
func newTraceID(t *testing.T) string {
	t.Helper()
	var id trace.TraceID
	if _, err := rand.Read(id[:]); err != nil {
		t.Fatal(err)
	}
	return id.String()
}
