package functions

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/baton-run/baton/modeltest"
	"github.com/baton-run/baton/toolcallback"
)

const (
	testA2AAud   = "https://a2a.example"
	testA2ACallr = "caller@proj.iam.gserviceaccount.com"
)

// rpc is a JSON-RPC answer of the A2A function.
type rpc struct {
	status int
	Result struct {
		ID        string `json:"id"`
		ContextID string `json:"contextId"`
		Status    struct {
			State string `json:"state"`
		} `json:"status"`
	} `json:"result"`
	Error *rpcError `json:"error"`
}

// rpcError is a JSON-RPC error: its data holds Baton's code of the error's
// class (errclass), as the HTTP routes' bodies do.
type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    []struct {
		Code              string `json:"code"`
		RetryAfterSeconds int    `json:"retryAfterSeconds"`
	} `json:"data"`
}

// class is Baton's code of the error, "" when its data has none.
func (e *rpcError) class() string {
	for _, d := range e.Data {
		if d.Code != "" {
			return d.Code
		}
	}
	return ""
}

// retryAfter is the retry its data says, in seconds.
func (e *rpcError) retryAfter() int {
	for _, d := range e.Data {
		if d.Code != "" {
			return d.RetryAfterSeconds
		}
	}
	return 0
}

// a2aCall sends one JSON-RPC request (A2A 0.3 method names) to the A2A
// function with a bearer token.
func (f *httpFixture) a2aCall(token, method string, params any) rpc {
	f.t.Helper()
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	if err != nil {
		f.t.Fatal(err)
	}
	return f.a2aBody(token, string(body))
}

// a2aBody posts a JSON-RPC body to the A2A function with a bearer token.
func (f *httpFixture) a2aBody(token, body string) rpc {
	f.t.Helper()
	resp := f.do(http.MethodPost, NameA2A, token, body, nil)
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	out := rpc{status: resp.StatusCode}
	if err := json.Unmarshal(raw, &out); err != nil {
		f.t.Fatalf("status %d, body %q is not JSON-RPC: %v", resp.StatusCode, raw, err)
	}
	return out
}

func a2aText(s string) map[string]any {
	return map[string]any{"message": map[string]any{"kind": "message", "messageId": "m-" + s, "role": "user",
		"parts": []any{map[string]any{"kind": "text", "text": s}}}}
}

