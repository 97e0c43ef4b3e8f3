package a2aserver

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/adk/v2/model"
	"google.golang.org/genai"

	"github.com/baton-run/baton/modeltest"
)

// formMessages draw surface "booking": a name field and a Book button
// whose event sends the name.
const formMessages = `[{"version":"v0.9","createSurface":{"surfaceId":"booking","catalogId":"https://a2ui.org/specification/v0_9/catalogs/basic/catalog.json"}},
	{"version":"v0.9","updateComponents":{"surfaceId":"booking","components":[
		{"id":"root","component":"Column","children":["name","book"]},
		{"id":"name","component":"TextField","label":"Name","value":{"path":"/name"}},
		{"id":"book_text","component":"Text","text":"Book"},
		{"id":"book","component":"Button","child":"book_text","action":{"event":{"name":"book","context":{"name":{"path":"/name"}}}}}]}},
	{"version":"v0.9","updateDataModel":{"surfaceId":"booking","path":"/name","value":"Guest"}}]`

// extensionTransport activates the A2UI extension on every request, as
// A2A 0.3 clients do (X-A2A-Extensions).
type extensionTransport struct{ authTransport }

func (e extensionTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("X-A2A-Extensions", A2UIExtensionURI)
	return e.authTransport.RoundTrip(r)
}

// clientWith is a2a-go's client of the first instance with transport rt.
func (f *fixture) clientWith(rt http.RoundTripper) *a2aclient.Client {
	f.t.Helper()
	c, err := a2aclient.NewFromEndpoints(context.Background(),
		[]*a2a.AgentInterface{{URL: f.instances[0].srv.URL, ProtocolBinding: a2a.TransportProtocolJSONRPC, ProtocolVersion: a2av0.Version}},
		a2aclient.WithCompatTransport(a2av0.Version, a2a.TransportProtocolJSONRPC, a2av0.NewJSONRPCTransportFactory(a2av0.JSONRPCTransportConfig{Client: &http.Client{Transport: rt}})))
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { c.Destroy() })
	return c
}

// surfaceOf reads a task's artifact for surface "booking": its A2UI
// messages when its parts are A2UI DataParts, else its text.
func surfaceOf(t *testing.T, task *a2a.Task) (messages []any, text string) {
	t.Helper()
	for _, a := range task.Artifacts {
		if a.ID != "a2ui-booking" {
			continue
		}
		for _, p := range a.Parts {
			if p.Meta()["mimeType"] == A2UIMediaType {
				messages = append(messages, p.Data())
			} else {
				text += p.Text()
			}
		}
		return messages, text
	}
	t.Fatalf("task %s has no artifact a2ui-booking: %+v", task.ID, task.Artifacts)
	return nil, ""
}

