package toolcallback_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/adk/v2/platform"
	"google.golang.org/genai"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/baton-run/baton/chatfiles"
	"github.com/baton-run/baton/internal/firestoretest"
	"github.com/baton-run/baton/internal/localgcs"
	"github.com/baton-run/baton/sessionstore"
	"github.com/baton-run/baton/toolcallback"
)

// withFiles gives f's teams a file store on an in-process Cloud Storage
// API, and returns the server.
func withFiles(t *testing.T, opts *toolcallback.Options) *localgcs.Server {
	t.Helper()
	gcs, err := localgcs.Start("files")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(gcs.Stop)
	files, err := gcs.Artifacts(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	opts.Files = chatfiles.New(files, "app", nil)
	return gcs
}

// fileTurn is user's message to chat with a small text file.
func fileTurn(user, chat, text string) toolcallback.TurnRequest {
	return toolcallback.TurnRequest{UserID: user, ChatID: chat, ClientID: "tab-a", Content: &genai.Content{Role: genai.RoleUser,
		Parts: []*genai.Part{genai.NewPartFromText(text), genai.NewPartFromBytes([]byte("notes of "+chat), "text/plain")}}}
}

// deleteWorld is user-1's chat "a" paused on a browser call, with a file,
// an A2A task and a rating under it, beside user-1's chat "b" and
// user-2's chat "a".
type deleteWorld struct {
	f   *fixture
	gcs *localgcs.Server
}

func newDeleteWorld(t *testing.T, client *firestore.Client) *deleteWorld {
	t.Helper()
	opts := &toolcallback.Options{LeaseTTL: crashLeaseTTL}
	w := &deleteWorld{gcs: withFiles(t, opts)}
	w.f = newFixture(t, opts, callReply(call("c1", "change_bgm", map[string]any{"track": 1})), textReply("b"), textReply("a of user-2"))
	if client != nil {
		w.f.client = client
		w.f.sessions = sessionstore.New(client, nil)
		w.f.team = w.f.newInstance()
	}
	ctx := t.Context()
	for _, req := range []toolcallback.TurnRequest{fileTurn("user-1", "a", "play track one"), fileTurn("user-1", "b", "hello"), fileTurn("user-2", "a", "mine")} {
		if _, _, err := runTurn(ctx, w.f.team, req); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []sessionstore.DocName{
		w.f.sessions.ChatDoc("app", "user-1", "a").Child("a2aTasks", "t1"),
		w.f.sessions.ChatDoc("app", "user-1", "a").Child("a2aTasks", "t1").Child("a2aEvents", "1"),
		w.f.sessions.ChatDoc("app", "user-1", "a").Child("feedback", "m1"),
	} {
		if _, err := w.f.sessions.Commit(ctx, sessionstore.Merge(name, map[string]any{"x": 1})); err != nil {
			t.Fatal(err)
		}
	}
	return w
}

// checkGone checks that user-1's chat "a" is deleted whole, and that
// nothing else is.
func (w *deleteWorld) checkGone(t *testing.T, team *toolcallback.Team, sessions *sessionstore.Service) {
	t.Helper()
	ctx := t.Context()
	if _, err := team.Follow(ctx, "user-1", "a"); !errors.Is(err, sessionstore.ErrNotFound) {
		t.Errorf("Follow of the deleted chat: %v, want ErrNotFound", err)
	}
	chat, err := sessions.GetChat(ctx, "app", "user-1", "a")
	if err != nil || !chat.Finished() {
		t.Errorf("the deleted chat's document: %+v, %v; want a bare tombstone", chat, err)
	}
	// The chat's tombstone, and nothing under it or of its session.
	for doc, want := range map[sessionstore.DocName]int{sessions.ChatDoc("app", "user-1", "a"): 1, sessions.SessionDoc("app", "user-1", "a~0"): 0} {
		if n := countDocs(t, ctx, sessions.Client().Doc(doc.Path())); n != want {
			t.Errorf("%d documents left of %s, want %d", n, doc.ID(), want)
		}
	}
	objects, err := w.gcs.Objects(ctx, "app/user-1/a/")
	if err != nil || len(objects) != 0 {
		t.Errorf("files of the deleted chat: %v, %v; want none", objects, err)
	}
	for _, other := range []struct{ user, chat string }{{"user-1", "b"}, {"user-2", "a"}} {
		if _, err := team.Follow(ctx, other.user, other.chat); err != nil {
			t.Errorf("%s's chat %q after the deletion: %v, want it kept", other.user, other.chat, err)
		}
		if objects, err := w.gcs.Objects(ctx, "app/"+other.user+"/"+other.chat+"/"); err != nil || len(objects) == 0 {
			t.Errorf("%s's files of chat %q after the deletion: %v, %v; want them kept", other.user, other.chat, objects, err)
		}
	}
}

// TestDeleteChat: a chat's deletion removes its sessions, their ledger
// records, its files and what other parts keep under it; a late answer
// gets ErrChatDeleted (410), a turn too, reading it finds nothing, and a
// second deletion is done already. Another user cannot delete it: its id
// is theirs to have (not found).
func TestDeleteChat(t *testing.T) {
	t.Parallel()
	w := newDeleteWorld(t, nil)
	f, ctx := w.f, t.Context()
	if _, err := f.team.DeleteChat(ctx, "user-2", "b"); !errors.Is(err, sessionstore.ErrNotFound) {
		t.Errorf("user-2 deleting user-1's chat id b: %v, want ErrNotFound", err)
	}
	report, err := f.team.DeleteChat(ctx, "user-1", "a")
	if err != nil || report.Chats != 1 || report.Documents < 5 {
		t.Fatalf("DeleteChat = %+v, %v; want the chat and its documents", report, err)
	}
	w.checkGone(t, f.team, f.sessions)
	if got := f.list("tab-a"); len(got) != 1 || got[0].ID != "b" {
		t.Errorf("the list after the deletion: %+v, want only b", got)
	}
	if _, _, err := resume(f.team, ctx, "a", "c1", "tab-a", toolcallback.Answer{Output: map[string]any{"playing": 1}}); !errors.Is(err, toolcallback.ErrChatDeleted) {
		t.Errorf("a late answer: %v, want ErrChatDeleted", err)
	}
	if _, err := f.turn(f.team, "a", "tab-a", "hello again"); !errors.Is(err, toolcallback.ErrChatDeleted) {
		t.Errorf("a turn in the deleted chat: %v, want ErrChatDeleted", err)
	}
	if err := f.team.RenameChat(ctx, "user-1", "a", "x"); !errors.Is(err, sessionstore.ErrNotFound) {
		t.Errorf("renaming the deleted chat: %v, want ErrNotFound", err)
	}
	again, err := f.team.DeleteChat(ctx, "user-1", "a")
	if err != nil || again.Chats != 0 || again.Documents != 0 {
		t.Errorf("DeleteChat again = %+v, %v; want nothing left to do", again, err)
	}
	if _, err := f.team.DeleteChat(ctx, "user-1", "never"); !errors.Is(err, sessionstore.ErrNotFound) {
		t.Errorf("DeleteChat of a chat that never was: %v, want ErrNotFound", err)
	}
}

// TestDeleteChatStopsItsTurn: a chat deleted while its turn runs is
// stopped first, through Stop: the turn ends, then the chat goes.
func TestDeleteChatStopsItsTurn(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil, textReply("never said"))
	f.model.Gate = make(chan struct{})
	inv, _, err := f.team.Turn(t.Context(), textTurn("a", "tab-a", "a long question"))
	if err != nil {
		t.Fatal(err)
	}
	deleted := make(chan error, 1)
	go func() {
		r, err := f.newInstance().DeleteChat(t.Context(), "user-1", "a")
		if err == nil && !r.Stopped {
			err = fmt.Errorf("report %+v: nothing was stopped", r)
		}
		deleted <- err
	}()
	if _, err := collect(inv); err != nil && !errors.Is(err, context.Canceled) {
		t.Logf("the stopped turn's stream ended with %v", err)
	}
	if err := await(t, deleted, "the deletion"); err != nil {
		t.Fatalf("DeleteChat of a running chat: %v", err)
	}
	if _, err := f.team.Follow(t.Context(), "user-1", "a"); !errors.Is(err, sessionstore.ErrNotFound) {
		t.Errorf("Follow after the deletion: %v, want ErrNotFound", err)
	}
	if n := countDocs(t, t.Context(), f.sessions.Client().Doc(f.sessions.UserDoc("app", "user-1").Path())); n != 1 {
		t.Errorf("%d documents left of user-1, want the chat's tombstone only", n)
	}
}

// TestDeleteChatCrashAtEveryWrite: a deletion whose process dies right
// after any of its writes leaves the chat invisible from its first write
// on (no list shows it, reading it finds nothing), and the sweeper (or the
// next DeleteChat, for odd writes) finishes it, deleting exactly what the
// chat held.
func TestDeleteChatCrashAtEveryWrite(t *testing.T) {
	t.Parallel()
	total := deleteCommits(t)
	if total < 6 {
		t.Fatalf("the deletion made %d commits; the test is not exercising it", total)
	}
	for k := range total {
		t.Run(fmt.Sprintf("dies-after-write-%d-of-%d", k, total), func(t *testing.T) {
			t.Parallel()
			client, counter := firestoretest.NewCountingClient(t)
			w := newDeleteWorld(t, client)
			var commits atomic.Int32
			var dead atomic.Bool
			counter.SetHook(func(method string, _ any) error {
				if dead.Load() {
					return status.Error(codes.Canceled, "process killed")
				}
				if strings.HasSuffix(method, "/Commit") && commits.Add(1) > int32(k) {
					dead.Store(true)
					return status.Error(codes.Canceled, "process killed")
				}
				return nil
			})
			if _, err := w.f.team.DeleteChat(t.Context(), "user-1", "a"); err == nil {
				t.Fatalf("the doomed deletion succeeded")
			}
			dead.Store(true)

			next, _ := firestoretest.Reopen(t, client)
			sessions := sessionstore.New(next, nil)
			team := w.f.instanceWith(next, w.f.model)
			later := time.Now().Add(crashLeaseTTL + 2*time.Minute)
			ctx := platform.WithTimeProvider(t.Context(), func() time.Time { return later })
			list, err := team.ListChats(ctx, toolcallback.ListRequest{UserID: "user-1", Limit: 10})
			if err != nil {
				t.Fatal(err)
			}
			listed := len(list.Chats) == 2
			if k > 0 && listed {
				t.Errorf("the chat is listed after the deletion's first write")
			}
			if k == 0 || k%2 == 1 {
				if _, err := team.DeleteChat(ctx, "user-1", "a"); err != nil {
					t.Fatalf("DeleteChat after the crash: %v", err)
				}
			} else {
				report, err := team.Sweep(ctx, later)
				if err != nil || report.Repaired != 1 {
					t.Fatalf("Sweep after the crash = %+v, %v; want the deletion finished", report, err)
				}
			}
			w.checkGone(t, team, sessions)
		})
	}
}

// deleteCommits counts the commits of the deletion newDeleteWorld's chat
// takes, run to its end.
func deleteCommits(t *testing.T) int {
	t.Helper()
	client, counter := firestoretest.NewCountingClient(t)
	w := newDeleteWorld(t, client)
	var mu sync.Mutex
	n := 0
	counter.SetHook(func(method string, _ any) error {
		if strings.HasSuffix(method, "/Commit") {
			mu.Lock()
			n++
			mu.Unlock()
		}
		return nil
	})
	if _, err := w.f.team.DeleteChat(t.Context(), "user-1", "a"); err != nil {
		t.Fatal(err)
	}
	counter.SetHook(nil)
	w.checkGone(t, w.f.team, w.f.sessions)
	mu.Lock()
	defer mu.Unlock()
	return n
}

// TestDeleteAccount: an account's deletion deletes every chat of the user
// (a paused one included) with its files, the user's own documents and
// the account, and nothing of another user's.
func TestDeleteAccount(t *testing.T) {
	t.Parallel()
	w := newDeleteWorld(t, nil)
	f, ctx := w.f, t.Context()
	report, err := f.team.DeleteAccount(ctx, "user-1")
	if err != nil || report.Chats != 2 {
		t.Fatalf("DeleteAccount = %+v, %v; want both chats deleted", report, err)
	}
	if n := countDocs(t, ctx, f.sessions.Client().Doc(f.sessions.UserDoc("app", "user-1").Path())); n != 0 {
		t.Errorf("%d documents of user-1 left, want none", n)
	}
	if a, err := f.sessions.GetAccount(ctx, "app", "user-1"); err != nil || a.Exists {
		t.Errorf("user-1's account after its deletion: %+v, %v; want none", a, err)
	}
	if objects, err := w.gcs.Objects(ctx, "app/user-1/"); err != nil || len(objects) != 0 {
		t.Errorf("user-1's files: %v, %v; want none", objects, err)
	}
	if got := f.list("tab-a"); len(got) != 0 {
		t.Errorf("user-1's list after the deletion: %+v, want empty", got)
	}
	if _, err := f.team.Follow(ctx, "user-2", "a"); err != nil {
		t.Errorf("user-2's chat after user-1's deletion: %v, want it kept", err)
	}
	if again, err := f.team.DeleteAccount(ctx, "user-1"); err != nil || again.Chats != 0 {
		t.Errorf("DeleteAccount again = %+v, %v; want nothing left to do", again, err)
	}
}

// TestSweepDeletesGoneUsers: Sweep asks the identity provider about the
// users that have data, and deletes the data of those it no longer has;
// it asks again only once AccountCheckEvery has passed.
func TestSweepDeletesGoneUsers(t *testing.T) {
	t.Parallel()
	var asked atomic.Int32
	opts := &toolcallback.Options{AccountCheckEvery: time.Hour, AccountGone: func(_ context.Context, users []string) ([]string, error) {
		asked.Add(int32(len(users)))
		var gone []string
		for _, u := range users {
			if u == "user-2" {
				gone = append(gone, u)
			}
		}
		return gone, nil
	}}
	f := newFixture(t, opts, textReply("one"), textReply("two"))
	ctx := t.Context()
	for _, req := range []toolcallback.TurnRequest{textTurn("a", "tab-a", "hi"), {UserID: "user-2", ChatID: "b", ClientID: "tab-b", Content: genai.NewContentFromText("hi", genai.RoleUser)}} {
		if _, _, err := runTurn(ctx, f.team, req); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now()
	report, err := f.team.Sweep(ctx, now)
	if err != nil || report.Checked != 2 || report.Accounts != 1 {
		t.Fatalf("Sweep = %+v, %v; want two users checked, one account deleted", report, err)
	}
	if _, err := f.team.Follow(ctx, "user-2", "b"); !errors.Is(err, sessionstore.ErrNotFound) {
		t.Errorf("the gone user's chat: %v, want ErrNotFound", err)
	}
	if _, err := f.team.Follow(ctx, "user-1", "a"); err != nil {
		t.Errorf("the other user's chat: %v, want it kept", err)
	}
	if report, err := f.team.Sweep(ctx, now.Add(time.Minute)); err != nil || report.Checked != 0 {
		t.Errorf("a sweep within the hour = %+v, %v; want nobody asked about", report, err)
	}
	if report, err := f.team.Sweep(ctx, now.Add(2*time.Hour)); err != nil || report.Checked != 1 {
		t.Errorf("a sweep two hours later = %+v, %v; want user-1 asked about again", report, err)
	}
}
