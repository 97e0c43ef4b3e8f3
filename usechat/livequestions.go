package usechat

// Questions asked on a live call (toolcallback.AskLive) while a turn runs
// are not in the session: a stream that follows the turn follows them in
// the ledger too (toolcallback.Team.LiveQuestions), and shows each to the
// device that started the turn, then its outcome once it is closed, so that
// a reloaded page, or another tab, sees it and may answer it
// (docs/mcp-input.md).

import (
	"context"
	"log/slog"
	"time"

	"github.com/baton-run/baton/toolcallback"
)

// liveQuestion is what LiveQuestions yielded.
type liveQuestion struct {
	call *toolcallback.Call
	err  error
}

// liveQuestions are a stream's questions asked on live calls: those to
// come, and those shown but not yet shown closed.
type liveQuestions struct {
	in   <-chan liveQuestion // nil once nothing more comes
	open map[string]*toolcallback.Call
	show func(*toolcallback.Call)
	log  *slog.Logger
}

// followQuestions follows the running turn's live questions until ctx
// ends, showing each with show; none when no turn is running.
func (cw *chatWatch) followQuestions(ctx context.Context, log *slog.Logger, show func(*toolcallback.Call)) *liveQuestions {
	lq := &liveQuestions{open: map[string]*toolcallback.Call{}, show: show, log: log}
	if !cw.busy || cw.chat == nil {
		return lq
	}
	in := make(chan liveQuestion)
	go func() {
		defer close(in)
		for c, err := range cw.chat.LiveQuestions(ctx) {
			select {
			case in <- liveQuestion{c, err}:
			case <-ctx.Done():
				return
			}
		}
	}()
	lq.in = in
	return lq
}

// take shows what LiveQuestions yielded (ok false: it ended).
func (lq *liveQuestions) take(q liveQuestion, ok bool) {
	switch {
	case !ok:
		lq.in, lq.open = nil, nil // nothing more comes: no outcome to wait for
	case q.err != nil:
		lq.log.Warn("follow live questions", "error", q.err.Error())
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
func (lq *liveQuestions) settle(ctx context.Context) {
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
					lq.take(liveQuestion{call: &expired}, true)
				}
			}
		case <-ctx.Done():
			lq.open = nil
		}
		timer.Stop()
	}
}
