package functions

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/adk/v2/model"
	"google.golang.org/api/iterator"
	"google.golang.org/genai"

	"github.com/baton-run/baton/chatfiles"
	"github.com/baton-run/baton/modeltest"
	"github.com/baton-run/baton/usechat"
)

// slowRequests is the request timeout of the tests that send files of
// several MiB: under the race detector on a shared machine, reading and
// storing 10 MiB takes longer than the 30 s the other tests allow (without
// it, well under a second of the request is the file's: see the log of
// TestChatFileAtLimit).
const slowRequests = 5 * time.Minute

// fileMessage is a user message with text and one file, as useChat sends
// an attachment: a data URL.
func fileMessage(id string, data []byte, mediaType string) map[string]any {
	return map[string]any{"id": id, "role": "user", "parts": []any{
		map[string]any{"type": "text", "text": "what is in this picture?"},
		map[string]any{"type": "file", "mediaType": mediaType, "filename": "cat.png", "url": "data:" + mediaType + ";base64," + base64.StdEncoding.EncodeToString(data)},
	}}
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	r := rand.NewChaCha8([32]byte{1})
	_, _ = r.Read(b)
	return b
}

// inlineFiles are the inline data parts of a model request.
func inlineFiles(req *model.LLMRequest) []*genai.Blob {
	var out []*genai.Blob
	if req == nil {
		return nil // the model refused every request, or had none
	}
	for _, c := range req.Contents {
		for _, p := range c.Parts {
			if p.InlineData != nil {
				out = append(out, p.InlineData)
			}
		}
	}
	return out
}

