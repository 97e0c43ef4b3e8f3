package a2ui

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"google.golang.org/adk/v2/session"
)

// ErrNotOffered is returned (wrapped) by [Surfaces.CheckAction] for an
// action its surface did not offer: the component is not there, has no
// such event, or the context carries a field the event did not declare, or
// a fixed value the agent did not give.
var ErrNotOffered = errors.New("action not offered")

// ErrSurfaceWaits is returned (wrapped) by [CheckCardAction] for an action
// on a surface a call showed to wait for the user (a form): its action is
// that call's answer, given once, never a new message.
var ErrSurfaceWaits = errors.New("surface belongs to a call")

// DecodeAction reads a client-to-agent message that holds an action,
// checked against the schema, and keeps the message as sent (Action.Sent).
// Its error wraps [ErrInvalid]: whatever the client sent, it is never a
// server's error.
func DecodeAction(data []byte) (Action, error) {
	s, err := compiled()
	if err != nil {
		return Action{}, err
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return Action{}, &ValidationError{Problems: []string{"action: not JSON: " + err.Error()}}
	}
	if err := s.messages["action"].Validate(doc); err != nil {
		var p problems
		p.addIssues("action message", describe(err))
		return Action{}, p.err()
	}
	var msg ClientMessage
	if err := decodeJSON(data, &msg); err != nil {
		return Action{}, fmt.Errorf("%w: decode checked action: %w", ErrInvalid, err)
	}
	var sent bytes.Buffer
	if err := json.Compact(&sent, data); err != nil {
		return Action{}, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	a := *msg.Action
	a.Sent = sent.Bytes()
	return a, nil
}

// CheckAction checks an action against the surface it names, as folded:
// the surface is shown ([ErrNoSurface] if not), and its source component
// has an event of that name whose declared context has every field the
// action's context carries, with the same value where the agent gave a
// fixed one ([ErrNotOffered] if not). A field bound to the data model or
// computed by a function may carry any value: the user typed it.
func (s *Surfaces) CheckAction(a Action) error {
	sf, ok := s.Surface(a.SurfaceID)
	if !ok {
		return fmt.Errorf("%w: %q", ErrNoSurface, a.SurfaceID)
	}
	comp, ok := sf.Component(a.SourceComponentID)
	if !ok {
		return fmt.Errorf("%w: surface %q has no component %q", ErrNotOffered, a.SurfaceID, a.SourceComponentID)
	}
	event, ok := lookup(comp.Properties, "action", "event").(map[string]any)
	if !ok || event["name"] != a.Name {
		return fmt.Errorf("%w: %s %q has no event %q", ErrNotOffered, comp.Component, comp.ID, a.Name)
	}
	declared, _ := event["context"].(map[string]any)
	for _, key := range slices.Sorted(maps.Keys(a.Context)) {
		want, ok := declared[key]
		if !ok {
			return fmt.Errorf("%w: event %q has no context field %q", ErrNotOffered, a.Name, key)
		}
		if fixed(want) && !sameJSON(want, a.Context[key]) {
			return fmt.Errorf("%w: event %q: context field %q is not the value offered", ErrNotOffered, a.Name, key)
		}
	}
	return nil
}

// fixed reports whether a declared context value is a literal, not a
// binding or a function call.
func fixed(v any) bool {
	obj, ok := v.(map[string]any)
	if !ok {
		return true
	}
	_, path := obj["path"]
	_, call := obj["call"]
	return !path && !call
}

// sameJSON reports whether a and b encode to the same JSON value (1 and
// 1.0 are the same number).
func sameJSON(a, b any) bool {
	norm := func(v any) any {
		raw, err := json.Marshal(v)
		if err != nil {
			return v
		}
		var out any
		if json.Unmarshal(raw, &out) != nil {
			return v
		}
		return out
	}
	return reflect.DeepEqual(norm(a), norm(b))
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
// context}} as JSON, as the client sent it (Action.Sent), or, for an
// action built in Go, as this package writes it.
func ActionText(a Action) (string, error) {
	raw := []byte(a.Sent)
	if raw == nil {
		var err error
		if raw, err = json.Marshal(ClientMessage{Version: Version, Action: &a}); err != nil {
			return "", err
		}
	}
	return actionTextPrefix + string(raw), nil
}

// ActionOfText reads back the action a user message text holds
// (ActionText), with the client message as it was sent (Action.Sent),
// reporting false for any other text.
func ActionOfText(text string) (Action, bool) {
	rest, ok := strings.CutPrefix(text, actionTextPrefix)
	if !ok {
		return Action{}, false
	}
	a, err := DecodeAction([]byte(rest))
	if err != nil {
		return Action{}, false
	}
	return a, true
}
