package live

import (
	"context"
	"encoding/json"
	"slices"
	"time"

	"google.golang.org/adk/v2/platform"
	"google.golang.org/genai"

	"github.com/baton-run/baton/sessionstore"
)

// handleKey is the session state key of the model's resumption handle,
// written in the state delta of an event the conversation stores anyway
// (a turn's last), or of an event of its own at most every
// Options.HandleEvery.
const handleKey = "baton_live_handle"

// handleLife is how long Gemini keeps a model session a handle resumes.
const handleLife = 2 * time.Hour

// handleState is what the next holder needs to resume the model session:
// the handle, when it was issued, and which of the calls still waiting the
// model session held then (NON_BLOCKING calls made before it), whose
// answers it takes as tool responses; the others' go as
// call-and-response pairs.
type handleState struct {
	Handle string    `json:"handle"`
	Issued time.Time `json:"issued"`
	Calls  []string  `json:"calls,omitempty"`
}

// storedHandle reads the handle the chat's last segment stored; zero when
// there is none, or when it is too old to resume.
func storedHandle(ctx context.Context, sess *sessionstore.Session) handleState {
	v, err := sess.State().Get(handleKey)
	if err != nil || v == nil {
		return handleState{}
	}
	var h handleState
	b, err := json.Marshal(v)
	if err != nil || json.Unmarshal(b, &h) != nil {
		return handleState{}
	}
	if !platform.Now(ctx).Before(h.Issued.Add(handleLife)) {
		return handleState{}
	}
	return h
}

// splitOpen sorts the calls the segment adopted that still wait for the
// model's answer into those the stored handle's model session holds and
// those it does not; it records them as waiting.
func (c *Conversation) splitOpen(stored handleState) (known, pending []*genai.FunctionCall) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, call := range c.seg.Open {
		fc := &genai.FunctionCall{ID: call.OriginalID, Name: call.Tool, Args: call.Args}
		c.waiting[call.OriginalID] = true
		if stored.Handle != "" && slices.Contains(stored.Calls, call.OriginalID) {
			known = append(known, fc)
			c.held[call.OriginalID] = true
			c.atHandle = append(c.atHandle, call.OriginalID)
			continue
		}
		pending = append(pending, fc)
	}
	return known, pending
}

// issued is the handle state of a handle the model just issued.
func (c *Conversation) issued(ctx context.Context, handle string) handleState {
	c.mu.Lock()
	defer c.mu.Unlock()
	h := handleState{Handle: handle, Issued: platform.Now(ctx)}
	for id := range c.held {
		h.Calls = append(h.Calls, id)
	}
	slices.Sort(h.Calls)
	c.atHandle = slices.Clone(h.Calls)
	return h
}

// reconnected notes what a new connection's model session holds: after a
// resume, the calls its handle held; a new session (seeded), none.
func (c *Conversation) reconnected(resumed bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.held)
	if resumed {
		for _, id := range c.atHandle {
			c.held[id] = true
		}
	}
}

// waitingCalls are the calls still waiting for an answer, by the model's
// ids.
func (c *Conversation) waitingCalls() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var ids []string
	for id := range c.waiting {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// handleDelta is the state delta that stores h.
func handleDelta(h handleState) map[string]any {
	return map[string]any{handleKey: asMap(h)}
}
