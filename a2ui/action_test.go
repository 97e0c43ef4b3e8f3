package a2ui

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// bookingForm is a surface "booking" with a form: a date, a party size, a
// terrace box and a Book button whose event declares them and a fixed
// table id.
const bookingForm = `[
	{"version":"v0.9","createSurface":{"surfaceId":"booking","catalogId":"` + BasicCatalogID + `"}},
	{"version":"v0.9","updateComponents":{"surfaceId":"booking","components":[
		{"id":"root","component":"Card","child":"form"},
		{"id":"form","component":"Column","children":["title","date","size","terrace","book"]},
		{"id":"title","component":"Text","text":"Book a table","variant":"h2"},
		{"id":"date","component":"DateTimeInput","label":"Date","value":{"path":"/booking/date"},"enableDate":true},
		{"id":"size","component":"TextField","label":"Party size","value":{"path":"/booking/size"},"variant":"number"},
		{"id":"terrace","component":"CheckBox","label":"Terrace","value":{"path":"/booking/terrace"}},
		{"id":"book_text","component":"Text","text":"Book"},
		{"id":"book","component":"Button","child":"book_text","variant":"primary","action":{"event":{"name":"book","context":{
			"date":{"path":"/booking/date"},"size":{"path":"/booking/size"},"terrace":{"path":"/booking/terrace"},
			"restaurant":"r-17","seats":{"call":"formatString","args":{"value":"${/booking/size}"}}}}}}]}},
	{"version":"v0.9","updateDataModel":{"surfaceId":"booking","path":"/booking","value":{"date":"","size":"2","terrace":false}}}
]`

