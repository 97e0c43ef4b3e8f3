package usechat

// Background work in a followed turn: a turn paused on background calls
// is followed, from Firestore, until their answers are stored and the
// agent they resume has answered, and their progress is shown meanwhile.

import (
	"context"
	"log/slog"
	"time"

	"google.golang.org/adk/v2/session"

	"github.com/baton-run/baton/toolcallback"
	"github.com/baton-run/baton/transcript"
)

// turnWork is the background work a followed turn waits on: the calls
// its events mark background that have no answer from the user's side
// yet, and, while there are some, a listener on the chat's pending
// background calls (FollowedChat.Working) whose changes are shown as the
// calls' progress. The listener starts only once the turn waits on work.
type turnWork struct {
	chat *toolcallback.FollowedChat
	show func(*toolcallback.Call) // shows a call's progress
	log  *slog.Logger
	open map[string]bool // background calls of the turn without an answer
	// shown is when each call's progress last shown was stored: a change
	// of the record that is not new progress (its hold renewed) shows
	// nothing.
	shown map[string]time.Time
	in    chan workChange // nil until the listener starts
	stop  context.CancelFunc
}

type workChange struct {
	call *toolcallback.Call
	err  error
}

func newTurnWork(chat *toolcallback.FollowedChat, log *slog.Logger, show func(*toolcallback.Call)) *turnWork {
	return &turnWork{chat: chat, show: show, log: log, open: map[string]bool{}, shown: map[string]time.Time{}, stop: func() {}}
}

// note follows what a stored event of the turn says of its background
// calls: made (marked background), or answered (a response from the
// user's side: the work's result, or why the call was closed).
func (tw *turnWork) note(ev *session.Event) {
	if ev.Partial || ev.Content == nil {
		return
	}
	for _, id := range transcript.BackgroundCalls(ev) {
		tw.open[id] = true
	}
	if ev.Author != "user" {
		return
	}
	for _, p := range ev.Content.Parts {
		if p != nil && p.FunctionResponse != nil {
			delete(tw.open, p.FunctionResponse.ID)
		}
	}
}

// waiting reports whether the turn waits on background work.
func (tw *turnWork) waiting() bool { return len(tw.open) > 0 }

// listen starts the listener on the chat's background calls, once, when
// the turn waits on work.
func (tw *turnWork) listen(ctx context.Context) {
	if tw.in != nil || !tw.waiting() || tw.chat == nil {
		return
	}
	ctx, tw.stop = context.WithCancel(ctx)
	in := make(chan workChange)
	tw.in = in
	go func() {
		for c, err := range tw.chat.Working(ctx) {
			select {
			case in <- workChange{c, err}:
			case <-ctx.Done():
				return
			}
		}
	}()
}

// take shows a change of a background call of the turn: its progress.
func (tw *turnWork) take(c workChange) {
	switch {
	case c.err != nil:
		tw.log.Warn("follow background calls", "error", c.err.Error())
	case c.call != nil && c.call.Status == toolcallback.StatusPending && tw.open[c.call.OriginalID] && c.call.Work != nil &&
		len(c.call.Work.Progress) > 0 && !c.call.Work.ProgressAt.Equal(tw.shown[c.call.ID]):
		tw.shown[c.call.ID] = c.call.Work.ProgressAt
		tw.show(c.call)
	}
}
