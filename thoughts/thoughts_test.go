package thoughts_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"google.golang.org/genai"

	"github.com/baton-run/baton/modeltest"
	"github.com/baton-run/baton/thoughts"
)

func user(text string) *genai.Content { return genai.NewContentFromText(text, genai.RoleUser) }

func calls(sigs ...[]byte) *genai.Content {
	c := &genai.Content{Role: genai.RoleModel}
	for i, sig := range sigs {
		c.Parts = append(c.Parts, &genai.Part{FunctionCall: &genai.FunctionCall{Name: "f", Args: map[string]any{"i": i}}, ThoughtSignature: sig})
	}
	return c
}

func answers(n int) *genai.Content {
	c := &genai.Content{Role: genai.RoleUser}
	for range n {
		c.Parts = append(c.Parts, &genai.Part{FunctionResponse: &genai.FunctionResponse{Name: "f", Response: map[string]any{}}})
	}
	return c
}

// TestFix: what the model now asked ("new") is given, for each shape of
// the current turn, checked by modeltest's copy of Gemini's rule; and the
// parts it would have refused carry the skip value, others are untouched.
func TestFix(t *testing.T) {
	old, own := modeltest.Signature("old"), modeltest.Signature("new")
	makers := map[string]string{string(old): "old", string(own): "new"}
	unknown := []byte("a signature no stored event holds")
	for _, tc := range []struct {
		name     string
		contents []*genai.Content
		want     [][]byte // the signatures of the last model content's parts after Fix
	}{
		{"own signature kept", []*genai.Content{user("hi"), calls(own), answers(1)}, [][]byte{own}},
		{"missing gets the skip value", []*genai.Content{user("hi"), calls(nil), answers(1)}, [][]byte{thoughts.Dummy()}},
		{"another model's replaced", []*genai.Content{user("hi"), calls(old), answers(1)}, [][]byte{thoughts.Dummy()}},
		{"parallel calls: the first only", []*genai.Content{user("hi"), calls(nil, nil), answers(2)}, [][]byte{thoughts.Dummy(), nil}},
		{"another model's on a later call removed", []*genai.Content{user("hi"), calls(own, old), answers(2)}, [][]byte{own, nil}},
		{"unknown maker kept", []*genai.Content{user("hi"), calls(unknown), answers(1)}, [][]byte{unknown}},
		{"skip value kept", []*genai.Content{user("hi"), calls(thoughts.Dummy()), answers(1)}, [][]byte{thoughts.Dummy()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stored := tc.contents[1].Parts[0]
			storedSig := stored.ThoughtSignature
			thoughts.Fix(tc.contents, "new", makers)
			var got [][]byte
			for _, p := range tc.contents[1].Parts {
				got = append(got, p.ThoughtSignature)
			}
			for i := range tc.want {
				if !bytes.Equal(got[i], tc.want[i]) {
					t.Errorf("part %d signature = %q, want %q", i, got[i], tc.want[i])
				}
			}
			if tc.name != "unknown maker kept" {
				if err := modeltest.CheckSignatures("new", tc.contents); err != nil {
					t.Errorf("CheckSignatures() after Fix = %v, want nil", err)
				}
			}
			if !bytes.Equal(stored.ThoughtSignature, storedSig) {
				t.Errorf("Fix changed the request's part in place (a stored event's); it must replace it with a copy")
			}
		})
	}
}

// TestFixOnlyCurrentTurn: calls of earlier turns are left as they are
// (Gemini does not check them), and a user content of function responses
// does not start a turn.
func TestFixOnlyCurrentTurn(t *testing.T) {
	earlier := calls(nil)
	current := calls(nil)
	contents := []*genai.Content{user("first"), earlier, answers(1), {Role: genai.RoleModel, Parts: []*genai.Part{{Text: "done"}}},
		user("second"), calls(modeltest.Signature("new")), answers(1), current, answers(1)}
	if got := thoughts.CurrentTurn(contents); got != 4 {
		t.Fatalf("CurrentTurn() = %d, want 4", got)
	}
	thoughts.Fix(contents, "new", nil)
	if earlier.Parts[0].ThoughtSignature != nil {
		t.Errorf("a call of an earlier turn got signature %q, want none", earlier.Parts[0].ThoughtSignature)
	}
	if !thoughts.IsDummy(current.Parts[0].ThoughtSignature) {
		t.Errorf("the current turn's second step signature = %q, want the skip value", current.Parts[0].ThoughtSignature)
	}
}

// TestDummyOnTheWire: genai sends Dummy as base64 that the API reads back
// as the documented text.
func TestDummyOnTheWire(t *testing.T) {
	got, err := json.Marshal(&genai.Part{ThoughtSignature: thoughts.Dummy()})
	if err != nil {
		t.Fatal(err)
	}
	if want := `"thoughtSignature":"skip/thought/signature/validator"`; !bytes.Contains(got, []byte(want)) {
		t.Errorf("part JSON = %s, want it to hold %s", got, want)
	}
}
