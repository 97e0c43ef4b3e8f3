package a2ui

import (
	"encoding/json"
	"errors"
	"iter"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/adk/v2/session"
	"google.golang.org/genai"
)

// eventList is a conversation's events, as a session holds them.
type eventList []*session.Event

func (l eventList) All() iter.Seq[*session.Event] {
	return func(yield func(*session.Event) bool) {
		for _, ev := range l {
			if !yield(ev) {
				return
			}
		}
	}
}
func (l eventList) Len() int                { return len(l) }
func (l eventList) At(i int) *session.Event { return l[i] }

// conversation builds events the way a Team stores them: each model call
// decided against the events before it and noted in its event, each
// answer a function response.
type conversation struct {
	t      *testing.T
	c      *Catalog
	events eventList
}

// call stores a model's call id of show_surface with messages (JSON).
func (cv *conversation) call(id, messages string, wait bool) Shown {
	cv.t.Helper()
	var msgs any
	if err := json.Unmarshal([]byte(messages), &msgs); err != nil {
		cv.t.Fatal(err)
	}
	ev := session.NewEvent(cv.t.Context(), "inv")
	ev.Content = genai.NewContentFromFunctionCall("show_surface", map[string]any{"messages": msgs, "wait": wait}, genai.RoleModel)
	ev.Content.Parts[0].FunctionCall.ID = id
	shown, _ := cv.c.Decide(cv.events, id, ev.Content.Parts[0].FunctionCall.Args)
	if shown.Error != "" {
		cv.t.Fatalf("Decide(%s) refused: %s", messages, shown.Error)
	}
	Note(ev, shown)
	cv.events = append(cv.events, ev)
	return shown
}

// answer stores the response to call id.
func (cv *conversation) answer(id string, response map[string]any) {
	ev := session.NewEvent(cv.t.Context(), "inv")
	ev.Content = genai.NewContentFromFunctionResponse("show_surface", response, genai.RoleUser)
	ev.Content.Parts[0].FunctionResponse.ID = id
	cv.events = append(cv.events, ev)
}

// drawnSummary is what a test compares of a Drawn surface.
type drawnSummary struct {
	ID, CallID string
	First      int
	Deleted    bool
	Data       any // the whole data model
}

func summarize(t *testing.T, drawn []Drawn) []drawnSummary {
	t.Helper()
	var out []drawnSummary
	for _, d := range drawn {
		sum := drawnSummary{ID: d.SurfaceID, CallID: d.CallID, First: d.First, Deleted: d.Deleted()}
		if !d.Deleted() {
			s := &Surfaces{}
			if err := s.Apply(d.Messages...); err != nil {
				t.Fatalf("Apply(%s's messages) error = %v", d.SurfaceID, err)
			}
			sf, _ := s.Surface(d.SurfaceID)
			sum.Data = jsonOf(t, sf.Data("/"))
		}
		out = append(out, sum)
	}
	return out
}

const bookAction = `{"name":"book","surfaceId":"booking","sourceComponentId":"book","timestamp":"2026-12-01T10:11:12Z",
	"context":{"date":"2026-12-24","size":"4","terrace":true,"restaurant":"r-17"}}`

// A surface shown, updated by a later call and deleted: each is drawn
// once, where it was first shown, as it last was; a form answered shows
// what was submitted; Fold holds the latest state (it kept the first
// drawing when a later call redrew a surface).
func TestDrawnIn(t *testing.T) {
	cv := &conversation{t: t, c: basicCatalog(t)}
	cv.call("c1", bookingForm, true)
	cv.call("c2", list(createS, drawWith(`{"id":"root","component":"Text","text":{"path":"/greeting"}}`), setData("/greeting", `"Hello"`)), false)
	afterCard := len(cv.events)
	cv.call("c3", list(setData("/greeting", `"Bye"`)), false)
	afterUpdate := len(cv.events)
	var action any
	if err := json.Unmarshal([]byte(bookAction), &action); err != nil {
		t.Fatal(err)
	}
	cv.answer("c1", map[string]any{"action": action})
	afterAnswer := len(cv.events)
	cv.call("c4", list(deleteS), false)

	bookingData := map[string]any{"booking": map[string]any{"date": "", "size": "2", "terrace": false}}
	submittedData := map[string]any{"booking": map[string]any{"date": "2026-12-24", "size": "4", "terrace": true}}
	tests := []struct {
		name   string
		events int
		want   []drawnSummary
	}{
		{"shown", afterCard, []drawnSummary{
			{ID: "booking", CallID: "c1", Data: bookingData},
			{ID: "s", First: 1, Data: map[string]any{"greeting": "Hello"}}}},
		{"updated by a later call", afterUpdate, []drawnSummary{
			{ID: "booking", CallID: "c1", Data: bookingData},
			{ID: "s", First: 1, Data: map[string]any{"greeting": "Bye"}}}},
		{"form answered", afterAnswer, []drawnSummary{
			{ID: "booking", CallID: "c1", Data: submittedData},
			{ID: "s", First: 1, Data: map[string]any{"greeting": "Bye"}}}},
		{"deleted", len(cv.events), []drawnSummary{
			{ID: "booking", CallID: "c1", Data: submittedData},
			{ID: "s", First: 1, Deleted: true}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			events := cv.events[:tt.events]
			if diff := cmp.Diff(tt.want, summarize(t, DrawnIn(events))); diff != "" {
				t.Errorf("DrawnIn() mismatch (-want +got):\n%s", diff)
			}
			folded := Fold(events)
			var ids []string
			for _, d := range tt.want {
				if !d.Deleted {
					ids = append(ids, d.ID)
				}
			}
			if diff := cmp.Diff(ids, folded.IDs()); diff != "" {
				t.Errorf("Fold().IDs() mismatch (-want +got):\n%s", diff)
			}
			if sf, ok := folded.Surface("s"); ok {
				if got, want := sf.Data("/greeting"), tt.want[1].Data.(map[string]any)["greeting"]; got != want {
					t.Errorf("Fold(): /greeting = %v, want %v", got, want)
				}
			}
		})
	}
}

