package a2ui

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"google.golang.org/adk/v2/session"
)

// ErrSurfaceWaits is returned (wrapped) by [CheckCardAction] for an action
// on a surface a call showed to wait for the user (a form): its action is
// that call's answer, given once, never a new message.
var ErrSurfaceWaits = errors.New("surface belongs to a call")

// Drawn is one surface as a conversation's events last showed it.
type Drawn struct {
	SurfaceID string
	// Messages draw the surface as it last was (Surface.Redraw), with the
	// values its form was submitted with once its call has its answer; a
	// deleted surface's is its deleteSurface alone.
	Messages []Message
	// CallID is the call that showed the surface last, when that call
	// waits (or waited) for the user's action on it; "" for a card.
	CallID string
	// First is the index, among the events, of the event that showed the
	// surface first.
	First int
}

// Deleted reports whether the surface was deleted.
func (d Drawn) Deleted() bool { return len(d.Messages) == 1 && d.Messages[0].DeleteSurface != nil }

// DrawnIn returns every surface events show (a2ui.ShownIn), in the order
// they were first shown, each as it last was. A surface whose waiting call
// was answered with an action shows the values the action carried at the
// paths its event bound them to: the form as the user submitted it.
func DrawnIn(events session.Events) []Drawn {
	var out []Drawn
	at := map[string]int{}         // surface id → its index in out
	answers := map[string]Action{} // call id → the action that answered it
	i := -1
	for ev := range events.All() {
		i++
		for _, shown := range ShownIn(ev) {
			for _, redraw := range shown.Surfaces {
				if len(redraw) == 0 || shown.Error != "" {
					continue
				}
				d := Drawn{SurfaceID: redraw[0].SurfaceID(), Messages: redraw, First: i}
				if shown.Wait {
					d.CallID = shown.CallID
				}
				if j, ok := at[d.SurfaceID]; ok {
					d.First = out[j].First
					out[j] = d
					continue
				}
				at[d.SurfaceID] = len(out)
				out = append(out, d)
			}
		}
		noteAnswers(ev, answers)
	}
	for j, d := range out {
		if a, ok := answers[d.CallID]; ok && d.CallID != "" && !d.Deleted() {
			out[j].Messages = submitted(d.Messages, a)
		}
	}
	return out
}

// noteAnswers notes the actions ev's function responses carry, by call.
func noteAnswers(ev *session.Event, answers map[string]Action) {
	if ev.Content == nil {
		return
	}
	for _, p := range ev.Content.Parts {
		if p == nil || p.FunctionResponse == nil || p.FunctionResponse.Response["action"] == nil {
			continue
		}
		if a, err := actionOf(p.FunctionResponse.Response["action"]); err == nil {
			answers[p.FunctionResponse.ID] = a
		}
	}
}

// submitted returns redraw with a's values written where a's event bound
// them, or redraw itself when they cannot be.
func submitted(redraw []Message, a Action) []Message {
	s := &Surfaces{}
	if s.Apply(redraw...) != nil || s.Submit(a) != nil {
		return redraw
	}
	sf, ok := s.Surface(a.SurfaceID)
	if !ok {
		return redraw
	}
	return sf.Redraw()
}

// Submit writes the values an action carries into its surface's data
// model, at the absolute paths its event's context bound them to: the
// surface then shows what the user sent. Fields given as literals or
// computed by functions are left alone.
func (s *Surfaces) Submit(a Action) error {
	if err := s.CheckAction(a); err != nil {
		return err
	}
	sf, _ := s.Surface(a.SurfaceID)
	comp, _ := sf.Component(a.SourceComponentID)
	declared, _ := lookup(comp.Properties, "action", "event", "context").(map[string]any)
	for _, key := range sortedKeys(a.Context) {
		binding, _ := declared[key].(map[string]any)
		path, _ := binding["path"].(string)
		if !strings.HasPrefix(path, "/") {
			continue
		}
		raw, err := json.Marshal(a.Context[key])
		if err != nil {
			return fmt.Errorf("context field %q: %w", key, err)
		}
		if err := sf.setData(&UpdateDataModel{SurfaceID: sf.ID(), Path: path, Value: raw}); err != nil {
			return err
		}
	}
	return nil
}

// CheckCardAction checks an action sent as a new message against the
// surfaces events show, as they last were: the surface is shown
// ([ErrNoSurface] if not: never drawn, deleted, or taken back with the
// events that drew it), is a card, not a surface a call waits on
// ([ErrSurfaceWaits]), offers the action ([ErrNotOffered]), and the
// action's values pass the checks they decide ([ErrCheckFailed]).
func CheckCardAction(events session.Events, a Action) error {
	for _, d := range DrawnIn(events) {
		switch {
		case d.SurfaceID != a.SurfaceID:
		case d.Deleted():
			return fmt.Errorf("%w: %q was deleted", ErrNoSurface, a.SurfaceID)
		case d.CallID != "":
			return fmt.Errorf("%w: %q waits for the answer of call %q", ErrSurfaceWaits, a.SurfaceID, d.CallID)
		default:
			s := &Surfaces{}
			if err := s.Apply(d.Messages...); err != nil {
				return errors.Join(ErrInvalid, err)
			}
			if err := s.CheckAction(a); err != nil {
				return err
			}
			sf, _ := s.Surface(a.SurfaceID)
			return sf.checkValues(a)
		}
	}
	return fmt.Errorf("%w: %q", ErrNoSurface, a.SurfaceID)
}

// actionTextPrefix begins the text a card's action becomes for the model.
const actionTextPrefix = "A2UI action from the user: "

// ActionText is the user message text an action sent as a new message
// becomes, for the model to read: a fixed prefix, then the client message
// {"version", "action": {name, surfaceId, sourceComponentId, timestamp,
// context}} as JSON.
func ActionText(a Action) (string, error) {
	raw, err := json.Marshal(ClientMessage{Version: Version, Action: &a})
	if err != nil {
		return "", err
	}
	return actionTextPrefix + string(raw), nil
}

// ActionOfText reads back the action a user message text holds
// (ActionText), reporting false for any other text.
func ActionOfText(text string) (ClientMessage, bool) {
	rest, ok := strings.CutPrefix(text, actionTextPrefix)
	if !ok {
		return ClientMessage{}, false
	}
	a, err := DecodeAction([]byte(rest))
	if err != nil {
		return ClientMessage{}, false
	}
	return ClientMessage{Version: Version, Action: &a}, true
}
