package usechat

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
	"github.com/baton-run/baton/transcript"
	"github.com/baton-run/baton/uistream"
)

// WaitHeader, on GET /Chat/{chatId}/stream, asks to wait up to that many
// seconds for a turn to start when none is running (a live tab's long
// poll) instead of answering 204 at once.
const WaitHeader = "X-Baton-Wait"

// SeenHeader, with WaitHeader, names the last assistant message the
// live tab shows ("none" for none): a turn it has not seen is replayed at
// once, so no turn is missed between two waits.
const SeenHeader = "X-Baton-Seen"

// LiveHeader, on a stream GET /Chat/{chatId}/stream answers, says a live
// conversation holds the chat (docs/live.md): what the stream follows is
// that conversation, which ends when its tab ends it, not a turn.
const LiveHeader = "X-Baton-Live"

// maxWait bounds WaitHeader.
const maxWait = 55 * time.Second

// replayWindow is how many recent events a replay reads to find the turn
// it shows; a turn longer than that shows its last events only.
const replayWindow = 200

// chatResume answers useChat's resume request: GET /Chat/{chatId}/stream.
// Without WaitHeader it is resumeOpen; with it, a live tab's follow.
func (s *Server) chatResume(w http.ResponseWriter, r *http.Request, log *slog.Logger, chatID string) error {
	c, err := s.ident(r)
	if err != nil {
		return err
	}
	x := &exchange{w: w, r: r, log: log, caller: c}
	var wait time.Duration
	if v := r.Header.Get(WaitHeader); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || time.Duration(n)*time.Second > maxWait {
			return fmt.Errorf("%w: %s must be 0 to %d seconds", errBadRequest, WaitHeader, int(maxWait.Seconds()))
		}
		wait = time.Duration(n) * time.Second
	}
	if wait > 0 {
		return s.follow(x, chatID, wait, r.Header.Get(SeenHeader))
	}
	return s.resumeOpen(x, chatID)
}

// chatReplay streams the chat's last turn as the transcript has it,
// followed to its end when it is running.
func (s *Server) chatReplay(x *exchange, chatID string) error {
	ctx, cancel := s.replayContext(x.r, 0)
	defer cancel()
	cw, err := s.watchChat(ctx, x.caller.User, chatID)
	if err != nil {
		return err
	}
	calls, err := s.openCalls(x.r, cw)
	if err != nil {
		return err
	}
	return s.streamTurn(ctx, x.w, x.log, cw, calls, s.fileLinks(x.r, x.caller.User))
}

// resumeOpen streams the chat's last turn only while it is running or
// waiting for calls; otherwise (an unknown chat too) it answers 204.
func (s *Server) resumeOpen(x *exchange, chatID string) error {
	ctx, cancel := s.replayContext(x.r, 0)
	defer cancel()
	cw, err := s.watchChat(ctx, x.caller.User, chatID)
	if errors.Is(err, sessionstore.ErrNotFound) {
		x.w.WriteHeader(http.StatusNoContent)
		return nil
	}
	if err != nil {
		return err
	}
	calls, err := s.openCalls(x.r, cw)
	if err != nil {
		return err
	}
	if !cw.busy && len(calls) == 0 {
		x.w.WriteHeader(http.StatusNoContent)
		return nil
	}
	return s.streamTurn(ctx, x.w, x.log, cw, calls, s.fileLinks(x.r, x.caller.User))
}

