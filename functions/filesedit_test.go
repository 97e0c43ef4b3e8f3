package functions

import (
	"bytes"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/baton-run/baton/chatfiles"
	"github.com/baton-run/baton/modeltest"
	"github.com/baton-run/baton/usechat"
)

// TestChatEditFile: editing a user message that holds a file sends the
// file back as the URL GET /Chat/{chatId} gave it (useChat's
// sendMessage({text, files, messageId}) with the message's file part),
// with the stock transport's full-history body and with the newest
// message only, and with a URL whose signature has expired (a page
// loaded over an hour before). The edit is answered, the model gets the
// file's bytes, the file is not copied, and the history after the edit
// shows the edited text with the file at a URL that fetches it.
func TestChatEditFile(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name            string
		newest, expired bool
	}{
		{"full history", false, false},
		{"newest only", true, false},
		{"expired URL", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newHTTPFixture(t, nil, modeltest.TextReply("hello"), modeltest.TextReply("a cat"), modeltest.TextReply("a cat, again"))
			image := randomBytes(8 << 10)
			page := []map[string]any{userMessage("u0", "hi")}
			a0 := chunksOfType(f.stream(f.chat("ada", chatBody("c1", "tab-a", page...))), "start")[0]["messageId"]
			page = append(page, map[string]any{"id": a0, "role": "assistant", "parts": []any{map[string]any{"type": "text", "text": "hello"}}})
			f.stream(f.chat("ada", chatBody("c1", "tab-a", append(page, fileMessage("u1", image, "image/png"))...)))

			// The page reloads, then edits u1: the file part is the history's.
			part := filePartOf(t, f.messages("ada", "c1"))
			if tc.expired {
				part["url"] = expiredFileURL(t, f, part["url"].(string))
			}
			edited := map[string]any{"id": "u1", "role": "user", "parts": []any{map[string]any{"type": "text", "text": "and now?"}, part}}
			if tc.newest {
				page = nil
			}
			body := chatBody("c1", "tab-a", append(page, edited)...)
			body["messageId"] = "u1"
			if got := text(f.stream(f.chat("ada", body))); got != "a cat, again" {
				t.Fatalf("the edit answered %q, want the model's answer", got)
			}

			req := f.model.LastRequest()
			if files := inlineFiles(req); len(files) != 1 || !bytes.Equal(files[0].Data, image) || files[0].MIMEType != "image/png" {
				t.Errorf("the edit's model request has %d inline files, want the image", len(files))
			}
			if last := req.Contents[len(req.Contents)-1]; last.Parts[0].Text != "and now?" {
				t.Errorf("the edit's model request ends with %+v, want the edited message", last.Parts[0])
			}
			prefix := "app/" + f.user("ada").UID + "/c1/"
			if objects, err := f.gcs.Objects(t.Context(), prefix); err != nil || len(objects) != 1 {
				t.Errorf("objects under %s after the edit = %v (%v), want the one image (not copied)", prefix, objects, err)
			}
			after := f.messages("ada", "c1")
			if n := len(after.Messages); n != 4 || after.Messages[2].Parts[0]["text"] != "and now?" {
				t.Fatalf("GET /Chat after the edit: %+v, want u0, its answer, the edited u1 and its answer", after.Messages)
			}
			link, _ := filePartOf(t, after)["url"].(string)
			if status, got, _ := fetch(t, link); status != http.StatusOK || !bytes.Equal(got, image) {
				t.Errorf("the edited message's file URL: status %d, %d bytes; want the image", status, len(got))
			}
		})
	}
}

// expiredFileURL is link signed again with an expiry a day ago.
func expiredFileURL(t *testing.T, f *httpFixture, link string) string {
	t.Helper()
	u, err := url.Parse(link)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	version, _ := strconv.ParseInt(q.Get("v"), 10, 64)
	past := time.Now().Add(-24 * time.Hour).Unix()
	name := u.Path[strings.LastIndex(u.Path, "/")+1:]
	q.Set("exp", strconv.FormatInt(past, 10))
	q.Set("sig", usechat.NewFileURLs(nil, f.cfg.TokenKey).Sign(q.Get("owner"), chatfiles.Ref{ChatID: "c1", Name: name, Version: version}, past))
	u.RawQuery = q.Encode()
	if status, _, _ := fetch(t, u.String()); status != http.StatusNotFound {
		t.Fatalf("the expired URL fetches with status %d, want 404", status)
	}
	return u.String()
}

// TestChatFileURLRefused: a file part may name by URL only a file of the
// chat the message goes to, signed for the caller. Another user's file
// URL (of a chat with the same id), the caller's own URL of another chat,
// an altered signature and a URL that is not Baton's get 400, in an edit
// and in a new message, and nothing is written or asked of the model.
func TestChatFileURLRefused(t *testing.T) {
	t.Parallel()
	f := newHTTPFixture(t, nil, modeltest.TextReply("ada's cat"), modeltest.TextReply("bob's cat"), modeltest.TextReply("bob's dog"))
	f.stream(f.chat("ada", chatBody("c1", "tab-a", fileMessage("u1", randomBytes(1<<10), "image/png"))))
	f.stream(f.chat("bob", chatBody("c1", "tab-b", fileMessage("u1", randomBytes(1<<10), "image/png"))))
	f.stream(f.chat("bob", chatBody("c2", "tab-b", fileMessage("u1", randomBytes(1<<10), "image/png"))))
	adas := filePartOf(t, f.messages("ada", "c1"))["url"].(string)
	bobs := filePartOf(t, f.messages("bob", "c1"))["url"].(string)
	bobsOther := filePartOf(t, f.messages("bob", "c2"))["url"].(string)
	altered := strings.Replace(bobs, "sig=", "sig=A", 1)

	calls, before := f.model.Calls(), f.counter.Snapshot()
	for _, tc := range []struct{ name, url string }{
		{"another user's file", adas},
		{"a file of another chat", bobsOther},
		{"an altered signature", altered},
		{"a URL not Baton's", "https://example.com/c1/files/cat.png"},
	} {
		for _, edit := range []bool{true, false} {
			m := map[string]any{"id": "u1", "role": "user", "parts": []any{map[string]any{"type": "text", "text": "this one"},
				map[string]any{"type": "file", "mediaType": "image/png", "url": tc.url}}}
			body := chatBody("c1", "tab-b", m)
			if edit {
				body["messageId"] = "u1"
			} else {
				m["id"] = "u2"
			}
			resp := f.chat("bob", body)
			if e := errorOf(t, resp); resp.StatusCode != http.StatusBadRequest || e.Code != "invalid_request" || !strings.Contains(e.Message, "file of this chat") {
				t.Errorf("%s (edit %v): status %d %+v, want 400 invalid_request naming the chat's files", tc.name, edit, resp.StatusCode, e)
			}
		}
	}
	if n := f.model.Calls(); n != calls {
		t.Errorf("refused requests called the model %d times", n-calls)
	}
	if w := f.counter.Snapshot().Sub(before).Writes; w != 0 {
		t.Errorf("refused requests wrote %d documents, want none", w)
	}
}