// TestA2UIOverA2A: a client that activates the extension (or sends its
// capabilities) gets the form as A2UI DataParts, in the task and from
// tasks/get; any other gets its text. An action DataPart on the
// input-required task answers the form's call: the agent resumes once
// with the action, and the task shows the form as it last was.
func TestA2UIOverA2A(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name         string
		activate     bool
		capabilities bool
		rich         bool
	}{
		{name: "extension activated", activate: true, rich: true},
		{name: "capabilities in metadata", capabilities: true, rich: true},
		{name: "plain client"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var read map[string]any
			f := newFixture(t, 1, nil,
				modeltest.CallReply(modeltest.Call("f1", "show_surface", map[string]any{"messages": decode(t, formMessages), "wait": true})),
				func(req *model.LLMRequest) *genai.Content {
					last := req.Contents[len(req.Contents)-1]
					read = last.Parts[0].FunctionResponse.Response
					return genai.NewContentFromText("booked", genai.RoleModel)
				})
			var rt http.RoundTripper = authTransport{user: "ada"}
			if tt.activate {
				rt = extensionTransport{authTransport{user: "ada"}}
			}
			c := f.clientWith(rt)
			req := textMessage("a form")
			if tt.capabilities {
				req.Message.Metadata = map[string]any{"a2uiClientCapabilities": map[string]any{"supportedCatalogIds": []any{"https://a2ui.org/specification/v0_9/catalogs/basic/catalog.json"}}}
			}
			task := send(t.Context(), t, c, req)
			if diff := cmp.Diff([]string{"f1"}, pendingIDs(t, task)); diff != "" {
				t.Fatalf("pending calls (-want +got):\n%s", diff)
			}
			got, err := c.GetTask(t.Context(), &a2a.GetTaskRequest{ID: task.ID})
			if err != nil {
				t.Fatal(err)
			}
			for _, tk := range []*a2a.Task{task, got} {
				msgs, text := surfaceOf(t, tk)
				if tt.rich && (len(msgs) != 3 || text != "" || !strings.Contains(mustJSON(t, msgs[0]), `"createSurface"`)) {
					t.Errorf("surface = %v / %q, want its three A2UI messages as DataParts", msgs, text)
				}
				if !tt.rich && (len(msgs) != 0 || !strings.Contains(text, "Name: Guest") || !strings.Contains(text, "[Book]")) {
					t.Errorf("surface = %v / %q, want its text", msgs, text)
				}
			}

			action := a2a.NewDataPart(map[string]any{"version": "v0.9", "action": map[string]any{"name": "book", "surfaceId": "booking",
				"sourceComponentId": "book", "timestamp": "2026-12-01T10:11:12Z", "context": map[string]any{"name": "Ada"}}})
			action.SetMeta("mimeType", A2UIMediaType)
			answer := a2a.NewMessageForTask(a2a.MessageRoleUser, task, action)
			answer.Metadata = req.Message.Metadata // a client says what it renders on each message
			done := send(t.Context(), t, c, &a2a.SendMessageRequest{Message: answer})
			if done.Status.State != a2a.TaskStateCompleted || !strings.Contains(artifactText(done), "booked") {
				t.Errorf("after the action: state %s, text %q; want completed with the agent's answer", done.Status.State, artifactText(done))
			}
			if a, _ := read["action"].(map[string]any); a["name"] != "book" || mustJSON(t, a["context"]) != `{"name":"Ada"}` {
				t.Errorf("the model read %v, want the action", read)
			}
			if n := f.model.Calls(); n != 2 {
				t.Errorf("model called %d times, want 2", n)
			}
			// The form as submitted, as GET /Chat shows it (issue 47, item 16).
			after, err := c.GetTask(t.Context(), &a2a.GetTaskRequest{ID: task.ID})
			if err != nil {
				t.Fatal(err)
			}
			msgs, text := surfaceOf(t, after)
			if tt.rich && !strings.Contains(mustJSON(t, msgs), `"value":{"name":"Ada"}`) {
				t.Errorf("tasks/get after the action shows the form as %s, want its name Ada as submitted", mustJSON(t, msgs))
			}
			if !tt.rich && !strings.Contains(text, "Name: Ada") {
				t.Errorf("tasks/get after the action shows the form as %q, want its name Ada as submitted", text)
			}
		})
	}
}

