package usechat

// Replaying a stored turn as a useChat page must see it again.

import (
	"errors"
	"log/slog"

	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/tool/toolconfirmation"
	"google.golang.org/genai"

	"github.com/baton-run/baton/chatfiles"
	"github.com/baton-run/baton/toolcallback"
	"github.com/baton-run/baton/transcript"
	"github.com/baton-run/baton/uistream"
)

// replayer writes stored events as a useChat page must see them again:
// a browser call that has its answer is shown with it (as a
// provider-executed call, so no page runs it again), ADK's placeholder
// responses to paused calls are left out, an approval already decided
// shows the tool's outcome rather than a request for approval, and a call
// still waiting for a decision is shown first where its request is, as
// asking for approval, never as a call that runs.
type replayer struct {
	device   string          // the device the open calls belong to
	external map[string]bool // open calls another system answers
	calls    *callStates
}

// newReplayer prepares the replay of turn, whose open calls are open.
func newReplayer(turn []*session.Event, open []*toolcallback.Call) *replayer {
	rp := &replayer{external: map[string]bool{}, calls: newCallStates()}
	for _, c := range open {
		if c.Kind == toolcallback.KindExternal {
			rp.external[c.OriginalID] = true
		} else if rp.device == "" {
			rp.device = c.ClientID
		}
	}
	// A replayed turn's answers are all in hand before its calls are
	// written.
	for _, ev := range turn {
		rp.calls.note(ev)
	}
	return rp
}

func (rp *replayer) write(sw *uistream.Encoder, log *slog.Logger, ev *session.Event) {
	if ev.Partial || ev.Content == nil {
		return
	}
	rp.calls.note(ev)
	out := *ev
	content := *ev.Content
	content.Parts = nil
	for _, p := range ev.Content.Parts {
		if p == nil {
			continue
		}
		if fr := p.FunctionResponse; fr != nil && rp.calls.placeholder(ev, fr) {
			continue
		}
		if fc := p.FunctionCall; fc != nil && fc.Name == toolconfirmation.FunctionCallName && rp.calls.decided[fc.ID] {
			continue
		}
		if fc := p.FunctionCall; fc != nil && rp.awaitsDecision(fc.ID) {
			continue // its confirmation request shows it, with the device that decides
		}
		content.Parts = append(content.Parts, p)
	}
	content.Parts = append(content.Parts, chatfiles.SavedFiles(ev)...)
	out.Content = &content
	err := sw.Event(&out, func(c *genai.FunctionCall) uistream.CallKind {
		switch {
		case transcript.IsBackground(ev, c.ID):
			return uistream.CallBackground // its answer, when stored, is its output
		case !rp.calls.paused[c.ID] || rp.calls.answered(c.ID):
			return uistream.CallServer
		case rp.external[c.ID]:
			return uistream.CallExternal
		}
		return uistream.CallBrowser
	})
	if err == nil {
		err = sw.Surfaces(ev)
	}
	if err == nil && transcript.IsStopNote(ev) {
		err = sw.Metadata(stoppedMetadata)
	}
	if err != nil && !errors.Is(err, uistream.ErrFinished) {
		log.Warn("replay event", "error", err.Error())
	}
}

// awaitsDecision reports whether call id asks, in the turn replayed, for
// an approval nobody has given or refused yet.
func (rp *replayer) awaitsDecision(id string) bool {
	confirmation, ok := rp.calls.approvals[id]
	return ok && !rp.calls.decided[confirmation]
}
