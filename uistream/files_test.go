package uistream

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/session"
	"google.golang.org/genai"
)

// TestEncoderFiles: with SetFiles, each file part of an event not the
// user's becomes a file chunk in the step of its text, at the URL the
// callback gives; a part it gives no URL is left out; the user's files and,
// without SetFiles, every file are not sent.
func TestEncoderFiles(t *testing.T) {
	image := &genai.Part{InlineData: &genai.Blob{Data: []byte("png"), MIMEType: "image/png"}}
	stored := &genai.Part{FileData: &genai.FileData{FileURI: "baton-file:c/f/1", MIMEType: "image/jpeg"}}
	lost := &genai.Part{FileData: &genai.FileData{FileURI: "gone"}}
	answer := &session.Event{InvocationID: "inv-1", Author: "assistant", LLMResponse: model.LLMResponse{Content: &genai.Content{Role: genai.RoleModel,
		Parts: []*genai.Part{genai.NewPartFromText("here"), image, stored, lost}}}}
	user := &session.Event{InvocationID: "inv-1", Author: "user", LLMResponse: model.LLMResponse{Content: &genai.Content{Role: genai.RoleUser,
		Parts: []*genai.Part{image}}}}
	urls := func(p *genai.Part) (string, string) {
		switch {
		case p.InlineData != nil:
			return "data:image/png;base64,cG5n", p.InlineData.MIMEType
		case p.FileData.FileURI == "baton-file:c/f/1":
			return "https://baton.example/Chat/c/files/f?v=1", p.FileData.MIMEType
		}
		return "", ""
	}
	for _, tc := range []struct {
		name string
		set  bool
		want []Chunk
	}{
		{"with SetFiles", true, []Chunk{Start{}, StartStep{}, TextStart{ID: "text-1"}, TextDelta{ID: "text-1", Delta: "here"}, TextEnd{ID: "text-1"},
			File{URL: "data:image/png;base64,cG5n", MediaType: "image/png"}, File{URL: "https://baton.example/Chat/c/files/f?v=1", MediaType: "image/jpeg"},
			FinishStep{}, Finish{}}},
		{"without", false, []Chunk{Start{}, StartStep{}, TextStart{ID: "text-1"}, TextDelta{ID: "text-1", Delta: "here"}, TextEnd{ID: "text-1"},
			FinishStep{}, Finish{}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c Collector
			enc := NewEncoder(&c, "")
			if tc.set {
				enc.SetFiles(urls)
			}
			for _, ev := range []*session.Event{user, answer} {
				if err := enc.Event(ev, nil); err != nil {
					t.Fatal(err)
				}
			}
			if err := enc.Finish(); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, c.Chunks); diff != "" {
				t.Errorf("chunks (-want +got):\n%s", diff)
			}
		})
	}
}

// TestEncoderResponseFiles: the files a function response holds among
// its parts (a remote agent's, stored by reference) follow the call's
// output as file chunks, at the URLs SetFiles gives; a part it gives no
// URL is left out.
func TestEncoderResponseFiles(t *testing.T) {
	resp := &session.Event{InvocationID: "inv-1", Author: "user", LLMResponse: model.LLMResponse{Content: &genai.Content{Role: genai.RoleUser,
		Parts: []*genai.Part{{FunctionResponse: &genai.FunctionResponse{ID: "c1", Name: "ask_events", Response: map[string]any{"text": "on tonight"},
			Parts: []*genai.FunctionResponsePart{
				{FileData: &genai.FunctionResponseFileData{FileURI: "baton-file:c/remote-c1-1/1", MIMEType: "image/png"}},
				{FileData: &genai.FunctionResponseFileData{FileURI: "gone"}},
			}}}}}}}
	var c Collector
	enc := NewEncoder(&c, "")
	enc.SetFiles(func(p *genai.Part) (string, string) {
		if p.FileData.FileURI == "baton-file:c/remote-c1-1/1" {
			return "https://baton.example/Chat/c/files/remote-c1-1?v=1", p.FileData.MIMEType
		}
		return "", ""
	})
	if err := enc.Event(resp, nil); err != nil {
		t.Fatal(err)
	}
	if err := enc.Finish(); err != nil {
		t.Fatal(err)
	}
	want := []Chunk{Start{}, StartStep{}, ToolOutputAvailable{ToolCallID: "c1", Output: []byte(`{"text":"on tonight"}`)},
		File{URL: "https://baton.example/Chat/c/files/remote-c1-1?v=1", MediaType: "image/png"}, FinishStep{}, Finish{}}
	if diff := cmp.Diff(want, c.Chunks); diff != "" {
		t.Errorf("chunks (-want +got):\n%s", diff)
	}
}
