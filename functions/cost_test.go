package functions

import (
	"testing"

	"github.com/baton-run/baton/internal/firestoretest"
	"github.com/baton-run/baton/internal/modeltest"
)

// TestTurnCost holds a plain turn in an existing chat to its budget of
// Firestore operations, counting lookups of documents that do not exist
// (Firestore bills them as reads): the chat, the lease (read, write), the
// session for the pending-call check and the ledger query, ADK's history
// read (the session, and the app and user state documents, here missing),
// two appends and the lease's release.
func TestTurnCost(t *testing.T) {
	t.Parallel()
	f := newHTTPFixture(t, nil, modeltest.TextReply("first"), modeltest.TextReply("second"))
	f.stream(f.turn("ada", "s1", "tab-a", "hello"))
	before := f.counter.Snapshot()
	if got := text(f.stream(f.turn("ada", "s1", "tab-a", "again"))); got != "second" {
		t.Fatalf("second turn text = %q, want second", got)
	}
	got := f.counter.Snapshot().Sub(before)
	budget := firestoretest.Ops{RoundTrips: 10, Reads: 6, Missing: 2, Writes: 4}
	if got.RoundTrips > budget.RoundTrips || got.Reads > budget.Reads || got.Missing > budget.Missing ||
		got.Lookups() > budget.Lookups() || got.Writes > budget.Writes {
		t.Errorf("turn in an existing chat cost %+v (%d lookups), want at most %+v (%d lookups)", got, got.Lookups(), budget, budget.Lookups())
	}
}
