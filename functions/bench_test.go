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
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/runner"
	"google.golang.org/adk/v2/session"
	"google.golang.org/genai"

	"github.com/baton-run/baton/internal/firestoretest"
	"github.com/baton-run/baton/modeltest"
	"github.com/baton-run/baton/toolcallback"
	"github.com/baton-run/baton/uistream"
)

// BenchmarkTurn sends full turns through HTTP with a zero-latency model and
// reports, per turn, time to first byte and total time of the Turn
// function on Firestore, of the same request decoding and UI stream
// encoding over ADK's runner with its in-memory session service (the
// floor: "-inmem"), their ratios, and the Firestore operations.
// Each iteration sends one turn to each, so both are measured in the same
// run under the same load. "new-chat" starts a chat per turn (creating the
// chat and its session); "same-chat-cold" continues one chat on an instance
// that keeps no session between turns (as after a restart, or with the
// chat's previous turn served elsewhere); "same-chat-warm" continues one
// chat on the instance that served its previous turn (a warm turn, see
// the package doc of toolcallback, "Warm turns"). The agent keeps no app: or user: state
// (ServerOptions.SessionStateOnly).
func BenchmarkTurn(b *testing.B) {
	b.Run("new-chat", func(b *testing.B) {
		benchFirestoreTurns(b, true, func(i int) string { return fmt.Sprintf("bench-%d", i) })
	})
	b.Run("same-chat-cold", func(b *testing.B) {
		benchFirestoreTurns(b, false, func(int) string { return "bench-chat" })
	})
	b.Run("same-chat-warm", func(b *testing.B) {
		benchFirestoreTurns(b, true, func(int) string { return "bench-chat" })
	})
	// With a model that takes 10 ms to answer (a real one takes longer):
	// a warm turn's commit is made while the model works.
	b.Run("same-chat-cold-model-10ms", func(b *testing.B) {
		benchFirestoreTurnsWith(b, false, 10*time.Millisecond, func(int) string { return "bench-chat" })
	})
	b.Run("same-chat-warm-model-10ms", func(b *testing.B) {
		benchFirestoreTurnsWith(b, true, 10*time.Millisecond, func(int) string { return "bench-chat" })
	})
}

// slowReply answers "It is sunny." after latency.
func slowReply(latency time.Duration) modeltest.Reply {
	sunny := modeltest.TextReply("It is sunny.")
	return func(req *model.LLMRequest) *genai.Content {
		time.Sleep(latency) // the model's own time: what a warm turn overlaps
		return sunny(req)
	}
}

// inMemoryServer serves turns over ADK's runner with its in-memory session
// service, through the same decoding and stream encoding as Turn, with a
// model that answers after latency.
func inMemoryServer(b *testing.B, latency time.Duration) *httptest.Server {
	m := &modeltest.Strict{T: b, Repeat: slowReply(latency)}
	root, err := llmagent.New(llmagent.Config{Name: "assistant", Model: m})
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
		started := false
		for ev, err := range r.Run(req.Context(), req.Header.Get("X-Baton-User"), body.SessionID, msg, agent.RunConfig{StreamingMode: agent.StreamingModeSSE}) {
			if !started {
				// As Turn does: the stream starts with the first event.
				_ = sw.Start()
				started = true
			}
			if err != nil {
				_ = sw.Error("failed")
				continue
			}
			_ = sw.Event(ev, nil)
		}
		_ = sw.Finish()
	}))
	b.Cleanup(srv.Close)
	return srv
}

// benchFirestoreTurns sends turns through the Turn function (with warm
// turns on or off), turn i on the chat chatID(i), each followed by the
// same turn over ADK's in-memory session service, and reports times, their
// ratios and Firestore operations per turn: reads of documents found,
// lookups of missing ones, and lookups (both, what Firestore bills as
// reads). A chat's first turn is sent before the timer starts.
func benchFirestoreTurns(b *testing.B, warm bool, chatID func(int) string) {
	benchFirestoreTurnsWith(b, warm, 0, chatID)
}

// benchFirestoreTurnsWith is benchFirestoreTurns with a model that answers
// after latency.
func benchFirestoreTurnsWith(b *testing.B, warm bool, latency time.Duration, chatID func(int) string) {
	client, counter := firestoretest.NewCountingClient(b)
	m := &modeltest.Strict{T: b, Repeat: slowReply(latency)}
	root, err := llmagent.New(llmagent.Config{Name: "assistant", Model: m})
	if err != nil {
		b.Fatal(err)
	}
	cfg := testConfig()
	cfg.DevIdentity = true
	opts := &ServerOptions{Logger: NewLogger(io.Discard), SessionStateOnly: true}
	if !warm {
		opts.WarmChats = -1
	}
	s, err := NewServer(cfg, client, []toolcallback.Member{{Agent: root}}, opts)
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler(NameTurn))
	defer srv.Close()
	mem := inMemoryServer(b, latency)
	if chatID(0) == chatID(1) {
		sendTurn(b, srv.URL, chatID(0))
		sendTurn(b, mem.URL, chatID(0))
	}
	b.ResetTimer()
	var fs, inmem turnTimes
	var ops firestoretest.Ops
	for i := 0; i < b.N; i++ {
		before := counter.Snapshot()
		fs.add(sendTurn(b, srv.URL, chatID(i)))
		ops = ops.Add(counter.Snapshot().Sub(before))
		inmem.add(sendTurn(b, mem.URL, chatID(i)))
	}
	fs.report(b, "")
	inmem.report(b, "-inmem")
	b.ReportMetric(float64(fs.ttfb)/float64(inmem.ttfb), "ttfb-ratio")
	b.ReportMetric(float64(fs.total)/float64(inmem.total), "total-ratio")
	b.ReportMetric(float64(ops.RoundTrips)/float64(b.N), "roundtrips/op")
	b.ReportMetric(float64(ops.Reads)/float64(b.N), "reads/op")
	b.ReportMetric(float64(ops.Missing)/float64(b.N), "missing/op")
	b.ReportMetric(float64(ops.Lookups())/float64(b.N), "lookups/op")
	b.ReportMetric(float64(ops.Writes)/float64(b.N), "writes/op")
}

// turnTimes sums the times of turns.
type turnTimes struct {
	n           int
	ttfb, total time.Duration
}

func (t *turnTimes) add(ttfb, total time.Duration) {
	t.n++
	t.ttfb += ttfb
	t.total += total
}

func (t *turnTimes) report(b *testing.B, suffix string) {
	b.ReportMetric(float64(t.ttfb.Microseconds())/float64(t.n), "µs-ttfb"+suffix+"/op")
	b.ReportMetric(float64(t.total.Microseconds())/float64(t.n), "µs-total"+suffix+"/op")
}

// sendTurn sends one turn on chat and returns the time to the first byte
// of the stream and to its end.
func sendTurn(b *testing.B, url, chat string) (ttfb, total time.Duration) {
	body := fmt.Sprintf(`{"sessionId":%q,"clientId":"tab","text":"weather?"}`, chat)
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Baton-User", "bench-user")
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	rd := bufio.NewReader(resp.Body)
	if _, err := rd.ReadByte(); err != nil {
		b.Fatal(err)
	}
	ttfb = time.Since(start)
	rest, _ := io.ReadAll(rd)
	total = time.Since(start)
	if resp.StatusCode != 200 || !strings.Contains(string(rest), "It is sunny.") {
		b.Fatalf("status %d: %s", resp.StatusCode, rest)
	}
	return ttfb, total
}
