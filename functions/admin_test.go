package functions

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"firebase.google.com/go/v4/auth"

	"github.com/baton-run/baton/internal/authtest"
	"github.com/baton-run/baton/limits"
	"github.com/baton-run/baton/modeltest"
	"github.com/baton-run/baton/sessionstore"
)

// adminStatus sends a console API request and returns its status and
// error code ("" for a success).
func (f *httpFixture) adminStatus(method, path, token string, body any) (int, string) {
	f.t.Helper()
	resp := f.do(method, NameAdmin+"/api/"+path, token, body, nil)
	defer resp.Body.Close()
	if resp.StatusCode < 300 {
		io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, ""
	}
	return resp.StatusCode, errorOf(f.t, resp).Code
}

// adminJSON sends a console API request that must succeed and decodes
// its answer into out.
func (f *httpFixture) adminJSON(method, path, token string, body, out any) {
	f.t.Helper()
	resp := f.do(method, NameAdmin+"/api/"+path, token, body, nil)
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		f.t.Fatalf("%s /admin/api/%s: %d %s", method, path, resp.StatusCode, raw)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			f.t.Fatalf("%s /admin/api/%s: %v: %s", method, path, err, raw)
		}
	}
}

// emailUser signs up email in the Auth emulator (a user of provider
// "password"), with its email verified or not.
func (f *httpFixture) emailUser(email string, verified bool) authtest.User {
	f.t.Helper()
	u := authtest.SignUpWithEmail(f.t, f.authAddr, email)
	if verified {
		if _, err := f.auth.UpdateUser(f.t.Context(), u.UID, (&auth.UserToUpdate{}).EmailVerified(true)); err != nil {
			f.t.Fatal(err)
		}
	}
	return u
}

// TestOperatorIdentity: only operators reach the console's API: a user
// whose custom claim says so, or whose verified email is listed; not an
// ordinary user, an anonymous one, an unverified email, or a token whose
// claims were edited to say so.
func TestOperatorIdentity(t *testing.T) {
	t.Parallel()
	f := newHTTPFixture(t, func(c *Config) {
		c.Operators = []string{"listed@example.com", "unverified@example.com"}
		c.OperatorClaim = DefaultOperatorClaim
	})
	ctx := t.Context()
	suffix := time.Now().Format("150405.000000")
	claimed := f.emailUser("claimed-"+suffix+"@example.com", false)
	if err := f.auth.SetCustomUserClaims(ctx, claimed.UID, map[string]any{DefaultOperatorClaim: true}); err != nil {
		t.Fatal(err)
	}
	listed := authtest.SignUpWithEmail(t, f.authAddr, "listed@example.com")
	if _, err := f.auth.UpdateUser(ctx, listed.UID, (&auth.UserToUpdate{}).EmailVerified(true)); err != nil {
		t.Fatal(err)
	}
	unverified := authtest.SignUpWithEmail(t, f.authAddr, "unverified@example.com")
	ordinary := f.emailUser("ordinary-"+suffix+"@example.com", true)
	anon := f.user("anon")
	if err := f.auth.SetCustomUserClaims(ctx, anon.UID, map[string]any{DefaultOperatorClaim: true}); err != nil {
		t.Fatal(err)
	}
	forged := withClaims(t, ordinary.IDToken, func(c map[string]any) {
		c[DefaultOperatorClaim] = true
		c["email"], c["email_verified"] = "listed@example.com", true
	})
	tests := []struct {
		name  string
		token string
		want  int
	}{
		{"operator by claim", claimed.IDToken, http.StatusOK},
		{"operator by a listed, verified email", listed.IDToken, http.StatusOK},
		{"no token", "", http.StatusUnauthorized},
		{"ordinary user", ordinary.IDToken, http.StatusForbidden},
		{"listed email, not verified", unverified.IDToken, http.StatusForbidden},
		{"anonymous user, even with the claim", anon.IDToken, http.StatusForbidden},
		{"forged claims", forged, http.StatusForbidden},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, path := range []string{"me", "overview", "chats?state=waiting", "actions"} {
				if code, errCode := f.adminStatus(http.MethodGet, path, tt.token, nil); code != tt.want {
					t.Errorf("GET /admin/api/%s: %d %s, want %d", path, code, errCode, tt.want)
				}
			}
			if tt.want != http.StatusOK {
				before := f.counter.Snapshot()
				if code, _ := f.adminStatus(http.MethodPost, "sweep", tt.token, nil); code != tt.want {
					t.Errorf("POST /admin/api/sweep: %d, want %d", code, tt.want)
				}
				if w := f.counter.Snapshot().Sub(before).Writes; w != 0 {
					t.Errorf("a refused sweep wrote %d documents", w)
				}
			}
		})
	}
}

