package userinput_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/baton-run/baton/userinput"
)

func TestCheck(t *testing.T) {
	t.Parallel()
	req := &userinput.Request{Requests: map[string]any{"r1": map[string]any{}, "r2": map[string]any{}}}
	tests := []struct {
		name   string
		output map[string]any
		want   map[string]userinput.Response // nil: refused
	}{
		{"each answered", map[string]any{"responses": map[string]any{
			"r1": map[string]any{"action": "accept", "content": map[string]any{"n": 1.0}}, "r2": map[string]any{"action": "decline"}}},
			map[string]userinput.Response{"r1": {Action: "accept", Content: map[string]any{"n": 1.0}}, "r2": {Action: "decline"}}},
		{"one missing", map[string]any{"responses": map[string]any{"r1": map[string]any{"action": "cancel"}}}, nil},
		{"one too many", map[string]any{"responses": map[string]any{"r1": map[string]any{"action": "cancel"},
			"r2": map[string]any{"action": "cancel"}, "r3": map[string]any{"action": "cancel"}}}, nil},
		{"unknown action", map[string]any{"responses": map[string]any{"r1": map[string]any{"action": "maybe"}, "r2": map[string]any{"action": "cancel"}}}, nil},
		{"content without accept", map[string]any{"responses": map[string]any{"r1": map[string]any{"action": "decline", "content": map[string]any{}},
			"r2": map[string]any{"action": "cancel"}}}, nil},
		{"unknown field", map[string]any{"responses": map[string]any{"r1": map[string]any{"action": "cancel", "why": "x"},
			"r2": map[string]any{"action": "cancel"}}}, nil},
		{"more than responses", map[string]any{"responses": map[string]any{}, "extra": 1}, nil},
	}
	for _, tt := range tests {
		got, err := userinput.Check(req, tt.output)
		if tt.want == nil {
			if !errors.Is(err, userinput.ErrInvalid) {
				t.Errorf("%s: Check error = %v, want ErrInvalid", tt.name, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: Check error = %v", tt.name, err)
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s: responses (-want +got):\n%s", tt.name, diff)
		}
	}
	if diff := cmp.Diff(map[string]any{"responses": map[string]any{"r1": map[string]any{"action": "cancel"}, "r2": map[string]any{"action": "cancel"}}},
		userinput.CancelAll(req)); diff != "" {
		t.Errorf("CancelAll (-want +got):\n%s", diff)
	}
}

func TestOf(t *testing.T) {
	t.Parallel()
	req := userinput.Request{Server: "notes", Requests: map[string]any{"r1": map[string]any{}}, Round: 2}
	got, ok := userinput.Of(map[string]any{userinput.PayloadKey: req})
	if !ok || got.Server != "notes" || got.Round != 2 {
		t.Errorf("Of = %+v, %t; want the request", got, ok)
	}
	for _, p := range []any{nil, "x", map[string]any{"other": 1}, map[string]any{userinput.PayloadKey: "not a request"}} {
		if _, ok := userinput.Of(p); ok {
			t.Errorf("Of(%v) read a request", p)
		}
	}
}
