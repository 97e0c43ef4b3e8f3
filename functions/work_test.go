package functions

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/cloudtasks/apiv2/cloudtaskspb"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/baton-run/baton/internal/localtasks"
	"github.com/baton-run/baton/workqueue"
)

const (
	testWorkQueue    = "projects/proj/locations/here/queues/work"
	testWorkAudience = "https://work.example"
	testWorkSA       = "tasks@proj.iam.gserviceaccount.com"
)

// workForwarder is the URL the queue delivers to, made before the fixture
// whose server it forwards to (the queue's URL is part of the server's
// configuration).
type workForwarder struct {
	srv *httptest.Server
	mu  sync.Mutex
	to  *url.URL
}

func newWorkForwarder(t *testing.T) *workForwarder {
	w := &workForwarder{}
	w.srv = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		w.mu.Lock()
		to := w.to
		w.mu.Unlock()
		if to == nil {
			http.Error(rw, "no server yet", http.StatusServiceUnavailable)
			return
		}
		httputil.NewSingleHostReverseProxy(to).ServeHTTP(rw, r)
	}))
	t.Cleanup(w.srv.Close)
	return w
}

func (w *workForwarder) forwardTo(f *httpFixture) {
	u, _ := url.Parse(f.srv.URL)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.to = u
}

// newWorkFixture is an HTTP fixture whose deployment has a background
// calls' queue, served in process; the queue's OIDC tokens are signed by
// the fixture's stand-in for Google's key server, for testWorkSA.
func newWorkFixture(t *testing.T, opts func(*httpFixture, *ServerOptions)) (*httpFixture, *localtasks.Server) {
	t.Helper()
	fwd := newWorkForwarder(t)
	var tasks *localtasks.Server
	f := newHTTPFixtureWith(t, func(f *httpFixture, so *ServerOptions) {
		var err error
		signer := func(_ context.Context, sa, aud string) (string, error) {
			return f.keys.Token(t, func(c, _ map[string]any) { c["email"], c["aud"] = sa, aud }), nil
		}
		if tasks, err = localtasks.Start(t.Context(), &localtasks.Options{Signer: signer, TimeScale: 0.05}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(tasks.Stop)
		if _, err := tasks.Client().CreateQueue(t.Context(), &cloudtaskspb.CreateQueueRequest{Parent: "projects/proj/locations/here",
			Queue: &cloudtaskspb.Queue{Name: testWorkQueue, RetryConfig: &cloudtaskspb.RetryConfig{MaxAttempts: 10,
				MinBackoff: durationpb.New(time.Second), MaxBackoff: durationpb.New(4 * time.Second)}}}); err != nil {
			t.Fatal(err)
		}
		so.Tasks = tasks.Client()
		if opts != nil {
			opts(f, so)
		}
	}, func(c *Config) {
		c.WorkQueue, c.WorkURL, c.WorkAudience, c.WorkInvoker = testWorkQueue, fwd.srv.URL+"/"+NameWork, testWorkAudience, testWorkSA
		c.WorkDeadline, c.BackgroundPerUser = 30*time.Minute, 5
	})
	fwd.forwardTo(f)
	return f, tasks
}

// TestWorkTokens: Work serves the queue's deliveries only: a Google-signed
// token for its audience and the queue's service account. Anyone else is
// refused before the body is read: 401 without a valid token (none, a
// forged or expired one, another audience, Sweep's), 403 for another
// account.
func TestWorkTokens(t *testing.T) {
	t.Parallel()
	f, _ := newWorkFixture(t, nil)
	other, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	work := func(mutate func(c map[string]any)) string {
		return f.keys.Token(t, func(c, _ map[string]any) {
			c["aud"], c["email"] = testWorkAudience, testWorkSA
			if mutate != nil {
				mutate(c)
			}
		})
	}
	task, _ := json.Marshal(workqueue.Task{App: "app", User: "user-1", Session: "chat~0", Call: "c1"})
	tests := []struct {
		name  string
		token string
		body  string
		want  int
	}{
		{"the queue's", work(nil), string(task), http.StatusOK},
		{"none", "", string(task), http.StatusUnauthorized},
		{"expired", work(func(c map[string]any) { c["exp"] = time.Now().Add(-time.Minute).Unix() }), string(task), http.StatusUnauthorized},
		{"another audience", work(func(c map[string]any) { c["aud"] = "https://other.example" }), string(task), http.StatusUnauthorized},
		{"Sweep's", f.keys.Token(t, nil), string(task), http.StatusUnauthorized},
		{"another account", work(func(c map[string]any) { c["email"] = "intruder@proj.iam.gserviceaccount.com" }), string(task), http.StatusForbidden},
		{"forged", signRS256(t, other, map[string]any{"alg": "RS256", "kid": f.keys.kid}, map[string]any{
			"iss": "https://accounts.google.com", "aud": testWorkAudience, "email": testWorkSA, "email_verified": true,
			"exp": time.Now().Add(time.Hour).Unix(),
		}), string(task), http.StatusUnauthorized},
		{"a user's", f.token("alice"), string(task), http.StatusUnauthorized},
		{"the queue's, with no task", work(nil), `{"hello": 1}`, http.StatusBadRequest},
		{"the queue's, for another app", work(nil), `{"app": "other", "user": "u", "session": "s", "call": "c"}`, http.StatusBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := f.do(http.MethodPost, NameWork, tt.token, tt.body, nil)
			defer resp.Body.Close()
			if resp.StatusCode != tt.want {
				t.Fatalf("Work with %s token: status %d (%+v), want %d", tt.name, resp.StatusCode, errorOf(t, resp), tt.want)
			}
			if tt.want != http.StatusOK {
				return
			}
			var reply workReply
			if err := json.NewDecoder(resp.Body).Decode(&reply); err != nil || reply.Outcome != "gone" {
				t.Errorf("Work for a call that does not exist = %+v, %v; want outcome gone", reply, err)
			}
		})
	}
}
