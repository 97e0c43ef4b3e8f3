package functions

import (
	"bytes"
	"net/http"
	"strings"
	"testing"

	"google.golang.org/adk/v2/model"
	"google.golang.org/genai"

	"github.com/baton-run/baton/modeltest"
)

// imageReply answers with text and an image, inline, as Gemini's image
// output does.
func imageReply(image []byte) modeltest.Reply {
	return func(*model.LLMRequest) *genai.Content {
		return &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{
			genai.NewPartFromText("here is a cat"),
			{InlineData: &genai.Blob{Data: image, MIMEType: "image/png"}},
		}}
	}
}

// assistantFile returns the URL of the one file part of the chat's
// assistant messages.
func assistantFile(t *testing.T, v chatJSON) string {
	t.Helper()
	var urls []string
	for _, m := range v.Messages {
		for _, p := range m.Parts {
			if m.Role == "assistant" && p["type"] == "file" && p["mediaType"] == "image/png" {
				u, _ := p["url"].(string)
				urls = append(urls, u)
			}
		}
	}
	if len(urls) != 1 {
		t.Fatalf("GET /Chat: %d assistant file parts in %+v, want 1", len(urls), v.Messages)
	}
	return urls[0]
}

// streamFile returns the URL of the one file chunk of a stream, which
// must be a file URL of Baton's, not the bytes.
func streamFile(t *testing.T, name string, chunks []map[string]any) string {
	t.Helper()
	files := chunksOfType(chunks, "file")
	if len(files) != 1 || files[0]["mediaType"] != "image/png" {
		t.Fatalf("%s: file chunks %v, want the model's image", name, files)
	}
	u, _ := files[0]["url"].(string)
	if !strings.Contains(u, "/files/model-") {
		t.Fatalf("%s: file chunk URL %.80q, want a file URL of the chat", name, u)
	}
	return u
}

// TestChatModelFile: an image the model answers with (inline data) is
// stored as a file of the chat, not in the session: the session's
// documents stay small, the live stream, GET /Chat/{chatId} and the
// stream's replay show it at a URL that fetches its bytes, and the
// model's next request still holds the bytes.
func TestChatModelFile(t *testing.T) {
	t.Parallel()
	image := randomBytes(200 << 10)
	f := newHTTPFixture(t, nil, imageReply(image), modeltest.TextReply("a cat indeed"))
	live := streamFile(t, "live stream", f.stream(f.chat("ada", chatBody("c1", "tab-a", userMessage("u1", "draw a cat")))))

	if path, size := largestDocument(t, f.client); size >= 100<<10 {
		t.Errorf("largest document %s is %d bytes, want under 100 KiB (the image is %d)", path, size, len(image))
	}
	prefix := "app/" + f.user("ada").UID + "/c1/model-"
	if objects, err := f.gcs.Objects(t.Context(), prefix); err != nil || len(objects) != 1 {
		t.Errorf("objects under %s = %v (%v), want the image", prefix, objects, err)
	}
	replay := streamFile(t, "replay", f.stream(f.chat("ada", chatBody("c1", "tab-a", userMessage("u1", "draw a cat")))))
	history := assistantFile(t, f.messages("ada", "c1"))
	for name, u := range map[string]string{"live stream": live, "replay": replay, "history": history} {
		if status, got, header := fetch(t, u); status != http.StatusOK || !bytes.Equal(got, image) || header.Get("Content-Type") != "image/png" {
			t.Errorf("%s's URL: status %d, %d bytes; want the image", name, status, len(got))
		}
	}

	f.stream(f.chat("ada", chatBody("c1", "tab-a", userMessage("u2", "is it a cat?"))))
	if files := inlineFiles(f.model.LastRequest()); len(files) != 1 || !bytes.Equal(files[0].Data, image) {
		t.Errorf("the next turn's model request has %d inline files, want the model's image", len(files))
	}
}
