package live

import (
	"context"
	"maps"
	"sync"
	"time"

	"google.golang.org/adk/v2/session"

	"github.com/baton-run/baton/sessionstore"
	"github.com/baton-run/baton/toolcallback"
)

// handleWait is how long a turn's last event waits for the handle the
// model issues right after the turn, so that one commit stores both.
const handleWait = time.Second

// store writes a conversation's events in the order they were added, one
// commit at a time, on a goroutine of its own: nothing that relays audio
// or text waits for Firestore.
//
// The model's resumption handle describes the model session as it was
// when issued: it goes with the last event added before it came, or a
// later one (everything added before is stored by then): the event that
// ends a model turn waits for it (awaitHandle); a handle no event carries
// goes in an event of its own, at most every Options.HandleEvery.
type store struct {
	seg   *toolcallback.LiveSegment
	every time.Duration

	mu      sync.Mutex
	jobs    []job
	added   int // jobs added so far: the next one's number
	closed  bool
	handle  *handleState // the latest issued
	after   int          // the number of the last job added before it came
	issued  int          // handles issued so far
	written int          // the issue number of the handle last written
	wake    chan struct{}
	changed chan struct{} // closed, and replaced, when a handle comes or the store closes
}

// job is one event to store: opts say what else its commit does; after,
// when set, runs once it is stored, with the calls it paused (their
// ledger records are in the same commit).
type job struct {
	ev   *session.Event
	opts sessionstore.AppendOptions
	// awaitHandle: the event ends a model turn; it waits up to handleWait
	// for a handle issued after it was added.
	awaitHandle bool
	// delivered, when set, says whether the response the event holds
	// reached the model: the event is stored after that, or not at all
	// (the next holder delivers it).
	delivered chan bool
	after     func([]*toolcallback.Call)
	n         int // its number
	issued    int // handles issued when it was added
}

func newStore(seg *toolcallback.LiveSegment, every time.Duration) *store {
	return &store{seg: seg, every: every, wake: make(chan struct{}, 1), changed: make(chan struct{})}
}

// add queues j; false once the store is closed.
func (s *store) add(j job) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	j.n, j.issued = s.added, s.issued
	s.added++
	s.jobs = append(s.jobs, j)
	s.signal()
	return true
}

// setHandle keeps h, issued by the model, for an event added from now on.
func (s *store) setHandle(h handleState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.handle, s.after = &h, s.added-1
	s.issued++
	s.broadcast()
}

// close takes no more jobs; run stores those queued and returns.
func (s *store) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	s.broadcast()
}

// broadcast wakes the loop and whoever awaits a handle; s.mu is held.
func (s *store) broadcast() {
	s.signal()
	close(s.changed)
	s.changed = make(chan struct{})
}

func (s *store) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// run stores the queued events until close, or the first failure, which
// it returns (the conversation ends on it).
func (s *store) run(ctx context.Context) error {
	tick := time.NewTicker(s.every)
	defer tick.Stop()
	for {
		j, ok, done := s.next()
		switch {
		case ok:
			if err := s.write(ctx, j); err != nil {
				return err
			}
			continue
		case done:
			return nil
		}
		select {
		case <-s.wake:
		case <-tick.C:
			if err := s.writeHandle(ctx); err != nil {
				return err
			}
		}
	}
}

// next takes the next job; done once closed and drained.
func (s *store) next() (j job, ok, done bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.jobs) == 0 {
		return job{}, false, s.closed
	}
	j = s.jobs[0]
	s.jobs = s.jobs[1:]
	return j, true, false
}

// write stores j's event, with the latest handle when j may carry it.
func (s *store) write(ctx context.Context, j job) error {
	if j.delivered != nil && !<-j.delivered {
		return nil
	}
	if j.awaitHandle {
		s.awaitHandle(j.issued)
	}
	s.mu.Lock()
	issued, h := s.issued, s.handle
	carry := issued > s.written && h != nil && j.n >= s.after
	s.mu.Unlock()
	if carry {
		delta := maps.Clone(j.ev.Actions.StateDelta)
		if delta == nil {
			delta = map[string]any{}
		}
		maps.Copy(delta, handleDelta(*h))
		j.ev.Actions.StateDelta = delta
	}
	calls, err := s.seg.Append(ctx, j.ev, j.opts)
	if err != nil {
		return err
	}
	if carry {
		s.mu.Lock()
		s.written = issued
		s.mu.Unlock()
	}
	if j.after != nil {
		j.after(calls)
	}
	return nil
}

// awaitHandle waits up to handleWait for a handle issued after the
// issued-th, or for the store to close.
func (s *store) awaitHandle(issued int) {
	deadline := time.NewTimer(handleWait)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		ready, changed := s.issued > issued || s.closed, s.changed
		s.mu.Unlock()
		if ready {
			return
		}
		select {
		case <-changed:
		case <-deadline.C:
			return
		}
	}
}

// writeHandle stores, in an event of its own, a handle no event carried.
func (s *store) writeHandle(ctx context.Context) error {
	s.mu.Lock()
	pending := s.issued > s.written && s.handle != nil && len(s.jobs) == 0
	s.mu.Unlock()
	if !pending {
		return nil
	}
	ev := session.NewEvent(ctx, "baton-live-handle")
	ev.Author = s.seg.Agent.Name()
	s.mu.Lock()
	n := s.added
	s.added++
	s.mu.Unlock()
	return s.write(ctx, job{ev: ev, n: n})
}
