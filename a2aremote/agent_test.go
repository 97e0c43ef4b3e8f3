package a2aremote

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"golang.org/x/oauth2"
)

// TestGuard: the dialer's check refuses loopback, private, link-local
// (the metadata server's 169.254.169.254 among them), multicast and
// unspecified addresses, and lets public ones through.
func TestGuard(t *testing.T) {
	for _, tc := range []struct {
		addr    string
		blocked bool
	}{
		{"127.0.0.1:80", true},
		{"[::1]:443", true},
		{"10.1.2.3:80", true},
		{"192.168.0.10:80", true},
		{"172.16.5.4:80", true},
		{"169.254.169.254:80", true},
		{"[fe80::1]:80", true},
		{"0.0.0.0:80", true},
		{"224.0.0.1:80", true},
		{"[fc00::1]:80", true},
		{"8.8.8.8:443", false},
		{"[2001:4860:4860::8888]:443", false},
	} {
		err := guard("tcp", tc.addr, nil)
		if got := errors.Is(err, ErrBlockedAddress); got != tc.blocked {
			t.Errorf("guard(%s) = %v, want blocked %v", tc.addr, err, tc.blocked)
		}
	}
}

// cardServer serves a card naming endpoint (the server's own URL when
// "").
func cardServer(t *testing.T, endpoint string) *httptest.Server {
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	if endpoint == "" {
		endpoint = srv.URL
	}
	card := &a2a.AgentCard{Name: "peer", Version: "1", SupportedInterfaces: []*a2a.AgentInterface{
		a2a.NewAgentInterface(endpoint, a2a.TransportProtocolJSONRPC)}, Capabilities: a2a.AgentCapabilities{PushNotifications: true}}
	mux.Handle(a2asrv.WellKnownAgentCardPath, a2asrv.NewStaticAgentCardHandler(card))
	return srv
}

// TestRemoteAddresses: a remote on a loopback address, by IP or by a name
// that resolves to one, is refused when the connection is made, unless
// the remote is configured with AllowPrivate; a card that names an
// endpoint on another host is refused.
func TestRemoteAddresses(t *testing.T) {
	srv := cardServer(t, "")
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
	for _, tc := range []struct {
		name, url string
		allow     bool
		want      error
	}{
		{"loopback IP", srv.URL, false, ErrBlockedAddress},
		{"a name of loopback", "http://localhost:" + port, false, ErrBlockedAddress},
		{"allowed", srv.URL, true, nil},
		{"card naming another host", cardServer(t, "http://peer.example:8080/").URL, true, ErrBlockedAddress},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := New(Config{CardURL: tc.url, AllowPrivate: tc.allow})
			if err != nil {
				t.Fatal(err)
			}
			pushes, err := a.Pushes(t.Context())
			if tc.want == nil && (err != nil || !pushes) {
				t.Errorf("Pushes() = %v, %v; want true", pushes, err)
			}
			if tc.want != nil && !errors.Is(err, tc.want) {
				t.Errorf("Pushes() error = %v, want %v", err, tc.want)
			}
		})
	}
}

// TestDecodeNotification: the bodies a push notification may carry (A2A
// 1.0's stream responses, 0.3's task) give their task's id; others are
// refused.
func TestDecodeNotification(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		want       Notified
		err        bool
	}{
		{"task", `{"task":{"id":"t1","contextId":"c","status":{"state":"TASK_STATE_WORKING"}}}`, Notified{TaskID: "t1", State: Working}, false},
		{"status", `{"statusUpdate":{"taskId":"t1","contextId":"c","status":{"state":"TASK_STATE_COMPLETED"}}}`, Notified{TaskID: "t1", State: Completed}, false},
		{"artifact", `{"artifactUpdate":{"taskId":"t1","contextId":"c","artifact":{"artifactId":"a","parts":[{"text":"x"}]}}}`, Notified{TaskID: "t1"}, false},
		{"0.3 task", `{"kind":"task","id":"t1","contextId":"c","status":{"state":"working"}}`, Notified{TaskID: "t1"}, false},
		{"no task", `{"hello":"world"}`, Notified{}, true},
		{"not JSON", `<html>`, Notified{}, true},
	} {
		got, err := DecodeNotification([]byte(tc.body))
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("%s: DecodeNotification() = %+v, %v; want %+v (error %v)", tc.name, got, err, tc.want, tc.err)
		}
	}
}

