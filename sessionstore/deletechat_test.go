package sessionstore_test

import (
	"errors"
	"testing"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/baton-run/baton/internal/firestoretest"
	"github.com/baton-run/baton/sessionstore"
)

// TestDeleteChatDeletesWhatIsUnderIt: deleting a chat deletes the
// documents other packages keep under it (the A2A task store's tasks and
// their events), to any depth; a chat that changed since it was read is
// kept with everything under it.
func TestDeleteChatDeletesWhatIsUnderIt(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := sessionstore.New(firestoretest.NewClient(t), nil)
	now := time.Now()
	newChat := func(id string) (*sessionstore.Chat, []*firestore.DocumentRef) {
		t.Helper()
		if err := s.CreateChat(ctx, &sessionstore.Chat{App: "app", UserID: "ada", ID: id, Agent: "dj", SessionID: "s-" + id, Created: now, LastActivity: now}); err != nil {
			t.Fatal(err)
		}
		task := s.Client().Doc(s.ChatDoc("app", "ada", id).Child("a2aTasks", "t1").Path())
		docs := []*firestore.DocumentRef{task, task.Collection("a2aEvents").Doc("1"), task.Collection("a2aEvents").Doc("2")}
		for _, d := range docs {
			if _, err := d.Set(ctx, map[string]any{"x": 1}); err != nil {
				t.Fatal(err)
			}
		}
		c, err := s.GetChat(ctx, "app", "ada", id)
		if err != nil {
			t.Fatal(err)
		}
		return c, docs
	}
	left := func(docs []*firestore.DocumentRef) int {
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

	idle, docs := newChat("idle")
	if err := s.DeleteChat(ctx, idle); err != nil {
		t.Fatalf("DeleteChat: %v", err)
	}
	if _, err := s.GetChat(ctx, "app", "ada", "idle"); !errors.Is(err, sessionstore.ErrNotFound) {
		t.Errorf("GetChat after DeleteChat: error = %v, want ErrNotFound", err)
	}
	if n := left(docs); n != 0 {
		t.Errorf("%d of %d documents under the deleted chat remain, want none", n, len(docs))
	}

	stale, docs := newChat("busy")
	fresh := *stale
	fresh.LastActivity = now.Add(time.Minute)
	if err := s.SaveChat(ctx, &fresh); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteChat(ctx, stale); !errors.Is(err, sessionstore.ErrConflict) {
		t.Errorf("DeleteChat of a chat changed since read: error = %v, want ErrConflict", err)
	}
	if n := left(docs); n != len(docs) {
		t.Errorf("%d of %d documents under the kept chat remain, want all", n, len(docs))
	}
}
