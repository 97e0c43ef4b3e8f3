package functions

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/baton-run/baton/modeltest"
)

// A person's chats and data over HTTP: the list, rename, delete, ratings,
// the export and the account's deletion (docs/http-api.md, docs/data.md).

// listOf is GET /Chat as user from device, decoded.
type listOf struct {
	Chats []struct {
		ID, Title, Agent, State string
		Waiting                 map[string]int
	} `json:"chats"`
	Next string `json:"next"`
}

func (f *httpFixture) list(user, device, query string) listOf {
	f.t.Helper()
	resp := f.do(http.MethodGet, NameChat+query, f.token(user), nil, map[string]string{"X-Baton-Device": device})
	defer resp.Body.Close()
	var out listOf
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&out) != nil {
		f.t.Fatalf("GET /Chat%s as %s: status %d", query, user, resp.StatusCode)
	}
	return out
}

func (l listOf) ids() []string {
	out := []string{}
	for _, c := range l.Chats {
		out = append(out, c.ID)
	}
	return out
}

// dataFixture: ada's chat c1 paused on browser call c1, her chat c2
// answered; bob's own chat named c1 too.
func dataFixture(t *testing.T) *httpFixture {
	t.Helper()
	f := newHTTPFixture(t, nil,
		modeltest.CallReply(modeltest.Call("c1", "change_bgm", map[string]any{"track": 2})),
		modeltest.TextReply("ada's answer"),
		modeltest.TextReply("bob's answer"))
	f.stream(f.chat("ada", chatBody("c1", "tab-a", userMessage("u1", "change the music to track 2"))), "c1")
	f.stream(f.chat("ada", chatBody("c2", "tab-a", userMessage("u2", "hello there"))))
	f.stream(f.chat("bob", chatBody("c1", "tab-b", userMessage("u3", "bob's secret plans"))))
	return f
}

