package ledger_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/baton-run/baton/ledger"
	"github.com/baton-run/baton/sessionstore"
)

// TestChatListingFollowsRecords: a chat's listing counts a call that waits
// for a person from the commit that creates its record to the one that
// settles it (answer, cancel, expiry, a rewind's close), and a settling
// commit that loses its first-writer-wins race changes the listing no
// more than the record. A call of an external system is not counted.
func TestChatListingFollowsRecords(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	w := newWorld(t)
	if err := w.sessions.CreateChat(ctx, &sessionstore.Chat{App: "app", UserID: "u", ID: "chat", Agent: "dj", SessionID: "s", Created: base, LastActivity: base}); err != nil {
		t.Fatal(err)
	}
	waiting := func() []string {
		t.Helper()
		c, err := w.sessions.GetChat(ctx, "app", "u", "chat")
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for id := range c.Waiting {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		return ids
	}
	check := func(when string, want ...string) {
		t.Helper()
		if diff := cmp.Diff(want, waiting()); diff != "" {
			t.Errorf("waiting %s (-want +got):\n%s", when, diff)
		}
	}
	calls := map[string]*ledger.Call{}
	for _, id := range []string{"answered", "cancelled", "expired", "closed", "raced", "external"} {
		c := call("s", id, 0)
		c.Chat = "chat"
		calls[id] = c
	}
	calls["external"].Kind = ledger.KindExternal
	calls["closed"].Kind = ledger.KindApproval
	w.record(calls["answered"], calls["cancelled"], calls["expired"], calls["closed"], calls["raced"], calls["external"])
	check("once recorded", "answered", "cancelled", "closed", "expired", "raced")

	if _, err := w.ledger.Answer(ctx, w.get("s", "answered"), ledger.Answer{Output: map[string]any{"ok": true}}, "tab-1", base); err != nil {
		t.Fatal(err)
	}
	if _, err := w.ledger.Cancel(ctx, w.get("s", "cancelled"), base); err != nil {
		t.Fatal(err)
	}
	if _, err := w.ledger.Expire(ctx, w.get("s", "expired"), base.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	check("after an answer, a cancel and an expiry", "closed", "raced")

	if _, err := w.sessions.Commit(ctx, w.ledger.Closed([]*ledger.Call{w.get("s", "closed")}, base)...); err != nil {
		t.Fatal(err)
	}
	check("after a rewind closed one", "raced")

	// The record changes under a reader (another writer won): the loser's
	// cancel writes nothing, the listing's write included.
	stale := w.get("s", "raced")
	if err := w.ledger.MarkResumed(ctx, []*ledger.Call{stale}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.ledger.Cancel(ctx, stale, base); !errors.Is(err, ledger.ErrChanged) {
		t.Fatalf("Cancel of a stale read: %v, want ErrChanged", err)
	}
	check("after a losing cancel", "raced")
	if _, err := w.ledger.Answer(ctx, w.get("s", "raced"), ledger.Answer{Error: "no"}, "tab-1", base); err != nil {
		t.Fatal(err)
	}
	if _, err := w.ledger.Answer(ctx, stale, ledger.Answer{Error: "again"}, "tab-2", base); !errors.Is(err, ledger.ErrChanged) {
		t.Fatalf("a second answer: %v, want ErrChanged", err)
	}
	check("after the winning answer")

	// An in-call question waits too, from its own commit.
	q := call("s", "question", 0)
	q.Chat, q.Kind, q.InCall, q.Resumed = "chat", ledger.KindInput, true, true
	if err := w.ledger.Ask(ctx, q); err != nil {
		t.Fatal(err)
	}
	check("after an in-call question", "question")
}