// TestBlockedUser: an operator blocks a user; their next token carries
// the block and every request of theirs is refused with 403 blocked; an
// unblock lets them back; both actions are recorded.
func TestBlockedUser(t *testing.T) {
	t.Parallel()
	f := newHTTPFixture(t, nil)
	suffix := time.Now().Format("150405.000000")
	op := f.emailUser("op-"+suffix+"@example.com", true)
	if err := f.auth.SetCustomUserClaims(t.Context(), op.UID, map[string]any{DefaultOperatorClaim: true}); err != nil {
		t.Fatal(err)
	}
	email := "user-" + suffix + "@example.com"
	user := f.emailUser(email, false)
	if code, _, _ := f.pendingStatus(user.IDToken); code != http.StatusNotFound {
		t.Fatalf("the user before the block: %d, want 404 (accepted)", code)
	}
	f.adminJSON(http.MethodPost, "users/"+user.UID+"/block", op.IDToken, map[string]any{"reason": "spam"}, nil)
	again := authtest.SignIn(t, f.authAddr, email)
	code, body, _ := f.pendingStatus(again.IDToken)
	if code != http.StatusForbidden || body.Code != "blocked" || !strings.Contains(body.Message, "blocked") {
		t.Errorf("a blocked user's request: %d %+v, want 403 blocked", code, body)
	}
	resp := f.turn2(again.IDToken)
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("a blocked user's turn: %d, want 403", resp.StatusCode)
	}
	resp.Body.Close()
	var page struct {
		Info struct{ Blocked bool } `json:"info"`
	}
	f.adminJSON(http.MethodGet, "users/"+user.UID, op.IDToken, nil, &page)
	if !page.Info.Blocked {
		t.Error("the user's page does not say the user is blocked")
	}
	f.adminJSON(http.MethodPost, "users/"+user.UID+"/unblock", op.IDToken, map[string]any{"reason": ""}, nil)
	if code, _, _ := f.pendingStatus(authtest.SignIn(t, f.authAddr, email).IDToken); code != http.StatusNotFound {
		t.Errorf("the user after the unblock: %d, want 404 (accepted)", code)
	}
	var actions struct {
		Actions []struct{ What, Outcome, User string }
	}
	f.adminJSON(http.MethodGet, "actions", op.IDToken, nil, &actions)
	if len(actions.Actions) != 2 || actions.Actions[0].What != "unblock" || actions.Actions[1].What != "block" || actions.Actions[1].Outcome != "done" {
		t.Errorf("recorded actions = %+v, want unblock then block, done", actions.Actions)
	}
}

// turn2 sends a turn with token.
func (f *httpFixture) turn2(token string) *http.Response {
	return f.do(http.MethodPost, NameTurn, token, map[string]any{"sessionId": "s1", "clientId": "tab-a", "text": "hi"}, nil)
}

