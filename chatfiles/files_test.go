package chatfiles_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/adk/v2/artifact"
	"google.golang.org/adk/v2/platform"
	"google.golang.org/adk/v2/session"
	"google.golang.org/genai"

	"github.com/baton-run/baton/chatfiles"
	"github.com/baton-run/baton/internal/localgcs"
	"github.com/baton-run/baton/sessionstore"
)

// bucket is app "app"'s chat files in an in-process Cloud Storage bucket,
// through ADK's gcsartifact as in production.
type bucket struct {
	t     *testing.T
	gcs   *localgcs.Server
	files artifact.Service
	store *chatfiles.Store
}

func newBucket(t *testing.T) *bucket {
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
	return &bucket{t: t, gcs: gcs, files: files, store: chatfiles.New(files, "app", nil)}
}

// objects lists the bucket's objects.
func (b *bucket) objects() []string {
	b.t.Helper()
	names, err := b.gcs.Objects(b.t.Context(), "")
	if err != nil {
		b.t.Fatal(err)
	}
	return names
}

// save stores an artifact straight through the artifact service, as a
// runner's tool or an older release would have.
func (b *bucket) save(user, sid, name string, data string) {
	b.t.Helper()
	_, err := b.files.Save(b.t.Context(), &artifact.SaveRequest{AppName: "app", UserID: user, SessionID: sid, FileName: name,
		Part: genai.NewPartFromBytes([]byte(data), "text/plain")})
	if err != nil {
		b.t.Fatal(err)
	}
}

// numbered is ctx whose new ids are 1, 2, 3...
func numbered(ctx context.Context) context.Context {
	n := 0
	return platform.WithUUIDProvider(ctx, func() string { n++; return fmt.Sprint(n) })
}

func inline(data, mime, display string) *genai.Part {
	return &genai.Part{InlineData: &genai.Blob{Data: []byte(data), MIMEType: mime, DisplayName: display}}
}

func TestRefRoundTrip(t *testing.T) {
	for _, ref := range []chatfiles.Ref{
		{ChatID: "chat-1", Name: "upload-1", Version: 1},
		{ChatID: "c1", Name: "report.pdf", Version: 12, MIMEType: "application/pdf", DisplayName: "Q3 report.pdf"},
		{ChatID: "a chat/with%odd ünïcode", Name: "a name #2?", Version: 1 << 40, MIMEType: "image/png"},
	} {
		p := ref.Part()
		got, ok := chatfiles.RefOf(p)
		if !ok {
			t.Errorf("RefOf(%q) refused the part of %+v", p.FileData.FileURI, ref)
			continue
		}
		if diff := cmp.Diff(ref, got); diff != "" {
			t.Errorf("RefOf(Part()) (-want +got):\n%s", diff)
		}
	}
}

func TestRefOfRejects(t *testing.T) {
	file := func(uri string) *genai.Part {
		return &genai.Part{FileData: &genai.FileData{FileURI: uri, MIMEType: "image/png"}}
	}
	for _, tc := range []struct {
		name string
		part *genai.Part
	}{
		{"no part", nil},
		{"text", genai.NewPartFromText("baton-file:c/n/1")},
		{"inline bytes", inline("x", "text/plain", "")},
		{"a Cloud Storage URI", file("gs://bucket/app/u/c/n/1")},
		{"another scheme", file("baton-files:c/n/1")},
		{"no version", file("baton-file:c/n")},
		{"a segment too many", file("baton-file:c/n/1/2")},
		{"no chat", file("baton-file:/n/1")},
		{"no name", file("baton-file:c//1")},
		{"version 0", file("baton-file:c/n/0")},
		{"a negative version", file("baton-file:c/n/-1")},
		{"a version that is no number", file("baton-file:c/n/one")},
		{"a bad escape", file("baton-file:c%zz/n/1")},
	} {
		if ref, ok := chatfiles.RefOf(tc.part); ok {
			t.Errorf("%s: RefOf() = %+v, true; want it refused", tc.name, ref)
		}
	}
}

