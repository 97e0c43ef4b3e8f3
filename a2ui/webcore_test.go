package a2ui

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/baton-run/baton/internal/webcore"
)

// webState is s as the web renderer's model holds it, to compare with
// what a2ui.mjs reads.
func webState(t *testing.T, s *Surfaces) map[string]webcore.Surface {
	t.Helper()
	out := make(map[string]webcore.Surface)
	for _, id := range s.IDs() {
		sf, _ := s.Surface(id)
		ws := webcore.Surface{Components: make(map[string]map[string]any), Data: jsonOf(t, sf.Data("/"))}
		for _, c := range sf.components {
			ws.Components[c.ID] = jsonOf(t, c).(map[string]any)
			delete(ws.Components[c.ID], "id")
		}
		out[id] = ws
	}
	return out
}

// What Baton's Go code produces, read by @a2ui/web_core's own v0.9
// parsing and message processor: a form (then pressed, and the action it
// sends checked by Baton), a card built with the constructors, and the
// redraw of a surface folded from a stream of updates, which the renderer
// must draw exactly as it draws the stream itself. A message Baton rejects
// the renderer rejects too.
func TestWebCoreReadsBaton(t *testing.T) {
	c := basicCatalog(t)
	form := mustDecode(t, c, bookingForm)
	var formState Surfaces
	if err := formState.Apply(form...); err != nil {
		t.Fatal(err)
	}

	card := []Message{
		NewCreateSurface("card"),
		NewUpdateComponents("card",
			Component{ID: "root", Component: "Card", Properties: map[string]any{"child": "body"}},
			Component{ID: "body", Component: "Column", Properties: map[string]any{"children": []string{"pic", "name", "line", "meta"}}},
			Component{ID: "pic", Component: "Image", Properties: map[string]any{"url": "https://example.com/r.jpg", "variant": "header", "fit": "cover"}},
			Component{ID: "name", Component: "Text", Properties: map[string]any{"text": map[string]any{"path": "/name"}, "variant": "h3"}},
			Component{ID: "line", Component: "Divider", Properties: nil},
			Component{ID: "meta", Component: "Row", Properties: map[string]any{"children": []string{"icon", "rating"}, "align": "center"}},
			Component{ID: "icon", Component: "Icon", Properties: map[string]any{"name": "star"}},
			Component{ID: "rating", Component: "Text", Properties: map[string]any{"text": map[string]any{
				"call": "formatString", "args": map[string]any{"value": "${/rating} of 5"}, "returnType": "string"}}},
		),
		mustData(t, "/", map[string]any{"name": "Chez Baton", "rating": 4.5}),
	}
	for i := range card {
		card[i].UpdateDataModel = withSurface(card[i].UpdateDataModel, "card")
	}
	if err := c.Validate(card, nil); err != nil {
		t.Fatalf("Validate(card) error = %v", err)
	}

	var stream []Message
	stream = append(stream, form...)
	more, err := c.Decode([]byte(`[
		{"version":"v0.9","updateComponents":{"surfaceId":"booking","components":[
			{"id":"title","component":"Text","text":"Table for ${/booking/size}","variant":"h3"},
			{"id":"note","component":"Text","text":{"path":"/note"}}]}},
		{"version":"v0.9","updateComponents":{"surfaceId":"booking","components":[
			{"id":"form","component":"Column","children":["title","note","date","size","terrace","book"]}]}},
		{"version":"v0.9","updateDataModel":{"surfaceId":"booking","path":"/booking/size","value":"6"}},
		{"version":"v0.9","updateDataModel":{"surfaceId":"booking","path":"/note","value":"Window seats"}},
		{"version":"v0.9","updateDataModel":{"surfaceId":"booking","path":"/booking/terrace"}}
	]`), &formState)
	if err != nil {
		t.Fatalf("Decode(updates) error = %v", err)
	}
	stream = append(stream, more...)
	var folded Surfaces
	if err := folded.Apply(stream...); err != nil {
		t.Fatal(err)
	}

	rejected := []Message{NewCreateSurface("bad"), NewUpdateComponents("bad",
		Component{ID: "root", Component: "Text", Properties: map[string]any{"text": 42}})}
	if err := c.Validate(rejected, nil); !errors.Is(err, ErrInvalid) {
		t.Fatalf("Validate(Text of a number) error = %v, want ErrInvalid", err)
	}

	results := webcore.Run(t, []webcore.Case{
		{Name: "form", Messages: form, Press: &webcore.Press{SurfaceID: "booking", ComponentID: "book",
			Set: map[string]any{"/booking/date": "2026-12-24", "/booking/size": "4", "/booking/terrace": true}}},
		{Name: "card", Messages: card},
		{Name: "stream", Messages: stream},
		{Name: "redraw", Messages: folded.Redraw()},
		{Name: "rejected", Messages: rejected},
	})

	var cardState Surfaces
	if err := cardState.Apply(card...); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]*Surfaces{"form": &formState, "card": &cardState, "stream": &folded, "redraw": &folded} {
		got := results[name]
		if !got.OK {
			t.Errorf("%s: @a2ui/web_core error: %s", name, got.Error)
			continue
		}
		if diff := cmp.Diff(webState(t, want), got.Surfaces); diff != "" {
			t.Errorf("%s: renderer state mismatch (-Baton's fold +@a2ui/web_core's):\n%s", name, diff)
		}
	}
	if r := results["rejected"]; r.OK {
		t.Errorf("rejected: @a2ui/web_core accepted a Text whose text is a number")
	}

	action, err := DecodeAction(results["form"].Action)
	if err != nil {
		t.Fatalf("DecodeAction(%s) error = %v", results["form"].Action, err)
	}
	want := map[string]any{"date": "2026-12-24", "size": "4", "terrace": true, "restaurant": "r-17", "seats": "4"}
	if diff := cmp.Diff(want, action.Context); diff != "" {
		t.Errorf("pressed Book: context mismatch (-want +got):\n%s", diff)
	}
	if err := formState.CheckAction(action); err != nil {
		t.Errorf("CheckAction(the renderer's action) error = %v, want nil", err)
	}
}

// withSurface returns u for surface id (nil stays nil).
func withSurface(u *UpdateDataModel, id string) *UpdateDataModel {
	if u == nil {
		return nil
	}
	u.SurfaceID = id
	return u
}
