package modeltest

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"
	"google.golang.org/adk/v2/model"
	"google.golang.org/genai"
)

// LiveConn is one connection to a LiveServer: the frames both sides sent,
// what the model has seen on its session, and the test's levers on it.
type LiveConn struct {
	s     *LiveServer
	ws    *websocket.Conn
	index int
	done  chan struct{}
	audio audioTurn // the reader goroutine's alone

	wmu sync.Mutex // one writer at a time, as gorilla/websocket requires

	mu        sync.Mutex
	frames    []LiveFrame
	setup     *genai.LiveClientSetup
	resumed   string
	state     *liveState
	orphans   []*genai.FunctionResponse
	closeCode int
}

// LiveFrame is one frame of a connection: Client for a frame the client
// sent, Server for one the stand-in sent (recorded as it is written: a
// frame written to a connection that just died is among them). At is
// when the stand-in read or wrote it, for measuring delays.
type LiveFrame struct {
	Client *LiveClientMessage
	Server *genai.LiveServerMessage
	At     time.Time
}

// LiveClientMessage is a client frame as the wire carries it for the
// Gemini API (genai's LiveClientMessage lacks realtimeInput's audio, text
// and audioStreamEnd).
type LiveClientMessage struct {
	Setup         *genai.LiveClientSetup        `json:"setup,omitempty"`
	ClientContent *genai.LiveClientContent      `json:"clientContent,omitempty"`
	RealtimeInput *LiveRealtimeInput            `json:"realtimeInput,omitempty"`
	ToolResponse  *genai.LiveClientToolResponse `json:"toolResponse,omitempty"`
}

// LiveRealtimeInput is a realtimeInput frame: media chunks (genai's Media),
// audio, video or text, or an activity signal.
type LiveRealtimeInput struct {
	MediaChunks    []*genai.Blob        `json:"mediaChunks,omitempty"`
	Audio          *genai.Blob          `json:"audio,omitempty"`
	Video          *genai.Blob          `json:"video,omitempty"`
	Text           string               `json:"text,omitempty"`
	ActivityStart  *genai.ActivityStart `json:"activityStart,omitempty"`
	ActivityEnd    *genai.ActivityEnd   `json:"activityEnd,omitempty"`
	AudioStreamEnd bool                 `json:"audioStreamEnd,omitempty"`
}

// liveState is what the model holds of a session: what it has seen and
// the calls it waits on. A handle keeps a copy.
type liveState struct {
	seen    []*genai.Content
	pending []pendingCall
}

type pendingCall struct {
	call     *genai.FunctionCall
	blocking bool
}

func (st *liveState) clone() *liveState {
	return &liveState{seen: slices.Clone(st.seen), pending: slices.Clone(st.pending)}
}

// Index is the connection's place among the server's connections.
func (c *LiveConn) Index() int { return c.index }

// Done is closed once the connection has ended.
func (c *LiveConn) Done() <-chan struct{} { return c.done }

// Frames are the frames of the connection so far, in the order read or
// written.
func (c *LiveConn) Frames() []LiveFrame {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.frames)
}

// Count is how many frames of the connection carry kind: a client field
// (setup, clientContent, realtimeInput, toolResponse) or a server one
// (setupComplete, serverContent, toolCall, toolCallCancellation, goAway,
// sessionResumptionUpdate, usageMetadata, turnComplete).
func (c *LiveConn) Count(kind string) int {
	n := 0
	for _, f := range c.Frames() {
		if slices.Contains(f.kinds(), kind) {
			n++
		}
	}
	return n
}

// Setup is the connection's setup frame (nil before it is read).
func (c *LiveConn) Setup() *genai.LiveClientSetup {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.setup
}

// Resumed is the handle the connection resumed from ("" for a new
// session).
func (c *LiveConn) Resumed() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.resumed
}

// Seen is what the model has seen on the connection's session, including
// what a resumed handle held: each client turn, tool response and heard
// audio (as its transcription), and each model turn.
func (c *LiveConn) Seen() []*genai.Content {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.state == nil {
		return nil
	}
	return slices.Clone(c.state.seen)
}

// Orphans are the function responses the client sent for calls the
// session was not waiting on (answered already, cancelled, or made on a
// session the handle did not hold): the model never sees them.
func (c *LiveConn) Orphans() []*genai.FunctionResponse {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.orphans)
}

