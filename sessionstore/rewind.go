package sessionstore

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"google.golang.org/adk/v2/platform"
	"google.golang.org/adk/v2/session"
)

// rewindMetadataKey marks a rewind mark, in its CustomMetadata.
const rewindMetadataKey = "baton_rewind"

// RewindMark is what a rewind mark stores: the invocation a session was
// taken back to before, and the request that asked for it.
type RewindMark struct {
	// Before names the invocation: its first event and every event after
	// it are rewound.
	Before string `json:"before"`
	// Request names what asked for the rewind (a client's request key),
	// stored with the mark so a retried request can recognise its own.
	Request string `json:"request,omitempty"`
}

// RewindMarkOf reports whether ev is a rewind mark, and what it rewound.
func RewindMarkOf(ev *session.Event) (RewindMark, bool) {
	var r RewindMark
	if ev == nil || !metadataAs(ev.CustomMetadata[rewindMetadataKey], &r) || r.Before == "" {
		return RewindMark{}, false
	}
	return r, true
}

// splitRewound splits stored events, oldest first, into those a read
// returns and those rewind marks among them took back. A mark whose
// invocation is not among events (a read of the latest events only)
// rewinds every event before it.
func splitRewound(events []*session.Event) (kept, rewound []*session.Event) {
	var hidden []bool
	for i := len(events) - 1; i >= 0; i-- {
		r, ok := RewindMarkOf(events[i])
		if !ok {
			continue
		}
		from := 0
		for j := i - 1; j >= 0; j-- {
			if events[j].InvocationID == r.Before {
				from = j
			}
		}
		if hidden == nil {
			hidden = make([]bool, len(events))
		}
		for j := from; j < i; j++ {
			hidden[j] = true
		}
		i = from
	}
	if hidden == nil {
		return events, nil
	}
	kept = make([]*session.Event, 0, len(events))
	for i, ev := range events {
		if hidden[i] {
			rewound = append(rewound, ev)
		} else {
			kept = append(kept, ev)
		}
	}
	return kept, rewound
}

// Rewound returns the events that rewind marks took back, oldest first, as
// read with the handle (one read with a window of recent events knows only
// those in the window).
func (ss *Session) Rewound() []*session.Event {
	ss.mu.RLock()
	defer ss.mu.RUnlock()
	return slices.Clone(ss.rewound)
}

// rewindPlan is what a rewind's append changes besides adding its mark.
type rewindPlan struct {
	at    int            // index, in the handle's events, of the first rewound event
	state map[string]any // the session-scoped state after the rewind
}

// RewindSession appends to sess (read with its whole history, under the
// session's lease) a mark rewinding r.Before and everything after it, in
// one commit with what opts asks (AppendOptions.Writes close the rewound
// part's ledger records). The mark's author is author (an agent of the
// session, so that ADK's runner knows it). On success the handle holds
// the kept events and the mark, and the state as restored. An invocation
// that is not among the session's events wraps ErrNotFound.
func (s *Service) RewindSession(ctx context.Context, ss *Session, author string, r RewindMark, opts AppendOptions) (*session.Event, error) {
	if !ss.complete {
		return nil, fmt.Errorf("rewind session %q: read it with Get, whole and not from List", ss.id)
	}
	ss.mu.RLock()
	at := slices.IndexFunc(ss.events, func(ev *session.Event) bool { return ev.InvocationID == r.Before })
	var delta, state map[string]any
	if at >= 0 {
		delta = restoreDelta(ss.events[:at], ss.events[at:])
		state = sessionScoped(ss.state)
	}
	ss.mu.RUnlock()
	if at < 0 {
		return nil, fmt.Errorf("%w: invocation %q in session %q", ErrNotFound, r.Before, ss.id)
	}
	for k, v := range delta {
		if v == nil {
			delete(state, k)
		} else {
			state[k] = v
		}
	}
	ev := session.NewEvent(ctx, "baton-rewind-"+platform.NewUUID(ctx))
	ev.Author = author
	ev.Actions.StateDelta = delta
	ev.CustomMetadata = map[string]any{rewindMetadataKey: r}
	opts.rewind = &rewindPlan{at: at, state: state}
	if err := s.AppendEventWith(ctx, ss, ev, opts); err != nil {
		return nil, err
	}
	return ev, nil
}

// restoreDelta is the state delta that puts the session-scoped keys the
// rewound events changed back to the value the latest kept event gave
// them; nil for a key no kept event set.
func restoreDelta(kept, rewound []*session.Event) map[string]any {
	delta := map[string]any{}
	for _, ev := range rewound {
		for k := range sessionScoped(ev.Actions.StateDelta) {
			delta[k] = nil
		}
	}
	for _, ev := range kept {
		for k, v := range ev.Actions.StateDelta {
			if _, ok := delta[k]; ok {
				delta[k] = v
			}
		}
	}
	return delta
}

// applyRewind makes the handle what a rewind's commit stored: the kept
// events and the mark (already appended), the restored state. Called with
// ss.mu held.
func (ss *Session) applyRewind(p *rewindPlan) {
	n := len(ss.events) - 1 // the mark
	ss.rewound = append(ss.rewound, ss.events[p.at:n]...)
	ss.events = append(slices.Clone(ss.events[:p.at]), ss.events[n])
	for k := range sessionScoped(ss.state) {
		delete(ss.state, k)
	}
	maps.Copy(ss.state, p.state)
}

// unchanged reports whether the session document is still as the append
// through ss was conditioned on: a failed precondition came from another
// document of the commit. Called with the lease's lock held, if any.
func (s *Service) unchanged(ctx context.Context, ss *Session) bool {
	snap, err := s.sessionRef(ss.app, ss.user, ss.id).Get(ctx)
	if err != nil {
		return false
	}
	ss.mu.RLock()
	version := ss.version
	ss.mu.RUnlock()
	if l := ss.lease; l != nil {
		version = l.version
	}
	return snap.UpdateTime.Equal(version)
}
