package localtasks

import (
	"context"
	"iter"
	"time"
)

// Kind is what happened to a request of a task.
type Kind int

const (
	// Dispatched: the request was sent.
	Dispatched Kind = iota + 1
	// Completed: a 2xx response; the task is gone and its name tombstoned.
	Completed
	// Retrying: the attempt failed; Event.Next says when the next one is due.
	Retrying
	// Exhausted: the attempt failed and was the last the queue allows; the
	// task is gone and its name tombstoned.
	Exhausted
	// Dropped: a response that changed nothing, because its task was
	// deleted or completed meanwhile, or because it answered a duplicate.
	Dropped
	// Cancelled: Stop cancelled the request.
	Cancelled
)

func (k Kind) String() string {
	switch k {
	case Dispatched:
		return "dispatched"
	case Completed:
		return "completed"
	case Retrying:
		return "retrying"
	case Exhausted:
		return "exhausted"
	case Dropped:
		return "dropped"
	case Cancelled:
		return "cancelled"
	}
	return "unknown"
}

// Event is one step of a task's delivery, as the server saw it.
type Event struct {
	At         time.Time
	Kind       Kind
	Task       string // the task's full name
	RetryCount int32  // the attempt's X-CloudTasks-TaskRetryCount
	Duplicate  bool   // the request was a duplicate (Options.Duplicate)
	Status     int    // the response's HTTP status; 0 without a response
	Err        error  // why no response came: no connection, the deadline, Stop
	Next       time.Time
}

// record appends e to the events and wakes their readers. Server.mu is held.
func (s *Server) record(e Event) {
	s.events = append(s.events, e)
	close(s.changed)
	s.changed = make(chan struct{})
}

// Events yields every event since the server started, in order, then each
// new one as it happens, until ctx ends or the server has stopped.
func (s *Server) Events(ctx context.Context) iter.Seq[Event] {
	return func(yield func(Event) bool) {
		seen := 0
		for {
			s.mu.Lock()
			fresh, changed, finished := s.events[seen:], s.changed, s.finished
			s.mu.Unlock()
			for _, e := range fresh {
				seen++
				if !yield(e) {
					return
				}
			}
			if finished {
				return
			}
			if len(fresh) > 0 {
				continue
			}
			select {
			case <-changed:
			case <-ctx.Done():
				return
			}
		}
	}
}

// Wait returns the first event, past or to come, that match accepts. It
// fails with ctx's error when ctx ends first, and with ErrStopped when the
// server stops first.
func (s *Server) Wait(ctx context.Context, match func(Event) bool) (Event, error) {
	for e := range s.Events(ctx) {
		if match(e) {
			return e, nil
		}
	}
	if err := ctx.Err(); err != nil {
		return Event{}, err
	}
	return Event{}, ErrStopped
}

// Is matches the events of kind k of the task named task.
func Is(task string, k Kind) func(Event) bool {
	return func(e Event) bool { return e.Task == task && e.Kind == k }
}