// status sends a request and returns its status, the body read and closed.
func (f *httpFixture) status(method, path, user string, body any, header map[string]string) (int, []byte) {
	f.t.Helper()
	token := ""
	if user != "" {
		token = f.token(user)
	}
	resp := f.do(method, path, token, body, header)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// TestChatListAndRename: each user lists their own chats only, most recent
// first, with what waits for the asking device; a page at a time; a
// rename renames the caller's chat only; bad input is a 4xx that writes
// nothing.
func TestChatListAndRename(t *testing.T) {
	t.Parallel()
	f := dataFixture(t)
	ada := f.list("ada", "tab-a", "")
	if got := strings.Join(ada.ids(), ","); got != "c2,c1" {
		t.Fatalf("ada's chats: %s, want c2,c1", got)
	}
	if c := ada.Chats[1]; c.State != "waiting" || c.Waiting["browser"] != 1 || c.Title != "change the music to track 2" {
		t.Errorf("ada's c1 for tab-a: %+v, want waiting on one browser call", c)
	}
	if c := f.list("ada", "tab-z", "").Chats[1]; c.Waiting["browser"] != 0 || c.Waiting["elsewhere"] != 1 {
		t.Errorf("ada's c1 for another device: %+v, want the call elsewhere", c)
	}
	bob := f.list("bob", "tab-b", "")
	if len(bob.Chats) != 1 || bob.Chats[0].Title != "bob's secret plans" {
		t.Errorf("bob's chats: %+v, want his c1 only", bob.Chats)
	}
	first := f.list("ada", "tab-a", "?limit=1")
	second := f.list("ada", "tab-a", "?limit=1&before="+url.QueryEscape(first.Next))
	if first.Next == "" || strings.Join(append(first.ids(), second.ids()...), ",") != "c2,c1" || second.Next != "" {
		t.Errorf("ada's chats a page at a time: %v then %v (next %q)", first.ids(), second.ids(), second.Next)
	}

	for _, q := range []string{"?limit=0", "?limit=101", "?limit=x", "?before=nope", "?before=" + url.QueryEscape(first.Next[:5]), "?page=2"} {
		if code, _ := f.status(http.MethodGet, NameChat+q, "ada", nil, nil); code != http.StatusBadRequest {
			t.Errorf("GET /Chat%s: %d, want 400", q, code)
		}
	}
	if code, _ := f.status(http.MethodGet, NameChat, "", nil, nil); code != http.StatusUnauthorized {
		t.Errorf("GET /Chat without a token: %d, want 401", code)
	}

	for name, body := range map[string]any{
		"no title": map[string]any{}, "empty": map[string]any{"title": "  "}, "not text": map[string]any{"title": 5},
		"unknown member": map[string]any{"title": "x", "color": "red"}, "too long": map[string]any{"title": strings.Repeat("y", 81)},
		"not JSON": "title=x",
	} {
		if code, _ := f.status(http.MethodPatch, NameChat+"/c1", "ada", body, nil); code/100 != 4 {
			t.Errorf("PATCH /Chat/c1 with %s: %d, want a 4xx", name, code)
		}
	}
	if code, _ := f.status(http.MethodPatch, NameChat+"/c2", "bob", map[string]any{"title": "mine"}, nil); code != http.StatusNotFound {
		t.Errorf("bob renaming ada's c2: %d, want 404", code)
	}
	if code, _ := f.status(http.MethodPatch, NameChat+"/c1", "bob", map[string]any{"title": " Plans "}, nil); code != http.StatusOK {
		t.Errorf("bob renaming his c1: %d, want 200", code)
	}
	if got := f.list("bob", "tab-b", "").Chats[0].Title; got != "Plans" {
		t.Errorf("bob's c1 after his rename: %q, want Plans", got)
	}
	if got := f.list("ada", "tab-a", "").Chats[1].Title; got != "change the music to track 2" {
		t.Errorf("ada's c1 after bob's rename and the refused ones: %q, want it as it was", got)
	}
}

// TestDeleteChatOverHTTP: a user deletes their own chat only (another's id
// is theirs to have: 404 for the caller who does not have it); a late
// answer to the deleted chat's call gets 410; the deletion is idempotent.
func TestDeleteChatOverHTTP(t *testing.T) {
	t.Parallel()
	f := dataFixture(t)
	if code, _ := f.status(http.MethodDelete, NameChat+"/c2", "bob", nil, nil); code != http.StatusNotFound {
		t.Errorf("bob deleting ada's c2: %d, want 404", code)
	}
	if code, _ := f.status(http.MethodDelete, NameChat+"/c1", "bob", nil, nil); code != http.StatusNoContent {
		t.Errorf("bob deleting his c1: %d, want 204", code)
	}
	if got := f.list("ada", "tab-a", ""); strings.Join(got.ids(), ",") != "c2,c1" || got.Chats[1].State != "waiting" {
		t.Errorf("ada's chats after bob deleted his c1: %+v, want both, c1 waiting", got.Chats)
	}
	if code, _ := f.status(http.MethodDelete, NameChat+"/c1", "ada", nil, nil); code != http.StatusNoContent {
		t.Fatalf("ada deleting c1: %d, want 204", code)
	}
	if got := f.list("ada", "tab-a", "").ids(); strings.Join(got, ",") != "c2" {
		t.Errorf("ada's chats after deleting c1: %v, want c2", got)
	}
	late := f.do(http.MethodPost, NameToolResult, f.token("ada"),
		map[string]any{"sessionId": "c1", "toolCallId": "c1", "clientId": "tab-a", "output": map[string]any{"playing": 2}}, nil)
	if e := errorOf(t, late); late.StatusCode != http.StatusGone || e.Code != "chat_deleted" {
		t.Errorf("a late answer to the deleted chat's call: %d %s, want 410 chat_deleted", late.StatusCode, e.Code)
	}
	if code, _ := f.status(http.MethodGet, NameChat+"/c1", "ada", nil, nil); code != http.StatusNotFound {
		t.Errorf("GET /Chat/c1 after its deletion: %d, want 404", code)
	}
	if code, _ := f.status(http.MethodDelete, NameChat+"/c1", "ada", nil, nil); code != http.StatusNoContent {
		t.Errorf("deleting c1 again: %d, want 204", code)
	}
}

// assistantID is the id of the first assistant message of user's chat.
func (f *httpFixture) assistantID(user, chat string) string {
	f.t.Helper()
	v := f.chatMessages(user, chat)
	for _, m := range v.Messages {
		if m.Role == "assistant" {
			return m.ID
		}
	}
	f.t.Fatalf("no assistant message in %s", chat)
	return ""
}

// messagesView is GET /Chat/{chatId}, decoded as far as the tests read.
type messagesView struct {
	Messages []struct {
		ID, Role string
		Metadata map[string]any
	} `json:"messages"`
}

func (f *httpFixture) chatMessages(user, chat string) messagesView {
	f.t.Helper()
	code, body := f.status(http.MethodGet, NameChat+"/"+chat, user, nil, nil)
	var v messagesView
	if code != http.StatusOK || json.Unmarshal(body, &v) != nil {
		f.t.Fatalf("GET /Chat/%s as %s: %d %s", chat, user, code, body)
	}
	return v
}

// TestRatings: a person rates an answer of their chat, replaces and
// deletes the rating; GET /Chat/{chatId} returns it with the message; no
// one rates another user's message or anything but an answer; bad input
// is a 4xx.
func TestRatings(t *testing.T) {
	t.Parallel()
	f := dataFixture(t)
	answer := f.assistantID("ada", "c2")
	path := NameChat + "/c2/feedback/" + url.PathEscape(answer)
	for name, body := range map[string]any{
		"a sideways rating": map[string]any{"rating": "sideways"}, "no rating": map[string]any{"comment": "hm"},
		"a long comment": map[string]any{"rating": "up", "comment": strings.Repeat("z", 2001)}, "an unknown member": map[string]any{"rating": "up", "stars": 5},
	} {
		if code, _ := f.status(http.MethodPut, path, "ada", body, nil); code != http.StatusBadRequest {
			t.Errorf("PUT with %s: %d, want 400", name, code)
		}
	}
	if code, _ := f.status(http.MethodPut, path, "bob", map[string]any{"rating": "down"}, nil); code != http.StatusNotFound {
		t.Errorf("bob rating ada's answer: %d, want 404", code)
	}
	if code, _ := f.status(http.MethodPut, NameChat+"/c2/feedback/u2", "ada", map[string]any{"rating": "up"}, nil); code != http.StatusNotFound {
		t.Errorf("rating a user message: %d, want 404", code)
	}
	if code, _ := f.status(http.MethodPut, path, "ada", map[string]any{"rating": "down"}, nil); code != http.StatusOK {
		t.Fatalf("rating: %d, want 200", code)
	}
	if code, _ := f.status(http.MethodPut, path, "ada", map[string]any{"rating": "up", "comment": "helpful"}, nil); code != http.StatusOK {
		t.Fatalf("rating again: %d, want 200", code)
	}
	rated := func() map[string]any {
		for _, m := range f.chatMessages("ada", "c2").Messages {
			if m.ID == answer {
				fb, _ := m.Metadata["feedback"].(map[string]any)
				return fb
			}
		}
		return nil
	}
	if fb := rated(); fb["rating"] != "up" || fb["comment"] != "helpful" {
		t.Errorf("the answer's metadata.feedback: %v, want the replaced rating", fb)
	}
	if code, _ := f.status(http.MethodDelete, path, "ada", nil, nil); code != http.StatusNoContent {
		t.Errorf("deleting the rating: %d, want 204", code)
	}
	if fb := rated(); fb != nil {
		t.Errorf("metadata.feedback after deleting the rating: %v, want none", fb)
	}
}

// exportOf is GET /Account/export as user: the ZIP's files by name.
func (f *httpFixture) exportOf(user string) map[string]string {
	f.t.Helper()
	code, body := f.status(http.MethodGet, NameAccount+"/export", user, nil, nil)
	if code != http.StatusOK {
		f.t.Fatalf("GET /Account/export as %s: %d %s", user, code, body)
	}
	z, err := zip.NewReader(bytes.NewReader(body), int64(len(body)))
	if err != nil {
		f.t.Fatalf("the export is no ZIP: %v", err)
	}
	out := map[string]string{}
	for _, file := range z.File {
		rc, err := file.Open()
		if err != nil {
			f.t.Fatal(err)
		}
		b, _ := io.ReadAll(rc)
		rc.Close()
		out[file.Name] = string(b)
	}
	return out
}

// TestAccountExportAndDeletion: the export holds the caller's chats as UI
// messages with their ids and ratings, their files and the account,
// nothing of another user's; DELETE /Account deletes the caller's data
// only, and the export is empty after.
func TestAccountExportAndDeletion(t *testing.T) {
	t.Parallel()
	f := dataFixture(t)
	answer := f.assistantID("ada", "c2")
	if code, _ := f.status(http.MethodPut, NameChat+"/c2/feedback/"+url.PathEscape(answer), "ada", map[string]any{"rating": "up"}, nil); code != http.StatusOK {
		t.Fatal(code)
	}
	files := f.exportOf("ada")
	all := ""
	for name, body := range files {
		all += name + "\n" + body
	}
	for _, want := range []string{"README.txt", "account.json", "state.json", "chats.ndjson", "usage.json"} {
		if _, ok := files[want]; !ok {
			t.Errorf("the export has no %s (it has %d files)", want, len(files))
		}
	}
	for _, want := range []string{`"id":"u2"`, `"id":"` + answer + `"`, `"feedback":{"rating":"up"`, "change the music to track 2", f.user("ada").UID} {
		if !strings.Contains(all, want) {
			t.Errorf("the export does not hold %s", want)
		}
	}
	if strings.Contains(all, "bob's secret plans") || strings.Contains(all, f.user("bob").UID) {
		t.Errorf("ada's export holds bob's data")
	}
	if n := strings.Count(files["chats.ndjson"], "\n"); n != 2 {
		t.Errorf("chats.ndjson has %d lines, want 2", n)
	}

	if code, _ := f.status(http.MethodDelete, NameAccount, "bob", nil, nil); code != http.StatusNoContent {
		t.Fatalf("DELETE /Account as bob: %d, want 204", code)
	}
	if got := f.list("ada", "tab-a", "").ids(); len(got) != 2 {
		t.Errorf("ada's chats after bob's deletion: %v, want both", got)
	}
	if code, _ := f.status(http.MethodDelete, NameAccount, "ada", nil, nil); code != http.StatusNoContent {
		t.Fatalf("DELETE /Account as ada: %d, want 204", code)
	}
	if got := f.list("ada", "tab-a", "").ids(); len(got) != 0 {
		t.Errorf("ada's chats after her deletion: %v, want none", got)
	}
	if code, body := f.status(http.MethodGet, NameAccount, "ada", nil, nil); code != http.StatusOK || !strings.Contains(string(body), `"deleting":false`) {
		t.Errorf("GET /Account after the deletion: %d %s", code, body)
	}
	if n := strings.Count(f.exportOf("ada")["chats.ndjson"], "\n"); n != 0 {
		t.Errorf("the export after the deletion lists %d chats, want none", n)
	}
	if code, _ := f.status(http.MethodPost, NameAccount, "ada", map[string]any{}, nil); code != http.StatusMethodNotAllowed {
		t.Errorf("POST /Account: %d, want 405", code)
	}
}