// follow is a live tab's wait: the running turn, a finished one the tab
// has not seen (seen names the last one it shows), or the next one to
// start within wait; else 204. A turn waiting for calls is not shown
// again.
func (s *Server) follow(x *exchange, chatID string, wait time.Duration, seen string) error {
	ctx, cancel := s.replayContext(x.r, wait)
	defer cancel()
	cw, err := s.watchChat(ctx, x.caller.User, chatID)
	if errors.Is(err, sessionstore.ErrNotFound) {
		// No chat yet: nothing to listen to. Answer after a pause, so the
		// tab asks again soon without spinning.
		select {
		case <-time.After(min(wait, time.Second)):
		case <-x.r.Context().Done():
		}
		x.w.WriteHeader(http.StatusNoContent)
		return nil
	}
	if err != nil {
		return err
	}
	// A finished turn the tab missed, or one waiting on background work,
	// is replayed now; otherwise wait for the next turn to start.
	if !cw.busy && !(seen != "" && unseen(cw.events, seen)) && !transcript.AwaitsWork(cw.events[lastTurn(cw.events):]) &&
		!cw.awaitTurn(ctx, wait) {
		x.w.WriteHeader(http.StatusNoContent)
		return nil
	}
	return s.streamTurn(ctx, x.w, x.log, cw, nil, s.fileLinks(x.r, x.caller.User))
}

// replayContext bounds a replay: it outlives the request's pre-stream
// deadline, and ends with the turn it follows, or when the client is gone
// (a write fails).
func (s *Server) replayContext(r *http.Request, wait time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(r.Context()), s.cfg.InvocationTimeout+wait+10*time.Second)
}

// chatWatch is a chat followed as it is written to: the events seen so
// far, whether a turn is running, and the changes still to come.
type chatWatch struct {
	changes      <-chan watched
	events       []*session.Event
	busy         bool      // a turn is running
	live         bool      // what runs is a live segment
	leaseExpires time.Time // the running turn's lease, as last seen
	// chat is the chat as read when the watch began: its questions the
	// running turn asks while its tools run (InCallQuestions), which the session
	// does not hold, and its open calls.
	chat *toolcallback.FollowedChat
}

