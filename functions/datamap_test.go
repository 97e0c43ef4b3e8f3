package functions

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/api/iterator"
	"google.golang.org/genai"

	"github.com/baton-run/baton/account"
	"github.com/baton-run/baton/internal/polltest"
	"github.com/baton-run/baton/modeltest"
	"github.com/baton-run/baton/sessionstore"
)

// docsUnder lists every document under ref (ref included when it
// exists), by path, with the collection group of each.
func docsUnder(t *testing.T, ctx context.Context, ref *firestore.DocumentRef, into map[string]string) {
	t.Helper()
	if _, err := ref.Get(ctx); err == nil {
		into[ref.Path] = ref.Parent.ID
	}
	cols := ref.Collections(ctx)
	for {
		col, err := cols.Next()
		if errors.Is(err, iterator.Done) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		docs := col.DocumentRefs(ctx)
		for {
			d, err := docs.Next()
			if errors.Is(err, iterator.Done) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			docsUnder(t, ctx, d, into)
		}
	}
}

// TestMapCoversEveryKind runs, for one user, what writes each kind of
// document Baton keeps (chats with a paused call and its answer, a file, a
// rating, a message big enough to seal an event chunk, a stop, turn and
// token counts, an A2A task, a chat deleted with its tokens counted, the
// sweeper's check of the user), then checks that every document in the
// database is of a kind the map of a person's data lists (account.Map), so
// that a kind nobody declared fails here; that the export holds every
// part the map names; and that DELETE /Account leaves nothing of the user,
// in Firestore or in the files' bucket.
func TestMapCoversEveryKind(t *testing.T) {
	t.Parallel()
	f := newHTTPFixture(t, func(c *Config) {
		c.MaxBodyBytes, c.AccountCheck = 2<<20, time.Hour
		c.TurnLimits = defaultTurnLimits(t)
		c.TurnLimits.Anonymous.UserTokensPerDay = 1_000_000
	},
		modeltest.CallReply(modeltest.Call("c1", "change_bgm", map[string]any{"track": 2})),
		modeltest.EchoReply, modeltest.TextReply("noted"), modeltest.TextReply("big"), modeltest.TextReply("bigger"), modeltest.TextReply("a2a"),
		modeltest.TextReply("stopped before this"), modeltest.TextReply("gone"))
	f.model.Usage = &genai.GenerateContentResponseUsageMetadata{TotalTokenCount: 10}
	ctx := t.Context()
	uid := f.user("ada").UID
	f.stream(f.chat("ada", chatBody("m", "tab-a", userMessage("u1", "track 2 please"))), "c1")
	f.stream(f.chat("ada", chatBody("m", "tab-a", userMessage("u1", "track 2 please"), answered("a1", "c1", map[string]any{"playing": 2}))), "c1")
	f.stream(f.chat("ada", chatBody("m", "tab-a", fileMessage("u2", []byte("a note"), "text/plain"))))
	// Two messages of 600 kB: the second seals the first into a chunk.
	f.stream(f.chat("ada", chatBody("big", "tab-a", userMessage("u3", strings.Repeat("x", 600_000)))))
	f.stream(f.chat("ada", chatBody("big", "tab-a", userMessage("u3b", strings.Repeat("y", 600_000)))))
	if r := f.a2aCall(f.token("ada"), "message/send", a2aText("over A2A")); r.Error != nil {
		t.Fatalf("message/send: %+v", r.Error)
	}
	answer := f.assistantID("ada", "m")
	if code, _ := f.status(http.MethodPut, NameChat+"/m/feedback/"+answer, "ada", map[string]any{"rating": "up"}, nil); code != http.StatusOK {
		t.Fatalf("rating: %d", code)
	}
	// A stop of a running turn writes a stop request.
	f.model.Gate = make(chan struct{})
	running := make(chan []map[string]any, 1)
	go func() { running <- f.stream(f.chat("ada", chatBody("stopme", "tab-a", userMessage("u4", "wait")))) }()
	polltest.Until(t, "the turn to run", func() bool {
		l := f.list("ada", "tab-a", "")
		return len(l.Chats) > 0 && l.Chats[0].ID == "stopme" && l.Chats[0].State == "running"
	})
	if code, _ := f.status(http.MethodDelete, NameChat+"/stopme/stream", "ada", nil, nil); code != http.StatusOK {
		t.Fatalf("stop: %d", code)
	}
	<-running
	f.model.Gate = nil
	// A chat deleted after its tokens were counted: the day keeps them.
	f.stream(f.chat("ada", chatBody("gone", "tab-a", userMessage("u5", "forget me"))))
	if code, _ := f.status(http.MethodDelete, NameChat+"/gone", "ada", nil, nil); code != http.StatusNoContent {
		t.Fatalf("delete: %d", code)
	}
	// The sweeper asks Firebase Authentication about the users with data.
	if resp := f.do(http.MethodPost, NameSweep, f.keys.Token(t, nil), map[string]any{}, nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("sweep: %d", resp.StatusCode)
	}

	app := f.client.Collection(f.cfg.Root).Doc(f.cfg.AppName)
	found := map[string]string{}
	docsUnder(t, ctx, app, found)
	mapped := map[string]bool{}
	for _, k := range account.Map {
		mapped[k.Collection] = true
	}
	seen := map[string]bool{}
	for path, group := range found {
		if path == app.Path {
			continue
		}
		seen[group] = true
		if !mapped[group] {
			t.Errorf("%s is of a kind the map of a person's data does not list (collection %q)", path, group)
		}
	}
	var groups []string
	for g := range seen {
		groups = append(groups, g)
	}
	sort.Strings(groups)
	for _, want := range []string{"accounts", "chats", "sessions", "events", "calls", "stops", "feedback", "limits", "a2aTasks", "a2aEvents", "sweeps"} {
		if !seen[want] {
			t.Errorf("the scenario wrote no %s document (it wrote %v): it does not exercise that kind", want, groups)
		}
	}

	files := f.exportOf("ada")
	names := slices.Collect(func(yield func(string) bool) {
		for n := range files {
			if !yield(n) {
				return
			}
		}
	})
	for _, part := range account.Parts() {
		if !slices.ContainsFunc(names, func(n string) bool { return strings.Contains(n, exportFileOf[part]) }) {
			t.Errorf("the export has no file of its part %q (files: %v)", part, names)
		}
	}

	if code, _ := f.status(http.MethodDelete, NameAccount, "ada", nil, nil); code != http.StatusNoContent {
		t.Fatalf("DELETE /Account: %d", code)
	}
	left := map[string]string{}
	docsUnder(t, ctx, app, left)
	for path := range left {
		if strings.Contains(path, uid) {
			t.Errorf("%s is left after the account's deletion", path)
		}
	}
	if objects, err := f.gcs.Objects(ctx, f.cfg.AppName+"/"+uid+"/"); err != nil || len(objects) != 0 {
		t.Errorf("files left after the account's deletion: %v, %v", objects, err)
	}
}