// TestFetch: a file of a remote's result is fetched by the remote's own
// rules: a loopback address is refused unless the remote allows private
// addresses, a file over the limit is refused without being read whole,
// and the remote's headers go to its own host only.
func TestFetch(t *testing.T) {
	var sawKey atomic.Value
	files := http.NewServeMux()
	files.HandleFunc("GET /menu.txt", func(w http.ResponseWriter, r *http.Request) {
		sawKey.Store(r.Header.Get("X-Key"))
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("jazz at nine"))
	})
	own := httptest.NewServer(files)
	t.Cleanup(own.Close)
	other := httptest.NewServer(files)
	t.Cleanup(other.Close)
	// other's URL by another name of the same address: another host.
	otherURL := strings.Replace(other.URL, "127.0.0.1", "localhost", 1)

	a, err := New(Config{CardURL: own.URL, AllowPrivate: true, Header: http.Header{"X-Key": {"secret"}}})
	if err != nil {
		t.Fatal(err)
	}
	b, mt, err := a.Fetch(t.Context(), own.URL+"/menu.txt", 100)
	if err != nil || string(b) != "jazz at nine" || mt != "text/plain" || sawKey.Load() != "secret" {
		t.Errorf("Fetch(own host) = %q, %q, %v (key %v); want the file, its type, the remote's headers sent", b, mt, err, sawKey.Load())
	}
	if _, _, err := a.Fetch(t.Context(), otherURL+"/menu.txt", 100); err != nil || sawKey.Load() != "" {
		t.Errorf("Fetch(other host) error %v, key sent %q; want the file without the remote's headers", err, sawKey.Load())
	}
	if _, _, err := a.Fetch(t.Context(), own.URL+"/menu.txt", 5); !errors.Is(err, ErrFileTooLarge) {
		t.Errorf("Fetch(over the limit) error = %v, want ErrFileTooLarge", err)
	}
	guarded, err := New(Config{CardURL: "https://events.example.com/"})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := guarded.Fetch(t.Context(), own.URL+"/menu.txt", 100); !errors.Is(err, ErrBlockedAddress) {
		t.Errorf("Fetch(loopback, not allowed) error = %v, want ErrBlockedAddress", err)
	}
	if _, _, err := guarded.Fetch(t.Context(), "file:///etc/passwd", 100); !errors.Is(err, ErrRefused) {
		t.Errorf("Fetch(file URL) error = %v, want ErrRefused", err)
	}
}

// TestRefusedCredentials: a remote that answers 401 or 403 refuses the
// message for good (ErrRefused), so the call fails at once instead of
// being retried until its timeout; a 503 stays worth another attempt.
func TestRefusedCredentials(t *testing.T) {
	for _, tc := range []struct {
		status  int
		refused bool
	}{
		{http.StatusUnauthorized, true},
		{http.StatusForbidden, true},
		{http.StatusServiceUnavailable, false},
	} {
		t.Run(http.StatusText(tc.status), func(t *testing.T) {
			mux := http.NewServeMux()
			srv := httptest.NewServer(mux)
			t.Cleanup(srv.Close)
			card := &a2a.AgentCard{Name: "peer", Version: "1", SupportedInterfaces: []*a2a.AgentInterface{
				a2a.NewAgentInterface(srv.URL, a2a.TransportProtocolJSONRPC)}}
			mux.Handle(a2asrv.WellKnownAgentCardPath, a2asrv.NewStaticAgentCardHandler(card))
			mux.HandleFunc("POST /{$}", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(tc.status) })
			a, err := New(Config{CardURL: srv.URL, AllowPrivate: true})
			if err != nil {
				t.Fatal(err)
			}
			_, err = a.Send(t.Context(), Message{ID: "m1", Text: "hello"})
			if err == nil || errors.Is(err, ErrRefused) != tc.refused {
				t.Errorf("Send() error = %v, want refused %v", err, tc.refused)
			}
		})
	}
}

// tokens is a token source that counts its tokens; each expires at
// expiry.
type tokens struct {
	mu     sync.Mutex
	n      int
	expiry time.Time
}

func (s *tokens) Token() (*oauth2.Token, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n++
	return &oauth2.Token{AccessToken: fmt.Sprint("tok-", s.n), TokenType: "Bearer", Expiry: s.expiry}, nil
}

// TestTokenSource: with a TokenSource, every request to the remote carries
// its current token (over a static Authorization in Header), a token is
// reused while it is valid, and an expired one is renewed.
func TestTokenSource(t *testing.T) {
	for _, tc := range []struct {
		name   string
		expiry time.Time
		want   []string // the Authorization of the card's read and of two sends
	}{
		{"valid", time.Now().Add(time.Hour), []string{"Bearer tok-1", "Bearer tok-1", "Bearer tok-1"}},
		{"expired", time.Now().Add(-time.Minute), []string{"Bearer tok-1", "Bearer tok-2", "Bearer tok-3"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			var seen []string
			record := func(r *http.Request) {
				mu.Lock()
				defer mu.Unlock()
				seen = append(seen, r.Header.Get("Authorization"))
			}
			mux := http.NewServeMux()
			srv := httptest.NewServer(mux)
			t.Cleanup(srv.Close)
			card := a2asrv.NewStaticAgentCardHandler(&a2a.AgentCard{Name: "peer", Version: "1", SupportedInterfaces: []*a2a.AgentInterface{
				a2a.NewAgentInterface(srv.URL, a2a.TransportProtocolJSONRPC)}})
			mux.HandleFunc("GET "+a2asrv.WellKnownAgentCardPath, func(w http.ResponseWriter, r *http.Request) {
				record(r)
				card.ServeHTTP(w, r)
			})
			mux.HandleFunc("POST /{$}", func(w http.ResponseWriter, r *http.Request) {
				record(r)
				w.WriteHeader(http.StatusServiceUnavailable)
			})
			a, err := New(Config{CardURL: srv.URL, AllowPrivate: true, TokenSource: &tokens{expiry: tc.expiry},
				Header: http.Header{"Authorization": {"Bearer static"}, "X-Api-Key": {"k"}}})
			if err != nil {
				t.Fatal(err)
			}
			for _, id := range []string{"m1", "m2"} {
				if _, err := a.Send(t.Context(), Message{ID: id, Text: "hello"}); err == nil {
					t.Fatalf("Send(%s) = nil error, want the remote's 503", id)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if !slices.Equal(seen, tc.want) {
				t.Errorf("Authorization sent = %q, want %q", seen, tc.want)
			}
		})
	}
}
