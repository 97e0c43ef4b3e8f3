package functions

import (
	"fmt"
	"net/http"
	"net/url"
	"testing"

	"github.com/baton-run/baton/modeltest"
)

// TestChatListCost: a page of GET /Chat is one query, one round trip; it
// reads the page's chats and one more (which says whether a next page
// follows), and writes nothing (docs/cost.md, "A person's chats").
func TestChatListCost(t *testing.T) {
	t.Parallel()
	f := newHTTPFixture(t, nil)
	f.model.Repeat = modeltest.TextReply("an answer")
	for i := range 7 {
		f.stream(f.chat("ada", chatBody(fmt.Sprintf("c%d", i), "tab-a", userMessage(fmt.Sprintf("u%d", i), "hello"))))
	}
	f.counter.Reset()
	first := f.list("ada", "tab-a", "?limit=5")
	page1 := f.counter.Snapshot()
	f.counter.Reset()
	second := f.list("ada", "tab-a", "?limit=5&before="+url.QueryEscape(first.Next))
	page2 := f.counter.Snapshot()
	if len(first.Chats) != 5 || first.Next == "" || len(second.Chats) != 2 || second.Next != "" {
		t.Fatalf("pages of %d (next %q) and %d (next %q) chats, want 5 with a next and 2 without", len(first.Chats), first.Next,
			len(second.Chats), second.Next)
	}
	t.Logf("GET /Chat?limit=5: %+v; the next page (2 chats): %+v", page1, page2)
	for _, c := range []struct {
		name  string
		ops   costBound
		reads int64
	}{{"the first page", costBound{roundTrips: page1.RoundTrips, lookups: page1.Lookups(), writes: page1.Writes}, 6},
		{"the last page", costBound{roundTrips: page2.RoundTrips, lookups: page2.Lookups(), writes: page2.Writes}, 2}} {
		if c.ops.roundTrips != 1 || c.ops.lookups != c.reads || c.ops.writes != 0 {
			t.Errorf("%s: %d round trips, %d reads, %d writes; want 1, %d, 0", c.name, c.ops.roundTrips, c.ops.lookups, c.ops.writes, c.reads)
		}
	}
	if code, _ := f.status(http.MethodGet, NameChat+"?limit=5", "bob", nil, nil); code != http.StatusOK {
		t.Fatalf("GET /Chat as bob: %d", code)
	}
}
