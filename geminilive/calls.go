package geminilive

import (
	"errors"
	"maps"
	"slices"

	"google.golang.org/genai"
)

// ErrNotPending: Deliver was given a response for a call the session does
// not wait on (unknown, answered already, or cancelled by the model).
var ErrNotPending = errors.New("no such pending call")

// calls is what the session knows of the model's function calls, to
// answer each once and to the model session that can take the answer.
//
// A resumption handle restores the model session as it was when the
// handle was issued. Gemini issues no resumable handle while a blocking
// call waits, so a model session resumed from the latest handle may not
// hold a call made since: its response then goes as a call-and-response
// pair of turns (clientContent), which any model session takes, instead of
// a toolResponse the model would drop. A response written after the
// latest handle is written again after a resume. The clock orders calls,
// writes and handles.
type calls struct {
	clock  int
	handle int // clock of the latest handle; -1 before one
	byID   map[string]*callState
}

type callState struct {
	call      *genai.FunctionCall
	at        int // clock when the model made it; -1: an earlier holder's
	unknown   bool
	response  *genai.FunctionResponse
	sent      int // clock when the response was written; -1: not yet
	cancelled bool
}

// newCalls is what a session knows of calls when it opens: earlier, an
// earlier holder's calls its handle (if any) does not hold, and known, those
// it holds (made at clock 0, when the handle was issued).
func newCalls(earlier, known []*genai.FunctionCall, handle bool) *calls {
	c := &calls{handle: -1, byID: map[string]*callState{}}
	if handle {
		c.handle = 0
	}
	for _, fc := range earlier {
		c.byID[fc.ID] = &callState{call: fc, at: -1, unknown: true, sent: -1}
	}
	for _, fc := range known {
		c.byID[fc.ID] = &callState{call: fc, unknown: !handle, sent: -1}
	}
	return c
}

func (c *calls) tick() int {
	c.clock++
	return c.clock
}

// made records calls the model made.
func (c *calls) made(fcs []*genai.FunctionCall) {
	for _, fc := range fcs {
		c.byID[fc.ID] = &callState{call: fc, at: c.tick(), sent: -1}
	}
}

// cancel records calls the model withdrew.
func (c *calls) cancel(ids []string) {
	for _, id := range ids {
		if st, ok := c.byID[id]; ok {
			st.cancelled = true
		}
	}
}

// answer takes responses, all or none: each must answer a call that waits.
func (c *calls) answer(responses []*genai.FunctionResponse) error {
	seen := map[string]bool{}
	for _, r := range responses {
		st, ok := c.byID[r.ID]
		if !ok || st.cancelled || st.response != nil || seen[r.ID] {
			return ErrNotPending
		}
		seen[r.ID] = true
	}
	for _, r := range responses {
		c.byID[r.ID].response = r
	}
	return nil
}

// issued records a new handle: answers written before it are settled.
func (c *calls) issued() {
	c.handle = c.tick()
	for id, st := range c.byID {
		if st.cancelled || (st.sent >= 0 && st.sent < c.handle) {
			delete(c.byID, id)
		}
	}
}

// resumed marks what a model session resumed from the latest handle lacks
// (calls made after it) and returns the answers to write again, but for
// those replayed (their call and response went in since's replay).
func (c *calls) resumed(replayed []string) []string {
	var again []string
	for id, st := range c.byID {
		if st.at < 0 || st.at > c.handle {
			st.unknown = true
		}
		if slices.Contains(replayed, id) {
			st.sent = c.tick()
			continue
		}
		if st.response != nil {
			st.sent = -1
			again = append(again, id)
		}
	}
	slices.Sort(again)
	return again
}

// seeded marks every waiting call unknown to a new model session, and
// forgets answered ones: the history it was seeded with holds them.
func (c *calls) seeded() {
	maps.DeleteFunc(c.byID, func(_ string, st *callState) bool { return st.response != nil || st.cancelled })
	for _, st := range c.byID {
		st.unknown = true
	}
	c.handle = -1
}

// split sorts the answers of ids into responses to calls the model session
// holds, and call-and-response pairs for those it does not; it marks them
// written.
func (c *calls) split(ids []string) (known []*genai.FunctionResponse, pair []*genai.Content) {
	var calls, responses []*genai.Part
	for _, id := range ids {
		st, ok := c.byID[id]
		if !ok || st.response == nil || st.sent >= 0 {
			continue // settled, not answered, or written to this model session already
		}
		st.sent = c.tick()
		if !st.unknown {
			known = append(known, st.response)
			continue
		}
		calls = append(calls, &genai.Part{FunctionCall: st.call})
		responses = append(responses, &genai.Part{FunctionResponse: st.response})
	}
	if len(calls) > 0 {
		pair = []*genai.Content{{Role: genai.RoleModel, Parts: calls}, {Role: genai.RoleUser, Parts: responses}}
	}
	return known, pair
}
