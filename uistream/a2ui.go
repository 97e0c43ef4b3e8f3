package uistream

import (
	"errors"

	"github.com/baton-run/baton/a2ui"
)

// SurfacePartName is the name of the data part that carries an A2UI
// surface: its chunks are of type "data-a2ui".
const SurfacePartName = "a2ui"

// SurfaceData is the data of a data-a2ui part: the messages that draw
// surface SurfaceID as it now is, in full (a2ui.Surface.Redraw), or, once
// the surface is deleted, its deleteSurface alone. A renderer draws a part
// by applying Messages to a surface of its own.
type SurfaceData struct {
	SurfaceID string         `json:"surfaceId"`
	Messages  []a2ui.Message `json:"messages"`
}

// Surface writes a data-a2ui chunk whose id is surfaceID and whose data is
// SurfaceData{surfaceID, messages}. The AI SDK client replaces the data of
// the message's part with the same type and id, so each chunk must carry
// the whole surface (its redraw), not what changed: a later chunk for the
// same surface in the same message redraws it in place.
func (s *Encoder) Surface(surfaceID string, messages []a2ui.Message) error {
	if surfaceID == "" {
		return errors.New("data-a2ui chunk: empty surface id")
	}
	return s.data(SurfacePartName, surfaceID, SurfaceData{SurfaceID: surfaceID, Messages: messages})
}
