package uistream

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
)

// Sink receives an Encoder's chunks, in order.
type Sink interface {
	// Send delivers chunks; an error ends the stream (the client left).
	Send(chunks ...Chunk) error
	// End follows the finish chunk: nothing is sent after it.
	End() error
}

// headers are the response headers of a UI message stream.
var headers = [...][2]string{
	{"Content-Type", "text/event-stream"},
	{"Cache-Control", "no-cache"},
	{"Connection", "keep-alive"},
	{"x-vercel-ai-ui-message-stream", "v1"},
	{"X-Accel-Buffering", "no"}, // no proxy buffering (nginx, Cloud Run's front end)
}

// SSE is the Sink that writes a UI message stream as Server-Sent Events:
// each chunk is "data: <json>\n\n", End writes "data: [DONE]\n\n". The
// headers (status 200) go out with the first write, so the caller may still
// answer with another status until then. Every write is flushed. Methods
// may be called from several goroutines (KeepAlive from a ticker); once a
// write fails, every later call returns that error without writing.
type SSE struct {
	mu          sync.Mutex
	w           http.ResponseWriter
	rc          *http.ResponseController
	wroteHeader bool
	ended       bool
	err         error
}

var _ Sink = (*SSE)(nil)

// NewSSE returns an SSE sink writing to w.
func NewSSE(w http.ResponseWriter) *SSE {
	return &SSE{w: w, rc: http.NewResponseController(w)}
}

// Send writes chunks as data lines.
func (s *SSE) Send(chunks ...Chunk) error {
	var buf []byte
	for _, c := range chunks {
		b, err := json.Marshal(c)
		if err != nil {
			// Chunks hold strings and encoded JSON: only a foreign Chunk
			// can fail here.
			b, _ = json.Marshal(Error{ErrorText: "unencodable chunk"})
		}
		buf = append(buf, "data: "...)
		buf = append(append(buf, b...), "\n\n"...)
	}
	return s.write(buf, false)
}

// Err returns the first write error: the client left.
func (s *SSE) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// End writes the [DONE] marker.
func (s *SSE) End() error { return s.write([]byte("data: [DONE]\n\n"), true) }

// KeepAlive writes an SSE comment, which the client ignores, so that idle
// connections are not closed by proxies.
func (s *SSE) KeepAlive() error { return s.write([]byte(": keep-alive\n\n"), false) }

func (s *SSE) write(b []byte, end bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return s.err
	}
	if s.ended {
		return ErrFinished
	}
	s.ended = end
	if len(b) == 0 {
		return nil
	}
	if !s.wroteHeader {
		s.wroteHeader = true
		h := s.w.Header()
		for _, kv := range headers {
			h.Set(kv[0], kv[1])
		}
		s.w.WriteHeader(http.StatusOK)
	}
	if _, err := s.w.Write(b); err != nil {
		s.err = fmt.Errorf("write ui message stream: %w", err)
		return s.err
	}
	if err := s.rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
		s.err = fmt.Errorf("flush ui message stream: %w", err)
		return s.err
	}
	return nil
}

// Collector is the Sink that keeps the chunks, for a client that wants the
// whole turn as one JSON document. It is used by one Encoder at a time.
type Collector struct {
	Chunks []Chunk
}

var _ Sink = (*Collector)(nil)

// Send keeps chunks.
func (c *Collector) Send(chunks ...Chunk) error {
	c.Chunks = append(c.Chunks, chunks...)
	return nil
}

// End does nothing: a collected stream has no end marker.
func (c *Collector) End() error { return nil }
