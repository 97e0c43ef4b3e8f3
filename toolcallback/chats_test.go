package toolcallback_test

import (
	"context"
	"errors"
	"iter"
	"strings"
	"testing"
	"time"

	"google.golang.org/adk/v2/model"

	"github.com/google/go-cmp/cmp"

	"github.com/baton-run/baton/internal/polltest"
	"github.com/baton-run/baton/modeltest"
	"github.com/baton-run/baton/sessionstore"
	"github.com/baton-run/baton/toolcallback"
)

// list is user-1's first page of chats as client sees them, at the
// context's time.
func (f *fixture) list(client string) []toolcallback.ChatSummary {
	f.t.Helper()
	got, err := f.team.ListChats(f.t.Context(), toolcallback.ListRequest{UserID: "user-1", ClientID: client, Limit: 20})
	if err != nil {
		f.t.Fatalf("ListChats: %v", err)
	}
	return got.Chats
}

// brief is a chat summary without its times, to compare.
type brief struct {
	ID, Title string
	State     toolcallback.ChatState
	Waiting   toolcallback.Waiting
}

func briefs(chats []toolcallback.ChatSummary) []brief {
	out := []brief{}
	for _, c := range chats {
		out = append(out, brief{ID: c.ID, Title: c.Title, State: c.State, Waiting: c.Waiting})
	}
	return out
}

// TestChatListWaiting: the list shows what waits for the person in each
// chat, for the device that asks, right after each change the ledger
// records first writer wins: an answer, a cancel (a new message), an
// expiry. The most recent activity comes first; a chat's title is the
// first words of its first message.
func TestChatListWaiting(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil,
		textReply("hello"), // a
		callReply(call("c1", "change_bgm", map[string]any{"track": 1})),                 // b
		callReply(call("c2", "get_location", map[string]any{})),                         // c
		callReply(call("c3", "book_table", map[string]any{"people": 2, "name": "Ada"})), // d
		echoReply,          // b's answer
		textReply("fine"),  // c's new message cancels c2
		textReply("noted"), // d after the sweep
	)
	for _, m := range [][2]string{{"a", "hi there"}, {"b", "play track one"}, {"c", "where am I?"}, {"d", "book for two"}} {
		if _, err := f.turn(f.team, m[0], "tab-a", m[1]); err != nil {
			t.Fatal(err)
		}
	}
	want := []brief{
		{ID: "d", Title: "book for two", State: toolcallback.ChatWaiting, Waiting: toolcallback.Waiting{Approvals: 1}},
		{ID: "c", Title: "where am I?", State: toolcallback.ChatWaiting, Waiting: toolcallback.Waiting{Browser: 1}},
		{ID: "b", Title: "play track one", State: toolcallback.ChatWaiting, Waiting: toolcallback.Waiting{Browser: 1}},
		{ID: "a", Title: "hi there", State: toolcallback.ChatIdle},
	}
	if diff := cmp.Diff(want, briefs(f.list("tab-a"))); diff != "" {
		t.Errorf("the list for tab-a (-want +got):\n%s", diff)
	}
	// Another device may answer only the any-device call.
	want[0].Waiting, want[2].Waiting = toolcallback.Waiting{Elsewhere: 1}, toolcallback.Waiting{Elsewhere: 1}
	if diff := cmp.Diff(want, briefs(f.list("tab-b"))); diff != "" {
		t.Errorf("the list for tab-b (-want +got):\n%s", diff)
	}

	if _, _, err := resume(f.team, t.Context(), "b", "c1", "tab-a", toolcallback.Answer{Output: map[string]any{"playing": 1}}); err != nil {
		t.Fatal(err)
	}
	// A second answer loses (first writer wins) and changes nothing.
	if _, _, err := resume(f.team, t.Context(), "b", "c1", "tab-a", toolcallback.Answer{Output: map[string]any{"playing": 2}}); !errors.Is(err, toolcallback.ErrAlreadyResolved) {
		t.Fatalf("a second answer: %v, want ErrAlreadyResolved", err)
	}
	if _, err := f.turn(f.team, "c", "tab-a", "never mind"); err != nil {
		t.Fatal(err)
	}
	got := briefs(f.list("tab-a"))
	want = []brief{
		{ID: "c", Title: "where am I?", State: toolcallback.ChatIdle},
		{ID: "b", Title: "play track one", State: toolcallback.ChatIdle},
		{ID: "d", Title: "book for two", State: toolcallback.ChatWaiting, Waiting: toolcallback.Waiting{Approvals: 1}},
		{ID: "a", Title: "hi there", State: toolcallback.ChatIdle},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the list after an answer and a cancel (-want +got):\n%s", diff)
	}

	// Past its expiry an approval waits no more, swept or not; the sweep
	// removes it from the listing with the record.
	later := time.Now().Add(time.Hour)
	f.team = f.newInstance()
	listLater := func() []brief {
		got, err := f.team.ListChats(platformAt(t.Context(), later), toolcallback.ListRequest{UserID: "user-1", ClientID: "tab-a", Limit: 20})
		if err != nil {
			t.Fatal(err)
		}
		return briefs(got.Chats)
	}
	want[2] = brief{ID: "d", Title: "book for two", State: toolcallback.ChatIdle}
	if diff := cmp.Diff(want, listLater()); diff != "" {
		t.Errorf("the list past the approval's expiry (-want +got):\n%s", diff)
	}
	if _, err := f.team.Sweep(t.Context(), later); err != nil {
		t.Fatal(err)
	}
	chat, err := f.sessions.GetChat(t.Context(), "app", "user-1", "d")
	if err != nil || len(chat.Waiting) != 0 {
		t.Errorf("d's listing after the sweep: %+v, %v; want nothing waiting", chat.Listing, err)
	}
}