// CloseCode is how the connection ended: the code of the first close frame
// either side sent (the server's, or the client's when it closed first),
// 1006 when it was lost without one; 0 while open.
func (c *LiveConn) CloseCode() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closeCode
}

// Send writes msg to the client as it is (a test scripting a frame the
// stand-in would not send by itself) and reports whether it went out.
func (c *LiveConn) Send(msg *genai.LiveServerMessage) bool { return c.send(msg) }

// GoAway sends goAway with timeLeft, then closes the connection with 1011
// once timeLeft has passed, as Gemini ends a connection at its time limit.
func (c *LiveConn) GoAway(timeLeft time.Duration) {
	c.send(&genai.LiveServerMessage{GoAway: &genai.LiveServerGoAway{TimeLeft: timeLeft}})
	time.AfterFunc(timeLeft, func() { c.CloseWith(CloseDeadline, "Deadline expired before operation could complete.") })
}

// CloseWith sends a close frame with code and reason and closes the
// connection.
func (c *LiveConn) CloseWith(code int, reason string) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.setCloseCode(code)
	_ = c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, reason), time.Now().Add(time.Second))
	_ = c.ws.Close()
}

// Drop cuts the connection without a close frame, as a lost network does.
func (c *LiveConn) Drop() {
	c.setCloseCode(websocket.CloseAbnormalClosure)
	_ = c.ws.UnderlyingConn().Close()
}

// CancelCalls sends toolCallCancellation for every call the session waits
// on and returns their ids; a later response to one is an orphan. The
// stand-in also does this itself when the user starts speaking while calls
// wait.
func (c *LiveConn) CancelCalls() []string {
	c.mu.Lock()
	var ids []string
	if c.state != nil {
		for _, p := range c.state.pending {
			ids = append(ids, p.call.ID)
		}
		c.state.pending = nil
	}
	c.mu.Unlock()
	if len(ids) > 0 {
		c.send(&genai.LiveServerMessage{ToolCallCancellation: &genai.LiveServerToolCallCancellation{IDs: ids}})
	}
	return ids
}

// Close codes the stand-in sends.
const (
	// CloseInvalidArgument refuses a frame the server cannot take, such as
	// a forgotten resumption handle (Gemini's INVALID_ARGUMENT).
	CloseInvalidArgument = 1007
	// CloseDeadline ends a connection at its time limit, after goAway,
	// and answers a scripted model failure (Gemini's 1011).
	CloseDeadline = websocket.CloseInternalServerErr
)

func (c *LiveConn) setCloseCode(code int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closeCode == 0 {
		c.closeCode = code
	}
}

// run reads the setup, then every frame, until the connection ends.
func (c *LiveConn) run() {
	defer c.finish()
	msg, err := c.read()
	if err != nil {
		return
	}
	if msg.Setup == nil {
		c.CloseWith(CloseInvalidArgument, "the first frame must be setup")
		return
	}
	if reason := refusedSetup(msg.Setup); reason != "" {
		c.CloseWith(CloseInvalidArgument, reason)
		return
	}
	if !c.begin(msg.Setup) {
		return
	}
	for {
		msg, err := c.read()
		if err != nil || !c.handle(msg) {
			return
		}
	}
}

// refusedSetup is why Gemini 3.8 Live refuses a setup ("" for none): it
// takes no thinking configuration, proactive audio is always on (false
// is an error) and affective dialog was removed from the API.
func refusedSetup(s *genai.LiveClientSetup) string {
	switch {
	case s.GenerationConfig != nil && s.GenerationConfig.ThinkingConfig != nil:
		return "thinking_config is not supported by this model"
	case s.Proactivity != nil && s.Proactivity.ProactiveAudio != nil && !*s.Proactivity.ProactiveAudio:
		return "proactive_audio cannot be disabled for this model"
	case s.GenerationConfig != nil && s.GenerationConfig.EnableAffectiveDialog != nil:
		return "enable_affective_dialog is not supported"
	}
	return ""
}

func (c *LiveConn) finish() {
	c.setCloseCode(websocket.CloseAbnormalClosure)
	_ = c.ws.Close()
	close(c.done)
}

