package geminilive_test

// What ADK v2.2.0's live path (runner.RunLive → llmagent.RunLive →
// internal/llminternal/base_flow.go Flow.RunLive) does, run against the
// Gemini Live stand-in through genai's own client: the gaps this package
// closes. Each test pins one finding; when an ADK upgrade changes the
// behaviour, the test fails and the finding needs a second look. Line
// numbers refer to ADK v2.2.0.

import (
	"context"
	"fmt"
	"io"
	"iter"
	"log"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/model/gemini"
	"google.golang.org/adk/v2/runner"
	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/functiontool"
	"google.golang.org/adk/v2/tool/toolconfirmation"
	"google.golang.org/genai"

	"github.com/baton-run/baton/internal/polltest"
	"github.com/baton-run/baton/modeltest"
)

// TestMain silences ADK's live flow, which logs every connect, handle and
// tool response with the standard logger.
func TestMain(m *testing.M) {
	log.SetOutput(io.Discard)
	os.Exit(m.Run())
}

// adkLive is one ADK live session on the stand-in, with its events read
// into a channel.
type adkLive struct {
	t        *testing.T
	sessions session.Service
	live     agent.LiveSession
	events   chan adkEvent
	cancel   context.CancelFunc
}

type adkEvent struct {
	ev  *session.Event
	err error
}

const liveModel = "gemini-live-2.5-flash"

// startADK runs ADK's RunLive for agent "voice" with tools on the
// stand-in, on a session holding history.
func startADK(t *testing.T, s *modeltest.LiveServer, cfg agent.LiveRunConfig, tools []tool.Tool, history ...*genai.Content) *adkLive {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	m, err := gemini.NewModel(ctx, liveModel, s.ClientConfig())
	if err != nil {
		t.Fatal(err)
	}
	a, err := llmagent.New(llmagent.Config{Name: "voice", Model: m, Instruction: "Answer briefly.", Tools: tools})
	if err != nil {
		t.Fatal(err)
	}
	svc := chatWith(t, history...)
	r, err := runner.New(runner.Config{AppName: "app", Agent: a, SessionService: svc})
	if err != nil {
		t.Fatal(err)
	}
	live, events, err := r.RunLive(ctx, "user", "chat", cfg)
	if err != nil {
		t.Fatal(err)
	}
	l := &adkLive{t: t, sessions: svc, live: live, events: make(chan adkEvent, 1024), cancel: cancel}
	go l.read(events)
	t.Cleanup(func() { _ = live.Close() })
	return l
}