// TestSaveMessage: a message's inline files are saved as artifacts of the
// chat, and the message comes back with a reference in place of each, the
// caller's content unchanged; each reference loads the file's bytes.
func TestSaveMessage(t *testing.T) {
	t.Parallel()
	b := newBucket(t)
	ctx := numbered(t.Context())
	sent := &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{
		genai.NewPartFromText("what are these?"),
		inline("PNG…", "image/png", "cat.png"),
		inline("%PDF…", "application/pdf", ""),
	}}
	saved, err := b.store.SaveMessage(ctx, "ada", "chat-1", sent)
	if err != nil {
		t.Fatalf("SaveMessage() error = %v", err)
	}
	want := []*genai.Part{
		genai.NewPartFromText("what are these?"),
		chatfiles.Ref{ChatID: "chat-1", Name: "upload-1", Version: 1, MIMEType: "image/png", DisplayName: "cat.png"}.Part(),
		chatfiles.Ref{ChatID: "chat-1", Name: "upload-2", Version: 1, MIMEType: "application/pdf"}.Part(),
	}
	if diff := cmp.Diff(want, saved.Parts); diff != "" {
		t.Errorf("saved message (-want +got):\n%s", diff)
	}
	if sent.Parts[1].InlineData == nil || sent.Parts[2].InlineData == nil {
		t.Error("SaveMessage changed the caller's content")
	}
	if diff := cmp.Diff([]string{"app/ada/chat-1/upload-1/1", "app/ada/chat-1/upload-2/1"}, b.objects()); diff != "" {
		t.Errorf("objects (-want +got):\n%s", diff)
	}
	for i, p := range saved.Parts[1:] {
		ref, _ := chatfiles.RefOf(p)
		blob, err := b.store.Load(t.Context(), "ada", ref)
		if err != nil {
			t.Fatalf("Load(%+v) error = %v", ref, err)
		}
		if sentBlob := sent.Parts[i+1].InlineData; string(blob.Data) != string(sentBlob.Data) || blob.MIMEType != sentBlob.MIMEType {
			t.Errorf("Load(%+v) = %q (%s), want %q (%s)", ref, blob.Data, blob.MIMEType, sentBlob.Data, sentBlob.MIMEType)
		}
	}

	// A message without inline files, or a nil store, keeps the message.
	text := genai.NewContentFromText("hello", genai.RoleUser)
	if got, err := b.store.SaveMessage(ctx, "ada", "chat-1", text); got != text || err != nil {
		t.Errorf("SaveMessage(text only) = %v, %v; want the message itself", got, err)
	}
	var none *chatfiles.Store
	if got, err := none.SaveMessage(ctx, "ada", "chat-1", sent); got != sent || err != nil {
		t.Errorf("nil store: SaveMessage() = %v, %v; want the message itself", got, err)
	}
}

// TestDrop: the files saved for a refused message are deleted again; a
// reference the message already held (a file sent before) is not.
func TestDrop(t *testing.T) {
	t.Parallel()
	b := newBucket(t)
	ctx := numbered(t.Context())
	earlier, err := b.store.SaveMessage(ctx, "ada", "chat-1", &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{inline("one", "text/plain", "")}})
	if err != nil {
		t.Fatal(err)
	}
	sent := &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{earlier.Parts[0], inline("two", "text/plain", "")}}
	saved, err := b.store.SaveMessage(ctx, "ada", "chat-1", sent)
	if err != nil {
		t.Fatal(err)
	}
	b.store.Drop(ctx, "ada", sent, sent) // nothing saved
	if got := len(b.objects()); got != 2 {
		t.Fatalf("Drop(sent, sent) left %d objects, want both", got)
	}
	b.store.Drop(ctx, "ada", sent, saved)
	if diff := cmp.Diff([]string{"app/ada/chat-1/upload-1/1"}, b.objects()); diff != "" {
		t.Errorf("objects after Drop (-want +got):\n%s", diff)
	}
	dropped, _ := chatfiles.RefOf(saved.Parts[1])
	if _, err := b.store.Load(ctx, "ada", dropped); !errors.Is(err, chatfiles.ErrNotFound) {
		t.Errorf("Load(dropped) error = %v, want ErrNotFound", err)
	}
}

