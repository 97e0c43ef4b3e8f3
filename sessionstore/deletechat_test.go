package sessionstore_test

import (
	"errors"
	"testing"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/adk/v2/session"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/baton-run/baton/internal/firestoretest"
	"github.com/baton-run/baton/sessionstore"
)

// TestChatDeletion: a chat marked deleted is gone from the list at once,
// while what is under it is still there; finishing the deletion removes
// the documents other packages keep under it (the A2A task store's tasks
// and their events), to any depth, and leaves a bare tombstone that
// Firestore collects later. Marking it again changes nothing.
func TestChatDeletion(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := sessionstore.New(firestoretest.NewClient(t), nil)
	now := time.Now().UTC().Truncate(time.Millisecond)
	key := sessionstore.ChatKey{App: "app", User: "ada", ID: "c1"}
	if err := s.CreateChat(ctx, &sessionstore.Chat{App: "app", UserID: "ada", ID: "c1", Agent: "dj", SessionID: "c1~0",
		Created: now, LastActivity: now, Listing: sessionstore.Listing{FirstWords: "hello there"}}); err != nil {
		t.Fatal(err)
	}
	task := s.Client().Doc(s.ChatDoc("app", "ada", "c1").Child("a2aTasks", "t1").Path())
	docs := []*firestore.DocumentRef{task, task.Collection("a2aEvents").Doc("1"), task.Collection("a2aEvents").Doc("2"),
		s.Client().Doc(s.ChatDoc("app", "ada", "c1").Child("feedback", "m1").Path())}
	for _, d := range docs {
		if _, err := d.Set(ctx, map[string]any{"x": 1}); err != nil {
			t.Fatal(err)
		}
	}
	left := func() int {
		n := 0
		for _, d := range docs {
			_, err := d.Get(ctx)
			switch status.Code(err) {
			case codes.OK:
				n++
			case codes.NotFound:
			default:
				t.Fatal(err)
			}
		}
		return n
	}
	listed := func() int {
		page, err := s.ListChats(ctx, "app", "ada", 10, sessionstore.ListCursor{})
		if err != nil {
			t.Fatal(err)
		}
		return len(page.Chats)
	}
	if n := listed(); n != 1 {
		t.Fatalf("ListChats before the deletion: %d chats, want 1", n)
	}

	cleanup := now.Add(time.Minute)
	marked, err := s.MarkChatDeleted(ctx, key, now, cleanup)
	if err != nil {
		t.Fatalf("MarkChatDeleted: %v", err)
	}
	if n := listed(); n != 0 {
		t.Errorf("ListChats once marked deleted: %d chats, want none", n)
	}
	if n := left(); n != len(docs) {
		t.Errorf("%d of %d documents under the chat are left once marked, want all (the rest goes later)", n, len(docs))
	}
	due, err := s.ChatsToClean(ctx, "app", cleanup, 10)
	if err != nil || len(due) != 1 || due[0].Deleted == nil {
		t.Errorf("ChatsToClean at the cleanup time = %v, %v; want the chat marked deleted", due, err)
	}
	again, err := s.MarkChatDeleted(ctx, key, now.Add(time.Hour), now.Add(2*time.Hour))
	if err != nil || !again.Deleted.Equal(now) {
		t.Errorf("MarkChatDeleted again = %v, %v; want the first mark kept", again, err)
	}
	// A rename of a deleted chat is a chat not found.
	if err := s.RenameChat(ctx, key, "new name"); !errors.Is(err, sessionstore.ErrNotFound) {
		t.Errorf("RenameChat of a deleted chat: %v, want ErrNotFound", err)
	}

	n, err := s.FinishChatDeletion(ctx, marked, 7*24*time.Hour)
	if err != nil {
		t.Fatalf("FinishChatDeletion: %v", err)
	}
	if n != len(docs) || left() != 0 {
		t.Errorf("FinishChatDeletion deleted %d documents and left %d, want %d and none", n, left(), len(docs))
	}
	got, err := s.GetChat(ctx, "app", "ada", "c1")
	if err != nil || !got.Finished() || got.Title() != "" || got.SessionID != "" {
		t.Errorf("GetChat after the deletion = %+v, %v; want a bare tombstone", got, err)
	}
	if due, err := s.ChatsToClean(ctx, "app", cleanup.Add(time.Hour), 10); err != nil || len(due) != 0 {
		t.Errorf("ChatsToClean after the deletion = %v, %v; want nothing to do", due, err)
	}
	if _, err := s.MarkChatDeleted(ctx, sessionstore.ChatKey{App: "app", User: "bob", ID: "c1"}, now, cleanup); !errors.Is(err, sessionstore.ErrNotFound) {
		t.Errorf("MarkChatDeleted of another user's chat id: %v, want ErrNotFound", err)
	}
}

// TestDeleteUserData: an account is known from its first chat's commit,
// and its deletion, marked first, removes everything under the user and
// the account last.
func TestDeleteUserData(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := sessionstore.New(firestoretest.NewClient(t), nil)
	for _, user := range []string{"ada", "bob"} {
		chat := &sessionstore.Chat{App: "app", UserID: user, ID: "c", Agent: "a", SessionID: "c~0"}
		sess, claim, err := s.ClaimNewSession(ctx, &session.CreateRequest{AppName: "app", UserID: user, SessionID: "c~0"}, chat, "h", 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.AppendEventWith(ctx, sess, textEvent("m1", "user", "hello"), sessionstore.AppendOptions{Claim: claim}); err != nil {
			t.Fatal(err)
		}
		if err := s.ReleaseSession(ctx, sess, sessionstore.ReleaseOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Commit(ctx, sessionstore.Merge(s.LimitsDoc("app", user, "turns"), map[string]any{"n": 1})); err != nil {
			t.Fatal(err)
		}
	}
	users, err := s.AccountsAfter(ctx, "app", "", 10)
	if err != nil || len(users) != 2 || users[0] != "ada" || users[1] != "bob" {
		t.Fatalf("AccountsAfter = %v, %v; want ada and bob", users, err)
	}
	if users, err := s.AccountsAfter(ctx, "app", "ada", 10); err != nil || len(users) != 1 || users[0] != "bob" {
		t.Fatalf("AccountsAfter(ada) = %v, %v; want bob", users, err)
	}
	now := time.Now()
	if _, err := s.MarkAccountDeleting(ctx, "app", "ada", now); err != nil {
		t.Fatal(err)
	}
	if ids, err := s.AccountsDeleting(ctx, "app", now.Add(time.Second), 10); err != nil || len(ids) != 1 || ids[0] != "ada" {
		t.Fatalf("AccountsDeleting = %v, %v; want ada", ids, err)
	}
	n, err := s.DeleteUserData(ctx, "app", "ada")
	if err != nil || n < 4 {
		t.Fatalf("DeleteUserData = %d, %v; want the chat, the session, its events, the limits, the user and the account", n, err)
	}
	user := s.Client().Doc(s.UserDoc("app", "ada").Path())
	if cols, err := user.Collections(ctx).GetAll(); err != nil || len(cols) != 0 {
		t.Errorf("collections left under the deleted user: %v, %v; want none", cols, err)
	}
	if a, err := s.GetAccount(ctx, "app", "ada"); err != nil || a.Exists {
		t.Errorf("GetAccount after the deletion = %+v, %v; want none", a, err)
	}
	if c, err := s.GetChat(ctx, "app", "bob", "c"); err != nil || c.SessionID != "c~0" {
		t.Errorf("the other user's chat: %v, %v; want it kept", c, err)
	}
}
