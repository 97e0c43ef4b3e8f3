package geminilive

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/gorilla/websocket"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
	"google.golang.org/genai"
)

// errGoAway ends a connection the model said it will close.
var errGoAway = errors.New("model sent goAway")

// errReadEnded: the reader stopped; its own error says why.
var errReadEnded = errors.New("reader ended")

// writeError is a write the connection did not take: the connection is
// gone, and the session reconnects.
type writeError struct{ err error }

func (e writeError) Error() string { return "write to model: " + e.err.Error() }
func (e writeError) Unwrap() error { return e.err }

// reconnectable reports whether a connection that ended with err is worth
// another: goAway, a close at the model's limits (1011 at its connection
// limit, 1000, 1001, 1012-1014), a lost connection or a failed write. A
// refused frame (1007) or policy (1008) is not.
func reconnectable(err error) bool {
	var ce *websocket.CloseError
	var ne net.Error
	var we writeError
	switch {
	case errors.Is(err, errGoAway), errors.As(err, &we), errors.As(err, &ne),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return true
	case errors.As(err, &ce):
		switch ce.Code {
		case websocket.CloseNormalClosure, websocket.CloseGoingAway, websocket.CloseAbnormalClosure,
			websocket.CloseInternalServerErr, websocket.CloseServiceRestart, websocket.CloseTryAgainLater, 1014:
			return true
		}
	}
	return false
}

// refused reports whether a connect failed because the model refused the
// handle (Gemini's INVALID_ARGUMENT, 1007: unknown or expired).
func refused(err error) bool {
	var ce *websocket.CloseError
	return errors.As(err, &ce) && ce.Code == websocket.CloseInvalidFramePayloadData
}

// run keeps the session connected until Close or a failure.
func (s *Session) run(ctx context.Context, conn *genai.Session) {
	defer s.finish()
	for {
		err := s.serve(ctx, conn)
		if ctx.Err() != nil {
			return
		}
		if !reconnectable(err) {
			s.fail(err)
			return
		}
		s.log.Info("live: reconnecting", "reason", err)
		reconnects().Add(ctx, 1)
		if conn, err = s.reconnect(ctx); err != nil {
			s.fail(err)
			return
		}
	}
}

// reconnects counts a conversation's reconnects to the model
// (baton.live.reconnects: a goAway, a dropped socket), on OpenTelemetry's
// global meter provider.
var reconnects = sync.OnceValue(func() metric.Int64Counter {
	c, _ := otel.Meter("github.com/baton-run/baton/geminilive").Int64Counter("baton.live.reconnects",
		metric.WithUnit("{reconnect}"), metric.WithDescription("Live conversations' reconnects to the model"))
	return c
})