// read reads one client frame and records it.
func (c *LiveConn) read() (*LiveClientMessage, error) {
	_, data, err := c.ws.ReadMessage()
	if err != nil {
		if ce := (*websocket.CloseError)(nil); errors.As(err, &ce) {
			c.setCloseCode(ce.Code)
		}
		return nil, err
	}
	msg := &LiveClientMessage{}
	if err := json.Unmarshal(data, msg); err != nil {
		c.CloseWith(CloseInvalidArgument, "invalid frame: "+err.Error())
		return nil, err
	}
	c.mu.Lock()
	c.frames = append(c.frames, LiveFrame{Client: msg, At: time.Now()})
	c.mu.Unlock()
	return msg, nil
}

// send records one server frame and writes it; false once the connection
// is gone.
func (c *LiveConn) send(msg *genai.LiveServerMessage) bool {
	data, err := encode(msg)
	if err != nil {
		panic(fmt.Sprintf("modeltest: encode server frame: %v", err)) // a bug in the stand-in
	}
	if d := c.s.opts.FrameDelay; d > 0 && msg.ServerContent != nil {
		time.Sleep(d)
	}
	c.wmu.Lock()
	// Recorded first, so that a test that saw the frame arrive finds it.
	c.mu.Lock()
	c.frames = append(c.frames, LiveFrame{Server: msg, At: time.Now()})
	c.mu.Unlock()
	err = c.ws.WriteMessage(websocket.TextMessage, data)
	c.wmu.Unlock()
	return err == nil && c.afterFrame(msg)
}

// encode writes a server frame as the Live API does. genai's own encoding
// rounds goAway's timeLeft to whole seconds; the API sends a protobuf
// duration ("0.5s"), which genai parses exactly.
func encode(msg *genai.LiveServerMessage) ([]byte, error) {
	if msg.GoAway == nil {
		return json.Marshal(msg)
	}
	rest := *msg
	rest.GoAway = nil
	data, err := json.Marshal(&rest)
	if err != nil {
		return nil, err
	}
	var frame map[string]any
	if err := json.Unmarshal(data, &frame); err != nil {
		return nil, err
	}
	frame["goAway"] = map[string]string{"timeLeft": strconv.FormatFloat(msg.GoAway.TimeLeft.Seconds(), 'f', -1, 64) + "s"}
	return json.Marshal(frame)
}

// begin takes the setup: a new session, or the one its handle kept.
func (c *LiveConn) begin(setup *genai.LiveClientSetup) bool {
	state := &liveState{}
	handle := ""
	if setup.SessionResumption != nil && setup.SessionResumption.Handle != "" {
		handle = setup.SessionResumption.Handle
		if state = c.s.resume(handle); state == nil {
			c.CloseWith(CloseInvalidArgument, "session resumption handle is invalid or expired")
			return false
		}
	}
	c.mu.Lock()
	c.setup, c.resumed, c.state = setup, handle, state
	c.mu.Unlock()
	return c.send(&genai.LiveServerMessage{SetupComplete: &genai.LiveServerSetupComplete{}})
}

// handle answers one client frame after the setup.
func (c *LiveConn) handle(msg *LiveClientMessage) bool {
	switch {
	case msg.Setup != nil:
		c.CloseWith(CloseInvalidArgument, "setup was already sent")
		return false
	case msg.ClientContent != nil:
		c.see(msg.ClientContent.Turns...)
		if msg.ClientContent.TurnComplete {
			c.interrupt()
			return c.modelTurn()
		}
		return true
	case msg.RealtimeInput != nil:
		return c.realtime(msg.RealtimeInput)
	case msg.ToolResponse != nil:
		return c.toolResponse(msg.ToolResponse.FunctionResponses)
	}
	return true
}

// see adds contents to what the model has seen.
func (c *LiveConn) see(contents ...*genai.Content) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.state.seen = append(c.state.seen, contents...)
}

