package a2ui

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// jsonOf returns v's JSON decoded as plain values, to compare messages as
// the wire sees them.
func jsonOf(t *testing.T, v any) any {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("json.Marshal(%v) error = %v", v, err)
	}
	var out any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func parseJSON(t *testing.T, s string) any {
	t.Helper()
	var out any
	if err := json.Unmarshal([]byte(s), &out); err != nil {
		t.Fatalf("json.Unmarshal(%s) error = %v", s, err)
	}
	return out
}

// Applying messages in order leaves each surface's latest components and
// data model; its redraw is three messages, and applying the redraw to
// empty Surfaces gives the same state.
func TestSurfacesFold(t *testing.T) {
	c := basicCatalog(t)
	var s Surfaces
	steps := []string{
		list(createS, drawWith(`{"id":"root","component":"Column","children":["t"]}`, `{"id":"t","component":"Text","text":{"path":"/greeting"}}`),
			setData("/greeting", `"Hello"`), setData("/items", `[1, 2]`)),
		list(drawWith(`{"id":"t","component":"Text","text":"Bye","variant":"h1"}`), setData("/items/3", `4`), setData("/greeting", `null`),
			`{"version":"v0.9","updateDataModel":{"surfaceId":"s","path":"/items/0"}}`,
			`{"version":"v0.9","createSurface":{"surfaceId":"gone","catalogId":"`+BasicCatalogID+`"}}`,
			`{"version":"v0.9","updateComponents":{"surfaceId":"gone","components":[{"id":"root","component":"Divider"}]}}`),
		list(`{"version":"v0.9","deleteSurface":{"surfaceId":"gone"}}`,
			`{"version":"v0.9","createSurface":{"surfaceId":"t","catalogId":"`+BasicCatalogID+`","theme":{"primaryColor":"#00BFFF"},"sendDataModel":true}}`,
			`{"version":"v0.9","updateComponents":{"surfaceId":"t","components":[{"id":"root","component":"Divider"}]}}`),
	}
	for _, step := range steps {
		msgs, err := c.Decode([]byte(step), &s)
		if err != nil {
			t.Fatalf("Decode(%s) error = %v", step, err)
		}
		if err := s.Apply(msgs...); err != nil {
			t.Fatalf("Apply() error = %v", err)
		}
	}
	want := parseJSON(t, `[
		{"version":"v0.9","createSurface":{"surfaceId":"s","catalogId":"`+BasicCatalogID+`"}},
		{"version":"v0.9","updateComponents":{"surfaceId":"s","components":[
			{"id":"root","component":"Column","children":["t"]},
			{"id":"t","component":"Text","text":"Bye","variant":"h1"}]}},
		{"version":"v0.9","updateDataModel":{"surfaceId":"s","path":"/","value":{"greeting":null,"items":[null,2,null,4]}}},
		{"version":"v0.9","createSurface":{"surfaceId":"t","catalogId":"`+BasicCatalogID+`","theme":{"primaryColor":"#00BFFF"},"sendDataModel":true}},
		{"version":"v0.9","updateComponents":{"surfaceId":"t","components":[{"id":"root","component":"Divider"}]}}
	]`)
	redraw := s.Redraw()
	if diff := cmp.Diff(want, jsonOf(t, redraw)); diff != "" {
		t.Errorf("Redraw() mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"s", "t"}, s.IDs()); diff != "" {
		t.Errorf("IDs() mismatch (-want +got):\n%s", diff)
	}
	if _, ok := s.Surface("gone"); ok {
		t.Errorf("Surface(%q) found a deleted surface", "gone")
	}
	if err := c.Validate(redraw, nil); err != nil {
		t.Errorf("Validate(Redraw()) error = %v, want nil", err)
	}
	var again Surfaces
	if err := again.Apply(redraw...); err != nil {
		t.Fatalf("Apply(Redraw()) error = %v", err)
	}
	if diff := cmp.Diff(jsonOf(t, redraw), jsonOf(t, again.Redraw())); diff != "" {
		t.Errorf("Redraw() after Apply(Redraw()) mismatch (-want +got):\n%s", diff)
	}
	sf, _ := s.Surface("s")
	if got := sf.Data("/items/1"); got != json.Number("2") {
		t.Errorf("Data(/items/1) = %#v, want 2", got)
	}
}

// What Redraw returns and what Clone copies share nothing with the state.
func TestSurfacesShareNothing(t *testing.T) {
	var s Surfaces
	root := Component{ID: "root", Component: "Column", Properties: map[string]any{"children": []any{"a"}}}
	if err := s.Apply(NewCreateSurface("s"), NewUpdateComponents("s", root)); err != nil {
		t.Fatal(err)
	}
	root.Properties["children"].([]any)[0] = "changed by the caller"
	clone := s.Clone()
	s.Redraw()[1].UpdateComponents.Components[0].Properties["children"].([]any)[0] = "changed by a reader"
	if err := clone.Apply(NewDeleteSurface("s")); err != nil {
		t.Fatal(err)
	}
	sf, ok := s.Surface("s")
	if !ok {
		t.Fatalf("Surface(s) gone after the clone's delete")
	}
	got, _ := sf.Component("root")
	if diff := cmp.Diff([]any{"a"}, got.Properties["children"]); diff != "" {
		t.Errorf("children mismatch (-want +got):\n%s", diff)
	}
}

func TestSurfacesApplyErrors(t *testing.T) {
	value, err := NewUpdateDataModel("s", "/a/b", 1)
	if err != nil {
		t.Fatal(err)
	}
	text, _ := NewUpdateDataModel("s", "/a", "text")
	tests := []struct {
		name string
		msgs []Message
		want error
	}{
		{name: "update before create", msgs: []Message{NewUpdateComponents("s")}, want: ErrNoSurface},
		{name: "delete unknown", msgs: []Message{NewDeleteSurface("s")}, want: ErrNoSurface},
		{name: "create twice", msgs: []Message{NewCreateSurface("s"), NewCreateSurface("s")}, want: ErrSurfaceExists},
		{name: "through a string", msgs: []Message{NewCreateSurface("s"), text, value}, want: ErrDataPath},
		{name: "a word on a list", msgs: []Message{NewCreateSurface("s"), mustData(t, "/l", []int{1}), mustData(t, "/l/x", 1)}, want: ErrDataPath},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s Surfaces
			if err := s.Apply(tt.msgs...); !errors.Is(err, tt.want) {
				t.Errorf("Apply() error = %v, want %v", err, tt.want)
			}
		})
	}
}

