package geminilive

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"

	"google.golang.org/genai"
)

// Config is what a Session needs. Client and Model are required.
type Config struct {
	Client *genai.Client
	Model  string
	// Setup is the connection's configuration (modalities, voice,
	// transcriptions, instruction, tools): see ConnectConfig. The session
	// sets its SessionResumption on every connect.
	Setup *genai.LiveConnectConfig
	// Handle, when set, resumes an earlier holder's model session.
	Handle string
	// Pending are an earlier holder's calls still waiting for responses.
	// The model session of Handle does not hold them (Gemini issues no
	// handle while a blocking call waits): their responses go as
	// call-and-response pairs.
	Pending []*genai.FunctionCall
	// Known are an earlier holder's calls still waiting for responses
	// that the model session of Handle holds: NON_BLOCKING calls made
	// before the handle was issued. Their responses go as toolResponses,
	// unless the handle is refused (then they go as pairs, as Pending's).
	Known []*genai.FunctionCall
	// History seeds a new model session, when there is no handle or the
	// model refuses it (expired): the chat's stored conversation, without
	// the Pending calls. It is sent as context, with turnComplete false, so
	// the model waits for the user.
	History func(ctx context.Context) ([]*genai.Content, error)
	// AudioFrames bounds the audio waiting for the model's socket (during
	// a reconnect): beyond it the oldest frame is dropped. Zero: 50.
	AudioFrames int
	// Reconnects bounds consecutive failed connects. Zero: 5.
	Reconnects int
	Logger     *slog.Logger
}

// Session is one conversation with Gemini Live, across the connections it
// opens: on goAway, on a 1011 close (Gemini's connection limit), on a lost
// connection, it reconnects with the latest resumption handle, or seeds a
// new model session from History when the handle is refused. One goroutine
// writes to the model's socket (audio, text and tool responses in the
// order given), one reads it into Events; tools never run on either.
type Session struct {
	cfg    Config
	events chan Event
	wake   chan struct{}
	stop   context.CancelFunc
	done   chan struct{}
	log    *slog.Logger

	mu      sync.Mutex
	queue   []outgoing
	audio   int // audio frames in queue
	dropped int
	handle  string
	calls   *calls
	since   since // what the model session took after handle (or after seed)
	// seed is what the current model session was seeded with, while no
	// handle came since: a connection that ends then is replaced by a
	// session seeded with seed and since, what that model had. nil when
	// the session was resumed, or a handle came.
	seed []*genai.Content
	err  error

	heard, said strings.Builder // the turn's transcriptions so far: the reader's alone
}

// outgoing is one write waiting for the model's socket.
type outgoing struct {
	audio    *genai.Blob
	realtime *genai.LiveRealtimeInput
	text     *genai.Content
	answers  []string // call ids

	// The answers as they go out (prepare): responses to calls the model
	// session holds, and call-and-response pairs for the others.
	known []*genai.FunctionResponse
	pair  []*genai.Content
}

// ErrClosed: the session has ended (Close, or a failure Err reports).
var ErrClosed = errors.New("live session closed")

// Open connects to the model and returns the running session, or the
// error of the first connect. The session outlives ctx: Close ends it.
func Open(ctx context.Context, cfg Config) (*Session, error) {
	if cfg.Client == nil || cfg.Model == "" {
		return nil, errors.New("geminilive: Config needs a Client and a Model")
	}
	if cfg.AudioFrames == 0 {
		cfg.AudioFrames = 50
	}
	if cfg.Reconnects == 0 {
		cfg.Reconnects = 5
	}
	s := &Session{
		cfg: cfg, events: make(chan Event, 256), wake: make(chan struct{}, 1), done: make(chan struct{}),
		log: cfg.Logger, handle: cfg.Handle, calls: newCalls(cfg.Pending, cfg.Known, cfg.Handle != ""),
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	runCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	s.stop = stop
	conn, err := s.connect(ctx)
	if err != nil {
		stop()
		return nil, err
	}
	go s.run(runCtx, conn)
	return s, nil
}

// Events are the model session's events, in order; the channel closes when
// the session ends (then Err says why). Read them promptly: the reader
// waits for room.
func (s *Session) Events() <-chan Event { return s.events }

// Err is why the session ended: nil after Close, else the failure.
func (s *Session) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Handle is the latest resumption handle ("" before the first).
func (s *Session) Handle() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.handle
}

// Dropped is how many audio frames were dropped because the socket was
// away longer than AudioFrames.
func (s *Session) Dropped() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dropped
}

// Close ends the session and waits for its goroutines.
func (s *Session) Close() error {
	s.stop()
	<-s.done
	return nil
}