// TestChatListRunning: a chat shows as running while its turn does, and as
// idle once the commit that releases the lease landed.
func TestChatListRunning(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil, textReply("one"), textReply("two"))
	if _, err := f.turn(f.team, "a", "tab-a", "first"); err != nil {
		t.Fatal(err)
	}
	f.model.Gate = make(chan struct{})
	inv, _, err := f.team.Turn(t.Context(), textTurn("a", "tab-a", "second"))
	if err != nil {
		t.Fatal(err)
	}
	if got := f.list("tab-a"); len(got) != 1 || got[0].State != toolcallback.ChatRunning {
		t.Errorf("the list while the turn runs: %+v, want a running chat", got)
	}
	f.model.Gate <- struct{}{}
	if _, err := collect(inv); err != nil {
		t.Fatal(err)
	}
	if got := f.list("tab-a"); len(got) != 1 || got[0].State != toolcallback.ChatIdle {
		t.Errorf("the list once the turn ended: %+v, want an idle chat", got)
	}
}

// TestSwitchClearsWaiting: an agent switch cancels the old agent's calls,
// and the chat waits for nothing any more.
func TestSwitchClearsWaiting(t *testing.T) {
	t.Parallel()
	f := newTeamFixture(t)
	f.dj.Script = []reply{callReply(call("c1", "change_bgm", map[string]any{"track": 1}))}
	f.concierge.Script = []reply{textReply("Switched.")}
	if _, _, err := f.turn("s", "dj", "music"); err != nil {
		t.Fatal(err)
	}
	chat, err := f.sessions.GetChat(t.Context(), "app", "user-1", "s")
	if err != nil || len(chat.Waiting) != 1 {
		t.Fatalf("waiting before the switch: %+v, %v; want the call", chat.Listing.Waiting, err)
	}
	if _, _, err := f.turn("s", "concierge", "never mind"); err != nil {
		t.Fatal(err)
	}
	got, err := f.team.ListChats(t.Context(), toolcallback.ListRequest{UserID: "user-1", ClientID: "tab-a", Limit: 5})
	if err != nil || len(got.Chats) != 1 || got.Chats[0].State != toolcallback.ChatIdle || got.Chats[0].Agent != "concierge" {
		t.Errorf("the list after the switch: %+v, %v; want an idle chat of the concierge", got.Chats, err)
	}
}

