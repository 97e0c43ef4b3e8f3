package functions

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/baton-run/baton/internal/authtest"
	"github.com/baton-run/baton/modeltest"
)

func TestConfigFromEnv(t *testing.T) {
	t.Parallel()
	env := func(kv ...string) func(string) (string, bool) {
		m := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
	}
	cfg, err := ConfigFromEnv(env("GOOGLE_CLOUD_PROJECT", "p", "BATON_ALLOWED_ORIGINS", "https://a.example, https://b.example"))
	if err != nil {
		t.Fatalf("ConfigFromEnv(defaults) error = %v", err)
	}
	if cfg.AppName != "baton" || cfg.CallTimeout != 10*time.Minute || cfg.MaxBodyBytes != 262144 || len(cfg.AllowedOrigins) != 2 || cfg.DevIdentity ||
		cfg.CheckRevoked || cfg.TraceExport != TraceExportNone || cfg.LiveModel != DefaultLiveModel || cfg.LiveTimeout != 55*time.Minute ||
		cfg.TurnLimits.User.LiveSegmentsPerUser != 2 || cfg.TurnLimits.Anonymous.LiveSegmentsPerUser != 2 ||
		cfg.WorkQueue != "" || cfg.WorkDeadline != 30*time.Minute || cfg.BackgroundPerUser != 5 {
		t.Errorf("defaults = %+v", cfg)
	}
	tests := []struct {
		name string
		env  func(string) (string, bool)
		want string
	}{
		{"dev identity on Cloud Run", env("BATON_DEV_IDENTITY", "true", "K_SERVICE", "turn"), "refused on Cloud Run"},
		{"auth emulator on Cloud Run", env("GOOGLE_CLOUD_PROJECT", "p", "FIREBASE_AUTH_EMULATOR_HOST", "127.0.0.1:9099", "K_SERVICE", "turn"), "FIREBASE_AUTH_EMULATOR_HOST"},
		{"bad revocation flag", env("GOOGLE_CLOUD_PROJECT", "p", "BATON_CHECK_REVOKED", "sometimes"), "BATON_CHECK_REVOKED"},
		{"no project", env(), "GOOGLE_CLOUD_PROJECT is required"},
		{"bad policy", env("GOOGLE_CLOUD_PROJECT", "p", "BATON_LEASE_POLICY", "queue"), "BATON_LEASE_POLICY"},
		{"bad duration", env("GOOGLE_CLOUD_PROJECT", "p", "BATON_CALL_TIMEOUT", "10"), "BATON_CALL_TIMEOUT"},
		{"short token key", env("GOOGLE_CLOUD_PROJECT", "p", "BATON_TOKEN_KEY", "short"), "BATON_TOKEN_KEY"},
		{"bad app name", env("GOOGLE_CLOUD_PROJECT", "p", "BATON_APP_NAME", "a/b"), "invalid id"},
		{"bad trace export", env("GOOGLE_CLOUD_PROJECT", "p", "BATON_TRACE_EXPORT", "jaeger"), "BATON_TRACE_EXPORT"},
		{"push prefix without a path", env("GOOGLE_CLOUD_PROJECT", "p", "BATON_A2A_PUSH_ALLOW", "https://hooks.example"), "BATON_A2A_PUSH_ALLOW"},
		{"push prefix not http", env("GOOGLE_CLOUD_PROJECT", "p", "BATON_A2A_PUSH_ALLOW", "ftp://hooks.example/"), "BATON_A2A_PUSH_ALLOW"},
		{"bad live segment bound", env("GOOGLE_CLOUD_PROJECT", "p", "BATON_LIVE_SEGMENTS_PER_USER", "-1"), "BATON_LIVE_SEGMENTS_PER_USER"},
		{"bad live timeout", env("GOOGLE_CLOUD_PROJECT", "p", "BATON_LIVE_TIMEOUT", "long"), "BATON_LIVE_TIMEOUT"},
		{"A2A invokers without an audience", env("GOOGLE_CLOUD_PROJECT", "p", "BATON_A2A_INVOKERS", "a@p.iam.gserviceaccount.com"), "BATON_A2A_AUDIENCE"},
		{"work queue without its worker", env("GOOGLE_CLOUD_PROJECT", "p", "BATON_WORK_QUEUE", "projects/p/locations/l/queues/q"), "BATON_WORK_URL and BATON_WORK_INVOKER"},
		{"work deadline beyond Cloud Tasks'", env("GOOGLE_CLOUD_PROJECT", "p", "BATON_WORK_QUEUE", "projects/p/locations/l/queues/q", "BATON_WORK_URL", "https://w.example",
			"BATON_WORK_INVOKER", "t@p.iam.gserviceaccount.com", "BATON_WORK_DEADLINE", "45m"), "BATON_WORK_DEADLINE"},
		{"work deadline within an invocation", env("GOOGLE_CLOUD_PROJECT", "p", "BATON_WORK_QUEUE", "projects/p/locations/l/queues/q", "BATON_WORK_URL", "https://w.example",
			"BATON_WORK_INVOKER", "t@p.iam.gserviceaccount.com", "BATON_WORK_DEADLINE", "2m"), "BATON_INVOCATION_TIMEOUT"},
		{"bad background bound", env("GOOGLE_CLOUD_PROJECT", "p", "BATON_BACKGROUND_PER_USER", "0"), "BATON_BACKGROUND_PER_USER"},
	}
	for _, tc := range tests {
		if _, err := ConfigFromEnv(tc.env); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error = %v, want it to mention %q", tc.name, err, tc.want)
		}
	}
	if cfg, err := ConfigFromEnv(env("BATON_DEV_IDENTITY", "true")); err != nil || !cfg.DevIdentity {
		t.Errorf("dev identity off Cloud Run: %+v, %v; want enabled", cfg, err)
	}
	if cfg, err := ConfigFromEnv(env("GOOGLE_CLOUD_PROJECT", "p", "BATON_CHECK_REVOKED", "true", "FIREBASE_AUTH_EMULATOR_HOST", "127.0.0.1:9099")); err != nil ||
		!cfg.CheckRevoked || cfg.AuthEmulator != "127.0.0.1:9099" {
		t.Errorf("revocation checks and the emulator off Cloud Run: %+v, %v; want both", cfg, err)
	}
}

