package functions

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"firebase.google.com/go/v4/auth"

	"github.com/baton-run/baton/internal/authtest"
	"github.com/baton-run/baton/internal/emulator"
)

// Firebase ID tokens are tested through the Auth emulator: the Admin SDK
// checks them as in production except for the signature, which the
// emulator's tokens do not have (see TestProductionAuthOffline for what is
// checked without it). The scheduler's tokens are signed by a local key that
// testKeyServer serves in place of Google's.

// testAuthMu serialises the making of Admin SDK clients: the SDK reads
// FIREBASE_AUTH_EMULATOR_HOST when a client is made.
var testAuthMu sync.Mutex

// newTestAuthClient returns an Admin SDK client of the Auth emulator at addr.
func newTestAuthClient(t *testing.T, addr string) *auth.Client {
	t.Helper()
	testAuthMu.Lock()
	defer testAuthMu.Unlock()
	prev, had := os.LookupEnv(authtest.HostEnv)
	os.Setenv(authtest.HostEnv, addr)
	defer func() {
		if had {
			os.Setenv(authtest.HostEnv, prev)
		} else {
			os.Unsetenv(authtest.HostEnv)
		}
	}()
	client, err := newAuthClient(t.Context(), testProject, true)
	if err != nil {
		t.Fatalf("newAuthClient() error = %v", err)
	}
	return client
}

// withClaims returns token with its payload changed by mutate and its
// signature kept: enough for the emulator's unsigned tokens, which the Admin
// SDK does not check for a signature in emulator mode.
func withClaims(t *testing.T, token string, mutate func(claims map[string]any)) string {
	t.Helper()
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		t.Fatalf("token has %d parts, want 3", len(parts))
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var claims map[string]any
	if err := json.Unmarshal(raw, &claims); err != nil {
		t.Fatal(err)
	}
	mutate(claims)
	return parts[0] + "." + encodeSegment(t, claims) + "." + parts[2]
}

func encodeSegment(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// pendingStatus asks Pending for an unknown session with token: 404 means
// the token was accepted.
func (f *httpFixture) pendingStatus(token string) (int, apiErrorBody, http.Header) {
	f.t.Helper()
	resp := f.do(http.MethodGet, NamePending+"?sessionId=nope&clientId=tab-a", token, nil, nil)
	return resp.StatusCode, errorOf(f.t, resp), resp.Header
}

func TestFirebaseIDTokens(t *testing.T) {
	t.Parallel()
	f := newHTTPFixture(t, nil)
	valid := f.token("ada")
	now := time.Now()
	set := func(name string, value any) string {
		return withClaims(t, valid, func(c map[string]any) { c[name] = value })
	}
	parts := strings.Split(valid, ".")
	tests := []struct {
		name  string
		token string
		want  int
	}{
		{"valid", valid, http.StatusNotFound},
		{"expired", withClaims(t, valid, func(c map[string]any) {
			c["iat"], c["exp"] = now.Add(-2*time.Hour).Unix(), now.Add(-time.Hour).Unix()
		}), http.StatusUnauthorized},
		{"wrong audience", set("aud", "other-project"), http.StatusUnauthorized},
		{"wrong issuer", set("iss", "https://securetoken.google.com/other-project"), http.StatusUnauthorized},
		{"issuer of another service", set("iss", "https://accounts.google.com"), http.StatusUnauthorized},
		{"issued in the future", set("iat", now.Add(time.Hour).Unix()), http.StatusUnauthorized},
		{"empty sub", set("sub", ""), http.StatusUnauthorized},
		{"sub of a user the emulator does not know", set("sub", "nobody"), http.StatusUnauthorized},
		{"malformed: not a JWT", "not-a-token", http.StatusUnauthorized},
		{"malformed: two parts", parts[0] + "." + parts[1], http.StatusUnauthorized},
		{"malformed: bad base64", parts[0] + ".%%%." + parts[2], http.StatusUnauthorized},
		{"malformed: payload not JSON", parts[0] + "." + base64.RawURLEncoding.EncodeToString([]byte(`{"sub":`)) + "." + parts[2], http.StatusUnauthorized},
		{"missing", "", http.StatusUnauthorized},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body, _ := f.pendingStatus(tt.token)
			if code != tt.want {
				t.Fatalf("Pending with a %s token: status %d (%+v), want %d", tt.name, code, body, tt.want)
			}
			if tt.want == http.StatusUnauthorized && body.Code != "unauthenticated" {
				t.Errorf("Pending with a %s token: code %q, want unauthenticated", tt.name, body.Code)
			}
		})
	}
	// The user id comes from the token, never from the body.
	resp := f.do(http.MethodPost, NameTurn, valid, map[string]any{"sessionId": "s1", "clientId": "tab-a", "text": "hi", "userId": "bob"}, nil)
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("userId in body: status %d, want 400 (unknown field)", resp.StatusCode)
	}
	resp.Body.Close()
}

