package approval

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestApplyPayload pins how an approver's payload edits a tool's
// arguments: a JSON Merge Patch (RFC 7396) over the model's arguments.
func TestApplyPayload(t *testing.T) {
	t.Parallel()
	type where struct {
		Room  string `json:"room"`
		Floor int    `json:"floor"`
	}
	type booking struct {
		People int      `json:"people"`
		Name   string   `json:"name"`
		Note   *string  `json:"note"`
		Tags   []string `json:"tags"`
		Where  where    `json:"where"`
	}
	note := "window seat"
	model := booking{People: 4, Name: "Ada", Note: &note, Tags: []string{"quiet", "late"}, Where: where{Room: "main", Floor: 1}}
	tests := []struct {
		name    string
		payload any
		want    booking
		wantErr bool
	}{
		{"a field replaces the model's, the others stay", map[string]any{"people": float64(6)},
			booking{People: 6, Name: "Ada", Note: &note, Tags: []string{"quiet", "late"}, Where: where{Room: "main", Floor: 1}}, false},
		{"null removes a number: zero value", map[string]any{"people": nil},
			booking{Name: "Ada", Note: &note, Tags: []string{"quiet", "late"}, Where: where{Room: "main", Floor: 1}}, false},
		{"null removes a string and a pointer", map[string]any{"name": nil, "note": nil},
			booking{People: 4, Tags: []string{"quiet", "late"}, Where: where{Room: "main", Floor: 1}}, false},
		{"an object merges field by field", map[string]any{"where": map[string]any{"floor": float64(2)}},
			booking{People: 4, Name: "Ada", Note: &note, Tags: []string{"quiet", "late"}, Where: where{Room: "main", Floor: 2}}, false},
		{"null inside an object removes that field", map[string]any{"where": map[string]any{"room": nil}},
			booking{People: 4, Name: "Ada", Note: &note, Tags: []string{"quiet", "late"}, Where: where{Floor: 1}}, false},
		{"an array replaces the whole array", map[string]any{"tags": []any{"terrace"}},
			booking{People: 4, Name: "Ada", Note: &note, Tags: []string{"terrace"}, Where: where{Room: "main", Floor: 1}}, false},
		{"an empty object changes nothing", map[string]any{}, model, false},
		{"a payload that is not an object changes nothing", "six", model, false},
		{"a value of the wrong type fails", map[string]any{"people": "six"}, model, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := applyPayload(model, tc.payload)
			if (err != nil) != tc.wantErr {
				t.Fatalf("applyPayload(%v) error = %v, want error %v", tc.payload, err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("applyPayload(%v) (-want +got):\n%s", tc.payload, diff)
			}
		})
	}
	if model.People != 4 || model.Name != "Ada" || model.Where.Room != "main" {
		t.Errorf("applyPayload modified the model's arguments: %+v", model)
	}
}
