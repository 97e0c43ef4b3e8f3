package a2ui

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"google.golang.org/adk/v2/session"
)

// MetadataKey holds, in a stored event's CustomMetadata, the surfaces the
// event shows: a Shown per call that showed some (or was refused).
const MetadataKey = "baton_a2ui"

// Shown is what one call showed: each surface it drew, as the surface then
// was in full (Surface.Redraw, or its deleteSurface once deleted); Wait
// says the call waits for an action on them. Error is set instead for a
// call whose messages were refused, for the model to fix its call.
type Shown struct {
	CallID   string      `json:"callId"`
	Wait     bool        `json:"wait,omitempty"`
	Surfaces [][]Message `json:"surfaces,omitempty"`
	Error    string      `json:"error,omitempty"`
}

// ShownIn returns what ev shows of surfaces.
func ShownIn(ev *session.Event) []Shown {
	var out []Shown
	value := ev.CustomMetadata[MetadataKey]
	if b, err := json.Marshal(value); value == nil || err != nil || json.Unmarshal(b, &out) != nil {
		return nil
	}
	return out
}

// Note adds s to what ev shows.
func Note(ev *session.Event, s Shown) {
	if ev.CustomMetadata == nil {
		ev.CustomMetadata = map[string]any{}
	}
	ev.CustomMetadata[MetadataKey] = append(ShownIn(ev), s)
}

// Fold returns the surfaces events show, each as it last was.
func Fold(events session.Events) *Surfaces {
	s := &Surfaces{}
	for _, d := range DrawnIn(events) {
		if !d.Deleted() {
			_ = s.Apply(d.Messages...) // a redraw applies to a surface not shown
		}
	}
	return s
}

// Decide checks a model's call (id, with args {"messages": [...], "wait":
// bool}) against the catalog and the surfaces prior shows, and returns what
// it shows (an Error when refused) and whether it waits for an action.
func (c *Catalog) Decide(prior session.Events, id string, args map[string]any) (Shown, bool) {
	raw, err := json.Marshal(args["messages"])
	if err != nil {
		return Shown{CallID: id, Error: "A2UI refused: " + err.Error()}, false
	}
	shown := Fold(prior)
	msgs, err := c.Decode(raw, shown)
	if err != nil {
		return Shown{CallID: id, Error: "A2UI refused: " + err.Error()}, false
	}
	wait, _ := args["wait"].(bool)
	return Shown{CallID: id, Wait: wait, Surfaces: applied(shown, msgs)}, wait
}

// Show checks msgs a Go tool's call (id) shows against the catalog and the
// surfaces prior shows, and returns what it shows.
func (c *Catalog) Show(prior session.Events, id string, msgs ...Message) (Shown, error) {
	shown := Fold(prior)
	if err := c.Validate(msgs, shown); err != nil {
		return Shown{}, err
	}
	return Shown{CallID: id, Surfaces: applied(shown, msgs)}, nil
}

// applied applies msgs (valid) to shown and returns the surfaces they
// touch, in full.
func applied(shown *Surfaces, msgs []Message) [][]Message {
	_ = shown.Apply(msgs...)
	var ids []string
	for _, m := range msgs {
		if id := m.SurfaceID(); !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	out := make([][]Message, 0, len(ids))
	for _, id := range ids {
		if sf, ok := shown.Surface(id); ok {
			out = append(out, sf.Redraw())
		} else {
			out = append(out, []Message{NewDeleteSurface(id)})
		}
	}
	return out
}

// CheckAnswer checks the answer to a call that waits on surfaces (as
// Shown.Surfaces holds them): an output {"action": {...}} whose action,
// as a renderer reports it (name, surfaceId, sourceComponentId, timestamp,
// context), one of them offers, whose values pass the surface's checks
// that they decide (a required field is filled). It wraps ErrInvalid,
// ErrNoSurface, ErrNotOffered or ErrCheckFailed.
func CheckAnswer(surfaces [][]Message, output map[string]any) (Action, error) {
	if len(output) != 1 || output["action"] == nil {
		return Action{}, fmt.Errorf("%w: a surface's answer is {\"action\": {...}}", ErrInvalid)
	}
	action, err := actionOf(output["action"])
	if err != nil {
		return Action{}, err
	}
	s := &Surfaces{}
	for _, redraw := range surfaces {
		if err := s.Apply(redraw...); err != nil {
			return Action{}, errors.Join(ErrInvalid, err)
		}
	}
	if err := s.CheckAction(action); err != nil {
		return action, err
	}
	sf, _ := s.Surface(action.SurfaceID)
	return action, sf.checkValues(action)
}

// actionOf reads an action given as a JSON value, checked as the action
// of a client message.
func actionOf(v any) (Action, error) {
	raw, err := json.Marshal(ClientMessageOf(v))
	if err != nil {
		return Action{}, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return DecodeAction(raw)
}

// ClientMessageOf wraps action, a JSON value, in the client message that
// carries it: {"version": "v0.9", "action": action}.
func ClientMessageOf(action any) map[string]any {
	return map[string]any{"version": Version, "action": action}
}
