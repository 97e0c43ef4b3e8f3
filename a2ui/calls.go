package a2ui

import (
	"sync"

	"google.golang.org/adk/v2/session"
)

// Calls is what one invocation's calls show, from the moment each is
// decided or shown until the event that ends it is stored: the surface
// tool's calls as decided when the event holding them was stored (for the
// tool's run to return, since ADK's tool context has no session), the
// surfaces Go tools showed (noted in the event that ends their call), and
// the session the invocation appends to, which Go tools' surfaces are
// checked against. The zero value is ready; it is safe for concurrent use.
type Calls struct {
	mu      sync.Mutex
	decided map[string]Shown // by call id
	shows   map[string]Shown // by call id, until noted
	sess    session.Session
}

// Decide keeps what a surface call shows, decided as its event is stored.
func (c *Calls) Decide(s Shown) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.decided == nil {
		c.decided = map[string]Shown{}
	}
	c.decided[s.CallID] = s
}

// Decision returns what the surface call id shows, as decided.
func (c *Calls) Decision(id string) (Shown, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, ok := c.decided[id]
	return s, ok
}

// Follow notes the session the invocation appends to.
func (c *Calls) Follow(sess session.Session) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sess = sess
}

// Events returns the events of the session the invocation appends to;
// false before its first append.
func (c *Calls) Events() (session.Events, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sess == nil {
		return nil, false
	}
	return c.sess.Events(), true
}

// Show keeps what a Go tool's call showed, for the event ending the call.
func (c *Calls) Show(s Shown) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.shows == nil {
		c.shows = map[string]Shown{}
	}
	c.shows[s.CallID] = s
}

// NoteShows notes in ev what the calls whose responses it holds showed.
func (c *Calls) NoteShows(ev *session.Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ev.Content == nil {
		return
	}
	for _, p := range ev.Content.Parts {
		if fr := p.FunctionResponse; fr != nil {
			if s, ok := c.shows[fr.ID]; ok {
				Note(ev, s)
				delete(c.shows, fr.ID)
			}
		}
	}
}