// toolResponse takes the responses to calls the session waits on, and
// answers once no blocking call waits any more.
func (c *LiveConn) toolResponse(responses []*genai.FunctionResponse) bool {
	c.mu.Lock()
	var taken []*genai.Part
	silent := true
	for _, r := range responses {
		i := slices.IndexFunc(c.state.pending, func(p pendingCall) bool { return p.call.ID == r.ID })
		if i < 0 {
			c.orphans = append(c.orphans, r)
			continue
		}
		c.state.pending = slices.Delete(c.state.pending, i, i+1)
		taken = append(taken, &genai.Part{FunctionResponse: r})
		silent = silent && r.Scheduling == genai.FunctionResponseSchedulingSilent
	}
	waiting := slices.ContainsFunc(c.state.pending, func(p pendingCall) bool { return p.blocking })
	if len(taken) > 0 {
		c.state.seen = append(c.state.seen, &genai.Content{Role: genai.RoleUser, Parts: taken})
	}
	c.mu.Unlock()
	if len(taken) == 0 || waiting || silent {
		return true
	}
	return c.modelTurn()
}

// modelTurn answers with the script's next step.
func (c *LiveConn) modelTurn() bool {
	reply := c.s.next()
	if reply == nil {
		if t := c.s.opts.T; t != nil {
			t.Errorf("live stand-in: model turn beyond the script; the model had seen:\n%s", DumpContents(c.Seen()))
		}
		c.CloseWith(CloseDeadline, "stand-in: script exhausted")
		return false
	}
	if g := c.s.opts.Gate; g != nil {
		select {
		case <-g:
		case <-c.done:
			return false
		}
	}
	content := reply(c.request())
	if content == nil || content == failure {
		c.CloseWith(CloseDeadline, "stand-in: scripted model failure")
		return false
	}
	return c.speak(content)
}

// request is what a script step is given: what the model has seen, and
// the setup's instruction and tools.
func (c *LiveConn) request() *model.LLMRequest {
	c.mu.Lock()
	defer c.mu.Unlock()
	req := &model.LLMRequest{
		Model:    c.setup.Model,
		Contents: slices.Clone(c.state.seen),
		Config:   &genai.GenerateContentConfig{SystemInstruction: c.setup.SystemInstruction, Tools: c.setup.Tools},
		Tools:    map[string]any{},
	}
	for _, t := range c.setup.Tools {
		for _, d := range t.FunctionDeclarations {
			req.Tools[d.Name] = d
		}
	}
	return req
}

// speak sends a model turn: its words (text, or audio with its
// transcription), then its calls; the turn completes unless a blocking
// call waits.
func (c *LiveConn) speak(content *genai.Content) bool {
	var words []string
	var calls []*genai.FunctionCall
	for _, p := range content.Parts {
		if p.Text != "" {
			words = append(words, p.Text)
		}
		if p.FunctionCall != nil {
			fc := *p.FunctionCall
			if fc.ID == "" {
				fc.ID = c.s.newID("call")
			}
			calls = append(calls, &fc)
		}
	}
	said := strings.Join(words, " ")
	prompt := tokens(c.Seen()...)
	if said != "" && !c.say(said) {
		return false
	}
	stored := &genai.Content{Role: genai.RoleModel}
	if said != "" {
		stored.Parts = append(stored.Parts, genai.NewPartFromText(said))
	}
	for _, fc := range calls {
		stored.Parts = append(stored.Parts, &genai.Part{FunctionCall: fc})
	}
	c.see(stored)
	if len(calls) > 0 && !c.call(calls) {
		return false
	}
	if c.waiting() {
		return true
	}
	return c.completeTurn(prompt, tokens(stored))
}

// call sends a toolCall frame and records the calls as waiting; a session
// with a blocking call waiting is not resumable.
func (c *LiveConn) call(calls []*genai.FunctionCall) bool {
	blocking := map[string]bool{}
	for _, t := range c.Setup().Tools {
		for _, d := range t.FunctionDeclarations {
			blocking[d.Name] = d.Behavior != genai.BehaviorNonBlocking
		}
	}
	c.mu.Lock()
	for _, fc := range calls {
		c.state.pending = append(c.state.pending, pendingCall{call: fc, blocking: blocking[fc.Name] || !hasDeclaration(c.setup, fc.Name)})
	}
	c.mu.Unlock()
	if !c.send(&genai.LiveServerMessage{ToolCall: &genai.LiveServerToolCall{FunctionCalls: calls}}) {
		return false
	}
	if c.waiting() && c.Setup().SessionResumption != nil {
		return c.send(&genai.LiveServerMessage{SessionResumptionUpdate: &genai.LiveServerSessionResumptionUpdate{Resumable: false}})
	}
	return true
}