// TestRenameChat: a person's title wins over the first words; a bad title
// is refused and writes nothing; another user's chat id is not found.
func TestRenameChat(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil, textReply("hello"))
	if _, err := f.turn(f.team, "a", "tab-a", "what a lovely day it is today in the park with everyone around"); err != nil {
		t.Fatal(err)
	}
	if got := f.list("tab-a")[0].Title; got != "what a lovely day it is today in the park with everyone…" {
		t.Errorf("title before a rename = %q, want the first words", got)
	}
	ctx := t.Context()
	for _, bad := range []string{"", "   ", strings.Repeat("x", toolcallback.MaxTitleRunes+1), "tab\there", "\xff"} {
		if err := f.team.RenameChat(ctx, "user-1", "a", bad); !errors.Is(err, toolcallback.ErrInvalidTitle) {
			t.Errorf("RenameChat(%q): %v, want ErrInvalidTitle", bad, err)
		}
	}
	if err := f.team.RenameChat(ctx, "user-2", "a", "mine now"); !errors.Is(err, sessionstore.ErrNotFound) {
		t.Errorf("RenameChat of user-1's chat by user-2: %v, want ErrNotFound", err)
	}
	if err := f.team.RenameChat(ctx, "user-1", "a", "  The park  "); err != nil {
		t.Fatal(err)
	}
	if got := f.list("tab-a")[0].Title; got != "The park" {
		t.Errorf("title after a rename = %q, want %q", got, "The park")
	}
}

// TestChatTitle: a new chat's first turn asks the title model beside the
// answer, from the first message, and the title is stored.
func TestChatTitle(t *testing.T) {
	t.Parallel()
	titles := &modeltest.Strict{T: t, Script: []reply{textReply(`"Jazz for a rainy day."`)}}
	f := newFixture(t, &toolcallback.Options{TitleModel: titles}, textReply("Here is some jazz."), textReply("More."))
	if _, err := f.turn(f.team, "a", "tab-a", "play some jazz please"); err != nil {
		t.Fatal(err)
	}
	polltest.Until(t, "the model's title stored", func() bool {
		c, err := f.sessions.GetChat(t.Context(), "app", "user-1", "a")
		return err == nil && c.ModelTitle != ""
	})
	if got := f.list("tab-a")[0].Title; got != "Jazz for a rainy day" {
		t.Errorf("title = %q, want the model's, cleaned", got)
	}
	if req := titles.LastRequest(); titles.Calls() != 1 || !strings.Contains(dumpContents(req.Contents), "play some jazz please") {
		t.Errorf("title requests: %d, want one, of the first message", titles.Calls())
	}
	// Later turns ask for no title.
	if _, err := f.turn(f.team, "a", "tab-a", "more"); err != nil {
		t.Fatal(err)
	}
	if titles.Calls() != 1 {
		t.Errorf("title requests after a second turn: %d, want one", titles.Calls())
	}
}

// TestChatTitleFails: a title model that fails leaves the first words of
// the first message, and the answer does not wait for it.
func TestChatTitleFails(t *testing.T) {
	t.Parallel()
	asked := make(chan struct{})
	release := make(chan struct{})
	titles := &failingModel{asked: asked, release: release}
	f := newFixture(t, &toolcallback.Options{TitleModel: titles}, textReply("Here is some jazz."))
	// The turn ends while the title's request is still held.
	if _, err := f.turn(f.team, "a", "tab-a", "play some jazz please"); err != nil {
		t.Fatal(err)
	}
	<-asked
	close(release) // it fails: nothing is stored, now or later
	if got := f.list("tab-a")[0].Title; got != "play some jazz please" {
		t.Errorf("title = %q, want the first words", got)
	}
}

// failingModel is a model.LLM that waits for release, then fails.
type failingModel struct {
	asked, release chan struct{}
}

func (m *failingModel) Name() string { return "failing" }

func (m *failingModel) GenerateContent(_ context.Context, _ *model.LLMRequest, _ bool) iter.Seq2[*model.LLMResponse, error] {
	return func(yield func(*model.LLMResponse, error) bool) {
		close(m.asked)
		<-m.release
		yield(nil, errors.New("no title today"))
	}
}
