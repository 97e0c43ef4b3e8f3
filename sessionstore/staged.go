package sessionstore

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/adk/v2/session"
)

// StagedEvent is an event staged on a handle (StageEvent).
type StagedEvent struct {
	s     *Service
	ss    *Session
	event *session.Event
	opts  AppendOptions
}

// StageEvent makes event part of sess's history as its readers in this
// process see it (Events, State), without storing it yet: it is stored,
// with what opts asks, by its Commit, by the next append through sess, or
// by ReleaseSession. Partial events are refused.
func (s *Service) StageEvent(sess *Session, event *session.Event, opts AppendOptions) (*StagedEvent, error) {
	ss, err := appendable(sess, event)
	if err != nil {
		return nil, err
	}
	if ss == nil {
		return nil, fmt.Errorf("stage event: event %q is partial", event.ID)
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.broken != nil {
		return nil, ss.broken
	}
	st := &StagedEvent{s: s, ss: ss, event: event, opts: opts}
	ss.staged = append(ss.staged, st)
	return st, nil
}

// Commit stores the staged event, and before it the events staged before
// it, unless an append already did. It fails as AppendEventWith does (a
// claim that lost its race as busy), and so does every later append
// through the handle.
func (st *StagedEvent) Commit(ctx context.Context) error {
	st.ss.appendMu.Lock()
	defer st.ss.appendMu.Unlock()
	return st.s.flushLocked(ctx, st.ss, st, nil)
}

// flushLocked stores the staged events of ss in order, up to upTo (nil:
// all of them), releasing the handle's lease in the last commit as release
// says, when it is set. The caller holds ss.appendMu.
func (s *Service) flushLocked(ctx context.Context, ss *Session, upTo *StagedEvent, release *ReleaseOptions) error {
	for {
		ss.mu.RLock()
		broken, n := ss.broken, len(ss.staged)
		var next *StagedEvent
		if n > 0 {
			next = ss.staged[0]
		}
		ss.mu.RUnlock()
		if broken != nil {
			return broken
		}
		if next == nil {
			return nil // upTo, if any, was stored by an earlier flush
		}
		opts := next.opts
		opts.staged = true
		if release != nil && n == 1 {
			opts.release, opts.DocsClosed = true, opts.DocsClosed || release.DocsClosed
			opts.Writes = slices.Concat(opts.Writes, release.Writes)
		}
		if err := s.appendLocked(ctx, ss, next.event, opts); err != nil {
			ss.mu.Lock()
			ss.broken = fmt.Errorf("session %q: a staged event was not stored: %w", ss.id, err)
			ss.mu.Unlock()
			return err
		}
		if next == upTo {
			return nil
		}
	}
}

// ReleaseOptions is what the commit that releases a session's lease does
// besides.
type ReleaseOptions struct {
	// DocsClosed records that none of the documents appends created beside
	// the session is open any more (see AppendOptions.DocsClosed), when the
	// releasing commit creates none.
	DocsClosed bool
	// Writes are writes of documents beside the session made in the same
	// commit, unconditional ones (the chat's listing: ChatIdle).
	Writes []Write
}

// ReleaseSession stores the events staged on sess, releasing its lease in
// the last commit, or alone when none is staged, and leaves sess as the
// store holds it, ready for ClaimLease (see AsStored), unless another
// writer changed the session since. sess must hold the lease (read under
// it, or its claim stored); stop renewing the lease first.
func (s *Service) ReleaseSession(ctx context.Context, ss *Session, opts ReleaseOptions) (err error) {
	ctx, span := startSpan(ctx, "baton.lease.release", ss.id)
	defer func() { endSpan(span, err) }()
	ss.appendMu.Lock()
	defer ss.appendMu.Unlock()
	ss.mu.RLock()
	l, staged := ss.lease, len(ss.staged)
	ss.mu.RUnlock()
	if l == nil {
		return fmt.Errorf("release session %q: the handle holds no lease", ss.id)
	}
	if staged > 0 {
		return s.flushLocked(ctx, ss, nil, &opts)
	}
	ref := s.sessionRef(ss.app, ss.user, ss.id)
	updates := releaseUpdates()
	if opts.DocsClosed {
		updates = append(updates, firestore.Update{Path: "sideDocsClosed", Value: true})
	}
	l.mu.Lock()
	current := l.revision == ss.revision // no other handle appended under the lease
	batch := s.client.Batch()
	batch.Update(ref, updates, firestore.LastUpdateTime(l.version))
	s.addAll(batch, opts.Writes)
	var res *firestore.WriteResult
	results, err := batch.Commit(ctx)
	if err = FirestoreError(err); err == nil {
		res = results[0]
	}
	l.mu.Unlock()
	if err == nil && current {
		ss.mu.Lock()
		ss.version = res.UpdateTime
		ss.docsOpen = ss.docsOpen && !opts.DocsClosed
		ss.released()
		ss.mu.Unlock()
		return nil
	}
	// Another handle appended under the lease, or someone else wrote the
	// session: this handle is stale, and the lease is released (if not yet)
	// only if it is still this one.
	ss.mu.Lock()
	ss.broken = fmt.Errorf("%w: session %q changed while its lease was held", ErrConflict, ss.id)
	ss.mu.Unlock()
	if err == nil {
		return nil
	}
	return s.ReleaseLease(ctx, l)
}

// HeldLease returns the lease the handle holds (read under it, or claimed
// through it), or nil.
func (ss *Session) HeldLease() *Lease {
	ss.mu.RLock()
	defer ss.mu.RUnlock()
	return ss.lease
}

// releaseUpdates free a session's lease, keeping its fence, and end a
// live segment's mark (liveUntil).
func releaseUpdates() []firestore.Update {
	return []firestore.Update{
		{Path: "lease.holder", Value: ""},
		{Path: "lease.expires", Value: time.Time{}},
		{Path: liveUntilField, Value: firestore.Delete},
	}
}

// released makes the handle what the store holds once its lease was
// released: claimable, without the invocation's temp: state. ss.mu is held.
func (ss *Session) released() {
	ss.stored = leaseDoc{Fence: ss.lease.Fence}
	ss.lease = nil
	maps.DeleteFunc(ss.state, func(k string, _ any) bool { return strings.HasPrefix(k, session.KeyPrefixTemp) })
}

// AsStored reports whether the handle is, as far as this process knows,
// the session as stored and free to claim: read whole, its lease released
// through it (ReleaseSession) or never held, nothing staged, no failed
// append. A claim on it is still conditional on the store (ClaimLease).
func (ss *Session) AsStored() bool {
	ss.mu.RLock()
	defer ss.mu.RUnlock()
	return ss.tailKnown && ss.complete && ss.lease == nil && ss.broken == nil && len(ss.staged) == 0
}

// StoredSize is the size the session takes in the store: its state, its
// sealed chunks (each counted as full) and its tail. A handle's memory
// grows with it.
func (ss *Session) StoredSize() int {
	ss.mu.RLock()
	defer ss.mu.RUnlock()
	return ss.stateSize + len(ss.chunks)*docBudget + elementsSize(ss.tail)
}

// visibleEvents are the stored events and the staged ones. ss.mu is held.
func (ss *Session) visibleEvents() []*session.Event {
	out := make([]*session.Event, 0, len(ss.events)+len(ss.staged))
	out = append(out, ss.events...)
	for _, st := range ss.staged {
		out = append(out, st.event)
	}
	return out
}

// stagedState is the value of key as the staged events' deltas set it, the
// latest first. ss.mu is held.
func (ss *Session) stagedState(key string) (any, bool) {
	for i := len(ss.staged) - 1; i >= 0; i-- {
		if v, ok := ss.staged[i].event.Actions.StateDelta[key]; ok {
			return v, true
		}
	}
	return nil, false
}
