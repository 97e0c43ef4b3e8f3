package functions

import (
	"net/http"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	grpcstatus "google.golang.org/grpc/status"
)

// TestFirestoreUnavailableIs503 makes every Firestore call fail as an
// unreachable backend would: HTTP answers 503 unavailable with
// Retry-After, and A2A the same class, a retryable -32000 (it used to be an
// internal error there).
func TestFirestoreUnavailableIs503(t *testing.T) {
	t.Parallel()
	// A2A's execution retries Firestore until its deadline: a short one.
	f := newHTTPFixture(t, func(c *Config) { c.RequestTimeout, c.InvocationTimeout = 2*time.Second, 3*time.Second })
	token := f.token("ada")
	f.counter.SetHook(func(string, any) error {
		return grpcstatus.Error(codes.DeadlineExceeded, "backend did not answer")
	})
	resp := f.do(http.MethodPost, NameTurn, token, map[string]any{"sessionId": "s1", "clientId": "tab-a", "text": "hi"}, nil)
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Errorf("status %d Retry-After %q, want 503 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	if e := errorOf(t, resp); e.Code != "unavailable" {
		t.Errorf("error = %+v, want unavailable", e)
	}
	got := f.a2aCall(token, "message/send", a2aText("hi"))
	if got.Error == nil || got.Error.Code != -32000 || got.Error.class() != "unavailable" || got.Error.retryAfter() != 5 {
		t.Errorf("A2A: %+v, want -32000 unavailable, retry after 5 s", got.Error)
	}
}