// TestFirebaseRevocation revokes, disables and deletes users with the Admin
// SDK. The emulator makes the SDK check revocation on every token, as
// BATON_CHECK_REVOKED=true does in production.
func TestFirebaseRevocation(t *testing.T) {
	t.Parallel()
	f := newHTTPFixture(t, nil)
	ctx := t.Context()
	tests := []struct {
		name   string
		change func(uid string) error
	}{
		{"revoked", func(uid string) error {
			// Revocation holds for tokens issued before the current second.
			iat := time.Now().Unix()
			time.Sleep(time.Until(time.Unix(iat+1, 0)))
			return f.auth.RevokeRefreshTokens(ctx, uid)
		}},
		{"user disabled", func(uid string) error {
			_, err := f.auth.UpdateUser(ctx, uid, (&auth.UserToUpdate{}).Disabled(true))
			return err
		}},
		{"user deleted", func(uid string) error { return f.auth.DeleteUser(ctx, uid) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := f.user(tt.name)
			if code, body, _ := f.pendingStatus(u.IDToken); code != http.StatusNotFound {
				t.Fatalf("before: status %d (%+v), want 404 (accepted)", code, body)
			}
			if err := tt.change(u.UID); err != nil {
				t.Fatal(err)
			}
			if code, body, _ := f.pendingStatus(u.IDToken); code != http.StatusUnauthorized || body.Code != "unauthenticated" {
				t.Errorf("after: status %d (%+v), want 401 unauthenticated", code, body)
			}
		})
	}
}

// TestAuthAPIUnreachableIs503: when the Auth API (here the emulator, in
// production a revocation check) cannot be reached, the token is not judged.
func TestAuthAPIUnreachableIs503(t *testing.T) {
	t.Parallel()
	f := newHTTPFixture(t, func(c *Config) { c.RequestTimeout = 2 * time.Second })
	token := f.token("ada")
	port, err := emulator.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	f.server.ident = firebaseIdentity{client: newTestAuthClient(t, "127.0.0.1:"+port)}
	code, body, header := f.pendingStatus(token)
	if code != http.StatusServiceUnavailable || body.Code != "unavailable" || header.Get("Retry-After") == "" {
		t.Errorf("status %d %+v Retry-After %q, want 503 unavailable with Retry-After", code, body, header.Get("Retry-After"))
	}
}

// TestProductionAuthOffline checks the Admin SDK without the emulator, as
// in production, in a child process whose HTTPS proxy is a local server
// refusing every CONNECT: Google's key server is then unreachable, and no
// request can leave the machine. (The SDK's key URL cannot be changed, and
// its key client takes no options.) Tokens are rejected before the keys are
// needed, and a token that needs them is not judged.
func TestProductionAuthOffline(t *testing.T) {
	if os.Getenv("BATON_TEST_PRODUCTION_AUTH") == "1" {
		productionAuthChild(t)
		return
	}
	var mu sync.Mutex
	var seen []string
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Method+" "+r.Host+r.URL.Path)
		mu.Unlock()
		http.Error(w, "no network in tests", http.StatusBadGateway)
	}))
	defer proxy.Close()
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestProductionAuthOffline$", "-test.v")
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch strings.ToUpper(name) {
		case authtest.HostEnv, "HTTPS_PROXY", "HTTP_PROXY", "NO_PROXY", "GOOGLE_APPLICATION_CREDENTIALS", "GCE_METADATA_HOST":
			continue
		}
		cmd.Env = append(cmd.Env, kv)
	}
	// A metadata server, if the SDK looked for credentials, would be the
	// proxy too: verifying needs none, and the child must not ask.
	cmd.Env = append(cmd.Env, "BATON_TEST_PRODUCTION_AUTH=1", "HTTPS_PROXY="+proxy.URL,
		"GCE_METADATA_HOST="+strings.TrimPrefix(proxy.URL, "http://"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "--- PASS: TestProductionAuthOffline") {
		t.Fatalf("child ran no test:\n%s", out)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) == 0 {
		t.Fatal("the child never asked for Google's keys")
	}
	for _, s := range seen {
		if s != "CONNECT www.googleapis.com:443" {
			t.Errorf("the child sent %q through the proxy, want only CONNECT www.googleapis.com:443 (the key server)", s)
		}
	}
}