func mustData(t *testing.T, path string, value any) Message {
	t.Helper()
	m, err := NewUpdateDataModel("s", path, value)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// Data model writes follow the web renderer's rules.
func TestSetPointer(t *testing.T) {
	tests := []struct {
		name  string
		root  string
		path  string
		value string // "" removes
		want  string
	}{
		{name: "whole model", root: `{"a":1}`, path: "/", value: `{"b":2}`, want: `{"b":2}`},
		{name: "whole model, no path", root: `{"a":1}`, path: "", value: `[1]`, want: `[1]`},
		{name: "remove the model", root: `{"a":1}`, path: "/", want: `null`},
		{name: "new key", root: `{}`, path: "/a", value: `1`, want: `{"a":1}`},
		{name: "objects created", root: `{}`, path: "/a/b/c", value: `true`, want: `{"a":{"b":{"c":true}}}`},
		{name: "list created for an index", root: `{}`, path: "/a/1", value: `"x"`, want: `{"a":[null,"x"]}`},
		{name: "list grows", root: `{"a":[1]}`, path: "/a/2", value: `3`, want: `{"a":[1,null,3]}`},
		{name: "remove a key", root: `{"a":1,"b":2}`, path: "/a", want: `{"b":2}`},
		{name: "remove from a list leaves null", root: `{"a":[1,2]}`, path: "/a/0", want: `{"a":[null,2]}`},
		{name: "escaped segments", root: `{}`, path: "/a~1b/c~0d", value: `1`, want: `{"a/b":{"c~d":1}}`},
		{name: "relative is absolute", root: `{}`, path: "a/b", value: `1`, want: `{"a":{"b":1}}`},
		{name: "set null", root: `{"a":1}`, path: "/a", value: `null`, want: `{"a":null}`},
		{name: "into null", root: `{"a":null}`, path: "/a/b", value: `1`, want: `{"a":{"b":1}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var value any
			if tt.value != "" {
				value = parseJSON(t, tt.value)
			}
			got, err := setPointer(parseJSON(t, tt.root), tt.path, value, tt.value == "")
			if err != nil {
				t.Fatalf("setPointer() error = %v", err)
			}
			if diff := cmp.Diff(parseJSON(t, tt.want), got); diff != "" {
				t.Errorf("setPointer() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// Messages and actions read and write the protocol's JSON, field for
// field.
func TestMessageRoundTrip(t *testing.T) {
	messages := `[
		{"version":"v0.9","createSurface":{"surfaceId":"booking","catalogId":"` + BasicCatalogID + `","theme":{"primaryColor":"#112233","agentDisplayName":"Concierge"},"sendDataModel":true}},
		{"version":"v0.9","updateComponents":{"surfaceId":"booking","components":[
			{"id":"root","component":"Card","child":"form","weight":1.5},
			{"id":"form","component":"Column","children":["when","book"],"accessibility":{"label":"Booking"}},
			{"id":"when","component":"DateTimeInput","value":{"path":"/booking/date"},"enableDate":true},
			{"id":"book","component":"Button","child":"book_text","action":{"event":{"name":"book","context":{"date":{"path":"/booking/date"},"table":12}}}}]}},
		{"version":"v0.9.1","updateDataModel":{"surfaceId":"booking","path":"/booking","value":{"date":"2026-12-24","size":4.0}}},
		{"version":"v0.9","updateDataModel":{"surfaceId":"booking","path":"/booking/size","value":null}},
		{"version":"v0.9","updateDataModel":{"surfaceId":"booking","path":"/booking/size"}},
		{"version":"v0.9","deleteSurface":{"surfaceId":"booking"}}
	]`
	var msgs []Message
	if err := json.Unmarshal([]byte(messages), &msgs); err != nil {
		t.Fatalf("json.Unmarshal(messages) error = %v", err)
	}
	if diff := cmp.Diff(parseJSON(t, messages), jsonOf(t, msgs)); diff != "" {
		t.Errorf("messages round trip mismatch (-want +got):\n%s", diff)
	}
	out, _ := json.Marshal(msgs)
	for _, keep := range []string{`"size":4.0`, `"value":null`, `"weight":1.5`} {
		if !strings.Contains(string(out), keep) {
			t.Errorf("round trip lost %s: %s", keep, out)
		}
	}
	if diff := cmp.Diff([]string{KindCreateSurface, KindUpdateComponents, KindUpdateDataModel, KindUpdateDataModel, KindUpdateDataModel, KindDeleteSurface},
		[]string{msgs[0].Kind(), msgs[1].Kind(), msgs[2].Kind(), msgs[3].Kind(), msgs[4].Kind(), msgs[5].Kind()}); diff != "" {
		t.Errorf("Kind() mismatch (-want +got):\n%s", diff)
	}

	client := `[
		{"version":"v0.9","action":{"name":"book","surfaceId":"booking","sourceComponentId":"book","timestamp":"2026-12-01T10:11:12.345Z","context":{"date":"2026-12-24","table":12}}},
		{"version":"v0.9","error":{"code":"VALIDATION_FAILED","surfaceId":"booking","path":"/components/0/text","message":"Expected a string"}}
	]`
	var cms []ClientMessage
	if err := json.Unmarshal([]byte(client), &cms); err != nil {
		t.Fatalf("json.Unmarshal(client messages) error = %v", err)
	}
	if diff := cmp.Diff(parseJSON(t, client), jsonOf(t, cms)); diff != "" {
		t.Errorf("client messages round trip mismatch (-want +got):\n%s", diff)
	}
	empty := jsonOf(t, Action{Name: "go", SurfaceID: "s", SourceComponentID: "b"}).(map[string]any)
	if diff := cmp.Diff(map[string]any{}, empty["context"]); diff != "" {
		t.Errorf("nil context mismatch (-want +got):\n%s", diff)
	}
}
