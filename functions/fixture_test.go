package functions

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"cloud.google.com/go/firestore"
	"firebase.google.com/go/v4/auth"

	"github.com/baton-run/baton/internal/authtest"
	"github.com/baton-run/baton/internal/firestoretest"
	"github.com/baton-run/baton/internal/localgcs"
	"github.com/baton-run/baton/internal/teamtest"
	"github.com/baton-run/baton/modeltest"
	"github.com/baton-run/baton/sessionstore"
	"github.com/baton-run/baton/toolcallback"
	"github.com/baton-run/baton/uistream/uistreamtest"
)

func TestMain(m *testing.M) {
	installTestTracing()
	var err error
	if testMetrics, _, err = InstallMetrics(context.Background(), Config{}); err != nil {
		panic(err)
	}
	firestoretest.Main(m, authtest.Stop)
}

// testMetrics is the process's meter provider, installed once (the
// global provider forwards to the first one set).
var testMetrics *Metrics

const (
	testProject  = "proj"
	testSchedSA  = "scheduler@proj.iam.gserviceaccount.com"
	testSweepAud = "https://sweep.example"
	testOrigin   = "https://app.example"
)

// httpFixture serves every function over real HTTP around the members of
// the shared test world (its demo tools on a strict scripted model, its
// project on the emulator, its files' bucket), with locally minted ID
// tokens.
type httpFixture struct {
	t        *testing.T
	world    *teamtest.World
	srv      *httptest.Server
	server   *Server
	auth     *auth.Client   // the Admin SDK's client of the Auth emulator; nil in development identity mode
	authAddr string         // the Auth emulator's address
	keys     *testKeyServer // Google's OIDC keys, for the scheduler's tokens
	model    *modeltest.Strict
	client   *firestore.Client
	counter  *firestoretest.Counter
	cfg      Config
	members  []toolcallback.Member
	booked   *atomic.Int32 // runs of book_table
	cleared  *atomic.Int32 // clear_notes calls that ended with the user's yes
	logs     *syncWriter
	gcs      *localgcs.Server // the files' bucket, served in process

	mu    sync.Mutex
	users map[string]authtest.User // by the name tests give them
}

func testConfig() Config {
	return Config{
		Project: testProject, Database: "(default)", AppName: "app", Root: "baton",
		LeasePolicy: toolcallback.LeaseReject, LeaseMaxWait: 5 * time.Second, PendingPolicy: toolcallback.PendingCancel,
		CallTimeout: 10 * time.Minute, InvocationTimeout: 30 * time.Second,
		TokenKey: []byte("0123456789abcdef0123456789abcdef"), MaxBodyBytes: 64 << 10,
		AllowedOrigins: []string{testOrigin}, KeepAlive: 15 * time.Second, RequestTimeout: 30 * time.Second,
		SweepAudience: testSweepAud, SweepInvoker: testSchedSA, LiveModel: "gemini-live-2.5-flash",
	}
}

func newHTTPFixture(t *testing.T, mutate func(*Config), script ...modeltest.Reply) *httpFixture {
	t.Helper()
	return newHTTPFixtureWith(t, nil, mutate, script...)
}

