package modeltest

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"google.golang.org/genai"
)

// LiveServer is a stand-in for Gemini Live: a WebSocket server that speaks
// the BidiGenerateContent wire protocol well enough for genai's own client
// (client.Live.Connect, and so ADK's live flow), with no network and no
// randomness. It answers the setup frame with setupComplete; a text turn
// (clientContent) with text, or with 24 kHz PCM tone audio and its output
// transcription when the setup asks for audio; a user's 16 kHz PCM audio
// (realtimeInput), ended by activityEnd or by silence, with an input
// transcription and an answer; each model turn ends with turnComplete and
// usageMetadata. Function calls go out as toolCall frames and wait for the
// client's toolResponse (a NON_BLOCKING declaration does not make the
// model wait; unlike Gemini 3.8 Live, which makes an undeclared behavior
// NON_BLOCKING, the stand-in waits on it, as ADK's live flow and the tests
// pinning it expect; Baton declares every tool's behavior). A setup
// Gemini 3.8 Live refuses (a thinking configuration, proactive audio
// off, affective dialog) is closed with 1007. When the setup asks for session resumption, each finished
// turn (and nothing before the first) brings a sessionResumptionUpdate
// with a new handle, and a toolCall of a blocking function one with
// resumable false; a later connection presenting a handle resumes what the
// model had seen when it was issued. A test drives the rest:
// goAway, a 1011 close as at Gemini's connection limit, a dropped
// connection, toolCallCancellation, forgotten handles; and it reads every
// frame of every connection and what the model has seen.
//
// Model turns take the steps of Script, then Repeat, like Strict's; the
// request a step is given holds what the model has seen on this session
// (Contents), the setup's system instruction and tools (Config), and the
// declarations by name (Tools), so LLMReply(model) puts any model.LLM's
// rules behind the socket.
type LiveServer struct {
	opts LiveOptions
	http *httptest.Server

	mu      sync.Mutex
	script  []Reply
	conns   []*LiveConn
	handles map[string]*liveState
	issued  []string // handles in the order issued
	counter int      // handles and call ids
	turns   int      // script steps taken
}

// LiveOptions configure a LiveServer. The zero value answers nothing: give
// Script or Repeat.
type LiveOptions struct {
	// T, when set, is failed by a turn beyond the script.
	T testing.TB
	// Script answers the model turns in order; Repeat answers once it is
	// exhausted. A FailReply step closes the connection with 1011, as a
	// model error does.
	Script []Reply
	Repeat Reply
	// Transcribe, when set, is what the model hears in a user's audio turn
	// (16-bit mono PCM at the rate its blobs name): the input
	// transcription, and the user's words in what the model has seen,
	// answered by the script. Nil: the model hears only how long the audio
	// lasted and answers "I heard 2.4 seconds of audio." in a fixed reply
	// that takes no script step.
	Transcribe func(pcm []byte, rate int) string
	// FrameDelay paces the model's output frames (a demo hears the answer
	// arrive); zero sends them at once.
	FrameDelay time.Duration
	// Gate, when set, is received from before each model turn (to hold
	// the model mid-session).
	Gate chan struct{}

	// Levers for the points at which Gemini ends or withholds (see
	// livelevers.go).

	// HoldHandles: no handle is issued while any call waits for its
	// response, NON_BLOCKING ones included, as Gemini does while a call is
	// in flight.
	HoldHandles bool
	// AfterFrame, when set, is called with each server frame once it was
	// written, on the goroutine that wrote it, before the next: a test ends
	// the connection at a point of its choosing there (GoAway after a
	// toolCall, CloseWith 1011 after turnComplete and before the handle
	// that follows it, Drop).
	AfterFrame func(c *LiveConn, sent *genai.LiveServerMessage)
}

// NewLiveServer starts a stand-in on a loopback port. Close it when done.
func NewLiveServer(opts *LiveOptions) *LiveServer {
	s := &LiveServer{handles: map[string]*liveState{}}
	if opts != nil {
		s.opts = *opts
	}
	s.script = append([]Reply(nil), s.opts.Script...)
	s.http = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// Close stops the server: it takes no new connection, cuts the open ones
// and returns once they have ended.
func (s *LiveServer) Close() {
	s.http.Close()
	for _, c := range s.Conns() {
		c.Drop()
		<-c.done
	}
}

// URL is the server's ws:// base URL. genai dials wss for any base URL
// whose scheme is not ws or wss, so a client of the stand-in needs this
// one, apart from any HTTP model's.
func (s *LiveServer) URL() string {
	return "ws" + strings.TrimPrefix(s.http.URL, "http")
}

// ClientConfig is a genai client configuration that reaches the stand-in
// (give it to genai.NewClient or ADK's gemini.NewModel). The API key is a
// placeholder: genai's Gemini API backend dials nothing without one.
func (s *LiveServer) ClientConfig() *genai.ClientConfig {
	return &genai.ClientConfig{
		APIKey:      "stand-in",
		Backend:     genai.BackendGeminiAPI,
		HTTPOptions: genai.HTTPOptions{BaseURL: s.URL(), APIVersion: "v1beta"},
	}
}

// Conns are the connections accepted so far, oldest first.
func (s *LiveServer) Conns() []*LiveConn {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*LiveConn(nil), s.conns...)
}

// Conn is the i-th connection accepted (from 0), nil before it exists.
func (s *LiveServer) Conn(i int) *LiveConn {
	s.mu.Lock()
	defer s.mu.Unlock()
	if i < 0 || i >= len(s.conns) {
		return nil
	}
	return s.conns[i]
}

// Handles are the resumption handles issued and not forgotten, oldest
// first.
func (s *LiveServer) Handles() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var hs []string
	for _, h := range s.issued {
		if _, ok := s.handles[h]; ok {
			hs = append(hs, h)
		}
	}
	return hs
}

// Forget makes the server forget handles (all of them when none is
// given), as Gemini does two hours after a session ends: a connection
// presenting one is refused with a 1007 close.
func (s *LiveServer) Forget(handles ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(handles) == 0 {
		clear(s.handles)
	}
	for _, h := range handles {
		delete(s.handles, h)
	}
}

// Turns is how many model turns the server has answered from its script
// (fixed audio replies excluded).
func (s *LiveServer) Turns() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.turns
}

var upgrader = websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}

// serve accepts one connection and runs it until it ends.
func (s *LiveServer) serve(w http.ResponseWriter, r *http.Request) {
	if !strings.HasSuffix(r.URL.Path, "BidiGenerateContent") && !strings.HasSuffix(r.URL.Path, "BidiGenerateContentConstrained") {
		http.Error(w, "not a Live API path: "+r.URL.Path, http.StatusNotFound)
		return
	}
	ws, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	c := &LiveConn{s: s, ws: ws, done: make(chan struct{})}
	s.mu.Lock()
	c.index = len(s.conns)
	s.conns = append(s.conns, c)
	s.mu.Unlock()
	c.run()
}