// An action sent as a new message is checked against the surfaces as
// they last were.
func TestCheckCardAction(t *testing.T) {
	cv := &conversation{t: t, c: basicCatalog(t)}
	cv.call("c1", bookingForm, true)
	card := list(createS, drawWith(`{"id":"root","component":"Column","children":["more"]}`,
		`{"id":"more_text","component":"Text","text":"More"}`,
		`{"id":"more","component":"Button","child":"more_text","action":{"event":{"name":"more","context":{"topic":"menu","note":{"path":"/note"}}}}}`))
	cv.call("c2", card, false)
	shown := cv.events
	cv.call("c3", list(deleteS), false)
	deleted := cv.events
	tests := []struct {
		name   string
		events eventList
		action string
		want   error
	}{
		{"offered", shown, `{"name":"more","surfaceId":"s","sourceComponentId":"more","timestamp":"2026-12-01T10:11:12Z","context":{"topic":"menu","note":"hi"}}`, nil},
		{"field not offered", shown, `{"name":"more","surfaceId":"s","sourceComponentId":"more","timestamp":"2026-12-01T10:11:12Z","context":{"price":1}}`, ErrNotOffered},
		{"fixed value changed", shown, `{"name":"more","surfaceId":"s","sourceComponentId":"more","timestamp":"2026-12-01T10:11:12Z","context":{"topic":"wine"}}`, ErrNotOffered},
		{"event not offered", shown, `{"name":"less","surfaceId":"s","sourceComponentId":"more","timestamp":"2026-12-01T10:11:12Z","context":{}}`, ErrNotOffered},
		{"never shown", shown, `{"name":"more","surfaceId":"other","sourceComponentId":"more","timestamp":"2026-12-01T10:11:12Z","context":{}}`, ErrNoSurface},
		{"deleted", deleted, `{"name":"more","surfaceId":"s","sourceComponentId":"more","timestamp":"2026-12-01T10:11:12Z","context":{}}`, ErrNoSurface},
		{"taken back", shown[:1], `{"name":"more","surfaceId":"s","sourceComponentId":"more","timestamp":"2026-12-01T10:11:12Z","context":{}}`, ErrNoSurface},
		{"a form's action", shown, bookAction, ErrSurfaceWaits},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := DecodeAction([]byte(`{"version":"v0.9","action":` + tt.action + `}`))
			if err != nil {
				t.Fatal(err)
			}
			if err := CheckCardAction(tt.events, a); !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
				t.Errorf("CheckCardAction() error = %v, want %v", err, tt.want)
			}
		})
	}
}

// A waiting call's answer is the action as a renderer reports it; the
// client message around it, or anything else, is refused.
func TestCheckAnswer(t *testing.T) {
	surfaces := [][]Message{bookingSurfaces(t).Redraw()}
	var action any
	if err := json.Unmarshal([]byte(bookAction), &action); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		output map[string]any
		want   error
	}{
		{"the action", map[string]any{"action": action}, nil},
		{"the client message", map[string]any{"action": ClientMessageOf(action)}, ErrInvalid},
		{"no action", map[string]any{"ok": true}, ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := CheckAnswer(surfaces, tt.output)
			if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
				t.Fatalf("CheckAnswer() error = %v, want %v", err, tt.want)
			}
			if err == nil && (got.Name != "book" || got.Context["size"] != "4") {
				t.Errorf("CheckAnswer() = %+v, want the book action", got)
			}
		})
	}
}

// The text a card's action becomes reads back as the action.
func TestActionText(t *testing.T) {
	a, err := DecodeAction([]byte(`{"version":"v0.9","action":` + bookAction + `}`))
	if err != nil {
		t.Fatal(err)
	}
	text, err := ActionText(a)
	if err != nil {
		t.Fatal(err)
	}
	got, ok := ActionOfText(text)
	if !ok {
		t.Fatalf("ActionOfText(%q) = false", text)
	}
	if diff := cmp.Diff(jsonOf(t, ClientMessage{Version: Version, Action: &a}), jsonOf(t, ClientMessage{Version: Version, Action: &got})); diff != "" {
		t.Errorf("ActionOfText(ActionText()) mismatch (-want +got):\n%s", diff)
	}
	if _, ok := ActionOfText("book a table"); ok {
		t.Error("ActionOfText(plain text) = true")
	}
}
