package agent

import (
	"context"
	"testing"

	"google.golang.org/adk/v2/model"
	"google.golang.org/genai"

	"github.com/baton-run/baton/toolcallback"
)

// TestOfflineTitle: the offline model answers the team's title request
// with a title made from the first message, and answers other requests as
// before.
func TestOfflineTitle(t *testing.T) {
	ask := func(msg, instruction string) string {
		t.Helper()
		req := &model.LLMRequest{Contents: []*genai.Content{genai.NewContentFromText(msg, genai.RoleUser)}}
		if instruction != "" {
			req.Config = &genai.GenerateContentConfig{SystemInstruction: genai.NewContentFromText(instruction, genai.RoleUser)}
		}
		for resp, err := range (Offline{}).GenerateContent(context.Background(), req, false) {
			if err != nil {
				t.Fatalf("%q: %v", msg, err)
			}
			if !resp.Partial {
				return resp.Content.Parts[0].Text
			}
		}
		t.Fatalf("%q: no response", msg)
		return ""
	}
	for msg, want := range map[string]string{
		"what's the weather in Tokyo?":          "Weather in Tokyo",
		"book a table for 4":                    "A table reservation",
		"change the music to track 2":           "Music track 2",
		"tell me something nice about the sea!": "Tell me something nice about",
		"hi":                                    "Hi",
	} {
		if got := ask(msg, toolcallback.TitleInstruction); got != want {
			t.Errorf("title of %q = %q, want %q", msg, got, want)
		}
		if got := ask(msg, toolcallback.CleanTitle(want)); got == want {
			t.Errorf("%q without the title instruction was answered with its title %q", msg, got)
		}
	}
}