// exportFileOf names a file each part of the export writes.
var exportFileOf = map[string]string{
	sessionstore.ExportAccount: "account.json", sessionstore.ExportState: "state.json", sessionstore.ExportChats: "chats.ndjson",
	sessionstore.ExportMessages: "messages.ndjson", sessionstore.ExportUsage: "usage.json", "files": "/files/",
}

// TestUserDeletedInFirebase: a user deleted in Firebase Authentication loses
// their data at the next Sweep, without anyone calling Baton; another
// user's stays.
func TestUserDeletedInFirebase(t *testing.T) {
	t.Parallel()
	f := newHTTPFixture(t, func(c *Config) { c.AccountCheck = time.Hour },
		modeltest.TextReply("ada's"), modeltest.TextReply("bob's"))
	f.stream(f.chat("ada", chatBody("a", "tab-a", userMessage("u1", "hello"))))
	f.stream(f.chat("bob", chatBody("b", "tab-b", userMessage("u2", "hello"))))
	if err := f.auth.DeleteUser(t.Context(), f.user("bob").UID); err != nil {
		t.Fatal(err)
	}
	resp := f.do(http.MethodPost, NameSweep, f.keys.Token(t, nil), map[string]any{}, nil)
	defer resp.Body.Close()
	var report struct{ Accounts, Checked int }
	if err := json.NewDecoder(resp.Body).Decode(&report); err != nil || report.Accounts != 1 || report.Checked != 2 {
		t.Fatalf("Sweep = %+v, %v; want two users checked, one account deleted", report, err)
	}
	if got := f.list("ada", "tab-a", "").ids(); len(got) != 1 {
		t.Errorf("ada's chats after the sweep: %v, want hers", got)
	}
	sessions := sessionstore.New(f.client, &sessionstore.Options{Root: f.cfg.Root})
	if a, err := sessions.GetAccount(t.Context(), f.cfg.AppName, f.user("bob").UID); err != nil || a.Exists {
		t.Errorf("bob's account after the sweep: %+v, %v; want none", a, err)
	}
	if _, err := sessions.GetChat(t.Context(), f.cfg.AppName, f.user("bob").UID, "b"); !errors.Is(err, sessionstore.ErrNotFound) {
		t.Errorf("bob's chat after the sweep: %v, want none", err)
	}
}
