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
	"google.golang.org/adk/v2/tool"
	"google.golang.org/genai"

	"github.com/baton-run/baton/internal/firestoretest"
	"github.com/baton-run/baton/internal/teamtest"
	"github.com/baton-run/baton/limits"
	"github.com/baton-run/baton/modeltest"
	"github.com/baton-run/baton/sessionstore"
	"github.com/baton-run/baton/toolcallback"
	"github.com/baton-run/baton/uistream"
)

// BenchmarkTurn sends full turns through HTTP and reports, per turn, time
// to first byte and total time of the Turn function on Firestore, of the
// same request decoding and UI stream encoding over ADK's runner with its
// in-memory session service (the floor: "-inmem"), their ratios, the first
// byte's overhead over the floor next to the time of one Firestore commit
// measured in the same run ("µs-commit/op": the goal is an overhead of at
// most one commit), and the Firestore operations. Each iteration sends one
// turn to each and makes one commit, so all are measured under the same
// load.
//
// The rows: "new-chat" starts a chat per turn (creating the chat and its
// session); "same-chat-cold" continues one chat on an instance that keeps
// no session between turns (as after a restart, or with the chat's
// previous turn served elsewhere); "same-chat-warm" continues one chat on
// the instance that served its previous turn (see the package doc of
// toolcallback, "Warm turns"); "after-resume" is the turn that follows an
// answer to a browser call, in a chat of its own (so that it measures the
// resume's effect, not a history that grows). "-limits" rows hold the caller to the turn
// rates and a token budget; "-model-10ms" rows use a model that takes
// 10 ms to answer (a real one takes longer). The agent keeps no app: or
// user: state (ServerOptions.SessionStateOnly).
func BenchmarkTurn(b *testing.B) {
	for _, row := range []benchRow{
		{name: "new-chat", warm: true, newChat: true},
		{name: "same-chat-cold"},
		{name: "same-chat-warm", warm: true},
		{name: "after-resume", warm: true, newChat: true, afterResume: true},
		{name: "new-chat-limits", warm: true, newChat: true, limits: true},
		{name: "same-chat-cold-limits", limits: true},
		{name: "same-chat-warm-limits", warm: true, limits: true},
		{name: "same-chat-cold-model-10ms", latency: 10 * time.Millisecond},
		{name: "same-chat-warm-model-10ms", warm: true, latency: 10 * time.Millisecond},
		{name: "same-chat-cold-limits-model-10ms", limits: true, latency: 10 * time.Millisecond},
		{name: "same-chat-warm-limits-model-10ms", warm: true, limits: true, latency: 10 * time.Millisecond},
	} {
		b.Run(row.name, func(b *testing.B) { benchFirestoreTurns(b, row) })
	}
}