// SendAudio queues a frame of the user's audio (16-bit PCM at 16 kHz). It
// never waits: when AudioFrames are queued already, the oldest is dropped.
func (s *Session) SendAudio(pcm []byte) error {
	return s.push(outgoing{audio: &genai.Blob{MIMEType: "audio/pcm;rate=16000", Data: pcm}})
}

// SendActivity queues an activity signal (ActivityStart, ActivityEnd or
// AudioStreamEnd), in order with the audio.
func (s *Session) SendActivity(in genai.LiveRealtimeInput) error {
	return s.push(outgoing{realtime: &in})
}

// SendText queues a user's text turn; the model answers it.
func (s *Session) SendText(text string) error {
	return s.push(outgoing{text: genai.NewContentFromText(text, genai.RoleUser)})
}

// Deliver queues responses to calls the session waits on, each at most
// once: a call answered already, cancelled, or unknown gets ErrNotPending
// and nothing is sent. A call the current model session does not hold
// (made before a resume) is answered with a call-and-response pair.
func (s *Session) Deliver(responses ...*genai.FunctionResponse) error {
	s.mu.Lock()
	err := s.calls.answer(responses)
	s.mu.Unlock()
	if err != nil {
		return fmt.Errorf("deliver %s: %w", responses[0].ID, err)
	}
	var ids []string
	for _, r := range responses {
		ids = append(ids, r.ID)
	}
	return s.push(outgoing{answers: ids})
}

// push adds a write to the queue and wakes the writer.
func (s *Session) push(o outgoing) error {
	s.mu.Lock()
	if s.err != nil || s.isDone() {
		s.mu.Unlock()
		return ErrClosed
	}
	s.queue = append(s.queue, o)
	if o.audio != nil {
		s.audio++
		if s.audio > s.cfg.AudioFrames {
			i := 0
			for s.queue[i].audio == nil {
				i++
			}
			s.queue = append(s.queue[:i], s.queue[i+1:]...)
			s.audio--
			s.dropped++
		}
	}
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
	return nil
}

// blocks reports whether the model waits for the response to one of
// calls: a function the setup does not declare NON_BLOCKING.
func (s *Session) blocks(calls []*genai.FunctionCall) bool {
	nonBlocking := map[string]bool{}
	if s.cfg.Setup != nil {
		for _, t := range s.cfg.Setup.Tools {
			for _, d := range t.FunctionDeclarations {
				nonBlocking[d.Name] = d.Behavior == genai.BehaviorNonBlocking
			}
		}
	}
	return slices.ContainsFunc(calls, func(fc *genai.FunctionCall) bool { return !nonBlocking[fc.Name] })
}

// pop takes the next write, if any, prepared for l's connection; none
// once the model said it will close it (goAway): the next connection
// takes them.
func (s *Session) pop(l *link) (outgoing, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.queue) == 0 || l.goAway {
		return outgoing{}, false
	}
	o := s.queue[0]
	s.queue = s.queue[1:]
	if o.audio != nil {
		s.audio--
	}
	s.prepare(&o)
	return o, true
}

// prepare sorts o's answers for the current model session and records
// what o gives the model (since), as it goes out: under the same lock as
// the reader's goAway, so a write either precedes the goAway, and the
// connection is kept for its answer, or waits for the next connection.
// s.mu is held.
func (s *Session) prepare(o *outgoing) {
	switch {
	case o.text != nil:
		s.since.wrote(true, o.text)
	case o.answers != nil:
		o.known, o.pair = s.calls.split(o.answers)
		if len(o.known) > 0 {
			c := &genai.Content{Role: genai.RoleUser}
			asks := false
			for _, r := range o.known {
				c.Parts = append(c.Parts, &genai.Part{FunctionResponse: r})
				asks = asks || r.Scheduling != genai.FunctionResponseSchedulingSilent
			}
			s.since.wrote(asks, c)
		}
		if o.pair != nil {
			s.since.wrote(true, o.pair...)
		}
	}
}

// unpop puts back a write that a dead connection did not take (audio is
// not worth resending). A text leaves since, where it goes again; answers
// stay there: the next model session gets them again either way (replay,
// or calls.resumed).
func (s *Session) unpop(o outgoing) {
	if o.audio != nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if i := slices.Index(s.since.turns, o.text); o.text != nil && i >= 0 {
		s.since.turns = slices.Delete(s.since.turns, i, i+1)
		if i < s.since.covered {
			s.since.covered--
		}
	}
	s.queue = append([]outgoing{o}, s.queue...)
}

func (s *Session) isDone() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}
