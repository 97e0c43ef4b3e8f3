package a2ui

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// Version is the protocol version Baton writes in the messages it builds.
// A2UI v0.9.1 keeps "v0.9" on the wire for compatibility; messages that say
// "v0.9.1" are read as well.
const Version = "v0.9"

// BasicCatalogID names the basic catalog in createSurface. v0.9.1 keeps the
// v0.9 identifier, and it is the one the web renderer registers.
const BasicCatalogID = "https://a2ui.org/specification/v0_9/catalogs/basic/catalog.json"

// Message is one agent-to-client message: exactly one of its four fields is
// set. Its JSON is the protocol's: {"version": ..., "<kind>": {...}}.
type Message struct {
	Version          string            `json:"version"`
	CreateSurface    *CreateSurface    `json:"createSurface,omitempty"`
	UpdateComponents *UpdateComponents `json:"updateComponents,omitempty"`
	UpdateDataModel  *UpdateDataModel  `json:"updateDataModel,omitempty"`
	DeleteSurface    *DeleteSurface    `json:"deleteSurface,omitempty"`
}

// The four kinds of Message, as their JSON keys spell them.
const (
	KindCreateSurface    = "createSurface"
	KindUpdateComponents = "updateComponents"
	KindUpdateDataModel  = "updateDataModel"
	KindDeleteSurface    = "deleteSurface"
)

// CreateSurface opens a surface drawn with the components of CatalogID.
type CreateSurface struct {
	SurfaceID string         `json:"surfaceId"`
	CatalogID string         `json:"catalogId"`
	Theme     map[string]any `json:"theme,omitempty"`
	// SendDataModel asks the client to send the surface's data model with
	// every message it sends the agent.
	SendDataModel bool `json:"sendDataModel,omitempty"`
}

// UpdateComponents adds components to a surface, or replaces those with
// the same ids.
type UpdateComponents struct {
	SurfaceID  string      `json:"surfaceId"`
	Components []Component `json:"components"`
}

// UpdateDataModel sets the value at Path (a JSON Pointer; "" or "/" is the
// whole model). A nil Value removes what is at Path; JSON null sets null.
type UpdateDataModel struct {
	SurfaceID string          `json:"surfaceId"`
	Path      string          `json:"path,omitempty"`
	Value     json.RawMessage `json:"value,omitempty"`
}

// DeleteSurface removes a surface, its components and its data.
type DeleteSurface struct {
	SurfaceID string `json:"surfaceId"`
}

// Component is one entry of a surface's flat component list: its id, its
// catalog type (Component, e.g. "Button") and the type's properties, which
// are JSON values (string, json.Number or float64, bool, nil, []any,
// map[string]any). Its JSON is flat: {"id", "component", ...Properties}.
type Component struct {
	ID         string
	Component  string
	Properties map[string]any
}

// MarshalJSON writes the component as one flat object.
func (c Component) MarshalJSON() ([]byte, error) {
	flat := make(map[string]any, len(c.Properties)+2)
	for k, v := range c.Properties {
		flat[k] = v
	}
	flat["id"] = c.ID
	flat["component"] = c.Component
	return json.Marshal(flat)
}

// UnmarshalJSON reads a flat component object; numbers stay json.Number.
func (c *Component) UnmarshalJSON(data []byte) error {
	var flat map[string]any
	if err := decodeJSON(data, &flat); err != nil {
		return err
	}
	if flat == nil {
		return errors.New("component is not an object")
	}
	id, _ := flat["id"].(string)
	typ, _ := flat["component"].(string)
	delete(flat, "id")
	delete(flat, "component")
	*c = Component{ID: id, Component: typ, Properties: flat}
	return nil
}

// Kind returns which of the four kinds m is ("" when none is set).
func (m Message) Kind() string {
	switch {
	case m.CreateSurface != nil:
		return KindCreateSurface
	case m.UpdateComponents != nil:
		return KindUpdateComponents
	case m.UpdateDataModel != nil:
		return KindUpdateDataModel
	case m.DeleteSurface != nil:
		return KindDeleteSurface
	}
	return ""
}

// SurfaceID returns the surface m is about.
func (m Message) SurfaceID() string {
	switch {
	case m.CreateSurface != nil:
		return m.CreateSurface.SurfaceID
	case m.UpdateComponents != nil:
		return m.UpdateComponents.SurfaceID
	case m.UpdateDataModel != nil:
		return m.UpdateDataModel.SurfaceID
	case m.DeleteSurface != nil:
		return m.DeleteSurface.SurfaceID
	}
	return ""
}

// NewCreateSurface returns a createSurface for surfaceID with the basic
// catalog.
func NewCreateSurface(surfaceID string) Message {
	return Message{Version: Version, CreateSurface: &CreateSurface{SurfaceID: surfaceID, CatalogID: BasicCatalogID}}
}

// NewUpdateComponents returns an updateComponents for surfaceID.
func NewUpdateComponents(surfaceID string, components ...Component) Message {
	return Message{Version: Version, UpdateComponents: &UpdateComponents{SurfaceID: surfaceID, Components: components}}
}

// NewUpdateDataModel returns an updateDataModel that sets value, encoded as
// JSON, at path.
func NewUpdateDataModel(surfaceID, path string, value any) (Message, error) {
	raw, err := json.Marshal(value)
	if err != nil {
		return Message{}, fmt.Errorf("data model value at %q: %w", path, err)
	}
	return Message{Version: Version, UpdateDataModel: &UpdateDataModel{SurfaceID: surfaceID, Path: path, Value: raw}}, nil
}

// NewDeleteSurface returns a deleteSurface for surfaceID.
func NewDeleteSurface(surfaceID string) Message {
	return Message{Version: Version, DeleteSurface: &DeleteSurface{SurfaceID: surfaceID}}
}

// ClientMessage is one client-to-agent message: an action, or an error the
// client reports.
type ClientMessage struct {
	Version string       `json:"version"`
	Action  *Action      `json:"action,omitempty"`
	Error   *ClientError `json:"error,omitempty"`
}

// Action reports a press on a component whose action is an event: the
// event's Name, the surface and component it came from, when, and the
// event's declared context with its bindings resolved by the client.
type Action struct {
	Name              string `json:"name"`
	SurfaceID         string `json:"surfaceId"`
	SourceComponentID string `json:"sourceComponentId"`
	// Timestamp is the press's time as the client wrote it, an RFC 3339
	// date-time (the schema checks it); nothing here reads its value, so
	// none of the forms RFC 3339 allows and Go's time.Parse does not (a
	// lower-case t or z, a leap second) is refused or rewritten.
	Timestamp string         `json:"timestamp"`
	Context   map[string]any `json:"context"`
	// Sent is the client message that carried the action, as its client
	// sent it, without the whitespace between its tokens (DecodeAction); nil
	// for an action built in Go. ActionText gives the model these bytes.
	Sent json.RawMessage `json:"-"`
}

// MarshalJSON writes the action; a nil Context is written as {}.
func (a Action) MarshalJSON() ([]byte, error) {
	type plain Action
	if a.Context == nil {
		a.Context = map[string]any{}
	}
	return json.Marshal(plain(a))
}

// ClientError is an error the client reports about a surface (code
// VALIDATION_FAILED carries the JSON Pointer Path that failed).
type ClientError struct {
	Code      string `json:"code"`
	SurfaceID string `json:"surfaceId"`
	Path      string `json:"path,omitempty"`
	Message   string `json:"message"`
}

// decodeJSON decodes data into v keeping numbers as json.Number, so that a
// value read and written again keeps its text.
func decodeJSON(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("trailing data after JSON value")
	}
	return nil
}
