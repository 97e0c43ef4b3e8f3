//go:build !race

package functions

// The long chat is a scale test: 500 POSTs, one at a time, each scanning a
// body of up to 2.4 MB. Under the race detector it took five times as long
// (150 s against 28 s) and told nothing the race-built chat tests, which go
// through the same code with concurrency, do not. So it is built without
// -race only; ./test runs it in a go test of its own beside the race run.

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/baton-run/baton/modeltest"
)

// TestChatStockTransportLongChat: a page with the stock transport POSTs
// the whole conversation every time. One chat goes through 500 exchanges
// whose messages total several MB, with the app's own body fields and
// message metadata; every POST is answered. The limit on what is new
// (MaxBodyBytes, 64 KiB here) is far below the body. Most of the bytes are
// the app's own message metadata, which Baton ignores and never stores:
// the test is about the body a stock page sends, and so the turns do not
// also read back megabytes of stored history (a cost of its own, measured
// by TestTurnCost and the benchmarks). The body is built by appending
// bytes, as a page's transport serialises it, rather than re-marshalled.
func TestChatStockTransportLongChat(t *testing.T) {
	t.Parallel()
	exchanges := 500
	if testing.Short() {
		exchanges = 60
	}
	f := newHTTPFixture(t, func(c *Config) { c.DevIdentity = true })
	f.model.Repeat = modeltest.TextReply("an answer")
	marshal := func(v any) []byte {
		raw, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return raw
	}
	note := strings.Repeat("app data ", 260) // 2.3 KB of the app's own per message
	var history []byte                       // the messages so far, comma-separated
	var last []byte
	for i := range exchanges {
		msg := userMessage(fmt.Sprintf("u%d", i), fmt.Sprintf("question %d", i))
		msg["metadata"] = map[string]any{"note": note}
		if len(history) > 0 {
			history = append(history, ',')
		}
		history = append(history, marshal(msg)...)
		last = slices.Concat([]byte(`{"id":"long","trigger":"submit-message","deviceId":"tab-a","model":"the app's own choice","messages":[`),
			history, []byte(`]}`))
		chunks := f.stream(f.devChat(last))
		reply := text(chunks)
		if reply == "" {
			t.Fatalf("exchange %d: no answer", i)
		}
		history = append(history, ',')
		history = append(history, marshal(map[string]any{
			"id": chunksOfType(chunks, "start")[0]["messageId"], "role": "assistant", "metadata": map[string]any{"at": i, "note": note},
			"parts": []any{map[string]any{"type": "step-start"}, map[string]any{"type": "text", "text": reply, "state": "done"}},
		})...)
	}
	t.Logf("%d exchanges; the last body was %d bytes", exchanges, len(last))
	if !testing.Short() && len(last) < 2<<20 {
		t.Errorf("the last body was %d bytes, want several MB", len(last))
	}
}
