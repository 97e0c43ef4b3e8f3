package agent

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"google.golang.org/genai"

	"github.com/baton-run/baton/a2ui"
)

// formCall is the show_surface call the offline model makes for "reserve a
// table with a form" after history.
func formCall(t *testing.T, history []*genai.Content) *genai.FunctionCall {
	t.Helper()
	ask := genai.NewContentFromText("reserve a table with a form", genai.RoleUser)
	got := respond(append(history, ask))
	fc := got.Parts[0].FunctionCall
	if fc == nil || fc.Name != "show_surface" {
		t.Fatalf("respond() = %+v, want a show_surface call", got.Parts[0])
	}
	return fc
}

// A second form in one conversation is a new surface: the first is still
// shown, and A2UI creates a surface once while it is shown (issue 47,
// item 2).
func TestOfflineFormTwice(t *testing.T) {
	catalog, err := a2ui.BasicCatalog()
	if err != nil {
		t.Fatal(err)
	}
	shown := &a2ui.Surfaces{}
	var history []*genai.Content
	var ids []string
	for range 3 {
		fc := formCall(t, history)
		raw, err := json.Marshal(fc.Args["messages"])
		if err != nil {
			t.Fatal(err)
		}
		msgs, err := catalog.Decode(raw, shown)
		if err != nil {
			t.Fatalf("form %d is refused beside the forms before it: %v", len(ids)+1, err)
		}
		if err := shown.Apply(msgs...); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, msgs[0].SurfaceID())
		history = append(history, genai.NewContentFromText("reserve a table with a form", genai.RoleUser),
			&genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{{FunctionCall: fc}}})
	}
	if want := []string{"reservation", "reservation-2", "reservation-3"}; !slices.Equal(ids, want) {
		t.Errorf("the forms' surface ids = %q, want %q", ids, want)
	}
}

// The form's fields are required: Baton refuses an answer that leaves one
// empty, as the page's renderer keeps Reserve disabled (issue 47, item 3).
func TestOfflineFormRequiresItsFields(t *testing.T) {
	catalog, err := a2ui.BasicCatalog()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(formCall(t, nil).Args["messages"])
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := catalog.Decode(raw, nil)
	if err != nil {
		t.Fatal(err)
	}
	answer := func(date, people, name string) map[string]any {
		return map[string]any{"action": map[string]any{"name": "reserve", "surfaceId": "reservation", "sourceComponentId": "reserve",
			"timestamp": time.Now().UTC().Format(time.RFC3339), "context": map[string]any{"date": date, "people": people, "name": name}}}
	}
	if _, err := a2ui.CheckAnswer([][]a2ui.Message{msgs}, answer("2026-12-24", "4", "Ada")); err != nil {
		t.Errorf("CheckAnswer(filled) error = %v, want nil", err)
	}
	for _, blank := range []map[string]any{answer("", "", ""), answer("2026-12-24", "4", ""), answer("", "4", "Ada")} {
		if _, err := a2ui.CheckAnswer([][]a2ui.Message{msgs}, blank); !errors.Is(err, a2ui.ErrCheckFailed) {
			t.Errorf("CheckAnswer(%v) error = %v, want ErrCheckFailed", blank["action"], err)
		}
	}
}