// reconnect connects again, backing off, up to Reconnects failures.
func (s *Session) reconnect(ctx context.Context) (*genai.Session, error) {
	var err error
	for attempt := range s.cfg.Reconnects {
		if attempt > 0 {
			select {
			case <-time.After(min(50*time.Millisecond<<attempt, 2*time.Second)):
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		var conn *genai.Session
		if conn, err = s.connect(ctx); err == nil {
			return conn, nil
		}
		if !reconnectable(err) {
			return nil, err
		}
	}
	return nil, fmt.Errorf("%d connects failed: %w", s.cfg.Reconnects, err)
}

// connect opens a connection: resumed with the latest handle, or a new
// model session seeded with History when there is none or the model
// refuses it.
func (s *Session) connect(ctx context.Context) (*genai.Session, error) {
	handle := s.Handle()
	conn, err := s.dial(ctx, handle)
	if handle != "" && refused(err) {
		s.log.Info("live: handle refused, seeding a new model session", "err", err)
		s.mu.Lock()
		s.handle = ""
		s.mu.Unlock()
		handle = ""
		conn, err = s.dial(ctx, "")
	}
	if err != nil {
		return nil, err
	}
	if err := s.prime(ctx, conn, handle != ""); err != nil {
		_ = conn.Close()
		return nil, err
	}
	s.emit(ctx, Event{Kind: Connected, Resumed: handle != ""})
	return conn, nil
}

func (s *Session) dial(ctx context.Context, handle string) (*genai.Session, error) {
	var cfg genai.LiveConnectConfig
	if s.cfg.Setup != nil {
		cfg = *s.cfg.Setup
	}
	cfg.SessionResumption = &genai.SessionResumptionConfig{Handle: handle}
	return s.cfg.Client.Live.Connect(ctx, s.cfg.Model, &cfg)
}

// prime brings a new connection up to date: a resumed model session gets
// what it took after the handle (since.replay) and the answers it lacks; a
// new one, the history as context. A new one that replaces a seeded model
// session no handle came from is seeded with what that model had: its
// seed and what it took since (the stored history may not hold the last
// turn yet, and holds what the tab typed meanwhile, which goes out after).
func (s *Session) prime(ctx context.Context, conn *genai.Session, resumed bool) error {
	var replay []*genai.Content
	var ask bool
	again := outgoing{}
	s.mu.Lock()
	reseed := !resumed && s.seed != nil
	if resumed || reseed {
		var replayed []string
		replay, ask, replayed = s.since.replay()
		again.answers = s.calls.resumed(replayed)
	} else {
		s.calls.seeded()
		s.since.seeded()
	}
	if reseed {
		replay = append(slices.Clone(s.seed), replay...)
		s.seed = slices.Clone(replay)
		s.since.seeded()
	}
	if len(again.answers) > 0 {
		s.prepare(&again)
	}
	s.mu.Unlock()
	if len(replay) > 0 {
		if err := conn.SendClientContent(genai.LiveClientContentInput{Turns: replay, TurnComplete: &ask}); err != nil {
			return writeError{err}
		}
	}
	if !resumed && !reseed {
		if err := s.seedHistory(ctx, conn); err != nil {
			return err
		}
	}
	if len(again.answers) > 0 {
		return s.write(conn, again)
	}
	return nil
}

// seedHistory seeds a new model session with History, as context, and
// keeps it as the session's seed.
func (s *Session) seedHistory(ctx context.Context, conn *genai.Session) error {
	var history []*genai.Content
	if s.cfg.History != nil {
		var err error
		if history, err = s.cfg.History(ctx); err != nil {
			return fmt.Errorf("history: %w", err)
		}
	}
	s.mu.Lock()
	s.seed = append([]*genai.Content{}, history...)
	s.mu.Unlock()
	if len(history) == 0 {
		return nil
	}
	asContext := false
	if err := conn.SendClientContent(genai.LiveClientContentInput{Turns: history, TurnComplete: &asContext}); err != nil {
		return writeError{err}
	}
	return nil
}

// link is one connection's state shared by its reader and its writer.
type link struct {
	goAway bool          // s.mu: the model will close the connection; nothing more is written to it
	leave  chan struct{} // the reader's word to leave: after goAway, the model is idle
}

// serve runs one connection: its reader on a goroutine, the writer here.
func (s *Session) serve(ctx context.Context, conn *genai.Session) error {
	readDone, l := make(chan struct{}), &link{leave: make(chan struct{}, 1)}
	var readErr error
	go func() {
		defer close(readDone)
		readErr = s.read(ctx, conn, l)
	}()
	err := s.pump(ctx, conn, readDone, l)
	_ = conn.Close()
	<-readDone
	if errors.Is(err, errReadEnded) {
		err = readErr
	}
	return err
}

// pump is the connection's only writer: it writes the queue in order
// until the connection ends. After a goAway it writes nothing more and
// leaves once the model has answered what it was given (the reader says
// so), or the model closes the connection: leaving at once would drop an
// answer under way.
func (s *Session) pump(ctx context.Context, conn *genai.Session, readDone <-chan struct{}, l *link) error {
	for {
		for o, ok := s.pop(l); ok; o, ok = s.pop(l) {
			if err := s.write(conn, o); err != nil {
				s.unpop(o)
				return err
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-readDone:
			return errReadEnded
		case <-l.leave:
			return errGoAway
		case <-s.wake:
		}
	}
}

// write sends one queued write.
func (s *Session) write(conn *genai.Session, o outgoing) error {
	done := true
	var err error
	switch {
	case o.audio != nil:
		err = conn.SendRealtimeInput(genai.LiveRealtimeInput{Audio: o.audio})
	case o.realtime != nil:
		err = conn.SendRealtimeInput(*o.realtime)
	case o.text != nil:
		err = conn.SendClientContent(genai.LiveClientContentInput{Turns: []*genai.Content{o.text}, TurnComplete: &done})
	case o.answers != nil:
		if len(o.known) > 0 {
			err = conn.SendToolResponse(genai.LiveToolResponseInput{FunctionResponses: o.known})
		}
		if err == nil && o.pair != nil {
			err = conn.SendClientContent(genai.LiveClientContentInput{Turns: o.pair, TurnComplete: &done})
		}
	}
	if err != nil {
		return writeError{err}
	}
	return nil
}

func (s *Session) fail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.err = err
}

func (s *Session) finish() {
	s.mu.Lock()
	close(s.done)
	s.mu.Unlock()
	close(s.events)
}
