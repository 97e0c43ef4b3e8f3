package sessionstore_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/baton-run/baton/internal/firestoretest"
	"github.com/baton-run/baton/sessionstore"
)

// TestListChats: a user's chats, most recent activity first, a page at a
// time; another user's are never listed; a chat's activity, written by the
// commit that claims its session, moves it to the top.
func TestListChats(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	client, counter := firestoretest.NewCountingClient(t)
	s := sessionstore.New(client, nil)
	base := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	for i := range 5 {
		at := base.Add(time.Duration(i) * time.Minute)
		for _, user := range []string{"ada", "bob"} {
			id := fmt.Sprintf("%s-%d", user, i)
			if err := s.CreateChat(ctx, &sessionstore.Chat{App: "app", UserID: user, ID: id, Agent: "a", SessionID: id + "~0",
				Created: at, LastActivity: at, Listing: sessionstore.Listing{FirstWords: "chat " + id}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Two chats with the same activity time: ordered by id, both listed once.
	if err := s.CreateChat(ctx, &sessionstore.Chat{App: "app", UserID: "ada", ID: "ada-tie", Agent: "a", SessionID: "t~0",
		Created: base, LastActivity: base.Add(2 * time.Minute)}); err != nil {
		t.Fatal(err)
	}
	list := func() []string {
		var ids []string
		var cursor sessionstore.ListCursor
		for {
			before := counter.Snapshot()
			page, err := s.ListChats(ctx, "app", "ada", 2, cursor)
			if err != nil {
				t.Fatal(err)
			}
			if rt := counter.Snapshot().Sub(before).RoundTrips; rt != 1 {
				t.Errorf("a page took %d round trips, want 1", rt)
			}
			for _, c := range page.Chats {
				ids = append(ids, c.ID)
			}
			if page.Next == nil {
				return ids
			}
			cursor = *page.Next
		}
	}
	want := []string{"ada-4", "ada-3", "ada-tie", "ada-2", "ada-1", "ada-0"}
	if diff := cmp.Diff(want, list()); diff != "" {
		t.Errorf("ListChats pages (-want +got):\n%s", diff)
	}
	if _, err := s.Commit(ctx, s.ChatActivity(sessionstore.ChatKey{App: "app", User: "ada", ID: "ada-1"},
		sessionstore.Activity{At: base.Add(time.Hour), Until: base.Add(time.Hour + 2*time.Minute)})); err != nil {
		t.Fatal(err)
	}
	want = []string{"ada-1", "ada-4", "ada-3", "ada-tie", "ada-2", "ada-0"}
	if diff := cmp.Diff(want, list()); diff != "" {
		t.Errorf("ListChats after activity in ada-1 (-want +got):\n%s", diff)
	}
	if _, err := s.ListChats(ctx, "app", "ada/../bob", 2, sessionstore.ListCursor{}); !errors.Is(err, sessionstore.ErrInvalidID) {
		t.Errorf("ListChats of a forged user id: %v, want ErrInvalidID", err)
	}
}

// TestChatListing: the listing's fields, each written by its own commit,
// and several of them in one commit (two calls a step pauses on): the
// writes of one document coalesce into one.
func TestChatListing(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := sessionstore.New(firestoretest.NewClient(t), nil)
	now := time.Now().UTC().Truncate(time.Millisecond)
	key := sessionstore.ChatKey{App: "app", User: "ada", ID: "c"}
	if err := s.CreateChat(ctx, &sessionstore.Chat{App: "app", UserID: "ada", ID: "c", Agent: "a", SessionID: "c~0", Created: now, LastActivity: now,
		Listing: sessionstore.Listing{FirstWords: "play some jazz"}}); err != nil {
		t.Fatal(err)
	}
	w1 := sessionstore.WaitingCall{Kind: "approval", Client: "tab-a", Expires: now.Add(time.Minute)}
	w2 := sessionstore.WaitingCall{Kind: "browser", Client: "tab-a", AnyDevice: true, Expires: now.Add(time.Minute)}
	until := now.Add(2 * time.Minute)
	if _, err := s.Commit(ctx, s.ChatActivity(key, sessionstore.Activity{At: now, Until: until}),
		s.ChatWaiting(key, "call/1", &w1), s.ChatWaiting(key, "call.2", &w2)); err != nil {
		t.Fatalf("one commit of the listing's writes: %v", err)
	}
	got := readListing(t, s, key)
	want := sessionstore.Listing{FirstWords: "play some jazz", ActiveUntil: &until, Waiting: map[string]sessionstore.WaitingCall{"call/1": w1, "call.2": w2}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("listing (-want +got):\n%s", diff)
	}
	if _, err := s.Commit(ctx, s.ChatWaiting(key, "call/1", nil), s.ChatIdle(key, "Jazz request")); err != nil {
		t.Fatal(err)
	}
	want = sessionstore.Listing{FirstWords: "play some jazz", ModelTitle: "Jazz request", Waiting: map[string]sessionstore.WaitingCall{"call.2": w2}}
	if diff := cmp.Diff(want, readListing(t, s, key)); diff != "" {
		t.Errorf("listing once idle (-want +got):\n%s", diff)
	}
	if err := s.RenameChat(ctx, key, "My jazz"); err != nil {
		t.Fatal(err)
	}
	if got := readListing(t, s, key).Title(); got != "My jazz" {
		t.Errorf("Title after a rename = %q, want the person's", got)
	}
	if err := s.RenameChat(ctx, key, ""); err != nil {
		t.Fatal(err)
	}
	if got := readListing(t, s, key).Title(); got != "Jazz request" {
		t.Errorf("Title after the rename was undone = %q, want the model's", got)
	}
	if err := s.RenameChat(ctx, sessionstore.ChatKey{App: "app", User: "bob", ID: "c"}, "x"); !errors.Is(err, sessionstore.ErrNotFound) {
		t.Errorf("RenameChat of another user's chat id: %v, want ErrNotFound", err)
	}
}

func readListing(t *testing.T, s *sessionstore.Service, key sessionstore.ChatKey) sessionstore.Listing {
	t.Helper()
	c, err := s.GetChat(t.Context(), key.App, key.User, key.ID)
	if err != nil {
		t.Fatal(err)
	}
	return c.Listing
}

// TestSaveChatPointer: SaveChat's compare-and-set is on the chat's pointer:
// a listing written since the chat was read does not make it fail, a
// pointer moved since does.
func TestSaveChatPointer(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := sessionstore.New(firestoretest.NewClient(t), nil)
	now := time.Now().UTC()
	key := sessionstore.ChatKey{App: "app", User: "ada", ID: "c"}
	if err := s.CreateChat(ctx, &sessionstore.Chat{App: "app", UserID: "ada", ID: "c", Agent: "a", SessionID: "c~0", Created: now, LastActivity: now}); err != nil {
		t.Fatal(err)
	}
	read, err := s.GetChat(ctx, "app", "ada", "c")
	if err != nil {
		t.Fatal(err)
	}
	other := *read
	if _, err := s.Commit(ctx, s.ChatWaiting(key, "c1", &sessionstore.WaitingCall{Kind: "browser"})); err != nil {
		t.Fatal(err)
	}
	read.Building = "c~1"
	if err := s.SaveChat(ctx, read); err != nil {
		t.Fatalf("SaveChat after a listing's write: %v, want it saved", err)
	}
	other.Agent = "b"
	if err := s.SaveChat(ctx, &other); !errors.Is(err, sessionstore.ErrConflict) {
		t.Errorf("SaveChat of a pointer moved since: %v, want ErrConflict", err)
	}
	got := readListing(t, s, key)
	if _, ok := got.Waiting["c1"]; !ok {
		t.Errorf("the listing after SaveChat: %+v, want its waiting call kept", got)
	}
}
