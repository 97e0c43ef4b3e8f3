package functions

// Resumable streams without Redis: a turn's stream is rebuilt from the
// session in Firestore, which every instance appends each event to before
// anyone sees it, and followed with a listener on the session document.
// Text therefore comes at event granularity (a whole model response at
// a time), not token by token as on the instance that runs the turn.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"time"

	"google.golang.org/adk/v2/platform"
	"google.golang.org/adk/v2/session"

	"github.com/baton-run/baton/sessionstore"
	"github.com/baton-run/baton/toolcallback"
	"github.com/baton-run/baton/uistream"
)

// waitHeader, on GET /Chat/{chatId}/stream, asks to wait up to that many
// seconds for a turn to start when none is running (a live tab's long
// poll) instead of answering 204 at once.
const waitHeader = "X-Baton-Wait"

// seenHeader, with waitHeader, names the last assistant message the
// live tab shows ("none" for none): a turn it has not seen is replayed at
// once, so no turn is missed between two waits.
const seenHeader = "X-Baton-Seen"

// maxWait bounds waitHeader.
const maxWait = 55 * time.Second

// replayWindow is how many recent events a replay reads to find the turn
// it shows; a turn longer than that shows its last events only.
const replayWindow = 200

type replayMode int

const (
	// replayAlways streams the chat's last turn, followed to its end when
	// it is running.
	replayAlways replayMode = iota
	// replayIfOpen streams the last turn only while it is running or
	// waiting for calls; otherwise it answers 204.
	replayIfOpen
	// replayNext streams a running turn, or waits for the next one to
	// start (a live tab); a turn waiting for calls is not shown again.
	replayNext
)

// chatResume answers useChat's resume request: GET /Chat/{chatId}/stream.
func (s *Server) chatResume(w http.ResponseWriter, r *http.Request, log *slog.Logger, chatID string) error {
	user, err := s.ident.userID(r.Context(), r)
	if err != nil {
		return err
	}
	var wait time.Duration
	if v := r.Header.Get(waitHeader); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || time.Duration(n)*time.Second > maxWait {
			return fmt.Errorf("%w: %s must be 0 to %d seconds", errBadRequest, waitHeader, int(maxWait.Seconds()))
		}
		wait = time.Duration(n) * time.Second
	}
	if wait > 0 {
		return s.follow(w, r, log, user, chatID, wait, r.Header.Get(seenHeader))
	}
	return s.replay(w, r, log, user, chatID, replayIfOpen, 0, "")
}

// chatReplay streams the chat's last turn as the transcript has it.
func (s *Server) chatReplay(w http.ResponseWriter, r *http.Request, log *slog.Logger, user, chatID string, mode replayMode) error {
	return s.replay(w, r, log, user, chatID, mode, 0, "")
}

// follow is a live tab's wait: the running turn, a finished one the tab
// has not seen, or the next one to start within wait; else 204.
func (s *Server) follow(w http.ResponseWriter, r *http.Request, log *slog.Logger, user, chatID string, wait time.Duration, seen string) error {
	return s.replay(w, r, log, user, chatID, replayNext, wait, seen)
}

func (s *Server) replay(w http.ResponseWriter, r *http.Request, log *slog.Logger, user, chatID string, mode replayMode, wait time.Duration, seen string) error {
	// The follow outlives the request's pre-stream deadline; it ends with
	// the turn, or when the client is gone (a write fails).
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), s.cfg.InvocationTimeout+wait+10*time.Second)
	defer cancel()
	changes := make(chan watched)
	go func() {
		defer close(changes)
		for c, err := range s.team.Watch(ctx, user, chatID, replayWindow) {
			select {
			case changes <- watched{c, err}:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	first, ok := <-changes
	if !ok {
		return ctx.Err()
	}
	if first.err != nil {
		if errors.Is(first.err, sessionstore.ErrNotFound) && mode == replayNext {
			// No chat yet: nothing to listen to. Answer after a pause, so
			// the tab asks again soon without spinning.
			select {
			case <-time.After(min(wait, time.Second)):
			case <-r.Context().Done():
			}
		}
		if errors.Is(first.err, sessionstore.ErrNotFound) && mode != replayAlways {
			w.WriteHeader(http.StatusNoContent)
			return nil
		}
		return first.err
	}
	events := first.change.Events
	busy := running(ctx, first.change)
	leaseExpires := first.change.LeaseExpires // as last seen
	var calls []*toolcallback.Call
	if !busy && mode != replayNext {
		open, err := s.team.Pending(r.Context(), user, chatID, "", 0)
		if err != nil {
			return err
		}
		calls = open.Calls
	}
	if mode == replayIfOpen && !busy && len(calls) == 0 {
		w.WriteHeader(http.StatusNoContent)
		return nil
	}
	// A live tab: a finished turn it missed is replayed now; otherwise
	// wait for the next turn to start.
	if mode == replayNext && !busy && !(seen != "" && unseen(events, seen)) {
		timeout := time.NewTimer(wait)
		defer timeout.Stop()
		for !busy {
			select {
			case c, ok := <-changes:
				if !ok || c.err != nil {
					w.WriteHeader(http.StatusNoContent)
					return nil
				}
				events = append(events, c.change.Events...)
				busy, leaseExpires = running(ctx, c.change), c.change.LeaseExpires
			case <-timeout.C:
				w.WriteHeader(http.StatusNoContent)
				return nil
			}
		}
	}

	start := lastTurn(events)
	turn := ""
	if start < len(events) {
		turn = events[start].InvocationID
	}
	if turn == "" {
		turn = "msg-" + platform.NewUUID(ctx)
	}
	rp := newReplayer(events[start:], calls)
	sse := uistream.NewSSE(w)
	sw := uistream.NewEncoder(sse, turn)
	sw.SetDevice(rp.device)
	defer keepAlive(sse, s.cfg.KeepAlive)()
	if err := sw.Start(); err != nil {
		return nil
	}
	for _, ev := range events[start:] {
		rp.write(sw, log, ev)
	}
	// Follow the running turn until its invocation lets the session go.
	// The lease is the one that made the turn busy: a live tab's wait saw
	// it taken after its first change.
	expires := time.After(time.Until(leaseExpires) + time.Second)
	for busy {
		select {
		case c, ok := <-changes:
			if !ok || c.err != nil {
				busy = false
				break
			}
			for _, ev := range c.change.Events {
				if toolcallback.StartsTurn(ev) {
					busy = false // the next turn: its own stream
					break
				}
				rp.write(sw, log, ev)
			}
			if busy = busy && running(ctx, c.change); busy {
				expires = time.After(time.Until(c.change.LeaseExpires) + time.Second)
			}
		case <-expires:
			busy = false // the holder died: its lease ran out unrenewed
		}
		if sse.Err() != nil {
			return nil // the client left
		}
	}
	_ = sw.Finish()
	return nil
}

type watched struct {
	change *sessionstore.Change
	err    error
}

func running(ctx context.Context, c *sessionstore.Change) bool {
	return c.Busy && c.LeaseExpires.After(platform.Now(ctx))
}

// unseen reports whether the last turn in events has an answer (some
// event after its user message) and is not the message seen.
func unseen(events []*session.Event, seen string) bool {
	start := lastTurn(events)
	return start < len(events)-1 && events[start].InvocationID != seen
}

// lastTurn returns the index of the event that starts the last turn in
// events (len(events) when there is none).
func lastTurn(events []*session.Event) int {
	for i, ev := range slices.Backward(events) {
		if toolcallback.StartsTurn(ev) {
			return i
		}
	}
	return len(events)
}
