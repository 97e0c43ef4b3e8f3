package modeltest

import (
	"slices"

	"google.golang.org/genai"
)

// The levers of LiveOptions that place a connection's end, or withhold a
// handle, where Gemini does: HoldHandles and AfterFrame. With them a test
// reproduces a goAway while a call is in flight, a 1011 close between a
// turn's end and the handle that would cover it, or a drop at any frame,
// and reads with Heard what the model session of each handle had heard.

// holdsHandle reports whether a handle is withheld now: HoldHandles, and a
// call waits for its response.
func (c *LiveConn) holdsHandle() bool {
	if !c.s.opts.HoldHandles {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.state.pending) > 0
}

// afterFrame runs AfterFrame for a frame written; false once the
// connection is closed.
func (c *LiveConn) afterFrame(sent *genai.LiveServerMessage) bool {
	f := c.s.opts.AfterFrame
	if f == nil {
		return true
	}
	f(c, sent)
	return c.CloseCode() == 0
}

// Heard is what the model session of handle had seen when the handle was
// issued (what a connection resuming from it starts with), nil for a
// handle never issued or forgotten.
func (s *LiveServer) Heard(handle string) []*genai.Content {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.handles[handle]
	if !ok {
		return nil
	}
	return slices.Clone(st.seen)
}
