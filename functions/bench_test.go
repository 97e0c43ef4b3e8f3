package functions

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/runner"
	"google.golang.org/adk/v2/session"

	"github.com/baton-run/baton/internal/firestoretest"
	"github.com/baton-run/baton/internal/modeltest"
	"github.com/baton-run/baton/toolcallback"
	"github.com/baton-run/baton/uistream"
)

// BenchmarkTurn sends full turns through HTTP with a zero-latency model and
// reports time to first byte, total time and Firestore operations per turn.
// "firestore/new-chat" starts a chat per turn (creating the chat and its
// session); "firestore/same-chat" continues one chat; "inmemory" is the
// same request decoding and UI stream encoding over ADK's runner with its
// in-memory session service, the floor that durability (Firestore, lease,
// ledger) adds to.
func BenchmarkTurn(b *testing.B) {
	b.Run("firestore/new-chat", func(b *testing.B) {
		benchFirestoreTurns(b, func(i int) string { return fmt.Sprintf("bench-%d", i) })
	})
	b.Run("firestore/same-chat", func(b *testing.B) {
		benchFirestoreTurns(b, func(int) string { return "bench-chat" })
	})
	b.Run("inmemory", func(b *testing.B) {
		model := &modeltest.Strict{T: b, Repeat: modeltest.TextReply("It is sunny.")}
		root, err := llmagent.New(llmagent.Config{Name: "assistant", Model: model})
		if err != nil {
			b.Fatal(err)
		}
		r, err := runner.New(runner.Config{AppName: "app", Agent: root, SessionService: session.InMemoryService(), AutoCreateSession: true})
		if err != nil {
			b.Fatal(err)
		}
		s := &Server{cfg: testConfig(), log: NewLogger(io.Discard)}
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			var body turnRequest
			if err := s.decodeJSON(w, req, &body); err != nil {
				http.Error(w, err.Error(), 400)
				return
			}
			msg, _ := body.content()
			sw := uistream.NewEncoder(uistream.NewSSE(w), "msg")
			_ = sw.Start()
			for ev, err := range r.Run(req.Context(), req.Header.Get("X-Baton-User"), body.SessionID, msg, agent.RunConfig{StreamingMode: agent.StreamingModeSSE}) {
				if err != nil {
					_ = sw.Error("failed")
					continue
				}
				_ = sw.Event(ev, nil)
			}
			_ = sw.Finish()
		}))
		defer srv.Close()
		benchTurns(b, srv.URL, func(i int) string { return fmt.Sprintf("bench-%d", i) })
	})
}

// benchFirestoreTurns sends turns through the Turn function, turn i on the
// chat chatID(i), and reports Firestore operations per turn: reads of
// documents found, lookups of missing ones, and lookups (both, what
// Firestore bills as reads).
func benchFirestoreTurns(b *testing.B, chatID func(int) string) {
	client, counter := firestoretest.NewCountingClient(b)
	model := &modeltest.Strict{T: b, Repeat: modeltest.TextReply("It is sunny.")}
	root, err := llmagent.New(llmagent.Config{Name: "assistant", Model: model})
	if err != nil {
		b.Fatal(err)
	}
	cfg := testConfig()
	cfg.DevIdentity = true
	s, err := NewServer(cfg, client, []toolcallback.Member{{Agent: root}}, &ServerOptions{Logger: NewLogger(io.Discard)})
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler(NameTurn))
	defer srv.Close()
	before := counter.Snapshot()
	benchTurns(b, srv.URL, chatID)
	ops := counter.Snapshot().Sub(before)
	b.ReportMetric(float64(ops.RoundTrips)/float64(b.N), "roundtrips/op")
	b.ReportMetric(float64(ops.Reads)/float64(b.N), "reads/op")
	b.ReportMetric(float64(ops.Missing)/float64(b.N), "missing/op")
	b.ReportMetric(float64(ops.Lookups())/float64(b.N), "lookups/op")
	b.ReportMetric(float64(ops.Writes)/float64(b.N), "writes/op")
}

// benchTurns sends b.N turns, turn i on chat chatID(i), and reports time to
// the first byte of the stream and to its end.
func benchTurns(b *testing.B, url string, chatID func(int) string) {
	var ttfb, total time.Duration
	for i := 0; i < b.N; i++ {
		body := fmt.Sprintf(`{"sessionId":%q,"clientId":"tab","text":"weather?"}`, chatID(i))
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Baton-User", "bench-user")
		start := time.Now()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		rd := bufio.NewReader(resp.Body)
		if _, err := rd.ReadByte(); err != nil {
			b.Fatal(err)
		}
		ttfb += time.Since(start)
		rest, _ := io.ReadAll(rd)
		total += time.Since(start)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(rest), "It is sunny.") {
			b.Fatalf("status %d: %s", resp.StatusCode, rest)
		}
	}
	b.ReportMetric(float64(ttfb.Microseconds())/float64(b.N), "µs-ttfb/op")
	b.ReportMetric(float64(total.Microseconds())/float64(b.N), "µs-total/op")
}
