package uistream

import (
	"encoding/json"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/baton-run/baton/a2ui"
	"github.com/baton-run/baton/uistream/uistreamtest"
)

// A surface drawn, then changed, then deleted in one turn: each data-a2ui
// chunk carries the whole surface under the surface's id, so that the AI
// SDK, which replaces a data part's data when a chunk repeats its type and
// id, keeps one part that draws the surface as it last was.
func TestEncoderSurface(t *testing.T) {
	var surfaces a2ui.Surfaces
	label := a2ui.Component{ID: "root", Component: "Text", Properties: map[string]any{"text": map[string]any{"path": "/status"}}}
	pending, _ := a2ui.NewUpdateDataModel("order", "/status", "Pending")
	shipped, _ := a2ui.NewUpdateDataModel("order", "/status", "Shipped")

	rec := httptest.NewRecorder()
	s := newSSEEncoder(rec, "msg-1")
	steps := [][]a2ui.Message{
		{a2ui.NewCreateSurface("order"), a2ui.NewUpdateComponents("order", label), pending},
		{shipped},
	}
	for _, msgs := range steps {
		if err := surfaces.Apply(msgs...); err != nil {
			t.Fatal(err)
		}
		sf, _ := surfaces.Surface("order")
		if err := s.Surface(SurfaceData{SurfaceID: "order", Messages: sf.Redraw()}); err != nil {
			t.Fatalf("Surface() error = %v", err)
		}
	}
	if err := s.Surface(SurfaceData{SurfaceID: "gone", Messages: []a2ui.Message{a2ui.NewDeleteSurface("gone")}, CallID: "c1"}); err != nil {
		t.Fatalf("Surface(deleted) error = %v", err)
	}
	if err := s.Finish(); err != nil {
		t.Fatalf("Finish() error = %v", err)
	}
	chunks := uistreamtest.Parse(t, rec.Body.String())
	uistreamtest.Check(t, chunks)

	create := map[string]any{"version": "v0.9", "createSurface": map[string]any{"surfaceId": "order", "catalogId": a2ui.BasicCatalogID}}
	components := map[string]any{"version": "v0.9", "updateComponents": map[string]any{"surfaceId": "order",
		"components": []any{map[string]any{"id": "root", "component": "Text", "text": map[string]any{"path": "/status"}}}}}
	data := func(status string) map[string]any {
		return map[string]any{"version": "v0.9", "updateDataModel": map[string]any{"surfaceId": "order", "path": "/", "value": map[string]any{"status": status}}}
	}
	want := []map[string]any{
		{"type": "start", "messageId": "msg-1"},
		{"type": "data-a2ui", "id": "order", "data": map[string]any{"surfaceId": "order", "messages": []any{create, components, data("Pending")}}},
		{"type": "data-a2ui", "id": "order", "data": map[string]any{"surfaceId": "order", "messages": []any{create, components, data("Shipped")}}},
		{"type": "data-a2ui", "id": "gone", "data": map[string]any{"surfaceId": "gone", "callId": "c1", "messages": []any{
			map[string]any{"version": "v0.9", "deleteSurface": map[string]any{"surfaceId": "gone"}}}}},
		{"type": "finish"},
		{"type": "[DONE]"},
	}
	if diff := cmp.Diff(want, chunks); diff != "" {
		t.Errorf("chunks mismatch (-want +got):\n%s", diff)
	}

	// The client's message, as the AI SDK builds it: the second chunk
	// replaced the first part's data.
	var parts []map[string]any
	for _, c := range uistreamtest.OfType(chunks, "data-a2ui") {
		replaced := false
		for _, p := range parts {
			if p["id"] == c["id"] {
				p["data"], replaced = c["data"], true
			}
		}
		if !replaced {
			parts = append(parts, map[string]any{"id": c["id"], "data": c["data"]})
		}
	}
	raw, _ := json.Marshal(parts[0]["data"])
	var part SurfaceData
	if err := json.Unmarshal(raw, &part); err != nil {
		t.Fatal(err)
	}
	var drawn a2ui.Surfaces
	if err := drawn.Apply(part.Messages...); err != nil {
		t.Fatalf("Apply(part messages) error = %v", err)
	}
	sf, _ := drawn.Surface("order")
	if got := sf.Text(); len(parts) != 2 || got != "Shipped" {
		t.Errorf("client parts = %d, surface text = %q; want 2 parts, the surface showing \"Shipped\"", len(parts), got)
	}

	if err := newSSEEncoder(httptest.NewRecorder(), "").Surface(SurfaceData{}); err == nil {
		t.Errorf("Surface(\"\") error = nil, want an error")
	}
}