func hasDeclaration(setup *genai.LiveClientSetup, name string) bool {
	for _, t := range setup.Tools {
		for _, d := range t.FunctionDeclarations {
			if d.Name == name {
				return true
			}
		}
	}
	return false
}

// waiting reports whether a blocking call waits for its response.
func (c *LiveConn) waiting() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.ContainsFunc(c.state.pending, func(p pendingCall) bool { return p.blocking })
}

// completeTurn sends turnComplete with the turn's usage, then a new
// resumption handle.
func (c *LiveConn) completeTurn(prompt, response int32) bool {
	usage := &genai.UsageMetadata{PromptTokenCount: prompt, ResponseTokenCount: response, TotalTokenCount: prompt + response}
	if !c.send(&genai.LiveServerMessage{ServerContent: &genai.LiveServerContent{TurnComplete: true}, UsageMetadata: usage}) {
		return false
	}
	return c.offerHandle()
}

// offerHandle sends a sessionResumptionUpdate with a new handle, when the
// setup asked for resumption and no blocking call waits.
func (c *LiveConn) offerHandle() bool {
	if c.Setup().SessionResumption == nil || c.waiting() || c.holdsHandle() {
		return true
	}
	c.mu.Lock()
	snapshot := c.state.clone()
	c.mu.Unlock()
	h := c.s.keep(snapshot)
	return c.send(&genai.LiveServerMessage{SessionResumptionUpdate: &genai.LiveServerSessionResumptionUpdate{NewHandle: h, Resumable: true}})
}

// tokens counts tokens the stand-in's way: a token per 4 bytes of text,
// arguments and responses.
func tokens(contents ...*genai.Content) int32 {
	n := 0
	for _, c := range contents {
		for _, p := range c.Parts {
			n += len(p.Text)
			if p.FunctionCall != nil {
				b, _ := json.Marshal(p.FunctionCall.Args)
				n += len(p.FunctionCall.Name) + len(b)
			}
			if p.FunctionResponse != nil {
				b, _ := json.Marshal(p.FunctionResponse.Response)
				n += len(p.FunctionResponse.Name) + len(b)
			}
		}
	}
	return int32((n + 3) / 4)
}

// kinds names the fields a frame carries.
func (f LiveFrame) kinds() []string {
	var ks []string
	add := func(set bool, k string) {
		if set {
			ks = append(ks, k)
		}
	}
	if m := f.Client; m != nil {
		add(m.Setup != nil, "setup")
		add(m.ClientContent != nil, "clientContent")
		add(m.RealtimeInput != nil, "realtimeInput")
		add(m.ToolResponse != nil, "toolResponse")
	}
	if m := f.Server; m != nil {
		add(m.SetupComplete != nil, "setupComplete")
		add(m.ServerContent != nil, "serverContent")
		add(m.ServerContent != nil && m.ServerContent.TurnComplete, "turnComplete")
		add(m.ToolCall != nil, "toolCall")
		add(m.ToolCallCancellation != nil, "toolCallCancellation")
		add(m.GoAway != nil, "goAway")
		add(m.SessionResumptionUpdate != nil, "sessionResumptionUpdate")
		add(m.UsageMetadata != nil, "usageMetadata")
	}
	return ks
}

// next is the script's next step, nil beyond it.
func (s *LiveServer) next() Reply {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.script) > 0 {
		r := s.script[0]
		s.script = s.script[1:]
		s.turns++
		return r
	}
	if s.opts.Repeat != nil {
		s.turns++
	}
	return s.opts.Repeat
}

// newID is a new id with prefix, unique on the server.
func (s *LiveServer) newID(prefix string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.counter++
	return fmt.Sprintf("%s-%d", prefix, s.counter)
}

// keep issues a handle for a copy of a session's state.
func (s *LiveServer) keep(st *liveState) string {
	h := s.newID("handle")
	s.mu.Lock()
	defer s.mu.Unlock()
	s.handles[h] = st
	s.issued = append(s.issued, h)
	return h
}

// resume is a copy of the state a handle kept, nil if it is unknown.
func (s *LiveServer) resume(h string) *liveState {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.handles[h]
	if !ok {
		return nil
	}
	return st.clone()
}