func TestLoadRefuses(t *testing.T) {
	t.Parallel()
	b := newBucket(t)
	b.save("ada", "chat-1", "note", "hello")
	ref := chatfiles.Ref{ChatID: "chat-1", Name: "note", Version: 1}
	if _, err := b.store.Load(t.Context(), "ada", ref); err != nil {
		t.Fatalf("Load(ada's note) error = %v", err)
	}
	var none *chatfiles.Store
	for _, tc := range []struct {
		name  string
		store *chatfiles.Store
		user  string
		ref   chatfiles.Ref
		want  error
	}{
		{"another user's file", b.store, "bob", ref, chatfiles.ErrNotFound},
		{"a version not stored", b.store, "ada", chatfiles.Ref{ChatID: "chat-1", Name: "note", Version: 2}, chatfiles.ErrNotFound},
		{"version 0", b.store, "ada", chatfiles.Ref{ChatID: "chat-1", Name: "note"}, chatfiles.ErrNotFound},
		{"a name with a slash", b.store, "ada", chatfiles.Ref{ChatID: "chat-1", Name: "x/note", Version: 1}, chatfiles.ErrNotFound},
		{"an invalid user id", b.store, "a/b", ref, sessionstore.ErrInvalidID},
		{"an invalid chat id", b.store, "ada", chatfiles.Ref{ChatID: "..", Name: "note", Version: 1}, sessionstore.ErrInvalidID},
		{"no store", none, "ada", ref, chatfiles.ErrNotFound},
	} {
		if blob, err := tc.store.Load(t.Context(), tc.user, tc.ref); !errors.Is(err, tc.want) {
			t.Errorf("%s: Load() = %v, %v; want %v", tc.name, blob, err, tc.want)
		}
	}
}

// TestDeleteChat deletes the chat's files, those under its ADK sessions
// too, and leaves the user's own artifacts and other chats' files.
func TestDeleteChat(t *testing.T) {
	t.Parallel()
	b := newBucket(t)
	for _, sid := range []string{"chat-1", "chat-1~2", "chat-1~3", "chat-1~0", "chat-2"} {
		b.save("ada", sid, "file", sid)
	}
	b.save("ada", "chat-1", "user:profile", "ada's")
	b.save("bob", "chat-1", "file", "bob's")
	chat := &sessionstore.Chat{App: "app", UserID: "ada", ID: "chat-1", SessionID: "chat-1~2", Building: "chat-1~3", Retired: []string{"chat-1~0"}}
	if err := b.store.DeleteChat(t.Context(), chat); err != nil {
		t.Fatalf("DeleteChat() error = %v", err)
	}
	want := []string{"app/ada/chat-2/file/1", "app/ada/user/user:profile/1", "app/bob/chat-1/file/1"}
	if diff := cmp.Diff(want, b.objects()); diff != "" {
		t.Errorf("objects after DeleteChat (-want +got):\n%s", diff)
	}
	var none *chatfiles.Store
	if err := none.DeleteChat(t.Context(), chat); err != nil {
		t.Errorf("nil store: DeleteChat() error = %v", err)
	}
}

