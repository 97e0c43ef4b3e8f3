package toolcallback_test

import (
	"fmt"
	"sync/atomic"
	"testing"

	"google.golang.org/adk/v2/model"
	"google.golang.org/genai"

	"github.com/baton-run/baton/internal/firestoretest"
	"github.com/baton-run/baton/toolcallback"
)

// BenchmarkPauseResume measures a turn that pauses on a browser tool and
// the resume that answers it, with a zero-latency scripted model, and
// reports Firestore operations per call from the harness's counter
// (lookups are reads plus lookups of missing documents).
func BenchmarkPauseResume(b *testing.B) {
	var n atomic.Int64
	f := newFixture(b, nil)
	f.model.Repeat = func(req *model.LLMRequest) *genai.Content {
		last := req.Contents[len(req.Contents)-1]
		if len(last.Parts) > 0 && last.Parts[0].FunctionResponse != nil {
			return genai.NewContentFromText("Now playing.", genai.RoleModel)
		}
		return callReply(call(fmt.Sprintf("c%d", n.Add(1)), "change_bgm", map[string]any{"track": 2}))(req)
	}
	ctx := b.Context()
	pause := func(sid string) {
		events, err := f.turn(f.team, sid, "tab-a", "change the music to track 2")
		if err != nil || len(events) == 0 {
			b.Fatalf("Turn() = %d events, %v", len(events), err)
		}
	}
	report := func(b *testing.B, ops firestoretest.Ops) {
		b.ReportMetric(float64(ops.RoundTrips)/float64(b.N), "roundtrips/op")
		b.ReportMetric(float64(ops.Reads)/float64(b.N), "reads/op")
		b.ReportMetric(float64(ops.Missing)/float64(b.N), "missing/op")
		b.ReportMetric(float64(ops.Lookups())/float64(b.N), "lookups/op")
		b.ReportMetric(float64(ops.Writes)/float64(b.N), "writes/op")
	}

	b.Run("TurnThatPauses", func(b *testing.B) {
		var ops firestoretest.Ops
		for i := 0; i < b.N; i++ {
			before := f.counter.Snapshot()
			pause(fmt.Sprintf("turn-%d", i))
			ops = ops.Add(f.counter.Snapshot().Sub(before))
		}
		report(b, ops)
	})

	b.Run("Resume", func(b *testing.B) {
		var ops firestoretest.Ops
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			sid := fmt.Sprintf("resume-%d", i)
			pause(sid)
			calls := f.pending(sid, "tab-a")
			if len(calls) != 1 {
				b.Fatalf("Pending() = %v; want one call", calls)
			}
			b.StartTimer()
			before := f.counter.Snapshot()
			_, events, err := resume(f.team, ctx, sid, calls[0].ID, "tab-a", toolcallback.Answer{Output: map[string]any{"playing": 2}})
			if err != nil || finalText(events) != "Now playing." {
				b.Fatalf("Resume() = %q, %v", finalText(events), err)
			}
			ops = ops.Add(f.counter.Snapshot().Sub(before))
		}
		report(b, ops)
	})
}