// chatWith is an in-memory session service holding session "chat" of
// agent "voice" with history.
func chatWith(t *testing.T, history ...*genai.Content) session.Service {
	t.Helper()
	ctx := context.Background()
	svc := session.InMemoryService()
	created, err := svc.Create(ctx, &session.CreateRequest{AppName: "app", UserID: "user", SessionID: "chat"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range history {
		ev := session.NewEvent(ctx, "earlier")
		ev.Author, ev.Content = map[string]string{genai.RoleUser: "user", genai.RoleModel: "voice"}[c.Role], c
		if err := svc.AppendEvent(ctx, created.Session, ev); err != nil {
			t.Fatal(err)
		}
	}
	return svc
}

// stop ends ADK's live run and waits for its events to end.
func (l *adkLive) stop() {
	l.cancel()
	for range l.events {
	}
}

func (l *adkLive) read(events iter.Seq2[*session.Event, error]) {
	defer close(l.events)
	for ev, err := range events {
		l.events <- adkEvent{ev, err}
	}
}

// next is the next event or error, failing the test after a while.
func (l *adkLive) next() adkEvent {
	l.t.Helper()
	select {
	case e, ok := <-l.events:
		if !ok {
			l.t.Fatal("ADK's live events ended")
		}
		return e
	case <-time.After(10 * time.Second):
		l.t.Fatal("no event from ADK's live session within 10 s")
	}
	return adkEvent{}
}

// until reads events until one satisfies cond, and returns those read.
func (l *adkLive) until(what string, cond func(adkEvent) bool) []adkEvent {
	l.t.Helper()
	var seen []adkEvent
	for {
		e := l.next()
		seen = append(seen, e)
		if cond(e) {
			return seen
		}
	}
}

// stored are the session's events as ADK stored them.
func (l *adkLive) stored() []*session.Event {
	l.t.Helper()
	got, err := l.sessions.Get(context.Background(), &session.GetRequest{AppName: "app", UserID: "user", SessionID: "chat"})
	if err != nil {
		l.t.Fatal(err)
	}
	var evs []*session.Event
	for ev := range got.Session.Events().All() {
		evs = append(evs, ev)
	}
	return evs
}

// dropAfterFirstTurn waits for the first turn and its handle, drops the
// connection, and waits for the turn ADK's reconnect brings; it returns
// the handle.
func (l *adkLive) dropAfterFirstTurn(s *modeltest.LiveServer) string {
	l.t.Helper()
	l.until("the first turn's end", turnComplete)
	polltest.Until(l.t, "a handle after the first turn", func() bool { return len(s.Handles()) == 1 })
	handle := s.Handles()[0]
	l.until("ADK to receive "+handle, handleEvent(handle))
	s.Conn(0).Drop()
	l.until("the resumed session's turn", turnComplete)
	return handle
}

func turnComplete(e adkEvent) bool { return e.ev != nil && e.ev.TurnComplete }

func dump(c *genai.Content) string {
	if c == nil {
		return "<nil>"
	}
	return strings.TrimSpace(modeltest.DumpContents([]*genai.Content{c}))
}

// empty reports whether an event carries nothing ADK reads: how a frame
// ADK does not parse (goAway, toolCallCancellation) reaches its caller.
func empty(e adkEvent) bool {
	return e.err == nil && e.ev != nil && cmp.Equal(e.ev.LLMResponse, model.LLMResponse{})
}

// handleEvent reports whether an event carries the resumption handle h.
func handleEvent(h string) func(adkEvent) bool {
	return func(e adkEvent) bool { return e.ev != nil && e.ev.SessionResumptionHandle == h }
}

// callOf is the first function call an event holds, nil for none.
func callOf(e adkEvent) *genai.FunctionCall {
	if e.ev == nil || e.ev.Content == nil {
		return nil
	}
	for _, p := range e.ev.Content.Parts {
		if p.FunctionCall != nil {
			return p.FunctionCall
		}
	}
	return nil
}

func hasCall(e adkEvent) bool { return callOf(e) != nil }

// textConfig asks for text answers, and for resumption handles when
// resumable. A new value each time: RunLive writes into the config it is
// given (TestADKWritesHandleIntoConfig).
func textConfig(resumable bool) agent.LiveRunConfig {
	cfg := agent.LiveRunConfig{ResponseModalities: []genai.Modality{genai.ModalityText}}
	if resumable {
		cfg.SessionResumption = &genai.SessionResumptionConfig{}
	}
	return cfg
}

// wait receives from ch, failing the test after a while.
func wait(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("after 10 s, still waiting for %s", what)
	}
}

// browserTool is a long-running tool that returns nothing, as a tool the
// browser answers would: it closes ran when called.
func browserTool(t *testing.T, ran chan struct{}) tool.Tool {
	t.Helper()
	tl, err := functiontool.New(functiontool.Config{Name: "get_location", Description: "asks the browser", IsLongRunning: true},
		func(agent.Context, struct{}) (map[string]any, error) {
			close(ran)
			return nil, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	return tl
}

// ADK drops usageMetadata: googlellm/live_connection.go Recv (from line
// 192) copies no usage into the LLMResponse, so no event carries it and a
// token budget cannot be kept from ADK's events.
func TestADKDropsUsage(t *testing.T) {
	s := modeltest.NewLiveServer(&modeltest.LiveOptions{T: t, Script: []modeltest.Reply{modeltest.TextReply("Hello there.")}})
	defer s.Close()
	l := startADK(t, s, textConfig(true), nil, genai.NewContentFromText("hi", genai.RoleUser))
	for _, e := range l.until("the turn's end", turnComplete) {
		if e.ev != nil && e.ev.UsageMetadata != nil {
			t.Fatalf("event carries usage %+v: ADK passes usage on now", e.ev.UsageMetadata)
		}
	}
	if n := s.Conn(0).Count("usageMetadata"); n != 1 {
		t.Fatalf("stand-in sent %d usageMetadata frames, want 1", n)
	}
}

// A history that ends with the model's turn gets a user turn appended
// (contents_processor.go:68, "Continue processing previous requests…"),
// sent with turnComplete true (live_connection.go:82): the model speaks
// unprompted as the session opens.
func TestADKAppendsContinueTurn(t *testing.T) {
	s := modeltest.NewLiveServer(&modeltest.LiveOptions{T: t, Script: []modeltest.Reply{modeltest.TextReply("As I was saying.")}})
	defer s.Close()
	l := startADK(t, s, textConfig(true), nil, genai.NewContentFromText("hi", genai.RoleUser), genai.NewContentFromText("hello", genai.RoleModel))
	l.until("the unprompted turn's end", turnComplete)
	var first *genai.LiveClientContent
	for _, f := range s.Conn(0).Frames() {
		if f.Client != nil && f.Client.ClientContent != nil {
			first = f.Client.ClientContent
			break
		}
	}
	last := first.Turns[len(first.Turns)-1]
	if last.Role != genai.RoleUser || !strings.HasPrefix(last.Parts[0].Text, "Continue processing") || !first.TurnComplete {
		t.Fatalf("history ends with %s, turnComplete %v; want ADK's continue turn, turnComplete true", dump(last), first.TurnComplete)
	}
	if s.Turns() != 1 {
		t.Fatalf("model turns = %d, want 1 (unprompted)", s.Turns())
	}
}

// On a reconnect ADK presents the latest handle (base_flow.go:340) and
// still sends the history it loaded when the live run began
// (base_flow.go:380, computed once at :299): the resumed model sees the
// history twice, and, the history ending on ADK's continue turn, answers
// it again.
func TestADKResendsHistoryWithHandle(t *testing.T) {
	s := modeltest.NewLiveServer(&modeltest.LiveOptions{T: t, Repeat: modeltest.TextReply("Hello.")})
	defer s.Close()
	l := startADK(t, s, textConfig(true), nil, genai.NewContentFromText("hi", genai.RoleUser))
	handle := l.dropAfterFirstTurn(s)
	resumed := s.Conn(1)
	if resumed.Resumed() != handle {
		t.Fatalf("second connection resumed %q, want %q", resumed.Resumed(), handle)
	}
	n := 0
	for _, c := range resumed.Seen() {
		if c.Role == genai.RoleUser && c.Parts[0].Text == "hi" {
			n++
		}
	}
	if n != 2 {
		t.Fatalf("resumed model saw the user's turn %d times, want 2 (history re-sent):\n%s", n, modeltest.DumpContents(resumed.Seen()))
	}
}

// A FunctionResponse given to LiveSession.Send reaches the model, but
// runnerLiveSession.Send (runner.go:372, skip at :389) never stores it:
// the session keeps the call without its response.
func TestADKSendDoesNotStoreFunctionResponse(t *testing.T) {
	s := modeltest.NewLiveServer(&modeltest.LiveOptions{T: t, Script: []modeltest.Reply{
		modeltest.CallReply(modeltest.Call("", "get_location", nil)), modeltest.TextReply("You are home."),
	}})
	defer s.Close()
	l := startADK(t, s, textConfig(true), []tool.Tool{browserTool(t, make(chan struct{}))}, genai.NewContentFromText("where am I?", genai.RoleUser))
	evs := l.until("the call", hasCall)
	call := callOf(evs[len(evs)-1])
	answer := &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{{FunctionResponse: &genai.FunctionResponse{ID: call.ID, Name: call.Name, Response: map[string]any{"city": "Paris"}}}}}
	if err := l.live.Send(agent.LiveRequest{Content: answer}); err != nil {
		t.Fatal(err)
	}
	l.until("the answer's turn", turnComplete)
	if n := s.Conn(0).Count("toolResponse"); n != 1 {
		t.Fatalf("model got %d toolResponse frames, want 1", n)
	}
	for _, ev := range l.stored() {
		if ev.Content != nil && slices.ContainsFunc(ev.Content.Parts, func(p *genai.Part) bool { return p.FunctionResponse != nil }) {
			t.Fatalf("session stores the response (event %s): ADK stores Send's responses now", dump(ev.Content))
		}
	}
}

// A long-running tool that returns nil sends nothing to the model
// (base_flow.go:1186): the call waits until someone sends its response.
func TestADKLongRunningNilSendsNothing(t *testing.T) {
	s := modeltest.NewLiveServer(&modeltest.LiveOptions{T: t, Script: []modeltest.Reply{
		modeltest.CallReply(modeltest.Call("", "get_location", nil)), modeltest.TextReply("Still here."),
	}})
	defer s.Close()
	ran := make(chan struct{})
	l := startADK(t, s, textConfig(true), []tool.Tool{browserTool(t, ran)}, genai.NewContentFromText("where am I?", genai.RoleUser))
	l.until("the call", hasCall)
	wait(t, ran, "the tool to run")
	// A later turn's answer comes through the loop that ran the tool, so
	// once it arrives the tool's outcome has been sent, if any.
	if err := l.live.Send(agent.LiveRequest{Content: genai.NewContentFromText("are you there?", genai.RoleUser)}); err != nil {
		t.Fatal(err)
	}
	l.until("the next turn's end", turnComplete)
	if n := s.Conn(0).Count("toolResponse"); n != 0 {
		t.Fatalf("model got %d toolResponse frames, want 0", n)
	}
}

// Tool confirmations are nil in live mode: RunLive passes nil to
// handleFunctionCalls (base_flow.go:505), so a tool that requires
// confirmation answers the model with ErrConfirmationRequired, never
// runs, and no adk_request_confirmation call is made for a person to
// answer.
func TestADKLiveHasNoConfirmations(t *testing.T) {
	s := modeltest.NewLiveServer(&modeltest.LiveOptions{T: t, Script: []modeltest.Reply{
		modeltest.CallReply(modeltest.Call("", "book_table", nil)), modeltest.EchoReply,
	}})
	defer s.Close()
	ran := false
	book, err := functiontool.New(functiontool.Config{Name: "book_table", Description: "books", RequireConfirmation: true},
		func(agent.Context, struct{}) (map[string]any, error) {
			ran = true
			return map[string]any{"booked": true}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	l := startADK(t, s, textConfig(true), []tool.Tool{book}, genai.NewContentFromText("book a table", genai.RoleUser))
	for _, e := range l.until("the echo's end", turnComplete) {
		if c := callOf(e); c != nil && c.Name == toolconfirmation.FunctionCallName {
			t.Fatalf("ADK asked for a confirmation in live mode: %v", c)
		}
	}
	if ran {
		t.Fatal("the tool ran without a confirmation")
	}
	var sent *genai.FunctionResponse
	for _, f := range s.Conn(0).Frames() {
		if f.Client != nil && f.Client.ToolResponse != nil {
			sent = f.Client.ToolResponse.FunctionResponses[0]
		}
	}
	if sent == nil || !strings.Contains(fmt.Sprint(sent.Response["error"]), "requires confirmation") {
		t.Fatalf("model got %+v, want the confirmation-required error", sent)
	}
}

// goAway reaches ADK's caller as an event carrying nothing
// (live_connection.go Recv parses no goAway; base_flow.go:420 wraps the
// empty response), and ADK does nothing before the connection closes.
func TestADKIgnoresGoAway(t *testing.T) {
	s := modeltest.NewLiveServer(&modeltest.LiveOptions{T: t, Repeat: modeltest.TextReply("Hello.")})
	defer s.Close()
	l := startADK(t, s, textConfig(true), nil, genai.NewContentFromText("hi", genai.RoleUser))
	l.until("the first turn's end", turnComplete)
	s.Conn(0).Send(&genai.LiveServerMessage{GoAway: &genai.LiveServerGoAway{TimeLeft: time.Minute}})
	l.until("the goAway, as an empty event", empty)
	if err := l.live.Send(agent.LiveRequest{Content: genai.NewContentFromText("still there?", genai.RoleUser)}); err != nil {
		t.Fatal(err)
	}
	polltest.Until(t, "the next turn on the warned connection", func() bool { return s.Conn(0).Count("clientContent") == 2 })
	if n := len(s.Conns()); n != 1 {
		t.Fatalf("%d connections after goAway, want 1 (no early reconnect)", n)
	}
}

// toolCallCancellation reaches ADK's caller as an event carrying nothing;
// the cancelled call stays in the session without a response.
func TestADKIgnoresToolCallCancellation(t *testing.T) {
	s := modeltest.NewLiveServer(&modeltest.LiveOptions{T: t, Script: []modeltest.Reply{modeltest.CallReply(modeltest.Call("", "get_location", nil))}})
	defer s.Close()
	ran := make(chan struct{})
	l := startADK(t, s, textConfig(false), []tool.Tool{browserTool(t, ran)}, genai.NewContentFromText("where am I?", genai.RoleUser))
	l.until("the call", hasCall)
	wait(t, ran, "the tool to run")
	if ids := s.Conn(0).CancelCalls(); len(ids) != 1 {
		t.Fatalf("cancelled %v, want one call", ids)
	}
	l.until("the cancellation, as an empty event", empty)
	calls, responses := 0, 0
	for _, ev := range l.stored() {
		if ev.Content == nil {
			continue
		}
		for _, p := range ev.Content.Parts {
			if p.FunctionCall != nil {
				calls++
			}
			if p.FunctionResponse != nil {
				responses++
			}
		}
	}
	if calls != 1 || responses != 0 {
		t.Fatalf("session holds %d calls and %d responses, want the cancelled call unanswered (1, 0)", calls, responses)
	}
}

// Which ends of the model's connection ADK resumes from: isResumable
// (base_flow.go:321) matches io.EOF and the strings "broken pipe",
// "connection reset", "EOF", "1008" and "GoAway" in the error. Gemini's
// 1011 at its connection limit, and 1000 or 1001, end the live run with
// an error instead.
func TestADKResumableCloses(t *testing.T) {
	for _, tc := range []struct {
		name    string
		end     func(*modeltest.LiveConn)
		resumes bool
	}{
		{"dropped (unexpected EOF)", (*modeltest.LiveConn).Drop, true},
		{"1008 policy violation", func(c *modeltest.LiveConn) { c.CloseWith(1008, "policy") }, true},
		{"1011 deadline expired", func(c *modeltest.LiveConn) { c.CloseWith(1011, "Deadline expired before operation could complete.") }, false},
		{"1000 normal", func(c *modeltest.LiveConn) { c.CloseWith(1000, "") }, false},
		{"1001 going away", func(c *modeltest.LiveConn) { c.CloseWith(1001, "") }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := modeltest.NewLiveServer(&modeltest.LiveOptions{T: t, Repeat: modeltest.TextReply("Hello.")})
			defer s.Close()
			l := startADK(t, s, textConfig(true), nil, genai.NewContentFromText("hi", genai.RoleUser))
			l.until("the first turn's end", turnComplete)
			tc.end(s.Conn(0))
			if tc.resumes {
				polltest.Until(t, "ADK to reconnect", func() bool { return s.Conn(1) != nil })
				return
			}
			evs := l.until("ADK's error", func(e adkEvent) bool { return e.err != nil })
			for range l.events { // the run ends after its error
			}
			if n := len(s.Conns()); n != 1 {
				t.Fatalf("%d connections after %v, want 1 (no resume)", n, evs[len(evs)-1].err)
			}
		})
	}
}

// Tools run inside the loop that passes the model's frames on
// (base_flow.go:498-536): a frame the model sent while a slow tool runs
// reaches the caller only after the tool has returned.
func TestADKRunsToolsInReceiveLoop(t *testing.T) {
	s := modeltest.NewLiveServer(&modeltest.LiveOptions{T: t, Script: []modeltest.Reply{
		modeltest.CallReply(modeltest.Call("", "slow", nil)), modeltest.TextReply("Done."),
	}})
	defer s.Close()
	started, release := make(chan struct{}), make(chan struct{})
	slow, err := functiontool.New(functiontool.Config{Name: "slow", Description: "takes its time"},
		func(agent.Context, struct{}) (map[string]any, error) {
			close(started)
			<-release
			return map[string]any{"ok": true}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	l := startADK(t, s, textConfig(false), []tool.Tool{slow}, genai.NewContentFromText("go", genai.RoleUser))
	wait(t, started, "the slow tool to start")
	s.Conn(0).Send(&genai.LiveServerMessage{GoAway: &genai.LiveServerGoAway{TimeLeft: time.Minute}})
	close(release)
	l.until("the call", hasCall) // after the empty event of setupComplete
	evs := l.until("the frame sent during the tool", empty)
	for _, e := range evs {
		if e.ev != nil && e.ev.Content != nil && e.ev.Content.Parts[0].FunctionResponse != nil {
			return // the tool's response came first
		}
	}
	t.Fatal("the frame sent while the tool ran came before the tool's response: tools run off the receive loop now")
}

// RunLive writes the handle it reconnects with into the caller's config:
// the connect config takes the caller's SessionResumption pointer
// (base_flow.go:316) and sets its Handle (:345). A LiveRunConfig shared by
// two chats makes the second resume the first one's model session, with
// what the first user said.
func TestADKWritesHandleIntoConfig(t *testing.T) {
	s := modeltest.NewLiveServer(&modeltest.LiveOptions{T: t, Repeat: modeltest.TextReply("Hello.")})
	defer s.Close()
	cfg := textConfig(true)
	l := startADK(t, s, cfg, nil, genai.NewContentFromText("my secret is 42", genai.RoleUser))
	handle := l.dropAfterFirstTurn(s)
	if cfg.SessionResumption.Handle != handle {
		t.Fatalf("caller's config holds handle %q, want %q (written by RunLive)", cfg.SessionResumption.Handle, handle)
	}
	other := startADK(t, s, cfg, nil, genai.NewContentFromText("hello, I am someone else", genai.RoleUser))
	other.until("the other chat's turn", turnComplete)
	if got := s.Conn(2).Resumed(); got != handle {
		t.Fatalf("another chat's connection resumed %q, want %q", got, handle)
	}
	if seen := modeltest.DumpContents(s.Conn(2).Seen()); !strings.Contains(seen, "my secret is 42") {
		t.Fatalf("the other chat's model did not see the first chat:\n%s", seen)
	}
	// Both runs would write the shared config again on the reconnect the
	// server's close brings: a data race, the finding itself.
	l.stop()
	other.stop()
}

// writeRaceEnv makes TestADKConcurrentWritePanics the process that panics.
const writeRaceEnv = "BATON_ADK_WRITE_RACE"

// ADK writes to the model's socket from two goroutines without a lock: the
// sending loop (audio at base_flow.go:453, content at :441) and the
// receive loop (tool responses at :532). Audio streamed while tool
// responses go out makes gorilla/websocket panic with "concurrent write to
// websocket connection" (conn.go:617), which ends the whole process, or,
// when that best-effort check misses, garbles the connection: two frames
// interleaved into one the model refuses (the stand-in closes with 1007
// "invalid frame"), or a writer left broken ("websocket: write closed"),
// and the live run ends. The race detector reports the race first when
// on. Run in a child process.
func TestADKConcurrentWritePanics(t *testing.T) {
	if os.Getenv(writeRaceEnv) == "1" {
		streamDuringTools(t)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestADKConcurrentWritePanics$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), writeRaceEnv+"=1", "GORACE=halt_on_error=1")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("the process survived 5 s of audio during tool responses: ADK serializes its writes now\n%s", out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, "concurrent write to websocket connection") || strings.Contains(line, "DATA RACE") ||
			strings.Contains(line, "live session ended") {
			t.Logf("child process: %s", strings.TrimSpace(line))
			return
		}
	}
	t.Fatalf("child failed otherwise: %v\n%s", err, out)
}

// streamDuringTools streams silence into ADK's live session while the
// model calls a quick tool again and again.
func streamDuringTools(t *testing.T) {
	s := modeltest.NewLiveServer(&modeltest.LiveOptions{T: t, Repeat: modeltest.CallReply(modeltest.Call("", "ping", nil))})
	defer s.Close()
	ping, err := functiontool.New(functiontool.Config{Name: "ping", Description: "answers at once"},
		func(agent.Context, struct{}) (map[string]any, error) { return map[string]any{"pong": true}, nil })
	if err != nil {
		t.Fatal(err)
	}
	l := startADK(t, s, textConfig(false), []tool.Tool{ping}, genai.NewContentFromText("go", genai.RoleUser))
	errs := make(chan error, 1)
	go func() {
		for e := range l.events {
			if e.err != nil {
				errs <- e.err
			}
		}
	}()
	audio := &genai.Blob{MIMEType: "audio/pcm;rate=16000", Data: modeltest.Silence(20*time.Millisecond, modeltest.InputRate)}
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); {
		if err := l.live.Send(agent.LiveRequest{RealtimeInput: audio}); err != nil {
			t.Fatalf("live session ended: %v; stand-in closed with %d; ADK: %v", err, s.Conn(0).CloseCode(), <-errs)
		}
	}
}