// TestA2AIdentities: A2A takes a Firebase ID token (the user is its uid) or
// a Google-signed OIDC token of an allowed service account (the user is
// serviceAccount:<email>); anything else is a JSON-RPC unauthenticated
// error, an unreachable key server a 503; one identity does not find
// another's task.
func TestA2AIdentities(t *testing.T) {
	t.Parallel()
	f := newHTTPFixture(t, func(c *Config) {
		c.A2AAudience, c.A2AInvokers = testA2AAud, []string{testA2ACallr}
	}, modeltest.TextReply("hello, user"), modeltest.TextReply("hello, service"))
	service := func(mutate func(c map[string]any)) string {
		return f.keys.Token(t, func(c, _ map[string]any) {
			c["aud"], c["email"] = testA2AAud, testA2ACallr
			if mutate != nil {
				mutate(c)
			}
		})
	}

	byUser := f.a2aCall(f.token("ada"), "message/send", a2aText("hi"))
	if byUser.Error != nil || byUser.Result.Status.State != "completed" {
		t.Fatalf("message/send with a Firebase ID token = %+v, want a completed task", byUser)
	}
	if _, err := f.server.team.Pending(t.Context(), toolcallback.PendingRequest{UserID: f.user("ada").UID, ChatID: byUser.Result.ContextID, ClientID: "any"}); err != nil {
		t.Errorf("the task's context is not a chat of the token's uid: %v", err)
	}
	bySA := f.a2aCall(service(nil), "message/send", a2aText("hi"))
	if bySA.Error != nil || bySA.Result.Status.State != "completed" {
		t.Fatalf("message/send with an allowed service account's token = %+v, want a completed task", bySA)
	}
	if _, err := f.server.team.Pending(t.Context(), toolcallback.PendingRequest{UserID: ServiceUserPrefix + testA2ACallr, ChatID: bySA.Result.ContextID, ClientID: "any"}); err != nil {
		t.Errorf("the task's context is not a chat of %s%s: %v", ServiceUserPrefix, testA2ACallr, err)
	}

	refused := []struct {
		name  string
		token string
	}{
		{"no token", ""},
		{"forged ID token", withClaims(t, f.token("ada"), func(c map[string]any) { c["sub"] = "mallory" })},
		{"service account not allowed", service(func(c map[string]any) { c["email"] = "intruder@proj.iam.gserviceaccount.com" })},
		{"service token for another audience", service(func(c map[string]any) { c["aud"] = testSweepAud })},
		{"unverified service email", service(func(c map[string]any) { c["email_verified"] = false })},
	}
	for _, tt := range refused {
		got := f.a2aCall(tt.token, "message/send", a2aText("hi"))
		if got.status != http.StatusUnauthorized || got.Error == nil || !strings.Contains(got.Error.Message, "unauthenticated") {
			t.Errorf("%s: status %d %+v, want 401 with a JSON-RPC unauthenticated error", tt.name, got.status, got.Error)
		}
	}

	// Each identity finds its own task and not the other's.
	for _, tt := range []struct {
		token, own, other string
	}{
		{f.token("ada"), byUser.Result.ID, bySA.Result.ID},
		{service(nil), bySA.Result.ID, byUser.Result.ID},
	} {
		if got := f.a2aCall(tt.token, "tasks/get", map[string]any{"id": tt.own}); got.Error != nil || got.Result.ID != tt.own {
			t.Errorf("tasks/get of its own task %s = %+v", tt.own, got)
		}
		if got := f.a2aCall(tt.token, "tasks/get", map[string]any{"id": tt.other}); got.Error == nil || got.Error.Code != -32001 {
			t.Errorf("tasks/get of another identity's task %s = %+v, want task not found (-32001)", tt.other, got.Error)
		}
	}

	fresh := newHTTPFixture(t, func(c *Config) { c.A2AAudience, c.A2AInvokers = testA2AAud, []string{testA2ACallr} })
	fresh.keys.setStatus(http.StatusServiceUnavailable)
	got := fresh.a2aCall(service(nil), "message/send", a2aText("hi"))
	if got.status != http.StatusServiceUnavailable || got.Error == nil {
		t.Errorf("with Google's key server down: status %d %+v, want 503 with a JSON-RPC error", got.status, got.Error)
	}
}

// TestA2ACard: the card lists the team's agents as skills and names the
// bearer scheme Baton verifies, with both kinds of token.
func TestA2ACard(t *testing.T) {
	t.Parallel()
	f := newHTTPFixture(t, func(c *Config) { c.A2AAudience, c.A2AInvokers = testA2AAud, []string{testA2ACallr} })
	resp, err := http.Get(f.srv.URL + "/" + NameA2A + "/.well-known/agent-card.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var card struct {
		Skills          []struct{ Name string } `json:"skills"`
		SecuritySchemes map[string]struct {
			Type        string `json:"type"`
			Scheme      string `json:"scheme"`
			Description string `json:"description"`
		} `json:"securitySchemes"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&card); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("agent card: %d %v", resp.StatusCode, err)
	}
	bearer := card.SecuritySchemes["bearer"]
	if len(card.Skills) == 0 || !strings.EqualFold(bearer.Scheme, "bearer") ||
		!strings.Contains(bearer.Description, "Firebase") || !strings.Contains(bearer.Description, testA2AAud) {
		t.Errorf("card skills %v, bearer scheme %+v: want skills and a bearer scheme naming Firebase and the audience %s", card.Skills, bearer, testA2AAud)
	}
}
