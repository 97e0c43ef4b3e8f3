package functions

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/cloudtasks/apiv2/cloudtaskspb"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/baton-run/baton/internal/localtasks"
	"github.com/baton-run/baton/modeltest"
	"github.com/baton-run/baton/toolcallback"
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

// playlistTool is a background tool whose work reports its progress and
// then waits for release (or its context's end).
func playlistTool(t *testing.T, release <-chan struct{}) *toolcallback.BackgroundTool {
	t.Helper()
	type args struct {
		Mood string `json:"mood"`
	}
	type result struct {
		Tracks []string `json:"tracks"`
	}
	bt, err := toolcallback.Background(toolcallback.BackgroundConfig{Name: "prepare_playlist", Description: "prepare a playlist"},
		func(ctx context.Context, a args) (result, error) {
			if err := toolcallback.Progress(ctx, map[string]any{"done": 1, "of": 3}); err != nil {
				return result{}, err
			}
			select {
			case <-release:
			case <-ctx.Done():
				return result{}, ctx.Err()
			}
			return result{Tracks: []string{a.Mood + " rain", a.Mood + " tide"}}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	return bt
}

// withDJ adds to a fixture the agent "dj", whose tool is bt.
func withDJ(bt *toolcallback.BackgroundTool) func(*httpFixture, *ServerOptions) {
	return func(f *httpFixture, so *ServerOptions) {
		dj, err := llmagent.New(llmagent.Config{Name: "dj", Model: f.model, Tools: []tool.Tool{bt}})
		if err != nil {
			f.t.Fatal(err)
		}
		f.members = append(f.members, toolcallback.Member{Agent: dj, Background: []*toolcallback.BackgroundTool{bt}})
		so.ProgressInterval = 50 * time.Millisecond
	}
}

// TestChatBackgroundProgress: a turn whose agent calls a background tool
// ends at once, the call shown as the server's; the work runs on the
// queue's delivery to Work; a resumed page (GET /Chat/{chatId}/stream)
// replays the turn and shows the work's progress as the call's
// preliminary output, then its result and the agent's answer; a reloaded
// page (GET /Chat/{chatId}) shows the latest progress meanwhile.
func TestChatBackgroundProgress(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	f, tasks := newWorkFixture(t, withDJ(playlistTool(t, release)))
	f.model.Script = []modeltest.Reply{
		modeltest.CallReply(modeltest.Call("c1", "prepare_playlist", map[string]any{"mood": "calm"})),
		modeltest.EchoReply,
	}
	body := chatBody("chat1", "tab-a", userMessage("u1", "prepare a calm playlist"))
	body["agent"] = "dj"
	turn := f.stream(f.chat("ada", body))
	input := chunksOfType(turn, "tool-input-available")
	if len(input) != 1 || input[0]["providerExecuted"] != true || input[0]["providerMetadata"] != nil {
		t.Fatalf("the turn's call = %v, want prepare_playlist shown as the server's", input)
	}
	if out := chunksOfType(turn, "tool-output-available"); len(out) != 0 {
		t.Errorf("the turn's stream has outputs %v, want none (the work runs after it)", out)
	}
	resp := f.do(http.MethodGet, NameChat+"/chat1/stream", f.token("ada"), nil, nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("resume: status %d, want the turn waiting on its work", resp.StatusCode)
	}
	rd := newSSEReader(t, resp)
	last := rd.until(func(c map[string]any) bool { return c["preliminary"] == true })
	if last == nil {
		t.Fatalf("the resumed stream ended without the work's progress: %v", rd.chunks)
	}
	if last["toolCallId"] != "c1" || fmt.Sprint(last["output"]) != "map[done:1 of:3]" || last["providerExecuted"] != true {
		t.Errorf("progress chunk = %v, want c1's {done 1 of 3}, the server's", last)
	}
	// A reloaded page shows the same.
	page := f.do(http.MethodGet, NameChat+"/chat1", f.token("ada"), nil, nil)
	var view struct {
		Messages []struct {
			Parts []map[string]any `json:"parts"`
		} `json:"messages"`
	}
	if err := json.NewDecoder(page.Body).Decode(&view); err != nil {
		t.Fatal(err)
	}
	page.Body.Close()
	var part map[string]any
	for _, m := range view.Messages {
		for _, p := range m.Parts {
			if p["toolCallId"] == "c1" {
				part = p
			}
		}
	}
	if part == nil || part["state"] != "output-available" || part["preliminary"] != true || fmt.Sprint(part["output"]) != "map[done:1 of:3]" {
		t.Errorf("GET /Chat/chat1 shows c1 as %v, want its progress as a preliminary output", part)
	}
	close(release)
	rest := rd.rest()
	outs := chunksOfType(rest, "tool-output-available")[1:] // after the progress
	if len(outs) != 1 || outs[0]["preliminary"] == true || !strings.Contains(fmt.Sprint(outs[0]["output"]), "calm rain") {
		t.Errorf("outputs after the work = %v, want the playlist, final", outs)
	}
	if got := text(rest); !strings.Contains(got, "calm rain") {
		t.Errorf("the agent's answer %q does not read the playlist", got)
	}
	if s := tasks.Stats(); s.Creates != 1 {
		t.Errorf("tasks created: %d, want 1", s.Creates)
	}
}