func decode(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

// TestAgentCardA2UIExtension: the card advertises the A2UI extension.
func TestAgentCardA2UIExtension(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 1, nil)
	resp, err := http.Get(f.instances[0].srv.URL + "/.well-known/agent-card.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var card struct {
		Capabilities struct {
			Extensions []struct {
				URI string `json:"uri"`
			} `json:"extensions"`
		} `json:"capabilities"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&card); err != nil {
		t.Fatal(err)
	}
	if len(card.Capabilities.Extensions) != 1 || card.Capabilities.Extensions[0].URI != A2UIExtensionURI {
		t.Errorf("card extensions = %+v, want %s", card.Capabilities.Extensions, A2UIExtensionURI)
	}
}

// bookAction is the DataPart of a press on the form's Book button with
// context (JSON).
func bookAction(context string) *a2a.Part {
	var ctx map[string]any
	_ = json.Unmarshal([]byte(context), &ctx)
	p := a2a.NewDataPart(map[string]any{"version": "v0.9", "action": map[string]any{"name": "book", "surfaceId": "booking",
		"sourceComponentId": "book", "timestamp": "2026-12-01T10:11:12Z", "context": ctx}})
	p.SetMeta("mimeType", A2UIMediaType)
	return p
}

// TestA2UIRefusedAnswer: a press the form did not offer is refused as
// POST /Chat refuses it, before a2a-go adds the message to the task: a
// JSON-RPC invalid params error whose data names Baton's code
// (action_not_offered), the task as it was (input-required, its history
// without the refused message), and the form still answerable (issue 47,
// item 16).
func TestA2UIRefusedAnswer(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 1, nil,
		modeltest.CallReply(modeltest.Call("f1", "show_surface", map[string]any{"messages": decode(t, formMessages), "wait": true})),
		modeltest.TextReply("booked"))
	c := f.clientWith(extensionTransport{authTransport{user: "ada"}})
	task := send(t.Context(), t, c, textMessage("a form"))
	before, err := c.GetTask(t.Context(), &a2a.GetTaskRequest{ID: task.ID})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.SendMessage(t.Context(), &a2a.SendMessageRequest{Message: a2a.NewMessageForTask(a2a.MessageRoleUser, task, bookAction(`{"name":"Ada","price":1}`))})
	var rpcErr *a2a.Error
	if !errors.Is(err, a2a.ErrInvalidParams) || !errors.As(err, &rpcErr) || rpcErr.Details["code"] != "action_not_offered" {
		t.Fatalf("an action not offered: error %v (%+v), want invalid params with code action_not_offered", err, rpcErr)
	}
	after, err := c.GetTask(t.Context(), &a2a.GetTaskRequest{ID: task.ID})
	if err != nil {
		t.Fatal(err)
	}
	if after.Status.State != a2a.TaskStateInputRequired || len(after.History) != len(before.History) {
		t.Errorf("after the refused press: state %s, %d messages in history; want input-required and %d", after.Status.State, len(after.History), len(before.History))
	}
	done := send(t.Context(), t, c, &a2a.SendMessageRequest{Message: a2a.NewMessageForTask(a2a.MessageRoleUser, task, bookAction(`{"name":"Ada"}`))})
	if done.Status.State != a2a.TaskStateCompleted {
		t.Errorf("the press offered: state %s, want completed", done.Status.State)
	}
}

// TestA2UIExtensionEchoed: a response names the A2UI extension in its
// A2A-Extensions header (0.3: X-A2A-Extensions) when the request activated
// it, as the A2A specification asks; not otherwise (issue 47, item 16).
func TestA2UIExtensionEchoed(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 1, nil, modeltest.TextReply("one"), modeltest.TextReply("two"), modeltest.TextReply("three"))
	body := func(id string, metadata string) string {
		return `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"` + id +
			`","role":"user","parts":[{"kind":"text","text":"hi"}]` + metadata + `}}}`
	}
	tests := []struct {
		name, header, body string
		want               bool
	}{
		{"header", A2UIExtensionURI, body("m1", ""), true},
		{"capabilities", "", body("m2", `,"metadata":{"a2uiClientCapabilities":{}}`), true},
		{"neither", "", body("m3", ""), false},
	}
	for _, tt := range tests {
		req, _ := http.NewRequest(http.MethodPost, f.instances[0].srv.URL, strings.NewReader(tt.body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer ada")
		if tt.header != "" {
			req.Header.Set("X-A2A-Extensions", tt.header)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		got := resp.Header.Get("X-A2A-Extensions") == A2UIExtensionURI && resp.Header.Get("A2A-Extensions") == A2UIExtensionURI
		if got != tt.want || resp.StatusCode != http.StatusOK {
			t.Errorf("%s: status %d, headers %v; want the extension echoed: %v", tt.name, resp.StatusCode, resp.Header, tt.want)
		}
	}
}