// largestDocument walks every document of the fixture's project and
// returns the path and size of the largest, its size taken as its data's
// JSON (bytes as base64: more than Firestore counts).
func largestDocument(t *testing.T, client *firestore.Client) (string, int) {
	t.Helper()
	ctx := t.Context()
	path, largest := "", 0
	var walk func(cols *firestore.CollectionIterator)
	walk = func(cols *firestore.CollectionIterator) {
		for {
			col, err := cols.Next()
			if errors.Is(err, iterator.Done) {
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			refs := col.DocumentRefs(ctx)
			for {
				ref, err := refs.Next()
				if errors.Is(err, iterator.Done) {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				if snap, err := ref.Get(ctx); err == nil {
					raw, _ := json.Marshal(snap.Data())
					if len(raw) > largest {
						path, largest = ref.Path, len(raw)
					}
				}
				walk(ref.Collections(ctx))
			}
		}
	}
	walk(client.Collections(ctx))
	return path, largest
}

// filePartOf returns the file part of the chat's user message.
func filePartOf(t *testing.T, v chatJSON) map[string]any {
	t.Helper()
	for _, m := range v.Messages {
		for _, p := range m.Parts {
			if m.Role == "user" && p["type"] == "file" {
				if len(m.Parts) != 2 || m.Parts[0]["type"] != "text" {
					t.Errorf("user message parts = %v, want its text then its file", m.Parts)
				}
				return p
			}
		}
	}
	t.Fatalf("GET /Chat: no user message with a file part in %+v", v.Messages)
	return nil
}

// fetch GETs a URL with no credentials, as an <img> does.
func fetch(t *testing.T, u string) (int, []byte, http.Header) {
	t.Helper()
	return fetchAs(t, u, "")
}

// TestChatFile: a 5 MiB image in a user message is answered; the session's
// documents stay small (the file is stored as an object, the session
// holds a reference); the model gets the bytes; GET /Chat/{chatId} shows
// the file with a URL that fetches the same bytes without credentials,
// which no other user is given and which fetches nothing once altered or
// expired; deleting the chat (Sweep's idle cleanup) deletes the object.
func TestChatFile(t *testing.T) {
	t.Parallel()
	f := newHTTPFixture(t, func(c *Config) { c.RequestTimeout = slowRequests }, modeltest.TextReply("a cat"))
	image := randomBytes(5 << 20)
	f.stream(f.chat("ada", chatBody("c1", "tab-a", fileMessage("u1", image, "image/png"))))

	if path, size := largestDocument(t, f.client); size >= 100<<10 {
		t.Errorf("largest document %s is %d bytes, want under 100 KiB", path, size)
	}
	files := inlineFiles(f.model.LastRequest())
	if len(files) != 1 || !bytes.Equal(files[0].Data, image) || files[0].MIMEType != "image/png" {
		t.Errorf("the model got %d inline files, want the image", len(files))
	}
	prefix := "app/" + f.user("ada").UID + "/c1/"
	if objects, err := f.gcs.Objects(t.Context(), prefix); err != nil || len(objects) != 1 {
		t.Fatalf("objects under %s = %v (%v), want the image", prefix, objects, err)
	}

	part := filePartOf(t, f.messages("ada", "c1"))
	if part["mediaType"] != "image/png" || part["filename"] != "cat.png" {
		t.Errorf("file part = %v, want image/png named cat.png", part)
	}
	link, _ := part["url"].(string)
	status, body, header := fetch(t, link)
	if status != http.StatusOK || !bytes.Equal(body, image) || header.Get("Content-Type") != "image/png" {
		t.Fatalf("GET %s: status %d, %d bytes of %s, want the image", link, status, len(body), header.Get("Content-Type"))
	}

	// Another user gets no history of the chat, so no URL of its files.
	if resp := f.do(http.MethodGet, NameChat+"/c1", f.token("bob"), nil, nil); resp.StatusCode != http.StatusNotFound {
		t.Errorf("bob's GET /Chat/c1: status %d, want 404", resp.StatusCode)
	}
	for name, u := range forgedFileURLs(t, f, link) {
		if status, body, _ := fetch(t, u); status != http.StatusNotFound || bytes.Contains(body, image[:64]) {
			t.Errorf("%s: status %d, want 404 and nothing of the file", name, status)
		}
	}

	report, err := f.server.Team().Sweep(t.Context(), time.Now().Add(31*24*time.Hour))
	if err != nil || report.Idle != 1 {
		t.Fatalf("Sweep = %+v, %v; want the idle chat deleted", report, err)
	}
	if objects, err := f.gcs.Objects(t.Context(), prefix); err != nil || len(objects) != 0 {
		t.Errorf("objects under %s after the chat's deletion = %v (%v), want none", prefix, objects, err)
	}
	if status, _, _ := fetch(t, link); status != http.StatusNotFound {
		t.Errorf("the file's URL after the chat's deletion: status %d, want 404", status)
	}
}

// TestChatFileLinkIsShortLived: a file's URL is a bearer link, as
// docs/http-api.md says: another user's request and one with no
// credentials fetch the file with it, as its owner's does, for at most
// fileURLLifetime (five minutes); once expired nobody fetches it, not even
// the owner with a token. Another user is given no link (TestChatFile).
func TestChatFileLinkIsShortLived(t *testing.T) {
	t.Parallel()
	f := newHTTPFixture(t, nil, modeltest.TextReply("a cat"))
	image := randomBytes(1 << 10)
	f.stream(f.chat("ada", chatBody("c1", "tab-a", fileMessage("u1", image, "image/png"))))
	asked := time.Now()
	link, _ := filePartOf(t, f.messages("ada", "c1"))["url"].(string)
	answered := time.Now()
	u, err := url.Parse(link)
	if err != nil {
		t.Fatal(err)
	}
	exp, err := strconv.ParseInt(u.Query().Get("exp"), 10, 64)
	if err != nil {
		t.Fatalf("link %s has no expiry: %v", link, err)
	}
	// The link is made while GET /Chat runs, with a five-minute expiry in
	// whole seconds: however long the request took on a loaded machine.
	if expires := time.Unix(exp, 0); expires.Before(asked.Add(5*time.Minute-time.Second)) || expires.After(answered.Add(5*time.Minute)) {
		t.Errorf("link expires %v after GET /Chat was asked (answered %v later), want five minutes after it was made",
			expires.Sub(asked), answered.Sub(asked))
	}
	past := time.Now().Add(-time.Second).Unix()
	expired := u.Query()
	expired.Set("exp", strconv.FormatInt(past, 10))
	expired.Set("sig", usechat.NewFileURLs(nil, f.cfg.TokenKey).Sign(expired.Get("owner"), fileRefOf(t, link), past))
	expiredLink := u.Scheme + "://" + u.Host + u.Path + "?" + expired.Encode()
	for _, tc := range []struct {
		name, link, token string
		want              int
	}{
		{"the owner", link, f.token("ada"), http.StatusOK},
		{"another user", link, f.token("bob"), http.StatusOK},
		{"nobody", link, "", http.StatusOK},
		{"the owner, expired", expiredLink, f.token("ada"), http.StatusNotFound},
		{"another user, expired", expiredLink, f.token("bob"), http.StatusNotFound},
		{"nobody, expired", expiredLink, "", http.StatusNotFound},
	} {
		status, body, _ := fetchAs(t, tc.link, tc.token)
		if status != tc.want || (status == http.StatusOK) != bytes.Equal(body, image) {
			t.Errorf("%s: GET the file = %d (%d bytes), want %d", tc.name, status, len(body), tc.want)
		}
	}
}

// fileRefOf is the file a file URL names.
func fileRefOf(t *testing.T, link string) chatfiles.Ref {
	t.Helper()
	u, err := url.Parse(link)
	if err != nil {
		t.Fatal(err)
	}
	segs := strings.Split(u.Path, "/")
	version, err := strconv.ParseInt(u.Query().Get("v"), 10, 64)
	if len(segs) < 3 || segs[len(segs)-2] != "files" || err != nil {
		t.Fatalf("%s is not a file URL", link)
	}
	return chatfiles.Ref{ChatID: segs[len(segs)-3], Name: segs[len(segs)-1], Version: version}
}

// fetchAs GETs a URL with the Authorization a page would send for token
// (none when empty).
func fetchAs(t *testing.T, u, token string) (int, []byte, http.Header) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, body, resp.Header
}

// forgedFileURLs are link altered in each way a URL must not survive.
func forgedFileURLs(t *testing.T, f *httpFixture, link string) map[string]string {
	t.Helper()
	u, err := url.Parse(link)
	if err != nil {
		t.Fatal(err)
	}
	with := func(change func(q url.Values)) string {
		v := *u
		q := v.Query()
		change(q)
		v.RawQuery = q.Encode()
		return v.String()
	}
	q := u.Query()
	owner := q.Get("owner")
	version, _ := strconv.ParseInt(q.Get("v"), 10, 64)
	name := u.Path[strings.LastIndex(u.Path, "/")+1:]
	past := time.Now().Add(-time.Minute).Unix()
	expired := usechat.NewFileURLs(nil, f.cfg.TokenKey).Sign(owner, chatfiles.Ref{ChatID: "c1", Name: name, Version: version}, past)
	return map[string]string{
		"no token":           with(func(q url.Values) { q.Del("sig") }),
		"no query":           u.Scheme + "://" + u.Host + u.Path,
		"altered signature":  with(func(q url.Values) { q.Set("sig", strings.Repeat("A", len(q.Get("sig")))) }),
		"another owner":      with(func(q url.Values) { q.Set("owner", f.user("bob").UID) }),
		"a later expiry":     with(func(q url.Values) { q.Set("exp", strconv.FormatInt(time.Now().Add(48*time.Hour).Unix(), 10)) }),
		"signed but expired": with(func(q url.Values) { q.Set("exp", strconv.FormatInt(past, 10)); q.Set("sig", expired) }),
		"another chat":       strings.Replace(link, "/c1/files/", "/c2/files/", 1),
	}
}

// TestChatFileLaterTurn: a later turn's model request still holds the
// file of an earlier message (read from the file store, not the session).
func TestChatFileLaterTurn(t *testing.T) {
	t.Parallel()
	f := newHTTPFixture(t, nil, modeltest.TextReply("a cat"), modeltest.TextReply("still a cat"))
	image := randomBytes(64 << 10)
	f.stream(f.chat("ada", chatBody("c1", "tab-a", fileMessage("u1", image, "image/png"))))
	f.stream(f.chat("ada", chatBody("c1", "tab-a", userMessage("u2", "and now?"))))
	files := inlineFiles(f.model.LastRequest())
	if len(files) != 1 || !bytes.Equal(files[0].Data, image) {
		t.Errorf("the second turn's model request has %d inline files, want the first message's image", len(files))
	}
}

// TestChatFilesOff: without a file store, a message with a file gets 400
// naming the variable, and nothing is written.
func TestChatFilesOff(t *testing.T) {
	t.Parallel()
	f := newHTTPFixtureWith(t, func(_ *httpFixture, o *ServerOptions) { o.Files = nil }, func(c *Config) { c.DevIdentity = true })
	before := f.counter.Snapshot()
	resp := f.devChat(chatBody("c1", "tab-a", fileMessage("u1", []byte("png"), "image/png")))
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("status %d, want 400", resp.StatusCode)
	}
	if e := errorOf(t, resp); !strings.Contains(e.Message, "BATON_FILES_BUCKET") {
		t.Errorf("message %q, want one naming BATON_FILES_BUCKET", e.Message)
	}
	if w := f.counter.Snapshot().Sub(before).Writes; w != 0 {
		t.Errorf("%d writes, want none", w)
	}
}

