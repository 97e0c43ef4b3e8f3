package functions

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/baton-run/baton/modeltest"
)

// TestChatLenientOverHTTP: extra members at every level are accepted; the
// same body with a malformed new message, id or answer gets 400, and
// nothing is written.
func TestChatLenientOverHTTP(t *testing.T) {
	t.Parallel()
	f := newHTTPFixture(t, func(c *Config) { c.DevIdentity = true }, modeltest.TextReply("hello"))
	lenient := `{"appSetting":{"a":1,"a":2},"id":"c1","messages":[` +
		`{"id":"u0","role":"user","parts":[{"type":"text","text":"old","text":"dup"}]},` +
		`{"id":"x","role":"assistant","metadata":{"m":1},"parts":[{"type":"text","text":"\ud800"}]},` +
		`{"id":"u1","role":"user","metadata":{"sentAt":1},"parts":[{"type":"text","text":"hi","providerMetadata":{"p":1}}],"createdAt":"2026"}` +
		`],"trigger":"submit-message","deviceId":"tab-a","futureField":1}`
	if got := text(f.stream(f.devChat(lenient))); got != "hello" {
		t.Fatalf("answer = %q, want hello", got)
	}
	bad := []struct{ name, from, to string }{
		{"new message's text twice", `"text":"hi"`, `"text":"hi","text":"ho"`},
		{"chat id in other case", `"id":"c1"`, `"Id":"c1"`},
		{"new message id twice", `"id":"u1"`, `"id":"u1","id":"u2"`},
		{"chat id not an id", `"id":"c1"`, `"id":"c/1"`},
		{"an unpaired surrogate in the device", `"deviceId":"tab-a"`, `"deviceId":"tab-\udc00"`},
	}
	for _, b := range bad {
		body := strings.Replace(strings.Replace(lenient, `"id":"c1"`, `"id":"c2"`, 1), b.from, b.to, 1)
		if b.from == `"id":"c1"` {
			body = strings.Replace(lenient, b.from, b.to, 1)
		}
		before := f.counter.Snapshot()
		resp := f.devChat(body)
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("%s: status %d, want 400", b.name, resp.StatusCode)
		}
		errorOf(t, resp)
		if w := f.counter.Snapshot().Sub(before).Writes; w != 0 {
			t.Errorf("%s: %d writes, want none", b.name, w)
		}
	}
}

// TestToolResultTokenWithInvalidUser: a token signed with the deployment's
// key whose claims name an invalid user id is refused with a 4xx, and
// nothing is written.
func TestToolResultTokenWithInvalidUser(t *testing.T) {
	t.Parallel()
	f := newHTTPFixture(t, func(c *Config) { c.DevIdentity = true })
	for _, user := range []string{"a/b", "", "..", strings.Repeat("u", 2000)} {
		claims, _ := json.Marshal(map[string]any{"c": "call1", "s": "s1", "u": user, "a": "x", "x": time.Now().Add(time.Hour).Unix()})
		body := base64.RawURLEncoding.EncodeToString(claims)
		mac := hmac.New(sha256.New, f.cfg.TokenKey)
		mac.Write([]byte("baton-call-token-v1." + body))
		token := body + "." + base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
		before := f.counter.Snapshot()
		resp := f.do(http.MethodPost, NameToolResult, "", map[string]any{"token": token, "output": map[string]any{"ok": true}}, nil)
		if resp.StatusCode < 400 || resp.StatusCode >= 500 {
			t.Errorf("user %q: status %d, want a 4xx", user, resp.StatusCode)
		}
		errorOf(t, resp)
		if w := f.counter.Snapshot().Sub(before).Writes; w != 0 {
			t.Errorf("user %q: %d writes, want none", user, w)
		}
	}
}

// devChat POSTs body to Chat as user ada of the development identity.
func (f *httpFixture) devChat(body any) *http.Response {
	f.t.Helper()
	return f.do(http.MethodPost, NameChat, "", body, map[string]string{"X-Baton-User": "ada"})
}
