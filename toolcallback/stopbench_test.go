package toolcallback_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/baton-run/baton/internal/firestoretest"
)

// BenchmarkStopLatency measures how long after Team.Stop is asked, on an
// instance that does not run the turn, the model's request ends on the
// instance that does, and the Firestore operations of the stop (the
// request and the holder's reaction, not the turn). The turn's age when
// the stop is asked is the sub-benchmark's name: at once (its listener
// starts stopListenDelay after the invocation) or after a second (its
// listener is up). It reports the 50th and 95th percentiles in ms.
//
//	go test -run '^$' -bench BenchmarkStopLatency -benchtime 40x ./toolcallback
func BenchmarkStopLatency(b *testing.B) {
	for _, age := range []time.Duration{0, time.Second} {
		b.Run(fmt.Sprintf("turn-age-%s", age), func(b *testing.B) {
			f := newFixture(b, nil)
			f.model.Repeat = textReply("unused")
			stalling := newStallingModel(f.model, "1, 2, 3", b.N)
			holder := f.instanceWith(f.client, stalling)
			otherClient, otherCounter := firestoretest.Reopen(b, f.client)
			other := f.instanceWith(otherClient, stalling)
			var took []time.Duration
			var ops firestoretest.Ops
			for i := 0; i < b.N; i++ {
				chat := fmt.Sprintf("s%d", i)
				inv, _, err := holder.Turn(b.Context(), textTurn(chat, "tab-a", "count slowly"))
				if err != nil {
					b.Fatal(err)
				}
				<-stalling.entered
				time.Sleep(age) // the turn's age is the scenario, not a wait for an event
				before := f.counter.Snapshot().Add(otherCounter.Snapshot())
				asked := time.Now()
				if _, err := other.Stop(b.Context(), "user-1", chat, 0); err != nil {
					b.Fatal(err)
				}
				took = append(took, (<-stalling.ended).Sub(asked))
				if err := inv.Wait(); err != nil {
					b.Fatal(err)
				}
				ops = ops.Add(f.counter.Snapshot().Add(otherCounter.Snapshot()).Sub(before))
			}
			slices.Sort(took)
			pct := func(p float64) float64 {
				return float64(took[min(len(took)-1, int(p*float64(len(took))))].Microseconds()) / 1000
			}
			b.ReportMetric(pct(0.50), "p50-ms")
			b.ReportMetric(pct(0.95), "p95-ms")
			b.ReportMetric(float64(ops.Lookups())/float64(b.N), "lookups/stop")
			b.ReportMetric(float64(ops.Writes)/float64(b.N), "writes/stop")
			b.ReportMetric(float64(ops.RoundTrips)/float64(b.N), "roundtrips/stop")
		})
	}
}