// TestTurnFile: a file sent to Turn (inlineData) is stored the same way:
// the model gets the bytes, and GET /Chat/{chatId} (Turn's session id is
// the chat id) gives the file a URL that fetches them.
func TestTurnFile(t *testing.T) {
	t.Parallel()
	f := newHTTPFixture(t, nil, modeltest.TextReply("a cat"))
	image := randomBytes(4 << 10)
	body := map[string]any{"sessionId": "s1", "clientId": "tab-a", "parts": []any{
		map[string]any{"text": "look"},
		map[string]any{"inlineData": map[string]any{"mimeType": "image/png", "data": base64.StdEncoding.EncodeToString(image)}},
	}}
	f.stream(f.do(http.MethodPost, NameTurn, f.token("ada"), body, nil))
	if files := inlineFiles(f.model.LastRequest()); len(files) != 1 || !bytes.Equal(files[0].Data, image) {
		t.Errorf("the model got %d inline files, want the image", len(files))
	}
	link, _ := filePartOf(t, f.messages("ada", "s1"))["url"].(string)
	if status, got, _ := fetch(t, link); status != http.StatusOK || !bytes.Equal(got, image) {
		t.Errorf("the file's URL %q: status %d, %d bytes; want the image", link, status, len(got))
	}
}

// TestChatFileOfRefusedMessage: a message sent again (the same id), and an
// edit of a message the chat does not have, write nothing, and the files
// they saved are deleted again: the chat keeps one object, the first
// copy's.
func TestChatFileOfRefusedMessage(t *testing.T) {
	t.Parallel()
	f := newHTTPFixture(t, nil, modeltest.TextReply("a cat"))
	image := randomBytes(64 << 10)
	f.stream(f.chat("ada", chatBody("c1", "tab-a", fileMessage("u1", image, "image/png"))))
	edit := chatBody("c1", "tab-a", fileMessage("u9", image, "image/png"))
	edit["messageId"] = "u9" // not a message of the chat
	for _, body := range []map[string]any{chatBody("c1", "tab-a", fileMessage("u1", image, "image/png")), edit} {
		resp := f.chat("ada", body)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	prefix := "app/" + f.user("ada").UID + "/c1/"
	if objects, err := f.gcs.Objects(t.Context(), prefix); err != nil || len(objects) != 1 {
		t.Errorf("objects under %s after a resend and an edit of an unknown message = %v (%v), want the first copy's only", prefix, objects, err)
	}
}