func bookingSurfaces(t *testing.T) *Surfaces {
	t.Helper()
	s := &Surfaces{}
	if err := s.Apply(mustDecode(t, basicCatalog(t), bookingForm)...); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestCheckAction(t *testing.T) {
	book := func(context map[string]any) Action {
		return Action{Name: "book", SurfaceID: "booking", SourceComponentID: "book", Timestamp: "2026-12-01T10:11:12Z", Context: context}
	}
	filled := map[string]any{"date": "2026-12-24", "size": "4", "terrace": true, "restaurant": "r-17", "seats": "4"}
	deleted := bookingSurfaces(t)
	if err := deleted.Apply(NewDeleteSurface("booking")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		surfaces *Surfaces
		action   Action
		want     error
	}{
		{name: "as offered", action: book(filled)},
		{name: "fewer fields", action: book(map[string]any{"date": "2026-12-24"})},
		{name: "no context", action: book(nil)},
		{name: "deleted surface", surfaces: deleted, action: book(filled), want: ErrNoSurface},
		{name: "other surface", action: Action{Name: "book", SurfaceID: "elsewhere", SourceComponentID: "book"}, want: ErrNoSurface},
		{name: "unknown component", action: Action{Name: "book", SurfaceID: "booking", SourceComponentID: "pay"}, want: ErrNotOffered},
		{name: "component without an event", action: Action{Name: "book", SurfaceID: "booking", SourceComponentID: "title"}, want: ErrNotOffered},
		{name: "other event name", action: Action{Name: "cancel", SurfaceID: "booking", SourceComponentID: "book"}, want: ErrNotOffered},
		{name: "field not offered", action: book(map[string]any{"date": "2026-12-24", "discount": 50}), want: ErrNotOffered},
		{name: "fixed value changed", action: book(map[string]any{"restaurant": "r-18"}), want: ErrNotOffered},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := tt.surfaces
			if s == nil {
				s = bookingSurfaces(t)
			}
			if err := s.CheckAction(tt.action); !errors.Is(err, tt.want) {
				t.Errorf("CheckAction() error = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestDecodeAction(t *testing.T) {
	got, err := DecodeAction([]byte(`{"version":"v0.9","action":{"name":"book","surfaceId":"booking","sourceComponentId":"book","timestamp":"2026-12-01T10:11:12.345Z","context":{"size":4}}}`))
	if err != nil {
		t.Fatalf("DecodeAction() error = %v", err)
	}
	want := Action{Name: "book", SurfaceID: "booking", SourceComponentID: "book",
		Timestamp: "2026-12-01T10:11:12.345Z", Context: map[string]any{"size": json.Number("4")}}
	if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(Action{}, "Sent")); diff != "" {
		t.Errorf("DecodeAction() mismatch (-want +got):\n%s", diff)
	}

	tests := []struct {
		name, input string
		want        []string
	}{
		{name: "not JSON", input: `{`, want: []string{"action: not JSON: unexpected EOF"}},
		{name: "no timestamp", input: `{"version":"v0.9","action":{"name":"book","surfaceId":"s","sourceComponentId":"b","context":{}}}`,
			want: []string{"action message: action: timestamp missing"}},
		{name: "bad timestamp", input: `{"version":"v0.9","action":{"name":"book","surfaceId":"s","sourceComponentId":"b","timestamp":"yesterday","context":{}}}`,
			want: []string{`action message: action.timestamp: "yesterday" is not a date-time`}},
		{name: "an error, not an action", input: `{"version":"v0.9","error":{"code":"X","surfaceId":"s","message":"m"}}`,
			want: []string{"action message: action missing", `action message: unknown property "error"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DecodeAction([]byte(tt.input))
			if diff := cmp.Diff(tt.want, problemsOf(t, err)); diff != "" {
				t.Errorf("DecodeAction() problems mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestActionTimestamps: every timestamp RFC 3339 allows, as the schema
// checks it, is taken (T and Z in either case, a leap second); what it
// does not allow is ErrInvalid, never an error of the server.
func TestActionTimestamps(t *testing.T) {
	action := func(ts string) []byte {
		return []byte(`{"version":"v0.9","action":{"name":"book","surfaceId":"s","sourceComponentId":"b","timestamp":"` + ts + `","context":{}}}`)
	}
	for _, ts := range []string{"2026-12-01T10:11:12Z", "2026-12-01t10:11:12Z", "2026-12-01T10:11:12z", "2026-12-31T23:59:60Z",
		"2026-12-01T10:11:12.340+01:00", "2026-12-01T10:11:12.000Z"} {
		if _, err := DecodeAction(action(ts)); err != nil {
			t.Errorf("DecodeAction(timestamp %s) error = %v, want none", ts, err)
		}
	}
	for _, ts := range []string{"yesterday", "2026-12-01 10:11:12Z", "2026-13-01T10:11:12Z", "2026-12-01T25:11:12Z"} {
		if _, err := DecodeAction(action(ts)); !errors.Is(err, ErrInvalid) {
			t.Errorf("DecodeAction(timestamp %s) error = %v, want ErrInvalid", ts, err)
		}
	}
}

// TestActionVerbatim: the text a card's action becomes holds the client
// message as the client sent it, whitespace aside: the timestamp's digits,
// the version, the context's order and numbers.
func TestActionVerbatim(t *testing.T) {
	for _, sent := range []string{
		`{"version":"v0.9.1","action":{"name":"book","surfaceId":"s","sourceComponentId":"b","timestamp":"2026-12-01T10:11:12.340Z","context":{}}}`,
		`{"version":"v0.9","action":{"name":"book","surfaceId":"s","sourceComponentId":"b","timestamp":"2026-12-01T10:11:12.000Z","context":{"z":1.50,"a":"x"}}}`,
		`{"action":{"context":{"size":4e0},"timestamp":"2026-12-01t10:11:12z","sourceComponentId":"b","surfaceId":"s","name":"book"},
		  "version":"v0.9"}`,
	} {
		a, err := DecodeAction([]byte(sent))
		if err != nil {
			t.Fatalf("DecodeAction(%s) error = %v", sent, err)
		}
		text, err := ActionText(a)
		if err != nil {
			t.Fatal(err)
		}
		var want bytes.Buffer
		if err := json.Compact(&want, []byte(sent)); err != nil {
			t.Fatal(err)
		}
		if text != actionTextPrefix+want.String() {
			t.Errorf("ActionText(%s) = %q, want the message as sent", sent, text)
		}
	}
}
