package uistream

import (
	"errors"

	"google.golang.org/adk/v2/session"

	"github.com/baton-run/baton/a2ui"
)

// SurfacePartName is the name of the data part that carries an A2UI
// surface: its chunks are of type "data-a2ui".
const SurfacePartName = "a2ui"

// SurfaceActionPartName is the name of the data part of a user message
// that sends an action on a card (a surface no call waits on): its type is
// "data-a2ui-action", its data the A2UI client message {"version",
// "action": {...}}.
const SurfaceActionPartName = "a2ui-action"

// SurfaceData is the data of a data-a2ui part: the messages that draw
// surface SurfaceID as it now is, in full (a2ui.Surface.Redraw), or, once
// the surface is deleted, its deleteSurface alone. A renderer draws a part
// by applying Messages to a surface of its own.
type SurfaceData struct {
	SurfaceID string         `json:"surfaceId"`
	Messages  []a2ui.Message `json:"messages"`
	// CallID, when set, is the call that showed the surface to wait for
	// an action on it (a form): while that call waits, the client answers
	// it (a tool output {"action": {...}}) to send one; once the call is
	// answered, the surface takes no more actions. Without it the surface
	// is a card, whose actions are new user messages.
	CallID string `json:"callId,omitempty"`
}

// Surface writes a data-a2ui chunk whose id is d.SurfaceID and whose data
// is d. The AI SDK client replaces the data of the message's part with the
// same type and id, so each chunk must carry the whole surface (its
// redraw), not what changed: a later chunk for the same surface in the
// same message redraws it in place.
func (s *Encoder) Surface(d SurfaceData) error {
	if d.SurfaceID == "" {
		return errors.New("data-a2ui chunk: empty surface id")
	}
	return s.data(SurfacePartName, d.SurfaceID, d)
}

// Surfaces writes a data-a2ui chunk for each surface ev shows
// (a2ui.ShownIn), with the call that waits on it; calls whose messages
// were refused show nothing.
func (s *Encoder) Surfaces(ev *session.Event) error {
	for _, shown := range a2ui.ShownIn(ev) {
		for _, redraw := range shown.Surfaces {
			if len(redraw) == 0 || shown.Error != "" {
				continue
			}
			d := SurfaceData{SurfaceID: redraw[0].SurfaceID(), Messages: redraw}
			if shown.Wait {
				d.CallID = shown.CallID
			}
			if err := s.Surface(d); err != nil {
				return err
			}
		}
	}
	return nil
}
