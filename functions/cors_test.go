package functions

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestCORSCredentials: an origin listed by name may send credentials (the
// page's fetches carry Cloud Run's session-affinity cookie), on the
// preflight and on the request itself; an origin allowed only through "*"
// gets CORS without credentials, and any other origin gets neither.
func TestCORSCredentials(t *testing.T) {
	t.Parallel()
	const other = "https://other.example"
	type answer struct{ AllowOrigin, AllowCredentials string }
	tests := []struct {
		name    string
		allowed []string
		origin  string
		want    answer
	}{
		{name: "listed", allowed: []string{testOrigin}, origin: testOrigin, want: answer{testOrigin, "true"}},
		{name: "listed beside *", allowed: []string{"*", testOrigin}, origin: testOrigin, want: answer{testOrigin, "true"}},
		{name: "only through *", allowed: []string{"*", testOrigin}, origin: other, want: answer{other, ""}},
		{name: "not allowed", allowed: []string{testOrigin}, origin: other, want: answer{"", ""}},
		{name: "same origin (no Origin header)", allowed: []string{testOrigin}, origin: "", want: answer{"", ""}},
	}
	for _, tc := range tests {
		cfg := testConfig()
		cfg.AllowedOrigins = tc.allowed
		s := &Server{cfg: cfg, log: slog.New(slog.DiscardHandler)}
		h := s.wrap(NameTurn, []string{http.MethodPost}, func(w http.ResponseWriter, _ *http.Request, _ *slog.Logger) error {
			w.WriteHeader(http.StatusNoContent)
			return nil
		})
		for _, preflight := range []bool{true, false} {
			req := httptest.NewRequest(http.MethodPost, "/"+NameTurn, nil)
			if preflight {
				req = httptest.NewRequest(http.MethodOptions, "/"+NameTurn, nil)
				req.Header.Set("Access-Control-Request-Method", http.MethodPost)
			}
			if tc.origin != "" {
				req.Header.Set("Origin", tc.origin)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			got := answer{rec.Header().Get("Access-Control-Allow-Origin"), rec.Header().Get("Access-Control-Allow-Credentials")}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s (preflight %v): CORS answer (-want +got):\n%s", tc.name, preflight, diff)
			}
		}
	}
}