// TestAdminBadInput: the console's API refuses malformed requests with a
// 4xx and writes nothing.
func TestAdminBadInput(t *testing.T) {
	t.Parallel()
	f := newHTTPFixture(t, func(c *Config) { c.DevIdentity, c.Operators = true, []string{"ops"} })
	ops := map[string]string{"X-Baton-User": "ops"}
	tests := []struct {
		method, path string
		body         any
		want         int
	}{
		{http.MethodGet, "chats?state=asleep", nil, 400},
		{http.MethodGet, "chats?state=waiting&limit=0", nil, 400},
		{http.MethodGet, "chats?state=waiting&minAge=soon", nil, 400},
		{http.MethodGet, "chats?state=running&agent=assistant", nil, 400},
		{http.MethodGet, "chats?state=waiting&cursor=bm9wZQ", nil, 400},
		{http.MethodGet, "chats/u/..%2Fx", nil, 400},
		{http.MethodGet, "nowhere", nil, 400},
		{http.MethodPost, "chats/u/c/calls/k/answer", `{"output":{},"error":"x"}`, 400},
		{http.MethodPost, "chats/u/c/calls/k/answer", `{"outputs":{}}`, 400},
		{http.MethodPost, "chats/u/c/calls/k/answer", `not json`, 400},
		{http.MethodPost, "chats/u/c/calls/k/expire", `{"reason":""}`, 400},
		{http.MethodPost, "chats/u/c/calls/k/expire", map[string]any{"reason": strings.Repeat("x", 3000)}, 400},
		{http.MethodPost, "users/u/block", `{"reason":"x"}`, 501}, // development identity has no claims
		{http.MethodDelete, "users/a%2Fb", nil, 400},
		{http.MethodGet, "users/u?limit=1000", nil, 400},
	}
	for _, tt := range tests {
		before := f.counter.Snapshot()
		resp := f.do(tt.method, NameAdmin+"/api/"+tt.path, "", tt.body, ops)
		if resp.StatusCode != tt.want {
			raw, _ := io.ReadAll(resp.Body)
			t.Errorf("%s %s: %d %s, want %d", tt.method, tt.path, resp.StatusCode, raw, tt.want)
		}
		resp.Body.Close()
		if w := f.counter.Snapshot().Sub(before).Writes; w != 0 {
			t.Errorf("%s %s wrote %d documents", tt.method, tt.path, w)
		}
	}
	if code, _ := f.adminStatus(http.MethodGet, "me", "", nil); code != http.StatusUnauthorized {
		t.Errorf("no X-Baton-User: %d, want 401", code)
	}
	resp := f.do(http.MethodGet, NameAdmin+"/api/me", "", nil, map[string]string{"X-Baton-User": "someone"})
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("a development user not listed: %d, want 403", resp.StatusCode)
	}
	resp.Body.Close()
}

// TestServiceCaps: past the deployment's token cap a new message gets
// 429 service_cap, and the answer to a call paused before still resumes
// the agent; past the cap on new anonymous users, a new guest's first
// message is refused while an admitted guest goes on.
func TestServiceCaps(t *testing.T) {
	t.Parallel()
	f := newHTTPFixture(t, func(c *Config) { c.TurnLimits = TurnLimits{ServiceTokens: 1000, NewAnonymous: 1} },
		modeltest.CallReply(modeltest.Call("c1", "change_bgm", map[string]any{"track": 2})))
	// A refused turn may have asked the model already (the caps are read
	// beside it): every later request gets an echo.
	f.model.Repeat = modeltest.EchoReply
	f.stream(f.turn("ada", "s1", "tab-a", "music"), "c1")
	if msg := refusedMessage(t, f.turn("bob", "s2", "tab-a", "hello")); !strings.Contains(msg, "new guests") {
		t.Errorf("a second new guest's message was refused with %q, want the cap on new guests", msg)
	}
	f.stream(f.turn("ada", "s3", "tab-a", "hello again"))
	counter := limits.NewCounter(sessionstore.New(f.client, nil), "app")
	if _, err := sessionstore.New(f.client, nil).Commit(t.Context(), counter.TokensWrite(1000, time.Now())...); err != nil {
		t.Fatal(err)
	}
	if msg := refusedMessage(t, f.turn("ada", "s1", "tab-a", "more music")); !strings.Contains(msg, "limit of use for today") {
		t.Errorf("a message past the token cap was refused with %q", msg)
	}
	final := f.stream(f.do(http.MethodPost, NameToolResult, f.token("ada"),
		map[string]any{"sessionId": "s1", "toolCallId": "c1", "clientId": "tab-a", "output": map[string]any{"playing": 2}}, nil), "c1")
	if got := text(final); !strings.Contains(got, `change_bgm={"playing":2}`) {
		t.Errorf("the answer past the cap resumed to %q, want the model's reply to it", got)
	}
}

// refusedMessage checks resp is a 429 service_cap with a wait until the
// next UTC day at most, and returns its message.
func refusedMessage(t *testing.T, resp *http.Response) string {
	t.Helper()
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("status %d, want 429", resp.StatusCode)
	}
	body := errorOf(t, resp)
	if body.Code != "service_cap" || body.RetryAfterSeconds < 1 || body.RetryAfterSeconds > 86400 {
		t.Errorf("error = %+v, want service_cap with a wait of at most a day", body)
	}
	return body.Message
}