// watchChat follows the chat until ctx ends: sessionstore.ErrNotFound for
// an unknown chat.
func (s *Server) watchChat(ctx context.Context, user, chatID string) (*chatWatch, error) {
	chat, err := s.team.Follow(ctx, user, chatID)
	if err != nil {
		return nil, err
	}
	changes := make(chan watched)
	go func() {
		defer close(changes)
		for c, err := range chat.Watch(ctx, replayWindow) {
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
		return nil, ctx.Err()
	}
	if first.err != nil {
		return nil, first.err
	}
	return &chatWatch{changes: changes, events: first.change.Events, busy: running(ctx, first.change), live: first.change.Live,
		leaseExpires: first.change.LeaseExpires, chat: chat}, nil
}

// openCalls lists the chat's open calls when no turn is running (a
// running turn's calls are streamed as it makes them).
func (s *Server) openCalls(r *http.Request, cw *chatWatch) ([]*toolcallback.Call, error) {
	if cw.busy {
		return nil, nil
	}
	open, err := cw.chat.Pending(r.Context(), "", 0)
	if err != nil {
		return nil, err
	}
	return open.Calls, nil
}

// awaitTurn waits up to wait for a turn to start, and reports whether
// one did.
func (cw *chatWatch) awaitTurn(ctx context.Context, wait time.Duration) bool {
	timeout := time.NewTimer(wait)
	defer timeout.Stop()
	for !cw.busy {
		select {
		case c, ok := <-cw.changes:
			if !ok || c.err != nil {
				return false
			}
			cw.events = append(cw.events, c.change.Events...)
			cw.busy, cw.live, cw.leaseExpires = running(ctx, c.change), c.change.Live, c.change.LeaseExpires
		case <-timeout.C:
			return false
		}
	}
	return true
}

// streamTurn streams the last turn of the events seen, whose open calls
// are calls, then follows it while it runs; files gives its files URLs.
func (s *Server) streamTurn(ctx context.Context, w http.ResponseWriter, log *slog.Logger, cw *chatWatch, calls []*toolcallback.Call, files fileLinks) error {
	start := lastTurn(cw.events)
	turn := ""
	if start < len(cw.events) {
		turn = cw.events[start].InvocationID
	}
	if turn == "" {
		turn = "msg-" + platform.NewUUID(ctx)
	}
	rp := newReplayer(cw.events[start:], calls)
	if cw.busy && cw.live {
		w.Header().Set(LiveHeader, "true")
	}
	sse, enc, stop := s.openStream(w, turn, reply{page: true, device: rp.device, files: files})
	defer stop()
	if err := enc.Start(); err != nil {
		return nil
	}
	if sw := turnSwitch(cw.events, start); sw != nil {
		_ = enc.Data("agent", sw) // as the turn's own stream said it first
	}
	work := newTurnWork(cw.chat, log, func(c *toolcallback.Call) { _ = enc.Progress(c.OriginalID, c.Work.Progress) })
	for _, ev := range cw.events[start:] {
		rp.write(enc, log, ev)
		work.note(ev)
	}
	qctx, stopQuestions := context.WithCancel(ctx)
	defer stopQuestions()
	defer work.stop()
	questions := cw.followQuestions(qctx, log, work.waiting(), func(c *toolcallback.Call) {
		enc.SetDevice(c.ClientID) // the device that may answer it
		rp.write(enc, log, toolcallback.InCallQuestionEvent(ctx, c))
		enc.SetDevice(rp.device)
	})
	write := func(ev *session.Event) {
		rp.write(enc, log, ev)
		work.note(ev)
	}
	if !cw.followTurn(ctx, sse, write, questions, work) {
		return nil // the client left
	}
	questions.settle(qctx)
	_ = enc.Finish()
	return nil
}

// followTurn writes the running turn's events as they are stored, and its
// questions asked on live calls as they are asked and closed, until its
// invocation lets the session go; a turn that waits on background work is
// followed, with the work's progress, until the work's answers are stored
// and the agent they resume has let the session go too. It reports false
// when the client has left. The lease is the one that made the turn busy:
// a live tab's wait saw it taken after its first change.
func (cw *chatWatch) followTurn(ctx context.Context, sse *uistream.SSE, write func(*session.Event), questions *inCallQuestions, work *turnWork) bool {
	var expires <-chan time.Time
	if cw.busy {
		expires = time.After(time.Until(cw.leaseExpires) + time.Second)
	}
	for over := false; !over && (cw.busy || work.waiting()); {
		work.listen(ctx)
		select {
		case q, ok := <-questions.in:
			questions.take(q, ok)
		case c := <-work.in:
			work.take(c)
		case c, ok := <-cw.changes:
			if !ok || c.err != nil {
				cw.busy, over = false, true
				break
			}
			for _, ev := range c.change.Events {
				if transcript.StartsTurn(ev) {
					cw.busy, over = false, true // the next turn: its own stream
					break
				}
				write(ev)
			}
			expires = nil
			if cw.busy = !over && running(ctx, c.change); cw.busy {
				expires = time.After(time.Until(c.change.LeaseExpires) + time.Second)
			}
		case <-expires:
			cw.busy, expires = false, nil // the holder died: its lease ran out unrenewed
		}
		if sse.Err() != nil {
			return false
		}
	}
	return true
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

// turnSwitch is the agent switch the turn starting at events[start] made,
// nil when it made none (or the events read begin with the turn): a
// switch moves the chat's history into the new agent's session, and the
// message of the turn that switched comes right after it (see history).
func turnSwitch(events []*session.Event, start int) *toolcallback.SwitchReport {
	if start >= len(events) {
		return nil
	}
	for _, ev := range slices.Backward(events[:start]) {
		if ev.Partial || ev.Content == nil {
			continue
		}
		sw, _, moved := sessionstore.MovedBy(ev)
		if !moved {
			return nil
		}
		if later, _, also := sessionstore.MovedBy(events[start]); also && sameSwitch(later, sw) {
			return nil
		}
		return &toolcallback.SwitchReport{Switched: true, From: sw.From, To: sw.To}
	}
	return nil
}

// lastTurn returns the index of the event that starts the last turn in
// events (len(events) when there is none).
func lastTurn(events []*session.Event) int {
	for i, ev := range slices.Backward(events) {
		if transcript.StartsTurn(ev) {
			return i
		}
	}
	return len(events)
}
