package functions

import (
	"net/http"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	grpcstatus "google.golang.org/grpc/status"
)

// TestFirestoreUnavailableIs503 makes every Firestore call fail as an
// unreachable backend would.
func TestFirestoreUnavailableIs503(t *testing.T) {
	t.Parallel()
	f := newHTTPFixture(t, func(c *Config) { c.RequestTimeout = 2 * time.Second })
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
}