func productionAuthChild(t *testing.T) {
	if os.Getenv(authtest.HostEnv) != "" {
		t.Fatal("the child must run without the Auth emulator")
	}
	client, err := newAuthClient(t.Context(), testProject, false) // as NewServer makes it in production
	if err != nil {
		t.Fatal(err)
	}
	ident := firebaseIdentity{client: client}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	claims := func(mutate func(map[string]any)) map[string]any {
		c := map[string]any{
			"iss": "https://securetoken.google.com/" + testProject, "aud": testProject, "sub": "ada",
			"iat": now.Unix(), "exp": now.Add(time.Hour).Unix(), "auth_time": now.Unix(),
		}
		if mutate != nil {
			mutate(c)
		}
		return c
	}
	signed := func(c map[string]any) string {
		return signRS256(t, key, map[string]any{"alg": "RS256", "kid": "some-key", "typ": "JWT"}, c)
	}
	unsigned := encodeSegment(t, map[string]any{"alg": "none", "typ": "JWT"}) + "." + encodeSegment(t, claims(nil)) + "."
	tests := []struct {
		name  string
		token string
		want  error
	}{
		{"unsigned, as the emulator issues", unsigned, errInvalidIDToken},
		{"wrong audience", signed(claims(func(c map[string]any) { c["aud"] = "other-project" })), errInvalidIDToken},
		{"wrong issuer", signed(claims(func(c map[string]any) { c["iss"] = "https://securetoken.google.com/other-project" })), errInvalidIDToken},
		{"expired", signed(claims(func(c map[string]any) { c["exp"] = now.Add(-time.Hour).Unix() })), errInvalidIDToken},
		{"malformed", "a.b", errInvalidIDToken},
		{"well formed: needs the keys", signed(claims(nil)), errAuthUnavailable},
	}
	for _, tt := range tests {
		r := httptest.NewRequest(http.MethodGet, "/Pending", nil)
		r.Header.Set("Authorization", "Bearer "+tt.token)
		_, err := ident.userID(t.Context(), r)
		if !errors.Is(err, tt.want) {
			t.Errorf("%s: userID() error = %v, want %v", tt.name, err, tt.want)
			continue
		}
		code, body := status(err)
		wantCode := map[error]int{errInvalidIDToken: http.StatusUnauthorized, errAuthUnavailable: http.StatusServiceUnavailable}[tt.want]
		if code != wantCode || (code == http.StatusServiceUnavailable && body.RetryAfterSeconds == 0) {
			t.Errorf("%s: status(%v) = %d %+v, want %d (503s with a retry delay)", tt.name, err, code, body, wantCode)
		}
	}
}

// testKeyServer plays Google's OIDC key server (the JWKS at
// https://www.googleapis.com/oauth2/v3/certs) and mints the scheduler's
// tokens.
type testKeyServer struct {
	srv *httptest.Server
	key *rsa.PrivateKey
	kid string

	mu     sync.Mutex
	status int // answer this instead of the keys, when not 0
}

func newTestKeyServer(t *testing.T) *testKeyServer {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	k := &testKeyServer{key: key, kid: "test-key-1"}
	k.srv = httptest.NewServer(http.HandlerFunc(k.serve))
	t.Cleanup(k.srv.Close)
	return k
}

func (k *testKeyServer) serve(w http.ResponseWriter, r *http.Request) {
	k.mu.Lock()
	status := k.status
	k.mu.Unlock()
	if status != 0 {
		http.Error(w, "unavailable", status)
		return
	}
	if r.URL.Path != "/oauth2/v3/certs" {
		http.NotFound(w, r)
		return
	}
	b64 := func(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }
	w.Header().Set("Cache-Control", "public, max-age=3600")
	json.NewEncoder(w).Encode(map[string]any{"keys": []map[string]any{{
		"kty": "RSA", "alg": "RS256", "use": "sig", "kid": k.kid,
		"n": b64(k.key.N.Bytes()), "e": b64(big.NewInt(int64(k.key.E)).Bytes()),
	}}})
}

func (k *testKeyServer) setStatus(code int) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.status = code
}

// Client returns an HTTP client that sends requests for Google's key server
// to this one and refuses any other host: tests never reach the network.
func (k *testKeyServer) Client() *http.Client {
	return &http.Client{Transport: roundTripFunc(func(req *http.Request) (*http.Response, error) {
		if req.URL.Host != "www.googleapis.com" {
			return nil, fmt.Errorf("test key server: refusing %s (no network in tests)", req.URL)
		}
		local := req.Clone(req.Context())
		local.URL.Scheme, local.URL.Host, local.Host = "http", strings.TrimPrefix(k.srv.URL, "http://"), ""
		return http.DefaultTransport.RoundTrip(local)
	})}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// Token mints the scheduler's OIDC token, changed by mutate before signing.
func (k *testKeyServer) Token(t *testing.T, mutate func(claims, header map[string]any)) string {
	t.Helper()
	now := time.Now()
	claims := map[string]any{
		"iss": "https://accounts.google.com", "aud": testSweepAud, "azp": "1234", "sub": "1234",
		"email": testSchedSA, "email_verified": true, "iat": now.Unix(), "exp": now.Add(time.Hour).Unix(),
	}
	header := map[string]any{"alg": "RS256", "kid": k.kid, "typ": "JWT"}
	if mutate != nil {
		mutate(claims, header)
	}
	return signRS256(t, k.key, header, claims)
}

func signRS256(t *testing.T, key *rsa.PrivateKey, header, claims map[string]any) string {
	t.Helper()
	input := encodeSegment(t, header) + "." + encodeSegment(t, claims)
	digest := sha256.Sum256([]byte(input))
	sig, err := rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, digest[:])
	if err != nil {
		t.Fatal(err)
	}
	return input + "." + base64.RawURLEncoding.EncodeToString(sig)
}

