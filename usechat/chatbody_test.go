package usechat

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/baton-run/baton/errclass"
)

// testConfig is the configuration of the tests: what is new in a body is
// bounded by 64 KiB.
func testConfig() Config {
	return Config{MaxBodyBytes: 64 << 10, InvocationTimeout: 30 * time.Second, KeepAlive: 15 * time.Second}
}

// status is how the HTTP routes answer err: its class's status and
// message.
func status(err error) (int, errclass.Class) {
	c := errclass.Of(err)
	return c.HTTPStatus(), c
}

// readPost runs Chat's body reading on body, as chatPost does: the
// stream, then the last message.
func readPost(t testing.TB, s *Server, body string) (*postBody, *uiMessage, error) {
	t.Helper()
	r := httptest.NewRequest(http.MethodPost, "/Chat", strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	b, err := s.readChatBody(httptest.NewRecorder(), r)
	if err != nil {
		return nil, nil, err
	}
	m, err := s.takeMessage(b)
	return b, m, err
}

// history is n exchanges of a user message and an assistant answer of
// about size bytes each, as DefaultChatTransport repeats them.
func historyJSON(n, size int) string {
	var b strings.Builder
	pad := strings.Repeat("x", size)
	for i := range n {
		fmt.Fprintf(&b, `{"id":"u%d","role":"user","parts":[{"type":"text","text":"q%d %s"}]},`, i, i, pad)
		fmt.Fprintf(&b, `{"id":"a%d","role":"assistant","metadata":{"n":%d},"parts":[{"type":"step-start"},{"type":"text","text":"a%d %s","state":"done"}]},`, i, i, i, pad)
	}
	return b.String()
}

// TestChatBodyLenient: members Chat does not take are ignored at every
// level (the body, a message, a part, and whole earlier messages, even
// malformed by the exactness rules); the members it takes are read.
func TestChatBodyLenient(t *testing.T) {
	s := &Server{cfg: testConfig()}
	tests := []struct {
		name string
		body string
	}{
		{"app fields in the body", `{"model":"big","flags":{"x":[1,2]},"id":"c1","messages":[%s],"trigger":"submit-message","deviceId":"tab"}`},
		{"a future SDK member", `{"id":"c1","messages":[%s],"trigger":"submit-message","deviceId":"tab","requestMetadata":{"a":1,"a":2}}`},
		{"history Chat does not take", `{"id":"c1","messages":[{"id":"old","role":"user","parts":[{"type":"text","text":"\ud800","text":"x"}],"ID":3},%s],"trigger":"submit-message","deviceId":"tab"}`},
		{"message metadata and unknown part fields", `{"id":"c1","messages":[%s],"trigger":"submit-message","deviceId":"tab"}`},
	}
	last := `{"id":"u1","role":"user","metadata":{"sentAt":1,"sentAt":2},"parts":[{"type":"text","text":"hi","providerMetadata":{"x":"\ud800"}},{"type":"reasoning","TEXT":"ignored"}],"createdAt":"now"}`
	want := &uiMessage{ID: "u1", Role: "user", Parts: []uiPart{{Type: "text", Text: "hi"}}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, m, err := readPost(t, s, fmt.Sprintf(tt.body, last))
			if err != nil {
				t.Fatalf("read error = %v, want none", err)
			}
			if b.ID != "c1" || b.DeviceID != "tab" || b.Trigger != "submit-message" {
				t.Errorf("body = %+v, want its id, device and trigger", b)
			}
			if diff := cmp.Diff(want, m); diff != "" {
				t.Errorf("message (-want +got):\n%s", diff)
			}
		})
	}
}

