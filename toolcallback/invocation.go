package toolcallback

import (
	"iter"
	"sync"

	"google.golang.org/adk/v2/session"
)

// Invocation is an agent run in progress. It runs to its end whether or not
// anyone reads its events: the producer never blocks on a reader, so a
// client that goes away cannot stall it or leave a call without a response.
type Invocation struct {
	mu     sync.Mutex
	cond   *sync.Cond
	events []*session.Event
	err    error
	done   bool
	// first, when set, is called with the first event pushed (the
	// invocation's first-event latency, metrics.go).
	first func()
}

func newInvocation() *Invocation {
	inv := &Invocation{}
	inv.cond = sync.NewCond(&inv.mu)
	return inv
}

func (inv *Invocation) push(ev *session.Event) {
	if inv.first != nil {
		inv.first()
	}
	inv.mu.Lock()
	inv.events = append(inv.events, ev)
	inv.mu.Unlock()
	inv.cond.Broadcast()
}

func (inv *Invocation) fail(err error) {
	inv.mu.Lock()
	if inv.err == nil {
		inv.err = err
	}
	inv.mu.Unlock()
}

func (inv *Invocation) close() {
	inv.mu.Lock()
	inv.done = true
	inv.mu.Unlock()
	inv.cond.Broadcast()
}

// Events yields the invocation's events as they arrive, partial ones
// included, then the invocation's error if it failed. Several readers may
// iterate; each sees every event.
func (inv *Invocation) Events() iter.Seq2[*session.Event, error] {
	return func(yield func(*session.Event, error) bool) {
		for i := 0; ; i++ {
			inv.mu.Lock()
			for i >= len(inv.events) && !inv.done {
				inv.cond.Wait()
			}
			if i >= len(inv.events) {
				err := inv.err
				inv.mu.Unlock()
				if err != nil {
					yield(nil, err)
				}
				return
			}
			ev := inv.events[i]
			inv.mu.Unlock()
			if !yield(ev, nil) {
				return
			}
		}
	}
}

// Wait blocks until the invocation has ended and returns its error.
func (inv *Invocation) Wait() error {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	for !inv.done {
		inv.cond.Wait()
	}
	return inv.err
}
