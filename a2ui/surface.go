package a2ui

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
)

// ErrNoSurface is returned (wrapped) by [Surfaces.Apply] for a message
// about a surface that is not shown, and by [Surfaces.CheckAction] for an
// action on one: never created, deleted, or gone with its conversation.
var ErrNoSurface = errors.New("no such surface")

// ErrSurfaceExists is returned (wrapped) by [Surfaces.Apply] for a
// createSurface whose surface is shown: it must be deleted first.
var ErrSurfaceExists = errors.New("surface already exists")

// ErrDataPath is returned (wrapped) by [Surfaces.Apply] for an
// updateDataModel whose path cannot be written (through a string, or a
// word where a list wants an index).
var ErrDataPath = errors.New("data model path cannot be written")

// Surfaces is the folded state of the surfaces of one conversation: what
// applying every message so far, in order, leaves on the client. Each
// surface keeps its latest components and data model; a deleted surface is
// gone. [Surfaces.Redraw] gives the few messages that draw them all again,
// and applying those to empty Surfaces gives the same state, so the
// redraw is also how the state is stored.
//
// The zero value holds no surface. Surfaces is not safe for concurrent
// use.
type Surfaces struct {
	byID  map[string]*Surface
	order []string // surface ids in creation order
}

// Surface is one shown surface.
type Surface struct {
	create     CreateSurface
	components []Component    // in the order their ids first came
	index      map[string]int // component id → position in components
	data       any            // the data model (JSON values); starts as {}
}

// Apply applies msgs in order. It stops at the first message that cannot
// be applied (its surface is not shown, is created twice, or its data path
// cannot be written) and returns an error naming it; the messages before
// it stay applied.
func (s *Surfaces) Apply(msgs ...Message) error {
	for i, m := range msgs {
		if err := s.apply(m); err != nil {
			return fmt.Errorf("message %d (%s): %w", i, m.Kind(), err)
		}
	}
	return nil
}

func (s *Surfaces) apply(m Message) error {
	id := m.SurfaceID()
	if m.CreateSurface != nil {
		if _, ok := s.byID[id]; ok {
			return fmt.Errorf("%w: %q", ErrSurfaceExists, id)
		}
		if s.byID == nil {
			s.byID = make(map[string]*Surface)
		}
		create := *m.CreateSurface
		create.Theme = maps.Clone(create.Theme)
		s.byID[id] = &Surface{create: create, index: make(map[string]int), data: map[string]any{}}
		s.order = append(s.order, id)
		return nil
	}
	sf, ok := s.byID[id]
	if !ok {
		if m.Kind() == "" {
			return errors.New("message of no kind")
		}
		return fmt.Errorf("%w: %q", ErrNoSurface, id)
	}
	switch {
	case m.UpdateComponents != nil:
		return sf.update(m.UpdateComponents.Components)
	case m.UpdateDataModel != nil:
		return sf.setData(m.UpdateDataModel)
	default: // deleteSurface
		delete(s.byID, id)
		for i, sid := range s.order {
			if sid == id {
				s.order = append(s.order[:i:i], s.order[i+1:]...)
				break
			}
		}
		return nil
	}
}

// update adds or replaces components, each as a JSON value of its own.
func (sf *Surface) update(components []Component) error {
	for _, c := range components {
		own, err := ownComponent(c)
		if err != nil {
			return err
		}
		if i, ok := sf.index[c.ID]; ok {
			sf.components[i] = own
			continue
		}
		sf.index[c.ID] = len(sf.components)
		sf.components = append(sf.components, own)
	}
	return nil
}

// ownComponent returns a copy of c whose properties are plain JSON values
// (whatever Go values the caller built it from), shared with nobody.
func ownComponent(c Component) (Component, error) {
	raw, err := json.Marshal(c.Properties)
	if err != nil {
		return Component{}, fmt.Errorf("component %q: %w", c.ID, err)
	}
	var props map[string]any
	if err := decodeJSON(raw, &props); err != nil {
		return Component{}, fmt.Errorf("component %q: %w", c.ID, err)
	}
	if props == nil {
		props = map[string]any{}
	}
	return Component{ID: c.ID, Component: c.Component, Properties: props}, nil
}

func (sf *Surface) setData(u *UpdateDataModel) error {
	var value any
	remove := u.Value == nil
	if !remove {
		if err := decodeJSON(u.Value, &value); err != nil {
			return fmt.Errorf("data model value: %w", err)
		}
	}
	data, err := setPointer(sf.data, u.Path, value, remove)
	if err != nil {
		return err
	}
	sf.data = data
	return nil
}

// Surface returns the shown surface id.
func (s *Surfaces) Surface(id string) (*Surface, bool) {
	sf, ok := s.byID[id]
	return sf, ok
}

// IDs returns the ids of the shown surfaces, in the order they were
// created.
func (s *Surfaces) IDs() []string { return append([]string(nil), s.order...) }

// Redraw returns the messages that draw every shown surface as it is, in
// creation order (see [Surface.Redraw]).
func (s *Surfaces) Redraw() []Message {
	var msgs []Message
	for _, id := range s.order {
		msgs = append(msgs, s.byID[id].Redraw()...)
	}
	return msgs
}

// Clone returns a copy of s that shares nothing with it.
func (s *Surfaces) Clone() *Surfaces {
	c := &Surfaces{}
	// Redraw's messages always apply to empty Surfaces.
	_ = c.Apply(s.Redraw()...)
	return c
}

// ID returns the surface's id.
func (sf *Surface) ID() string { return sf.create.SurfaceID }

// CatalogID returns the catalog the surface was created with.
func (sf *Surface) CatalogID() string { return sf.create.CatalogID }

// Component returns the surface's component id.
func (sf *Surface) Component(id string) (Component, bool) {
	i, ok := sf.index[id]
	if !ok {
		return Component{}, false
	}
	return sf.components[i], true
}

// Data returns the value at path in the surface's data model (nil when
// there is none); path "" or "/" is the whole model.
func (sf *Surface) Data(path string) any { return getPointer(sf.data, path) }

// Redraw returns the minimal messages that draw the surface as it is:
// createSurface, updateComponents with every component (when it has any),
// and updateDataModel with the whole data model (when it is not empty).
func (sf *Surface) Redraw() []Message {
	create := sf.create
	create.Theme = maps.Clone(create.Theme)
	msgs := []Message{{Version: Version, CreateSurface: &create}}
	if len(sf.components) > 0 {
		components := make([]Component, len(sf.components))
		for i, c := range sf.components {
			// Properties hold JSON values only: the copy cannot fail.
			components[i], _ = ownComponent(c)
		}
		msgs = append(msgs, NewUpdateComponents(sf.ID(), components...))
	}
	if reflect.DeepEqual(sf.data, map[string]any{}) {
		return msgs
	}
	u := &UpdateDataModel{SurfaceID: sf.ID(), Path: "/"}
	if sf.data != nil {
		// The model holds only values decoded from JSON.
		u.Value, _ = json.Marshal(sf.data)
	}
	return append(msgs, Message{Version: Version, UpdateDataModel: u})
}
