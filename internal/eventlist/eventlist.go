// Package eventlist holds List, a slice of ADK session events seen as the
// session.Events a session returns, so that the adapter is written once:
// tests build histories with it, and code that holds events in a slice can
// hand them to ADK through it. It is not a test package: it has no test
// dependencies, and its At returns nil out of range, as ADK's in-memory
// sessions do.
package eventlist

import (
	"iter"
	"slices"

	"google.golang.org/adk/v2/session"
)

// List is a slice of events as session.Events.
type List []*session.Event

var _ session.Events = List(nil)

// All yields the events in order.
func (l List) All() iter.Seq[*session.Event] { return slices.Values(l) }

// Len returns the number of events.
func (l List) Len() int { return len(l) }

// At returns the i-th event, or nil when i is out of range.
func (l List) At(i int) *session.Event {
	if i < 0 || i >= len(l) {
		return nil
	}
	return l[i]
}
