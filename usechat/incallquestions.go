package usechat

// In-call questions (toolcallback.AskInCall), asked while a turn's tool
// runs, are not in the session: a stream that follows the turn follows them
// in the ledger too (toolcallback.FollowedChat.InCallQuestions), and shows
// each to the device that started the turn, then its outcome once it is
// closed, so that a reloaded page, or another tab, sees it and may answer
// it (docs/mcp-input.md).

import (
	"context"
	"log/slog"
	"time"

	"github.com/baton-run/baton/toolcallback"
)

// inCallQuestion is what InCallQuestions yielded.
type inCallQuestion struct {
	call *toolcallback.Call
	err  error
}

// inCallQuestions are a stream's in-call questions: those to come, and
// those shown but not yet shown closed.
type inCallQuestions struct {
	in   <-chan inCallQuestion // nil once nothing more comes
	open map[string]*toolcallback.Call
	show func(*toolcallback.Call)
	log  *slog.Logger
}

// followQuestions follows the running turn's in-call questions until ctx
// ends, showing each with show; none when no turn is running and the
// turn waits on no work (a remote agent's task asks its questions while
// the turn waits on it: docs/remote-agents.md).
func (cw *chatWatch) followQuestions(ctx context.Context, log *slog.Logger, waitsOnWork bool, show func(*toolcallback.Call)) *inCallQuestions {
	lq := &inCallQuestions{open: map[string]*toolcallback.Call{}, show: show, log: log}
	if (!cw.busy && !waitsOnWork) || cw.chat == nil {
		return lq
	}
	in := make(chan inCallQuestion)
	go func() {
		defer close(in)
		for c, err := range cw.chat.InCallQuestions(ctx) {
			select {
			case in <- inCallQuestion{c, err}:
			case <-ctx.Done():
				return
			}
		}
	}()
	lq.in = in
	return lq
}

// take shows what InCallQuestions yielded (ok false: it ended).
func (lq *inCallQuestions) take(q inCallQuestion, ok bool) {
	switch {
	case !ok:
		lq.in, lq.open = nil, nil // nothing more comes: no outcome to wait for
	case q.err != nil:
		lq.log.Warn("follow in-call questions", "error", q.err.Error())
	default:
		if q.call.Status == toolcallback.StatusPending {
			lq.open[q.call.ID] = q.call
		} else {
			delete(lq.open, q.call.ID)
		}
		lq.show(q.call)
	}
}

// settle waits, once the turn is over, for the outcomes of the questions
// still open: each was closed before the turn ended (its listener may tell
// it later than the session's), unless the instance asking it died, and
// then it expires unanswered.
func (lq *inCallQuestions) settle(ctx context.Context) {
	for len(lq.open) > 0 && lq.in != nil {
		first := time.Time{}
		for _, c := range lq.open {
			if first.IsZero() || c.Expires.Before(first) {
				first = c.Expires
			}
		}
		timer := time.NewTimer(time.Until(first))
		select {
		case q, ok := <-lq.in:
			lq.take(q, ok)
		case now := <-timer.C:
			for _, c := range lq.open {
				if !now.Before(c.Expires) {
					expired := *c
					expired.Status = toolcallback.StatusExpired
					lq.take(inCallQuestion{call: &expired}, true)
				}
			}
		case <-ctx.Done():
			lq.open = nil
		}
		timer.Stop()
	}
}
