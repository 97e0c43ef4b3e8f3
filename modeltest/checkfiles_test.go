package modeltest

import (
	"testing"

	"google.golang.org/genai"
)

// TestCheckFiles: a request may hold files the model can read (bytes with
// a media type, gs:// and https:// URIs), and no other file part.
func TestCheckFiles(t *testing.T) {
	for _, tc := range []struct {
		name string
		part *genai.Part
		ok   bool
	}{
		{"inline bytes", genai.NewPartFromBytes([]byte("x"), "image/png"), true},
		{"Cloud Storage URI", genai.NewPartFromURI("gs://b/o", "image/png"), true},
		{"https URI", genai.NewPartFromURI("https://example.com/o", "image/png"), true},
		{"an application's reference", genai.NewPartFromURI("baton-file:c1/upload-1/1", "image/png"), false},
		{"inline without bytes", &genai.Part{InlineData: &genai.Blob{MIMEType: "image/png"}}, false},
		{"inline without media type", &genai.Part{InlineData: &genai.Blob{Data: []byte("x")}}, false},
		{"inline with a display name", &genai.Part{InlineData: &genai.Blob{Data: []byte("x"), MIMEType: "image/png", DisplayName: "cat.png"}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckFiles([]*genai.Content{{Role: genai.RoleUser, Parts: []*genai.Part{genai.NewPartFromText("look"), tc.part}}})
			if (err == nil) != tc.ok {
				t.Errorf("CheckFiles = %v, want ok %v", err, tc.ok)
			}
		})
	}
}