func TestSchedulerTokens(t *testing.T) {
	t.Parallel()
	f := newHTTPFixture(t, nil)
	other, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	set := func(name string, value any) func(c, _ map[string]any) {
		return func(c, _ map[string]any) { c[name] = value }
	}
	valid := f.keys.Token(t, nil)
	parts := strings.Split(valid, ".")
	tests := []struct {
		name  string
		token string
		want  int
	}{
		{"valid", valid, http.StatusOK},
		{"issuer without scheme", f.keys.Token(t, set("iss", "accounts.google.com")), http.StatusOK},
		{"expired", f.keys.Token(t, set("exp", time.Now().Add(-time.Minute).Unix())), http.StatusUnauthorized},
		{"wrong audience", f.keys.Token(t, set("aud", "https://other.example")), http.StatusUnauthorized},
		{"wrong issuer", f.keys.Token(t, set("iss", "https://securetoken.google.com/"+testProject)), http.StatusUnauthorized},
		{"signed by another key", signRS256(t, other, map[string]any{"alg": "RS256", "kid": f.keys.kid}, map[string]any{
			"iss": "https://accounts.google.com", "aud": testSweepAud, "email": testSchedSA, "email_verified": true,
			"exp": time.Now().Add(time.Hour).Unix(),
		}), http.StatusUnauthorized},
		{"unknown key", f.keys.Token(t, func(_, h map[string]any) { h["kid"] = "nope" }), http.StatusUnauthorized},
		{"alg none", encodeSegment(t, map[string]any{"alg": "none"}) + "." + parts[1] + ".", http.StatusUnauthorized},
		{"malformed", "a.b", http.StatusUnauthorized},
		{"missing", "", http.StatusUnauthorized},
		{"another service account", f.keys.Token(t, set("email", "intruder@proj.iam.gserviceaccount.com")), http.StatusForbidden},
		{"unverified email", f.keys.Token(t, set("email_verified", false)), http.StatusForbidden},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := f.do(http.MethodPost, NameSweep, tt.token, map[string]any{}, nil)
			if resp.StatusCode != tt.want {
				t.Fatalf("Sweep with a %s token: status %d (%+v), want %d", tt.name, resp.StatusCode, errorOf(t, resp), tt.want)
			}
			if tt.want != http.StatusOK {
				resp.Body.Close()
				return
			}
			defer resp.Body.Close()
			var report map[string]int
			if err := json.NewDecoder(resp.Body).Decode(&report); err != nil {
				t.Fatalf("Sweep: %v, want a report", err)
			}
			if _, ok := report["expired"]; !ok {
				t.Errorf("report = %v, want expired/resumed/skipped counts", report)
			}
		})
	}
}

// TestSchedulerKeysUnavailableIs503 gives each case a fixture of its own:
// keys, once fetched, are cached.
func TestSchedulerKeysUnavailableIs503(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		setup func(k *testKeyServer)
	}{
		{"key server answers 503", func(k *testKeyServer) { k.setStatus(http.StatusServiceUnavailable) }},
		{"key server unreachable", func(k *testKeyServer) { k.srv.Close() }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newHTTPFixture(t, nil)
			tt.setup(f.keys)
			resp := f.do(http.MethodPost, NameSweep, f.keys.Token(t, nil), map[string]any{}, nil)
			e := errorOf(t, resp)
			if resp.StatusCode != http.StatusServiceUnavailable || e.Code != "unavailable" || resp.Header.Get("Retry-After") == "" {
				t.Errorf("status %d %+v Retry-After %q, want 503 unavailable with Retry-After", resp.StatusCode, e, resp.Header.Get("Retry-After"))
			}
		})
	}
}

// TestSchedulerNotConfigured: without an audience idtoken would accept any.
func TestSchedulerNotConfigured(t *testing.T) {
	t.Parallel()
	f := newHTTPFixture(t, func(c *Config) { c.SweepAudience = "" })
	resp := f.do(http.MethodPost, NameSweep, f.keys.Token(t, nil), map[string]any{}, nil)
	if e := errorOf(t, resp); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("status %d %+v, want 401", resp.StatusCode, e)
	}
}
