package functions

import (
	"bytes"
	"net/http"
	"strings"
	"testing"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/functiontool"
	"google.golang.org/genai"

	"github.com/baton-run/baton/modeltest"
	"github.com/baton-run/baton/toolcallback"
)

// TestChatToolFile: a file a tool saves (ctx.Artifacts().Save) is stored
// under the chat, not its agent session; the live stream, the replay and
// GET /Chat/{chatId} show it in the assistant's message at a URL that
// fetches it; a tool of a later turn loads it; the model is not sent it.
func TestChatToolFile(t *testing.T) {
	t.Parallel()
	image := randomBytes(32 << 10)
	var loaded []byte
	f := newHTTPFixtureWith(t, func(f *httpFixture, _ *ServerOptions) {
		draw, err := functiontool.New(functiontool.Config{Name: "draw", Description: "draws a cat"},
			func(ctx agent.Context, _ struct{}) (map[string]any, error) {
				if _, err := ctx.Artifacts().Save(ctx, "cat.png", genai.NewPartFromBytes(image, "image/png")); err != nil {
					return nil, err
				}
				return map[string]any{"saved": "cat.png"}, nil
			})
		if err != nil {
			t.Fatal(err)
		}
		look, err := functiontool.New(functiontool.Config{Name: "look", Description: "looks at the cat"},
			func(ctx agent.Context, _ struct{}) (map[string]any, error) {
				got, err := ctx.Artifacts().Load(ctx, "cat.png")
				if err != nil {
					return nil, err
				}
				loaded = got.Part.InlineData.Data
				return map[string]any{"bytes": len(loaded)}, nil
			})
		if err != nil {
			t.Fatal(err)
		}
		f.members = []toolcallback.Member{f.world.Member(llmagent.Config{Name: "assistant", Model: f.model, Tools: []tool.Tool{draw, look}})}
	}, nil,
		modeltest.CallReply(modeltest.Call("d1", "draw", map[string]any{})), modeltest.TextReply("drawn"),
		modeltest.CallReply(modeltest.Call("l1", "look", map[string]any{})), modeltest.TextReply("a fine cat"))

	live := toolFile(t, "live stream", f.stream(f.chat("ada", chatBody("c1", "tab-a", userMessage("u1", "draw a cat")))))
	prefix := "app/" + f.user("ada").UID + "/c1/cat.png/"
	if objects, err := f.gcs.Objects(t.Context(), prefix); err != nil || len(objects) != 1 {
		t.Errorf("objects under %s = %v (%v), want the tool's file, under the chat", prefix, objects, err)
	}
	replay := toolFile(t, "replay", f.stream(f.chat("ada", chatBody("c1", "tab-a", userMessage("u1", "draw a cat")))))
	history := assistantFile(t, f.messages("ada", "c1"))
	for name, u := range map[string]string{"live stream": live, "replay": replay, "history": history} {
		if status, got, _ := fetch(t, u); status != http.StatusOK || !bytes.Equal(got, image) {
			t.Errorf("%s's URL: status %d, %d bytes; want the tool's file", name, status, len(got))
		}
	}

	f.stream(f.chat("ada", chatBody("c1", "tab-a", userMessage("u2", "look at it"))))
	if !bytes.Equal(loaded, image) {
		t.Errorf("the later turn's tool loaded %d bytes, want the file", len(loaded))
	}
	if files := inlineFiles(f.model.LastRequest()); len(files) != 0 {
		t.Errorf("the model was sent %d inline files, want none (a tool's file is not the model's)", len(files))
	}
}

// toolFile returns the URL of the one file chunk of a stream, a file URL
// of the chat's cat.png.
func toolFile(t *testing.T, name string, chunks []map[string]any) string {
	t.Helper()
	files := chunksOfType(chunks, "file")
	if len(files) != 1 || files[0]["mediaType"] != "image/png" {
		t.Fatalf("%s: file chunks %v, want the tool's image", name, files)
	}
	u, _ := files[0]["url"].(string)
	if !strings.Contains(u, "/c1/files/cat.png?") {
		t.Fatalf("%s: file chunk URL %q, want the chat's cat.png", name, u)
	}
	return u
}