// TestSavedFiles: the files a step's tools saved (through Artifacts, keyed
// by the chat) are noted in the event that ends the step, and SavedFiles
// reads them back as references, also once the event has been stored as
// JSON; a name no file route serves, or a file not stored, is left out.
// A model's inline output in the same event is saved and referred to.
func TestSavedFiles(t *testing.T) {
	t.Parallel()
	b := newBucket(t)
	ctx := numbered(t.Context())
	tools := b.store.Artifacts()
	for _, f := range []struct{ name, data, mime string }{
		{"chart.png", "PNG…", "image/png"}, {"notes", "v1", "text/plain"}, {"notes", "v2", "text/plain"},
	} {
		_, err := tools.Save(ctx, &artifact.SaveRequest{AppName: "app", UserID: "ada", SessionID: "chat-1~1", FileName: f.name,
			Part: genai.NewPartFromBytes([]byte(f.data), f.mime)})
		if err != nil {
			t.Fatal(err)
		}
	}
	ev := &session.Event{ID: "step", Author: "assistant"}
	ev.Content = &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{genai.NewPartFromText("here"), inline("GIF…", "image/gif", "")}}
	ev.Actions.ArtifactDelta = map[string]int64{"notes": 2, "chart.png": 1, "a/b": 1, "missing": 1}
	if err := b.store.SaveEventFiles(ctx, "ada", "chat-1~1", ev); err != nil {
		t.Fatalf("SaveEventFiles() error = %v", err)
	}
	want := []*genai.Part{
		chatfiles.Ref{ChatID: "chat-1", Name: "chart.png", Version: 1, MIMEType: "image/png"}.Part(),
		chatfiles.Ref{ChatID: "chat-1", Name: "notes", Version: 2, MIMEType: "text/plain"}.Part(),
	}
	if diff := cmp.Diff(want, chatfiles.SavedFiles(ev)); diff != "" {
		t.Errorf("SavedFiles() (-want +got):\n%s", diff)
	}
	stored := &session.Event{}
	raw, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, stored); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, chatfiles.SavedFiles(stored)); diff != "" {
		t.Errorf("SavedFiles() of the event as stored (-want +got):\n%s", diff)
	}
	wantContent := []*genai.Part{genai.NewPartFromText("here"), chatfiles.Ref{ChatID: "chat-1", Name: "model-1", Version: 1, MIMEType: "image/gif"}.Part()}
	if diff := cmp.Diff(wantContent, ev.Content.Parts); diff != "" {
		t.Errorf("the event's content (-want +got):\n%s", diff)
	}
	if got := chatfiles.SavedFiles(&session.Event{}); got != nil {
		t.Errorf("SavedFiles() of an event whose tools saved nothing = %v, want nil", got)
	}
}

// TestSaveOnce: saving a file under the same name again (a result stored
// twice) stores nothing more and refers to the file first stored; the
// reference loads the bytes, and a function response's file parts read
// back as references.
func TestSaveOnce(t *testing.T) {
	b := newBucket(t)
	ctx := t.Context()
	first, err := b.store.SaveOnce(ctx, "user-1", "chat", "remote-c1-1", &genai.Blob{Data: []byte("poster"), MIMEType: "image/png", DisplayName: "poster.png"})
	if err != nil {
		t.Fatal(err)
	}
	again, err := b.store.SaveOnce(ctx, "user-1", "chat", "remote-c1-1", &genai.Blob{Data: []byte("poster"), MIMEType: "image/png", DisplayName: "poster.png"})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(first, again); diff != "" || first.Version != 1 {
		t.Errorf("SaveOnce() again (-first +again):\n%s (version %d, want 1)", diff, first.Version)
	}
	if got := b.objects(); len(got) != 1 {
		t.Errorf("objects = %v, want one", got)
	}
	blob, err := b.store.Load(ctx, "user-1", first)
	if err != nil || string(blob.Data) != "poster" {
		t.Errorf("Load() = %v, %v; want the poster", blob, err)
	}
	part := first.Part()
	resp := &genai.Part{FunctionResponse: &genai.FunctionResponse{ID: "c1", Name: "ask_events", Parts: []*genai.FunctionResponsePart{
		{FileData: &genai.FunctionResponseFileData{FileURI: part.FileData.FileURI, MIMEType: "image/png", DisplayName: "poster.png"}},
		{FileData: &genai.FunctionResponseFileData{FileURI: "https://elsewhere.example/x.png", MIMEType: "image/png"}},
	}}}
	refs := chatfiles.ResponseRefs(resp)
	if len(refs) != 1 {
		t.Fatalf("ResponseRefs() = %v, want the stored file alone", refs)
	}
	if got, ok := chatfiles.RefOf(refs[0]); !ok || got != first {
		t.Errorf("ResponseRefs()[0] = %+v, want %+v", got, first)
	}
}