// benchRow is one kind of turn BenchmarkTurn measures.
type benchRow struct {
	name string
	// warm keeps warm turns on; newChat sends each turn to a chat of its
	// own; afterResume answers a browser call before each turn measured;
	// limits sets the turn rates and a token budget.
	warm, newChat, afterResume, limits bool
	latency                            time.Duration // the model's
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

// benchFirestoreTurns sends turns of row through the Turn function, each
// followed by the same turn over ADK's in-memory session service and one
// Firestore commit, and reports times, their ratios and Firestore
// operations per turn: reads of documents found, lookups of missing ones,
// and lookups (both, what Firestore bills as reads). A chat's first turn,
// and a resume's turns before the one measured, are sent before the
// timer runs.
func benchFirestoreTurns(b *testing.B, row benchRow) {
	client, counter := firestoretest.NewCountingClient(b)
	m := &modeltest.Strict{T: b, Repeat: benchReply(row.latency)}
	if row.limits {
		m.Usage = &genai.GenerateContentResponseUsageMetadata{TotalTokenCount: 100}
	}
	root := teamtest.Member(b, llmagent.Config{Name: "assistant", Model: m, Tools: []tool.Tool{teamtest.NewTools(b).BGM}})
	cfg := testConfig()
	cfg.DevIdentity = true
	if row.limits {
		lim := limits.Limits{UserTurnsPerMinute: 1 << 20, ChatTurnsPerMinute: 1 << 20, UserTokensPerDay: 1 << 40}
		cfg.TurnLimits = TurnLimits{User: lim, Anonymous: lim}
	}
	opts := &ServerOptions{Logger: NewLogger(io.Discard), SessionStateOnly: true}
	if !row.warm {
		opts.WarmChats = -1
	}
	s, err := NewServer(cfg, sessionstore.New(client, &sessionstore.Options{Root: cfg.Root}), []toolcallback.Member{root}, opts)
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler(NameTurn))
	defer srv.Close()
	answers := httptest.NewServer(s.Handler(NameToolResult))
	defer answers.Close()
	mem := inMemoryServer(b, row.latency)
	chatID := func(i int) string {
		if row.newChat {
			return fmt.Sprintf("bench-%d", i)
		}
		return "bench-chat"
	}
	if !row.newChat {
		sendTurn(b, srv.URL, chatID(0), "weather?")
		sendTurn(b, mem.URL, chatID(0), "weather?")
	}
	probe := client.Collection("bench").Doc("commit")
	b.ResetTimer()
	var fs, inmem turnTimes
	var ops firestoretest.Ops
	var commits time.Duration
	for i := 0; i < b.N; i++ {
		if row.afterResume {
			b.StopTimer()
			sendTurn(b, srv.URL, chatID(i), fmt.Sprintf("play %d", i))
			answerBench(b, answers.URL, chatID(i), fmt.Sprintf("call-%d", i))
			b.StartTimer()
		}
		before := counter.Snapshot()
		fs.add(sendTurn(b, srv.URL, chatID(i), "weather?"))
		ops = ops.Add(counter.Snapshot().Sub(before))
		inmem.add(sendTurn(b, mem.URL, chatID(i), "weather?"))
		start := time.Now()
		if _, err := probe.Set(b.Context(), map[string]any{"n": i}); err != nil {
			b.Fatal(err)
		}
		commits += time.Since(start)
	}
	fs.report(b, "")
	inmem.report(b, "-inmem")
	b.ReportMetric(float64(fs.ttfb)/float64(inmem.ttfb), "ttfb-ratio")
	b.ReportMetric(float64(fs.total)/float64(inmem.total), "total-ratio")
	commit := commits / time.Duration(b.N)
	overhead := (fs.ttfb - inmem.ttfb) / time.Duration(b.N)
	b.ReportMetric(float64(commit.Microseconds()), "µs-commit/op")
	b.ReportMetric(float64(overhead.Microseconds()), "µs-ttfb-overhead/op")
	b.ReportMetric(float64(overhead)/float64(commit), "overhead/commit")
	b.ReportMetric(float64(ops.RoundTrips)/float64(b.N), "roundtrips/op")
	b.ReportMetric(float64(ops.Reads)/float64(b.N), "reads/op")
	b.ReportMetric(float64(ops.Missing)/float64(b.N), "missing/op")
	b.ReportMetric(float64(ops.Lookups())/float64(b.N), "lookups/op")
	b.ReportMetric(float64(ops.Writes)/float64(b.N), "writes/op")
}

// benchReply answers after latency: "play" with a browser call, an answer
// to it with the track, anything else with "It is sunny.".
func benchReply(latency time.Duration) modeltest.Reply {
	sunny := slowReply(latency)
	return func(req *model.LLMRequest) *genai.Content {
		last := req.Contents[len(req.Contents)-1]
		switch {
		case len(last.Parts) > 0 && last.Parts[0].FunctionResponse != nil:
			return genai.NewContentFromText("It is sunny. Playing.", genai.RoleModel)
		case len(last.Parts) > 0 && strings.HasPrefix(last.Parts[0].Text, "play "):
			// "play 7" calls change_bgm with the call id "call-7".
			id := "call-" + strings.TrimPrefix(last.Parts[0].Text, "play ")
			return modeltest.CallReply(modeltest.Call(id, "change_bgm", map[string]any{"track": 2}))(req)
		}
		return sunny(req)
	}
}

// answerBench answers the browser call callID of chat through ToolResult
// and reads the resumed turn whole.
func answerBench(b *testing.B, url, chat, callID string) {
	body := fmt.Sprintf(`{"sessionId":%q,"toolCallId":%q,"clientId":"tab","output":{"playing":2}}`, chat, callID)
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Baton-User", "bench-user")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	rest, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || !strings.Contains(string(rest), "Playing.") {
		b.Fatalf("answer: status %d: %s", resp.StatusCode, rest)
	}
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

// sendTurn sends one turn of text on chat and returns the time to the
// first byte of the stream and to its end.
func sendTurn(b *testing.B, url, chat, text string) (ttfb, total time.Duration) {
	body := fmt.Sprintf(`{"sessionId":%q,"clientId":"tab","text":%q}`, chat, text)
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
	if resp.StatusCode != 200 || !strings.Contains(string(rest), "It is sunny.") && !strings.Contains(string(rest), "change_bgm") {
		b.Fatalf("status %d: %s", resp.StatusCode, rest)
	}
	return ttfb, total
}
