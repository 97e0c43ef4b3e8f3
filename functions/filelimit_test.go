//go:build !race

package functions

// The file-limit tests are scale tests: each sends a body of 14 MB of
// base64 (a 10 MiB file). Under the race detector they took 25 and 17 s
// of the race-built run and told nothing that TestChatFile and the other
// file tests, with smaller files through the same code, do not. So, like
// the long chat (longchat_test.go), they are built without -race only;
// ./test runs them in the go test it runs beside the race run.

import (
	"bytes"
	"encoding/base64"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/baton-run/baton/modeltest"
)

// TestChatFileAtLimit: a file of exactly BATON_MAX_FILE_BYTES is answered,
// and the model gets all of it (one byte more is TestChatFileOverLimit's
// 413).
func TestChatFileAtLimit(t *testing.T) {
	t.Parallel()
	f := newHTTPFixture(t, func(c *Config) { c.MaxFileBytes = 10 << 20; c.RequestTimeout = slowRequests }, modeltest.TextReply("seen"))
	data := randomBytes(10 << 20)
	start := time.Now()
	f.stream(f.chat("ada", chatBody("c1", "tab-a", fileMessage("u1", data, "application/pdf"))))
	t.Logf("a 10 MiB file: answered in %v", time.Since(start))
	files := inlineFiles(f.model.LastRequest())
	if len(files) != 1 || !bytes.Equal(files[0].Data, data) {
		t.Errorf("the model got %d inline files, want the 10 MiB file", len(files))
	}
}

// TestChatFileOverLimit: a file of BATON_MAX_FILE_BYTES + 1 bytes gets 413
// naming the limit, and nothing is written; the body, 14 MB of base64, is
// well under BATON_MAX_CHAT_BODY_BYTES.
func TestChatFileOverLimit(t *testing.T) {
	t.Parallel()
	f := newHTTPFixture(t, func(c *Config) { c.DevIdentity = true; c.MaxFileBytes = 10 << 20 })
	data := base64.StdEncoding.EncodeToString(make([]byte, 10<<20+1))
	msg := map[string]any{"id": "u1", "role": "user", "parts": []any{
		map[string]any{"type": "text", "text": "look"},
		map[string]any{"type": "file", "mediaType": "image/png", "url": "data:image/png;base64," + data},
	}}
	before := f.counter.Snapshot()
	resp := f.devChat(chatBody("c1", "tab-a", msg))
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("status %d, want 413", resp.StatusCode)
	}
	if e := errorOf(t, resp); !strings.Contains(e.Message, "10485760 bytes (BATON_MAX_FILE_BYTES)") {
		t.Errorf("message %q, want one naming the limit", e.Message)
	}
	if w := f.counter.Snapshot().Sub(before).Writes; w != 0 {
		t.Errorf("%d writes, want none", w)
	}
}
