package sessionstore_test

import (
	"fmt"
	"testing"

	"google.golang.org/adk/v2/session"

	"github.com/baton-run/baton/internal/firestoretest"
	"github.com/baton-run/baton/sessionstore"
)

// BenchmarkSession measures Get and AppendEvent on histories of 10, 100 and
// 1,000 events of about 1 KB, and reports Firestore operations per call
// from the harness's counter: reads of documents found, lookups of missing
// ones, and lookups (both, what Firestore bills as reads).
func BenchmarkSession(b *testing.B) {
	for _, n := range []int{10, 100, 1000} {
		client, counter := firestoretest.NewCountingClient(b)
		svc := sessionstore.New(client, nil)
		ctx := b.Context()
		id := fmt.Sprintf("s%d", n)
		// App and user state exist, so Get pays for reading them.
		created, err := svc.Create(ctx, &session.CreateRequest{AppName: "bench", UserID: "u", SessionID: id,
			State: map[string]any{"app:theme": "dark", "user:name": "Ada"}})
		if err != nil {
			b.Fatal(err)
		}
		event := func(i int) *session.Event { return kilobyteEvent(i, nil) }
		for i := range n {
			if err := svc.AppendEvent(ctx, created.Session, event(i)); err != nil {
				b.Fatal(err)
			}
		}
		req := &session.GetRequest{AppName: "bench", UserID: "u", SessionID: id}

		b.Run(fmt.Sprintf("Get/events=%d", n), func(b *testing.B) {
			before := counter.Snapshot()
			for b.Loop() {
				got, err := svc.Get(ctx, req)
				if err != nil {
					b.Fatal(err)
				}
				if got.Session.Events().Len() != n {
					b.Fatalf("Get() returned %d events, want %d", got.Session.Events().Len(), n)
				}
			}
			ops := counter.Snapshot().Sub(before)
			b.ReportMetric(float64(ops.Reads)/float64(b.N), "reads/op")
			b.ReportMetric(float64(ops.Missing)/float64(b.N), "missing/op")
			b.ReportMetric(float64(ops.Lookups())/float64(b.N), "lookups/op")
			b.ReportMetric(float64(ops.RoundTrips)/float64(b.N), "roundtrips/op")
		})

		b.Run(fmt.Sprintf("AppendEvent/events=%d", n), func(b *testing.B) {
			got, err := svc.Get(ctx, req)
			if err != nil {
				b.Fatal(err)
			}
			before := counter.Snapshot()
			i := n
			for b.Loop() {
				if err := svc.AppendEvent(ctx, got.Session, event(i)); err != nil {
					b.Fatal(err)
				}
				i++
			}
			ops := counter.Snapshot().Sub(before)
			b.ReportMetric(float64(ops.Writes)/float64(b.N), "writes/op")
			b.ReportMetric(float64(ops.RoundTrips)/float64(b.N), "roundtrips/op")
		})
	}
}