// newHTTPFixtureWith is newHTTPFixture with the server's options and team
// as opts (nil: none) changes them: opts may add to f.members.
func newHTTPFixtureWith(t *testing.T, opts func(*httpFixture, *ServerOptions), mutate func(*Config), script ...modeltest.Reply) *httpFixture {
	t.Helper()
	f := &httpFixture{t: t, cfg: testConfig(), logs: &syncWriter{}}
	if mutate != nil {
		mutate(&f.cfg)
	}
	f.world = teamtest.New(t, &teamtest.Options{Files: true}, script...)
	f.model, f.client, f.counter, f.gcs = f.world.Model, f.world.Client, f.world.Counter, f.world.GCS
	f.booked, f.cleared = &f.world.Tools.Booked, &f.world.Tools.Cleared
	f.members = f.world.Assistant()
	f.keys = newTestKeyServer(t)
	if !f.cfg.DevIdentity {
		f.authAddr = authtest.Emulator(t, testProject)
		f.auth = newTestAuthClient(t, f.authAddr)
	}
	so := &ServerOptions{
		Logger:        NewLogger(f.logs),
		Auth:          f.auth,
		SchedulerKeys: f.keys.Client(),
		Files:         f.world.Artifacts,
	}
	if opts != nil {
		opts(f, so)
	}
	var err error
	f.server, err = NewServer(f.cfg, sessionstore.New(f.client, &sessionstore.Options{Root: f.cfg.Root}), f.members, so)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	for _, name := range Names {
		mux.Handle("/"+name, f.server.Handler(name))
	}
	mux.Handle("/"+NameA2A+"/", f.server.Handler(NameA2A))         // the agent card below it
	mux.Handle("/"+NameChat+"/", f.server.Handler(NameChat))       // the resume stream and messages
	mux.Handle("/"+NameTurn+"/", f.server.Handler(NameTurn))       // DELETE /Turn/{sessionId}
	mux.Handle("/"+NameAccount+"/", f.server.Handler(NameAccount)) // GET /Account/export
	mux.Handle("/"+NameAdmin+"/", f.server.Handler(NameAdmin))     // the console's page and API
	f.srv = httptest.NewServer(mux)
	t.Cleanup(f.srv.Close)
	return f
}

// syncWriter serialises log writes from concurrent requests.
type syncWriter struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncWriter) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// token returns an ID token of the user tests call name, signed in to the
// Auth emulator on first use: names are this fixture's, uids the emulator's.
func (f *httpFixture) token(name string) string { return f.user(name).IDToken }

func (f *httpFixture) user(name string) authtest.User {
	f.t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.users == nil {
		f.users = map[string]authtest.User{}
	}
	u, ok := f.users[name]
	if !ok {
		u = authtest.SignUp(f.t, f.authAddr)
		f.users[name] = u
	}
	return u
}

// do sends a request to a function and returns the response.
func (f *httpFixture) do(method, name, token string, body any, header map[string]string) *http.Response {
	f.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			f.t.Fatal(err)
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(f.t.Context(), method, f.srv.URL+"/"+name, rd)
	if err != nil {
		f.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatalf("%s /%s: %v", method, name, err)
	}
	return resp
}

// send sends a request to a function with a query and headers of its own
// (a nil body is a GET).
func (f *httpFixture) send(name string, body any, query string, header map[string]string) *http.Response {
	f.t.Helper()
	method := http.MethodPost
	if body == nil {
		method = http.MethodGet
	}
	return f.do(method, name+query, "", body, header)
}

func (f *httpFixture) turn(user, sid, client, text string) *http.Response {
	f.t.Helper()
	return f.do(http.MethodPost, NameTurn, f.token(user), map[string]any{"sessionId": sid, "clientId": client, "text": text}, nil)
}

// stream reads an SSE response, checks it is a valid UI message stream and
// returns its chunks.
func (f *httpFixture) stream(resp *http.Response, knownCalls ...string) []map[string]any {
	f.t.Helper()
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		f.t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		f.t.Fatalf("status %d, want 200: %s", resp.StatusCode, body)
	}
	if got := resp.Header.Get("x-vercel-ai-ui-message-stream"); got != "v1" {
		f.t.Errorf("x-vercel-ai-ui-message-stream = %q, want v1", got)
	}
	chunks := uistreamtest.Parse(f.t, string(body))
	uistreamtest.Check(f.t, chunks, knownCalls...)
	return chunks
}

// errorOf reads a JSON error response.
func errorOf(t *testing.T, resp *http.Response) apiErrorBody {
	t.Helper()
	defer resp.Body.Close()
	var e apiError
	raw, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(raw, &e); err != nil || e.Error.Code == "" {
		t.Fatalf("status %d body %q: not a JSON error (%v)", resp.StatusCode, raw, err)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("error Content-Type = %q, want application/json", ct)
	}
	return e.Error
}

// Shorthands for the stream helpers of uistreamtest.
var (
	chunksOfType = uistreamtest.OfType
	text         = uistreamtest.Text
)