// TestChatBodyExact: what Chat takes is still checked exactly: each of
// these bodies gets 400 (or 413), though the same bodies well formed pass.
func TestChatBodyExact(t *testing.T) {
	s := &Server{cfg: testConfig()}
	s.cfg.MaxFileBytes = 8
	tests := []struct {
		name, body, want string
	}{
		{"id twice", `{"id":"c1","id":"c2","messages":[{"id":"u1","role":"user","parts":[{"type":"text","text":"hi"}]}],"trigger":"submit-message"}`, `member "id" appears twice`},
		{"id in other case", `{"ID":"c1","messages":[{"id":"u1","role":"user","parts":[{"type":"text","text":"hi"}]}],"trigger":"submit-message"}`, `unknown member "ID"`},
		{"id not a string", `{"id":7,"messages":[{"id":"u1","role":"user","parts":[{"type":"text","text":"hi"}]}],"trigger":"submit-message"}`, `id must be a string`},
		{"device with an unpaired surrogate", `{"id":"c1","deviceId":"t\udc00","messages":[{"id":"u1","role":"user","parts":[{"type":"text","text":"hi"}]}],"trigger":"submit-message"}`, `unpaired surrogate`},
		{"invalid UTF-8 in the id", "{\"id\":\"c\xff\",\"messages\":[{\"id\":\"u1\",\"role\":\"user\",\"parts\":[{\"type\":\"text\",\"text\":\"hi\"}]}],\"trigger\":\"submit-message\"}", `not valid UTF-8`},
		{"message id twice", `{"id":"c1","messages":[{"id":"u1","id":"u2","role":"user","parts":[{"type":"text","text":"hi"}]}],"trigger":"submit-message"}`, `member "id" appears twice in messages[0]`},
		{"text twice in the new message", `{"id":"c1","messages":[{"id":"u1","role":"user","parts":[{"type":"text","text":"a","text":"b"}]}],"trigger":"submit-message"}`, `appears twice in messages[0].parts[0]`},
		{"text in other case", `{"id":"c1","messages":[{"id":"u1","role":"user","parts":[{"type":"text","Text":"a"}]}],"trigger":"submit-message"}`, `unknown member "Text"`},
		{"invalid UTF-8 in the new text", "{\"id\":\"c1\",\"messages\":[{\"id\":\"u1\",\"role\":\"user\",\"parts\":[{\"type\":\"text\",\"text\":\"\xff\"}]}],\"trigger\":\"submit-message\"}", `not valid UTF-8`},
		{"an answer's output names a member twice", `{"id":"c1","messages":[{"id":"a1","role":"assistant","parts":[{"type":"tool-change_bgm","toolCallId":"c1","state":"output-available","output":{"a":1,"a":2}}]}],"trigger":"submit-message"}`, `member "a" appears twice in messages[0].parts[0].output`},
		{"an answer's call id twice", `{"id":"c1","messages":[{"id":"a1","role":"assistant","parts":[{"type":"tool-change_bgm","toolCallId":"c1","toolCallId":"c2","state":"output-error"}]}],"trigger":"submit-message"}`, `appears twice`},
		{"messages not an array", `{"id":"c1","messages":{},"trigger":"submit-message"}`, `messages must be an array`},
		{"data after the body", `{"id":"c1","messages":[],"trigger":"submit-message"} {}`, `data after the JSON value`},
		{"truncated history", `{"id":"c1","messages":[{"id":"u1"`, `unexpected EOF`},
		{"file over the limit", `{"id":"c1","messages":[{"id":"u1","role":"user","parts":[{"type":"file","mediaType":"image/png","url":"data:image/png;base64,MTIzNDU2Nzg5"}]}],"trigger":"submit-message"}`, `over the limit of 8 bytes (BATON_MAX_FILE_BYTES)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, m, err := readPost(t, s, tt.body)
			if err == nil && m != nil && tt.want != "" {
				_, err = m.content(s.maxFile(), false)
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error = %v, want one saying %q", err, tt.want)
			}
			code, body := status(err)
			if code != http.StatusBadRequest && code != http.StatusRequestEntityTooLarge {
				t.Errorf("status = %d %+v, want 400 or 413", code, body)
			}
		})
	}
}

// TestChatBodyLimits: the whole body is bound by MaxChatBodyBytes, what is
// new by MaxBodyBytes; each 413 names its limit. The history does not
// count against MaxBodyBytes.
func TestChatBodyLimits(t *testing.T) {
	s := &Server{cfg: testConfig()}
	s.cfg.MaxBodyBytes = 1 << 10
	s.cfg.MaxChatBodyBytes = 64 << 10
	wrap := func(messages string) string {
		return `{"id":"c1","messages":[` + messages + `],"trigger":"submit-message"}`
	}
	newMsg := func(size int) string {
		return `{"id":"u1","role":"user","parts":[{"type":"text","text":"` + strings.Repeat("y", size) + `"}]}`
	}
	answer := func(size int) string {
		return `{"id":"a1","role":"assistant","parts":[{"type":"text","text":"` + strings.Repeat("z", 4<<10) + `"},` +
			`{"type":"tool-change_bgm","toolCallId":"c1","state":"output-available","output":{"x":"` + strings.Repeat("y", size) + `"}}]}`
	}
	tests := []struct {
		name, body, want string
	}{
		{"history over MaxBodyBytes, new message under", wrap(historyJSON(10, 2<<10) + newMsg(500)), ""},
		{"new message over MaxBodyBytes", wrap(newMsg(2 << 10)), "the new message without its files is over the limit of 1024 bytes (BATON_MAX_BODY_BYTES)"},
		{"a long assistant message with a small answer", wrap(answer(100)), ""},
		{"an answer over MaxBodyBytes", wrap(answer(2 << 10)), "an answer (messages[0].parts[1]) is over the limit of 1024 bytes (BATON_MAX_BODY_BYTES)"},
		{"body over MaxChatBodyBytes", wrap(historyJSON(20, 2<<10) + newMsg(10)), "the request body is over the limit of 65536 bytes (BATON_MAX_CHAT_BODY_BYTES)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := readPost(t, s, tt.body)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("error = %v, want none", err)
				}
				return
			}
			code, body := status(err)
			if code != http.StatusRequestEntityTooLarge || body.Message != tt.want {
				t.Errorf("status = %d %q, want 413 %q", code, body.Message, tt.want)
			}
		})
	}
}

// TestChatBodyMemory: the bytes a request allocates to read a body do not
// grow with the history it repeats: reading 8 MB of history allocates
// about what reading 100 KB does (the decoder's buffer grows to the
// largest message, the same in both). The figures are logged; see
// docs/files-and-long-chats.md.
func TestChatBodyMemory(t *testing.T) {
	s := &Server{cfg: testConfig()}
	s.cfg.MaxChatBodyBytes = 64 << 20
	last := `{"id":"new","role":"user","parts":[{"type":"text","text":"hi"}]}`
	allocated := func(exchanges int) (body int, bytes uint64) {
		raw := `{"id":"c1","messages":[` + historyJSON(exchanges, 2000) + last + `],"trigger":"submit-message","deviceId":"tab"}`
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		if _, _, err := readPost(t, s, raw); err != nil {
			t.Fatal(err)
		}
		runtime.ReadMemStats(&after)
		return len(raw), after.TotalAlloc - before.TotalAlloc
	}
	smallBody, small := allocated(25)
	bigBody, big := allocated(2000)
	t.Logf("history %d bytes: %d bytes allocated; history %d bytes: %d bytes allocated", smallBody, small, bigBody, big)
	if big > 2*small+64<<10 {
		t.Errorf("reading %d bytes allocated %d, reading %d allocated %d: allocation grows with the history", bigBody, big, smallBody, small)
	}
}

// FuzzChatBody: whatever the body, reading it answers a 4xx error or a
// message, never a panic or another status.
func FuzzChatBody(f *testing.F) {
	for _, seed := range []string{
		`{"id":"c1","messages":[{"id":"u1","role":"user","parts":[{"type":"text","text":"hi"}]}],"trigger":"submit-message"}`,
		`{"x":{"y":[1,{"z":null}]},"id":"c1","messages":[{"id":"u0","metadata":{}},{"id":"u1","role":"user","parts":[{"type":"file","url":"data:;base64,AA=="}]}]}`,
		`{"id":"c1","messages":[{"id":"a1","role":"assistant","parts":[{"type":"tool-x","toolCallId":"c","state":"output-available","output":{"a":1}}]}]}`,
		`{"messages":[{"id":"a1","role":"assistant","parts":[{"type":"dynamic-tool","approval":{"id":"x","approved":true},"input":[1]}]}]}`,
		`{"messages":[{"role":"user","parts":[{"type":7},{"type":"text","text":"\ud800"}]}]}`,
		`{"messages":[[]]}`, `{"messages":[{"parts":{}}]}`, `[]`, `{"id":"c1"} x`, strings.Repeat("[", 10000),
	} {
		f.Add(seed)
	}
	s := &Server{cfg: testConfig()}
	s.cfg.MaxChatBodyBytes = 1 << 20
	f.Fuzz(func(t *testing.T, body string) {
		b, m, err := readPost(t, s, body)
		if err == nil && b.Messages > 0 && m.Role == "user" {
			_, err = m.content(s.maxFile(), false)
		}
		if err == nil {
			return
		}
		if code, e := status(err); code != http.StatusBadRequest && code != http.StatusRequestEntityTooLarge {
			t.Fatalf("status %d %+v for %q, want 400 or 413", code, e, body)
		}
	})
}
