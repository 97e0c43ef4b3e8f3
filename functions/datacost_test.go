package functions

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
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

// TestDataBadInputWritesNothing: every malformed or forged request to a
// person's data routes is a 4xx and writes nothing: bad parameters and
// bodies, ids that are not ids, another user's chat and message ids, no
// identity, and a development-identity header beside a real token (which
// names nobody: the token's user is the caller).
func TestDataBadInputWritesNothing(t *testing.T) {
	t.Parallel()
	f := dataFixture(t)
	answer := f.assistantID("ada", "c2")
	bobs := f.assistantID("bob", "c1")
	type req struct {
		method, path, user string
		body               any
		header             map[string]string
	}
	rate := func(chat, msg string) string { return NameChat + "/" + chat + "/feedback/" + url.PathEscape(msg) }
	for name, r := range map[string]req{
		"a list page of 0":                     {http.MethodGet, NameChat + "?limit=0", "ada", nil, nil},
		"a cursor without an id":               {http.MethodGet, NameChat + "?before=" + url.QueryEscape("MTIz"), "ada", nil, nil},
		"a cursor naming a path":               {http.MethodGet, NameChat + "?before=" + url.QueryEscape("MTIzOi4uL2JvYg"), "ada", nil, nil},
		"a rename of bob's chat":               {http.MethodPatch, NameChat + "/c2", "bob", map[string]any{"title": "x"}, nil},
		"a rename with a control char":         {http.MethodPatch, NameChat + "/c2", "ada", map[string]any{"title": "a\u0007b"}, nil},
		"a rename of a dotted id":              {http.MethodPatch, NameChat + "/..", "ada", map[string]any{"title": "x"}, nil},
		"a rename without identity":            {http.MethodPatch, NameChat + "/c2", "", map[string]any{"title": "x"}, nil},
		"a deletion of ada's c2 by bob":        {http.MethodDelete, NameChat + "/c2", "bob", nil, nil},
		"a deletion of a chat of no one":       {http.MethodDelete, NameChat + "/nobody", "ada", nil, nil},
		"a deletion of a bad id":               {http.MethodDelete, NameChat + "/a%2Fb", "ada", nil, nil},
		"a deletion without identity":          {http.MethodDelete, NameChat + "/c2", "", nil, nil},
		"a rating of bob's answer":             {http.MethodPut, rate("c1", bobs), "ada", map[string]any{"rating": "up"}, nil},
		"a rating of ada's answer by bob":      {http.MethodPut, rate("c2", answer), "bob", map[string]any{"rating": "up"}, nil},
		"a rating of a made-up message":        {http.MethodPut, rate("c2", "m-forged"), "ada", map[string]any{"rating": "up"}, nil},
		"a rating of a user message":           {http.MethodPut, rate("c2", "u2"), "ada", map[string]any{"rating": "up"}, nil},
		"a rating of 5 stars":                  {http.MethodPut, rate("c2", answer), "ada", map[string]any{"rating": 5}, nil},
		"a rating, not JSON":                   {http.MethodPut, rate("c2", answer), "ada", "rating=up", nil},
		"an unrating by bob":                   {http.MethodDelete, rate("c2", answer), "bob", nil, nil},
		"an export without identity":           {http.MethodGet, NameAccount + "/export", "", nil, nil},
		"an account deletion without identity": {http.MethodDelete, NameAccount, "", nil, nil},
		"an account deletion naming bob":       {http.MethodDelete, NameAccount, "", nil, map[string]string{"X-Baton-User": "bob"}},
	} {
		before := f.counter.Snapshot()
		code, body := f.status(r.method, r.path, r.user, r.body, r.header)
		if code/100 != 4 {
			t.Errorf("%s: %d %s, want a 4xx", name, code, body)
		}
		if w := f.counter.Snapshot().Sub(before).Writes; w != 0 {
			t.Errorf("%s: %d writes, want none", name, w)
		}
	}
	// A real token beside a development-identity header: the token's user.
	if got := f.list("ada", "tab-a", "").ids(); len(got) != 2 {
		t.Fatalf("ada's chats: %v", got)
	}
	resp := f.do(http.MethodGet, NameChat, f.token("ada"), nil, map[string]string{"X-Baton-User": f.user("bob").UID})
	defer resp.Body.Close()
	var l listOf
	if err := json.NewDecoder(resp.Body).Decode(&l); err != nil || strings.Join(l.ids(), ",") != "c2,c1" {
		t.Errorf("GET /Chat as ada naming bob in X-Baton-User: %d %v %v, want ada's chats", resp.StatusCode, l.ids(), err)
	}
	if code, _ := f.status(http.MethodGet, NameChat+"/c2", "ada", nil, nil); code != http.StatusOK {
		t.Errorf("ada's c2 after the refused requests: %d", code)
	}
}
