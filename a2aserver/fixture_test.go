package a2aserver

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/firestore"
	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/genai"

	"github.com/baton-run/baton/internal/firestoretest"
	"github.com/baton-run/baton/internal/teamtest"
	"github.com/baton-run/baton/modeltest"
	"github.com/baton-run/baton/toolcallback"
)

func TestMain(m *testing.M) { firestoretest.Main(m) }

// instance is one serverless instance: its own Firestore client, team and
// A2A server, over HTTP.
type instance struct {
	srv     *httptest.Server
	client  *firestore.Client
	counter *firestoretest.Counter
	team    *toolcallback.Team
}

// fixture is a deployment of several instances on one project of the
// shared test world, with its strict scripted model and its browser tool.
type fixture struct {
	t         *testing.T
	model     *modeltest.Strict
	instances []*instance
}

// bearerAuth is the tests' identity check: "Bearer <user>" names the user.
// (The functions package verifies real tokens; see functions/a2a.go.)
func bearerAuth(r *http.Request) (Caller, error) {
	user, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || user == "" {
		return Caller{}, ErrUnauthenticated
	}
	return Caller{User: user}, nil
}

func newFixture(t *testing.T, n int, opts *Options, script ...modeltest.Reply) *fixture {
	t.Helper()
	dj := func(w *teamtest.World, _ *teamtest.Instance) []toolcallback.Member {
		return []toolcallback.Member{w.Member(llmagent.Config{Name: "dj", Description: "plays music", Model: w.Model,
			Tools: []tool.Tool{w.Tools.BGM, askingTool(t), w.Tools.Surface}})}
	}
	w := teamtest.New(t, &teamtest.Options{Team: &toolcallback.Options{InvocationTimeout: 30 * time.Second}, Agents: dj}, script...)
	f := &fixture{t: t, model: w.Model}
	for i := range n {
		in := w.Instance
		if i > 0 {
			in = w.Reopen()
		}
		srv := httptest.NewServer(New(in.Client, in.Sessions, in.Team, bearerAuth, opts))
		t.Cleanup(srv.Close)
		f.instances = append(f.instances, &instance{srv: srv, client: in.Client, counter: in.Counter, team: in.Team})
	}
	return f
}

// authTransport adds a user's bearer token to every request.
type authTransport struct{ user string }

func (a authTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+a.user)
	return http.DefaultTransport.RoundTrip(r)
}

// client returns a2a-go's client (JSON-RPC, protocol 0.3) of instance i,
// signed in as user.
func (f *fixture) client(i int, user string) *a2aclient.Client {
	f.t.Helper()
	hc := &http.Client{Transport: authTransport{user: user}}
	c, err := a2aclient.NewFromEndpoints(context.Background(),
		[]*a2a.AgentInterface{{URL: f.instances[i].srv.URL, ProtocolBinding: a2a.TransportProtocolJSONRPC, ProtocolVersion: a2av0.Version}},
		a2aclient.WithCompatTransport(a2av0.Version, a2a.TransportProtocolJSONRPC, a2av0.NewJSONRPCTransportFactory(a2av0.JSONRPCTransportConfig{Client: hc})))
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { c.Destroy() })
	return c
}

func textMessage(s string) *a2a.SendMessageRequest {
	return &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(s))}
}

// answerMessage answers calls of a task with function responses, as ADK's
// A2A conversions write them.
func answerMessage(task *a2a.Task, responses ...*genai.FunctionResponse) *a2a.SendMessageRequest {
	var parts []*a2a.Part
	for _, fr := range responses {
		p := a2a.NewDataPart(map[string]any{"id": fr.ID, "name": fr.Name, "response": fr.Response})
		p.SetMeta("adk_type", "function_response")
		parts = append(parts, p)
	}
	msg := a2a.NewMessageForTask(a2a.MessageRoleUser, task, parts...)
	return &a2a.SendMessageRequest{Message: msg}
}

// pendingIDs reads the call ids an input-required task lists.
func pendingIDs(t *testing.T, task *a2a.Task) []string {
	t.Helper()
	if task.Status.State != a2a.TaskStateInputRequired || task.Status.Message == nil {
		t.Fatalf("task state = %s, want input-required with a message", task.Status.State)
	}
	var ids []string
	for _, p := range task.Status.Message.Parts {
		if data, ok := p.Data().(map[string]any); ok && p.Meta()["adk_type"] == "function_call" {
			ids = append(ids, fmt.Sprint(data["id"]))
		}
	}
	return ids
}

// send sends a message and returns the task it answers with.
func send(ctx context.Context, t *testing.T, c *a2aclient.Client, req *a2a.SendMessageRequest) *a2a.Task {
	t.Helper()
	res, err := c.SendMessage(ctx, req)
	if err != nil {
		t.Fatalf("SendMessage: %v", err)
	}
	task, ok := res.(*a2a.Task)
	if !ok {
		t.Fatalf("SendMessage returned %T, want a task", res)
	}
	return task
}

func artifactText(task *a2a.Task) string {
	var b strings.Builder
	for _, a := range task.Artifacts {
		for _, p := range a.Parts {
			b.WriteString(p.Text())
		}
	}
	return b.String()
}

// postRPCError POSTs a JSON-RPC body to the first instance as ada and
// decodes the error it must answer with: the response (body read and
// closed), the error's code and the raw body.
func (f *fixture) postRPCError(t *testing.T, body string) (*http.Response, int, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, f.instances[0].srv.URL, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer ada")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var out struct {
		Error *struct {
			Code int `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal(raw, &out); err != nil || out.Error == nil {
		t.Fatalf("status %d body %s: want a JSON-RPC error", resp.StatusCode, raw)
	}
	return resp, out.Error.Code, raw
}
