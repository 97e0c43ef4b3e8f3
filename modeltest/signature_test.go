package modeltest

import (
	"errors"
	"strings"
	"testing"

	"google.golang.org/adk/v2/model"
	"google.golang.org/genai"
)

// TestCheckSignatures: the current turn's calls must carry the model's
// own signature (the first of each step) or the skip value; earlier turns
// are not checked; a request is refused with the API's 400 and message.
func TestCheckSignatures(t *testing.T) {
	own, other := Signature("m"), Signature("other")
	step := func(sigs ...[]byte) *genai.Content {
		c := &genai.Content{Role: genai.RoleModel}
		for _, s := range sigs {
			c.Parts = append(c.Parts, &genai.Part{FunctionCall: &genai.FunctionCall{Name: "f"}, ThoughtSignature: s})
		}
		return c
	}
	answer := &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{{FunctionResponse: &genai.FunctionResponse{Name: "f"}}}}
	hi := genai.NewContentFromText("hi", genai.RoleUser)
	for _, tc := range []struct {
		name     string
		contents []*genai.Content
		want     string // "" accepted, else the refusal's message
	}{
		{"own signature", []*genai.Content{hi, step(own), answer}, ""},
		{"parallel calls, first signed", []*genai.Content{hi, step(own, nil), answer}, ""},
		{"skip value", []*genai.Content{hi, step(skipValidator), answer}, ""},
		{"missing", []*genai.Content{hi, step(nil), answer}, MissingSignature},
		{"missing on the second step", []*genai.Content{hi, step(own), answer, step(nil), answer}, MissingSignature},
		{"another model's", []*genai.Content{hi, step(other), answer}, CorruptedSignature},
		{"another model's on a later call", []*genai.Content{hi, step(own, other), answer}, CorruptedSignature},
		{"earlier turn not checked", []*genai.Content{hi, step(nil), answer, genai.NewContentFromText("next", genai.RoleUser)}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckSignatures("m", tc.contents)
			if tc.want == "" {
				if err != nil {
					t.Errorf("CheckSignatures() = %v, want nil", err)
				}
				return
			}
			var api genai.APIError
			if !errors.As(err, &api) || api.Code != 400 || !strings.HasPrefix(api.Message, tc.want) {
				t.Errorf("CheckSignatures() = %v, want a 400 %q", err, tc.want)
			}
		})
	}
}

// TestStrictSigns: Strict's calls carry its signature on the first call
// of the response, and its responses name the model.
func TestStrictSigns(t *testing.T) {
	m := &Strict{T: t, Model: "gemini-test", Script: []Reply{CallReply(Call("a", "f", nil), Call("b", "g", nil))}}
	for resp, err := range m.GenerateContent(t.Context(), &model.LLMRequest{Contents: []*genai.Content{genai.NewContentFromText("hi", genai.RoleUser)}}, false) {
		if err != nil {
			t.Fatal(err)
		}
		parts := resp.Content.Parts
		if string(parts[0].ThoughtSignature) != string(Signature("gemini-test")) || parts[1].ThoughtSignature != nil {
			t.Errorf("signatures = %x, %x, want the model's on the first call only", parts[0].ThoughtSignature, parts[1].ThoughtSignature)
		}
		if resp.ModelVersion != "gemini-test" {
			t.Errorf("ModelVersion = %q, want gemini-test", resp.ModelVersion)
		}
	}
}

// TestStrictThoughts: asked for summaries, Strict puts one before its
// answer, and refuses a later request that hands it back as text; as a
// thought part it is fine.
func TestStrictThoughts(t *testing.T) {
	m := &Strict{Model: "gemini-test", Repeat: TextReply("ok")}
	ask := func(contents ...*genai.Content) (*genai.Content, error) {
		req := &model.LLMRequest{Contents: contents, Config: &genai.GenerateContentConfig{ThinkingConfig: &genai.ThinkingConfig{IncludeThoughts: true}}}
		for resp, err := range m.GenerateContent(t.Context(), req, false) {
			if err != nil {
				return nil, err
			}
			return resp.Content, nil
		}
		return nil, errors.New("no response")
	}
	hi := genai.NewContentFromText("hi", genai.RoleUser)
	first, err := ask(hi)
	if err != nil || !first.Parts[0].Thought || first.Parts[0].Text != m.Thoughts()[0] {
		t.Fatalf("first answer = %+v, %v, want a thought part first", first, err)
	}
	again := genai.NewContentFromText("again", genai.RoleUser)
	if _, err := ask(hi, first, again); err != nil {
		t.Errorf("the summary as a thought part: %v, want it taken", err)
	}
	asText := &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{{Text: first.Parts[0].Text}, first.Parts[1]}}
	if _, err := ask(hi, asText, again); err == nil {
		t.Errorf("the summary as text was taken, want it refused")
	}
}

// TestStrictCatchesDroppedSignature: a call Strict signed that comes back
// with the skip value in place of its signature (a path dropped it and a
// plugin filled the gap) is refused; the same value on a call another
// model made is taken.
func TestStrictCatchesDroppedSignature(t *testing.T) {
	m := &Strict{Model: "gemini-test", Script: []Reply{CallReply(Call("c1", "f", nil))}, Repeat: TextReply("ok")}
	hi := genai.NewContentFromText("hi", genai.RoleUser)
	var made *genai.Content
	for resp, err := range m.GenerateContent(t.Context(), &model.LLMRequest{Contents: []*genai.Content{hi}}, false) {
		if err != nil {
			t.Fatal(err)
		}
		made = resp.Content
	}
	answer := &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{{FunctionResponse: &genai.FunctionResponse{ID: "c1", Name: "f"}}}}
	for _, tc := range []struct {
		name string
		call *genai.FunctionCall
		ok   bool
	}{
		{"its own call", made.Parts[0].FunctionCall, false},
		{"another model's call", &genai.FunctionCall{ID: "c9", Name: "f"}, true},
	} {
		replay := &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{{FunctionCall: tc.call, ThoughtSignature: skipValidator}}}
		ans := *answer
		ans.Parts = []*genai.Part{{FunctionResponse: &genai.FunctionResponse{ID: tc.call.ID, Name: "f"}}}
		var err error
		for _, e := range m.GenerateContent(t.Context(), &model.LLMRequest{Contents: []*genai.Content{hi, replay, &ans}}, false) {
			err = e
		}
		if (err == nil) != tc.ok {
			t.Errorf("%s with the skip value: %v, want taken %v", tc.name, err, tc.ok)
		}
	}
}