func TestDevIdentity(t *testing.T) {
	t.Parallel()
	f := newHTTPFixture(t, func(c *Config) { c.DevIdentity = true }, modeltest.TextReply("hello"))
	resp := f.do(http.MethodPost, NameTurn, "", map[string]any{"sessionId": "s1", "clientId": "tab-a", "text": "hi"}, map[string]string{"X-Baton-User": "local-user"})
	if got := text(f.stream(resp)); got != "hello" {
		t.Errorf("dev identity turn text = %q", got)
	}
	if resp := f.do(http.MethodPost, NameTurn, "", map[string]any{"sessionId": "s1", "clientId": "tab-a", "text": "hi"}, nil); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("dev identity without header: status %d, want 401", resp.StatusCode)
	}
}

// TestMalformedIdentity: a user id that cannot be an id, from a signed ID
// token or from the development header, is a credentials problem: 401
// unauthenticated, on every function, with nothing written.
func TestMalformedIdentity(t *testing.T) {
	t.Parallel()
	type user struct{ name, id string }
	bad := []user{
		{"slash", "a/b"},
		{"reserved", "__admin__"},
		{"dot dot", ".."},
		{"over 1,500 bytes", strings.Repeat("u", 1501)},
	}
	turn := map[string]any{"sessionId": "s1", "clientId": "tab-a", "text": "hi"}
	answer := map[string]any{"sessionId": "s1", "toolCallId": "c1", "clientId": "tab-a", "output": map[string]any{}}
	check := func(t *testing.T, f *httpFixture, name string, send func(fn string, body any, query string) *http.Response) {
		t.Helper()
		for _, r := range []struct {
			fn    string
			body  any
			query string
		}{{NameTurn, turn, ""}, {NameToolResult, answer, ""}, {NamePending, nil, "?sessionId=s1&clientId=tab-a"}} {
			before := f.counter.Snapshot()
			resp := send(r.fn, r.body, r.query)
			if resp.StatusCode != http.StatusUnauthorized {
				raw, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				t.Errorf("%s, %s: status %d, want 401: %s", name, r.fn, resp.StatusCode, raw)
				continue
			}
			if e := errorOf(t, resp); e.Code != "unauthenticated" {
				t.Errorf("%s, %s: error %+v, want unauthenticated", name, r.fn, e)
			}
			if w := f.counter.Snapshot().Sub(before).Writes; w != 0 {
				t.Errorf("%s, %s: %d documents written, want 0", name, r.fn, w)
			}
		}
	}
	t.Run("ID token", func(t *testing.T) {
		t.Parallel()
		f := newHTTPFixture(t, nil)
		// A JSON claim holds no invalid UTF-8; it can hold a NUL.
		for _, tc := range append(bad, user{"NUL", "ada\x00"}) {
			// Sign-up picks a user's uid; the admin API takes ours, and the
			// token is an emulator one with its claims naming it.
			if len(tc.id) <= 128 { // the Admin SDK itself refuses longer subs
				authtest.CreateUser(t, f.authAddr, testProject, tc.id)
			}
			token := withClaims(t, f.token("ada"), func(c map[string]any) { c["sub"], c["user_id"] = tc.id, tc.id })
			check(t, f, tc.name, func(fn string, body any, query string) *http.Response {
				return f.send(fn, body, query, map[string]string{"Authorization": "Bearer " + token})
			})
		}
	})
	t.Run("development header", func(t *testing.T) {
		t.Parallel()
		f := newHTTPFixture(t, func(c *Config) { c.DevIdentity = true })
		// A header holds no NUL; it can hold invalid UTF-8.
		for _, tc := range append(bad, user{"invalid UTF-8", "ada\xff"}) {
			check(t, f, tc.name, func(fn string, body any, query string) *http.Response {
				return f.send(fn, body, query, map[string]string{"X-Baton-User": tc.id})
			})
		}
	})
}

