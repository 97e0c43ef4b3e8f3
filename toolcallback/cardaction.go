package toolcallback

import (
	"errors"
	"fmt"
	"slices"

	"google.golang.org/genai"

	"github.com/baton-run/baton/a2ui"
	"github.com/baton-run/baton/sessionstore"
)

// Actions on cards (docs/a2ui.md): a user message may carry presses on
// surfaces no call waits on (TurnRequest.Actions). The planner checks each
// against the surfaces the session it plans on shows, as they last were
// (a2ui.CheckCardAction), so an action costs no read of its own, and the
// model reads each as the text a2ui.ActionText writes, after the message's
// own parts. A refused action refuses the turn before anything is written.

// cardContent is the content a turn of req runs on sess: the message's
// parts, then the text of each of its actions, checked against the
// surfaces sess shows (nil: the chat has stored nothing, so it shows no
// surface).
func cardContent(req TurnRequest, sess *sessionstore.Session) (*genai.Content, error) {
	if len(req.Actions) == 0 {
		return req.Content, nil
	}
	if sess == nil {
		return nil, fmt.Errorf("%w: the chat shows no surface", a2ui.ErrNoSurface)
	}
	events := sess.Events()
	c := &genai.Content{Role: genai.RoleUser}
	if req.Content != nil {
		c.Parts = slices.Clone(req.Content.Parts)
	}
	for _, a := range req.Actions {
		if err := a2ui.CheckCardAction(events, a); err != nil {
			return nil, err
		}
		text, err := a2ui.ActionText(a)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", a2ui.ErrInvalid, err)
		}
		c.Parts = append(c.Parts, genai.NewPartFromText(text))
	}
	return c, nil
}

// refusedAction reports whether err is an action on a card refused by
// the plan, which writes nothing.
func refusedAction(err error) bool {
	return errors.Is(err, a2ui.ErrNoSurface) || errors.Is(err, a2ui.ErrSurfaceWaits) ||
		errors.Is(err, a2ui.ErrNotOffered) || errors.Is(err, a2ui.ErrInvalid)
}