// TestMetrics: a turn that pauses and a resume are counted (requests,
// invocations, calls paused and resumed, a duplicate answer), read by an
// operator at GET /admin/api/metrics, and no attribute carries a user, a
// chat or a call id.
func TestMetrics(t *testing.T) {
	t.Parallel()
	f := newHTTPFixtureWith(t, func(_ *httpFixture, o *ServerOptions) { o.Metrics = testMetrics },
		func(c *Config) { c.DevIdentity, c.Operators = true, []string{"ops"} },
		modeltest.CallReply(modeltest.Call("metric-call-1", "change_bgm", map[string]any{"track": 2})), modeltest.TextReply("ok"))
	dev := map[string]string{"X-Baton-User": "metric-user-1"}
	f.stream(f.do(http.MethodPost, NameTurn, "", map[string]any{"sessionId": "metric-chat-1", "clientId": "tab-a", "text": "music"}, dev), "metric-call-1")
	answer := map[string]any{"sessionId": "metric-chat-1", "toolCallId": "metric-call-1", "clientId": "tab-a", "output": map[string]any{"playing": 2}}
	f.stream(f.do(http.MethodPost, NameToolResult, "", answer, dev), "metric-call-1")
	answer["output"] = map[string]any{"playing": 3}
	resp := f.do(http.MethodPost, NameToolResult, "", answer, dev)
	resp.Body.Close()
	var views []MetricView
	resp = f.do(http.MethodGet, NameAdmin+"/api/metrics", "", nil, map[string]string{"X-Baton-User": "ops"})
	if err := json.NewDecoder(resp.Body).Decode(&views); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	seen := map[string]bool{}
	for _, v := range views {
		seen[v.Name] = true
		for _, p := range v.Points {
			for k, val := range p.Attributes {
				if strings.Contains(val, "metric-user-1") || strings.Contains(val, "metric-chat-1") || strings.Contains(val, "metric-call-1") {
					t.Errorf("%s has the attribute %s=%q, an id", v.Name, k, val)
				}
			}
		}
	}
	for _, name := range []string{"baton.requests", "http.server.request.duration", "baton.invocations", "baton.invocation.first_event.duration",
		"baton.calls.paused", "baton.calls.resumed", "baton.answers.duplicate"} {
		if !seen[name] {
			t.Errorf("no %s in the reading", name)
		}
	}
}

// TestOperatorDeletesUserData: the console's user page lists the ratings
// the user gave, and deleting the user's data is the user's own account
// deletion: their chats are gone, another user's stay, and the action is
// in the record.
func TestOperatorDeletesUserData(t *testing.T) {
	t.Parallel()
	email := "ops-" + time.Now().Format("150405.000000") + "@example.com"
	f := newHTTPFixture(t, func(c *Config) { c.Operators = []string{email} },
		modeltest.TextReply("ada's answer"), modeltest.TextReply("bob's answer"))
	f.stream(f.chat("ada", chatBody("c2", "tab-a", userMessage("u2", "hello there"))))
	f.stream(f.chat("bob", chatBody("c1", "tab-b", userMessage("u3", "bob's plans"))))
	answer := f.assistantID("ada", "c2")
	if code, body := f.status(http.MethodPut, NameChat+"/c2/feedback/"+answer, "ada", map[string]any{"rating": "up", "comment": "helpful"}, nil); code != http.StatusOK {
		t.Fatalf("rating: %d %s", code, body)
	}
	ops := f.emailUser(email, true).IDToken
	ada := f.user("ada").UID

	var page struct {
		Feedback []struct{ Chat, Message, Rating, Comment string }
	}
	f.adminJSON(http.MethodGet, "users/"+ada, ops, nil, &page)
	if len(page.Feedback) != 1 || page.Feedback[0].Chat != "c2" || page.Feedback[0].Message != answer || page.Feedback[0].Comment != "helpful" {
		t.Errorf("the user page's feedback: %+v, want ada's one rating of %s in c2", page.Feedback, answer)
	}
	if code, _ := f.adminStatus(http.MethodDelete, "users/"+ada, ops, nil); code >= 300 {
		t.Fatalf("DELETE users/%s: %d", ada, code)
	}
	if ids := f.list("ada", "tab-a", "").ids(); len(ids) != 0 {
		t.Errorf("ada's chats after the deletion: %v, want none", ids)
	}
	if ids := f.list("bob", "tab-b", "").ids(); len(ids) != 1 || ids[0] != "c1" {
		t.Errorf("bob's chats after ada's deletion: %v, want [c1]", ids)
	}
	var actions struct {
		Actions []struct{ What, User, Outcome string }
	}
	f.adminJSON(http.MethodGet, "actions", ops, nil, &actions)
	if len(actions.Actions) == 0 || actions.Actions[0].What != "delete-user" || actions.Actions[0].User != ada || actions.Actions[0].Outcome != "done" {
		t.Errorf("the record of actions: %+v, want ada's deletion done first", actions.Actions)
	}
}