func TestCORS(t *testing.T) {
	t.Parallel()
	f := newHTTPFixture(t, nil)
	preflight := func(origin string) *http.Response {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodOptions, f.srv.URL+"/"+NameTurn, nil)
		req.Header.Set("Origin", origin)
		req.Header.Set("Access-Control-Request-Method", "POST")
		req.Header.Set("Access-Control-Request-Headers", "authorization, content-type")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	ok := preflight(testOrigin)
	if ok.StatusCode != http.StatusNoContent || ok.Header.Get("Access-Control-Allow-Origin") != testOrigin ||
		!strings.Contains(ok.Header.Get("Access-Control-Allow-Headers"), "Authorization") || !strings.Contains(ok.Header.Get("Access-Control-Allow-Methods"), "POST") {
		t.Errorf("allowed preflight: %d %v", ok.StatusCode, ok.Header)
	}
	if bad := preflight("https://evil.example"); bad.StatusCode != http.StatusForbidden || bad.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("disallowed preflight: %d %v", bad.StatusCode, bad.Header)
	}
	resp := f.do(http.MethodPost, NameTurn, "", map[string]any{}, map[string]string{"Origin": testOrigin})
	resp.Body.Close()
	if resp.Header.Get("Access-Control-Allow-Origin") != testOrigin || !strings.Contains(resp.Header.Get("Access-Control-Expose-Headers"), "Retry-After") {
		t.Errorf("actual request CORS headers: %v", resp.Header)
	}
}

// TestPanicIs500 recovers a panicking endpoint: 500, "internal error" only.
func TestPanicIs500(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	s := &Server{cfg: testConfig(), log: NewLogger(&logs)}
	h := s.wrap("Boom", []string{http.MethodPost}, func(http.ResponseWriter, *http.Request, *slog.Logger) error {
		panic("secret detail")
	})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/Boom", nil))
	if rec.Code != http.StatusInternalServerError || strings.Contains(rec.Body.String(), "secret") || !strings.Contains(rec.Body.String(), `"internal error"`) {
		t.Errorf("panic response: %d %s", rec.Code, rec.Body)
	}
	if !strings.Contains(logs.String(), "secret detail") {
		t.Errorf("the panic was not logged: %s", logs.String())
	}
	// An ordinary server error is also "internal error" to the client and
	// detailed in the log.
	rec = httptest.NewRecorder()
	s.wrap("Fail", []string{http.MethodPost}, func(http.ResponseWriter, *http.Request, *slog.Logger) error {
		return errors.New("connection string leaked")
	}).ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/Fail", nil))
	if rec.Code != 500 || strings.Contains(rec.Body.String(), "leaked") {
		t.Errorf("server error response: %d %s", rec.Code, rec.Body)
	}
}

func TestLogLines(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	s := &Server{cfg: testConfig(), log: NewLogger(&logs)}
	h := s.wrap("Fail", []string{http.MethodPost}, func(http.ResponseWriter, *http.Request, *slog.Logger) error {
		return errors.New("disk on fire")
	})
	req := httptest.NewRequest(http.MethodPost, "/Fail", nil)
	req.Header.Set("X-Cloud-Trace-Context", "105445aa7843bc8bf206b12000100000/456;o=1")
	req.Header.Set("Function-Execution-Id", "exec-9")
	h.ServeHTTP(httptest.NewRecorder(), req)
	var lines []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line %q is not JSON: %v", l, err)
		}
		lines = append(lines, m)
	}
	last := lines[len(lines)-1]
	if last["severity"] != "ERROR" || last["message"] != "request" || last["status"] != float64(500) ||
		last["logging.googleapis.com/trace"] != "projects/proj/traces/105445aa7843bc8bf206b12000100000" || last["executionId"] != "exec-9" || last["latencyMs"] == nil {
		t.Errorf("request log line = %v", last)
	}
	if !strings.Contains(logs.String(), "disk on fire") {
		t.Errorf("5xx detail not logged: %s", logs.String())
	}
}

// TestClientGoneIsNotAnError: a request that fails because its client went
// away (a closed tab, a reload mid-request) is logged as information with
// status 499, not as a server error an alert on error logs would count.
func TestClientGoneIsNotAnError(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	s := &Server{cfg: testConfig(), log: NewLogger(&logs)}
	h := s.wrap("Chat", []string{http.MethodGet}, func(_ http.ResponseWriter, r *http.Request, _ *slog.Logger) error {
		return fmt.Errorf("read chat: %w", r.Context().Err())
	})
	ctx, cancel := context.WithCancel(t.Context())
	cancel() // the client is gone before the read
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequestWithContext(ctx, http.MethodGet, "/Chat", nil))
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	for _, l := range lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line %q is not JSON: %v", l, err)
		}
		if m["severity"] != "INFO" {
			t.Errorf("a request its client cancelled logged %v", m)
		}
		if m["message"] == "request" && m["status"] != float64(499) {
			t.Errorf("request line status = %v, want 499", m["status"])
		}
	}
	if !strings.Contains(logs.String(), "the client went away") {
		t.Errorf("no line says the client went away:\n%s", logs.String())
	}
}
