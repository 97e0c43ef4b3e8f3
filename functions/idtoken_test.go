package functions

import (
	"context"
	"crypto"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// testIssuer plays Firebase Auth in tests: it holds signing keys, serves
// their certificates like Google's key endpoint, and mints ID tokens.
type testIssuer struct {
	projectID string
	// now is the clock Token uses for iat, auth_time and exp. Tests that pin
	// the verifier's clock set it before minting. Default: time.Now.
	now    func() time.Time
	server *httptest.Server

	mu     sync.Mutex
	kid    string                     // the key Token signs with
	keys   map[string]*rsa.PrivateKey // kid → signing key
	certs  map[string]string          // kid → PEM certificate, as served
	maxAge int                        // Cache-Control max-age in seconds; < 0: no header
	down   bool                       // answer 503
	delay  time.Duration              // wait before answering
	hits   int                        // requests served, down or not
}

// newTestIssuer starts a key server for projectID holding one key.
func newTestIssuer(t *testing.T, projectID string) *testIssuer {
	t.Helper()
	iss := &testIssuer{
		projectID: projectID,
		now:       time.Now,
		keys:      map[string]*rsa.PrivateKey{},
		certs:     map[string]string{},
		maxAge:    3600,
	}
	iss.rotate(t)
	iss.server = httptest.NewServer(http.HandlerFunc(iss.serveKeys))
	t.Cleanup(iss.server.Close)
	return iss
}

// URL is the key server's address, for IDTokenOptions.KeysURL.
func (iss *testIssuer) URL() string { return iss.server.URL }

// Verifier returns a verifier for the issuer's project reading its key
// server, with the clock now (nil: time.Now).
func (iss *testIssuer) Verifier(now func() time.Time) *IDTokenVerifier {
	return NewIDTokenVerifier(iss.projectID, &IDTokenOptions{
		KeysURL:    iss.URL(),
		HTTPClient: iss.server.Client(),
		Now:        now,
	})
}

// Token mints a valid ID token for sub, signed with the current key.
// mutate, if not nil, may change the claims and header before signing
// (delete a key to drop it).
func (iss *testIssuer) Token(t *testing.T, sub string, mutate func(claims map[string]any, header map[string]any)) string {
	t.Helper()
	now := iss.now()
	claims := map[string]any{
		"iss":       idTokenIssuerPrefix + iss.projectID,
		"aud":       iss.projectID,
		"sub":       sub,
		"user_id":   sub,
		"auth_time": now.Add(-time.Minute).Unix(),
		"iat":       now.Unix(),
		"exp":       now.Add(time.Hour).Unix(),
		"firebase": map[string]any{
			"sign_in_provider": "password",
			"identities":       map[string]any{},
		},
	}
	iss.mu.Lock()
	kid, key := iss.kid, iss.keys[iss.kid]
	iss.mu.Unlock()
	header := map[string]any{"alg": "RS256", "kid": kid, "typ": "JWT"}
	if mutate != nil {
		mutate(claims, header)
	}
	return signTestIDToken(t, key, header, claims)
}

// rotate adds a new key, still serving the old ones, and makes Token sign
// with it. It returns the new kid.
func (iss *testIssuer) rotate(t *testing.T) string {
	t.Helper()
	key, certPEM := newTestIDTokenKey(t)
	iss.mu.Lock()
	defer iss.mu.Unlock()
	iss.kid = fmt.Sprintf("kid-%d", len(iss.keys)+1)
	iss.keys[iss.kid] = key
	iss.certs[iss.kid] = certPEM
	return iss.kid
}

func (iss *testIssuer) setDown(down bool) {
	iss.mu.Lock()
	defer iss.mu.Unlock()
	iss.down = down
}

func (iss *testIssuer) hitCount() int {
	iss.mu.Lock()
	defer iss.mu.Unlock()
	return iss.hits
}

func (iss *testIssuer) serveKeys(w http.ResponseWriter, r *http.Request) {
	iss.mu.Lock()
	iss.hits++
	down, delay, maxAge := iss.down, iss.delay, iss.maxAge
	body, err := json.Marshal(iss.certs)
	iss.mu.Unlock()
	if delay > 0 {
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			return
		}
	}
	if down || err != nil {
		http.Error(w, "unavailable", http.StatusServiceUnavailable)
		return
	}
	if maxAge >= 0 {
		w.Header().Set("Cache-Control", fmt.Sprintf("public, max-age=%d, must-revalidate, no-transform", maxAge))
	}
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.Write(body)
}

// newTestIDTokenKey returns an RSA key and a self-signed PEM certificate.
func newTestIDTokenKey(t *testing.T) (*rsa.PrivateKey, string) {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatalf("rsa.GenerateKey() error = %v", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "securetoken.system.gserviceaccount.com"},
		NotBefore:    time.Now().Add(-24 * time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatalf("x509.CreateCertificate() error = %v", err)
	}
	return key, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}

// signTestIDToken encodes header and claims and signs them with key using
// RS256, whatever header says.
func signTestIDToken(t *testing.T, key *rsa.PrivateKey, header, claims map[string]any) string {
	t.Helper()
	signingInput := encodeTestIDTokenPart(t, header) + "." + encodeTestIDTokenPart(t, claims)
	digest := sha256.Sum256([]byte(signingInput))
	sig, err := rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, digest[:])
	if err != nil {
		t.Fatalf("rsa.SignPKCS1v15() error = %v", err)
	}
	return signingInput + "." + base64.RawURLEncoding.EncodeToString(sig)
}

func encodeTestIDTokenPart(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("json.Marshal() error = %v", err)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// idTokenTestClock is a pinned clock that tests advance.
type idTokenTestClock struct {
	mu sync.Mutex
	t  time.Time
}

func newIDTokenTestClock() *idTokenTestClock {
	return &idTokenTestClock{t: time.Date(2026, 3, 14, 15, 9, 26, 0, time.UTC)}
}

func (c *idTokenTestClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *idTokenTestClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// newPinnedTestIssuer returns an issuer and a verifier sharing a pinned clock.
func newPinnedTestIssuer(t *testing.T) (*testIssuer, *IDTokenVerifier, *idTokenTestClock) {
	t.Helper()
	clock := newIDTokenTestClock()
	iss := newTestIssuer(t, "baton-test")
	iss.now = clock.Now
	return iss, iss.Verifier(clock.Now), clock
}

func TestIDTokenVerify(t *testing.T) {
	iss, v, clock := newPinnedTestIssuer(t)
	now := clock.Now()
	otherKey, _ := newTestIDTokenKey(t)

	valid := iss.Token(t, "user-1", nil)
	parts := strings.Split(valid, ".")
	withHeader := func(header string) string {
		return base64.RawURLEncoding.EncodeToString([]byte(header)) + "." + parts[1] + "." + parts[2]
	}
	withPayload := func(payload string) string {
		return parts[0] + "." + base64.RawURLEncoding.EncodeToString([]byte(payload)) + "." + parts[2]
	}
	hs256 := func() string {
		// The classic confusion attack: HMAC keyed with the public certificate.
		iss.mu.Lock()
		secret := iss.certs[iss.kid]
		iss.mu.Unlock()
		input := encodeTestIDTokenPart(t, map[string]any{"alg": "HS256", "kid": iss.kid, "typ": "JWT"}) + "." + parts[1]
		mac := hmac.New(sha256.New, []byte(secret))
		mac.Write([]byte(input))
		return input + "." + base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
	}
	set := func(name string, value any) func(map[string]any, map[string]any) {
		return func(claims, _ map[string]any) { claims[name] = value }
	}
	drop := func(name string) func(map[string]any, map[string]any) {
		return func(claims, _ map[string]any) { delete(claims, name) }
	}
	setHeader := func(name string, value any) func(map[string]any, map[string]any) {
		return func(_, header map[string]any) { header[name] = value }
	}
	byOtherKey := func() string {
		header := map[string]any{"alg": "RS256", "kid": iss.kid, "typ": "JWT"}
		var claims map[string]any
		iss.Token(t, "user-1", func(c, _ map[string]any) { claims = c })
		return signTestIDToken(t, otherKey, header, claims)
	}

	tests := []struct {
		name    string
		token   string
		wantSub string // "" means the token must be rejected
		wantMsg string // part of the rejection's message
	}{
		{name: "valid", token: valid, wantSub: "user-1"},
		{name: "sub of 128 bytes", token: iss.Token(t, strings.Repeat("u", 128), nil), wantSub: strings.Repeat("u", 128)},
		{name: "expired within skew", token: iss.Token(t, "user-1", set("exp", now.Add(-10*time.Second).Unix())), wantSub: "user-1"},
		{name: "iat in the future within skew", token: iss.Token(t, "user-1", set("iat", now.Add(10*time.Second).Unix())), wantSub: "user-1"},
		{name: "fractional times", token: iss.Token(t, "user-1", set("iat", float64(now.Unix())+0.5)), wantSub: "user-1"},

		{name: "missing token", token: "", wantMsg: "missing token"},
		{name: "expired", token: iss.Token(t, "user-1", set("exp", now.Add(-time.Minute).Unix())), wantMsg: "expired"},
		{name: "exp now", token: iss.Token(t, "user-1", set("exp", now.Add(-idTokenDefaultSkew).Unix())), wantMsg: "expired"},
		{name: "no exp", token: iss.Token(t, "user-1", drop("exp")), wantMsg: "exp missing"},
		{name: "exp not a number", token: iss.Token(t, "user-1", set("exp", "tomorrow")), wantMsg: "exp missing"},
		{name: "iat in the future", token: iss.Token(t, "user-1", set("iat", now.Add(5*time.Minute).Unix())), wantMsg: "issued in the future"},
		{name: "no iat", token: iss.Token(t, "user-1", drop("iat")), wantMsg: "iat missing"},
		{name: "auth_time in the future", token: iss.Token(t, "user-1", set("auth_time", now.Add(5*time.Minute).Unix())), wantMsg: "auth_time in the future"},
		{name: "no auth_time", token: iss.Token(t, "user-1", drop("auth_time")), wantMsg: "auth_time missing"},
		{name: "wrong audience", token: iss.Token(t, "user-1", set("aud", "other-project")), wantMsg: "aud"},
		{name: "audience list", token: iss.Token(t, "user-1", set("aud", []string{"baton-test"})), wantMsg: "aud"},
		{name: "wrong issuer", token: iss.Token(t, "user-1", set("iss", "https://securetoken.google.com/other-project")), wantMsg: "iss"},
		{name: "issuer of another service", token: iss.Token(t, "user-1", set("iss", "https://accounts.google.com")), wantMsg: "iss"},
		{name: "empty sub", token: iss.Token(t, "", nil), wantMsg: "empty sub"},
		{name: "no sub", token: iss.Token(t, "user-1", drop("sub")), wantMsg: "empty sub"},
		{name: "sub not a string", token: iss.Token(t, "user-1", set("sub", 42)), wantMsg: "empty sub"},
		{name: "sub too long", token: iss.Token(t, strings.Repeat("u", 129), nil), wantMsg: "sub longer"},
		{name: "signed by another key", token: byOtherKey(), wantMsg: "bad signature"},
		{name: "signature of another token", token: parts[0] + "." + strings.Split(iss.Token(t, "user-2", nil), ".")[1] + "." + parts[2], wantMsg: "bad signature"},
		{name: "empty signature", token: parts[0] + "." + parts[1] + ".", wantMsg: "bad signature"},
		{name: "unknown kid", token: iss.Token(t, "user-1", setHeader("kid", "no-such-kid")), wantMsg: "unknown kid"},
		{name: "no kid", token: iss.Token(t, "user-1", func(_, h map[string]any) { delete(h, "kid") }), wantMsg: "no kid"},
		{name: "alg none signed", token: iss.Token(t, "user-1", setHeader("alg", "none")), wantMsg: "alg"},
		{name: "alg none unsigned", token: encodeTestIDTokenPart(t, map[string]any{"alg": "none", "typ": "JWT"}) + "." + parts[1] + ".", wantMsg: "alg"},
		{name: "alg lower case", token: iss.Token(t, "user-1", setHeader("alg", "rs256")), wantMsg: "alg"},
		{name: "alg RS512", token: iss.Token(t, "user-1", setHeader("alg", "RS512")), wantMsg: "alg"},
		{name: "alg HS256", token: hs256(), wantMsg: "alg"},
		{name: "two parts", token: parts[0] + "." + parts[1], wantMsg: "2 parts"},
		{name: "four parts", token: valid + "." + parts[2], wantMsg: "4 parts"},
		{name: "one part", token: "abc", wantMsg: "1 parts"},
		{name: "bad base64 length", token: "a." + parts[1] + "." + parts[2], wantMsg: "header"},
		{name: "non-canonical base64", token: parts[0] + "." + parts[1] + "." + parts[2][:len(parts[2])-1] + "B", wantMsg: "signature"},
		{name: "padded base64", token: parts[0] + "=." + parts[1] + "." + parts[2], wantMsg: "unexpected character"},
		{name: "standard base64 alphabet", token: "+/" + valid, wantMsg: "unexpected character"},
		{name: "newline", token: parts[0] + "\n." + parts[1] + "." + parts[2], wantMsg: "unexpected character"},
		{name: "bearer prefix", token: "Bearer " + valid, wantMsg: "unexpected character"},
		{name: "bad header json", token: withHeader(`{"alg":"RS256",`), wantMsg: "header"},
		{name: "header alg not a string", token: withHeader(`{"alg":256}`), wantMsg: "header"},
		{name: "bad payload json", token: withPayload(`{"sub":`), wantMsg: "payload"},
		{name: "payload null", token: withPayload(`null`), wantMsg: "not a JSON object"},
		{name: "payload array", token: withPayload(`[]`), wantMsg: "payload"},
		{name: "payload with trailing data", token: withPayload(`{} {}`), wantMsg: "payload"},
		{name: "oversize", token: iss.Token(t, "user-1", set("pad", strings.Repeat("x", idTokenMaxLen))), wantMsg: "longer than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := v.Verify(t.Context(), tt.token)
			if tt.wantSub != "" {
				if err != nil {
					t.Fatalf("Verify() error = %v, want nil", err)
				}
				if got.UserID != tt.wantSub {
					t.Errorf("Verify().UserID = %q, want %q", got.UserID, tt.wantSub)
				}
				return
			}
			if !errors.Is(err, ErrInvalidToken) {
				t.Fatalf("Verify() error = %v, want ErrInvalidToken", err)
			}
			if errors.Is(err, ErrKeysUnavailable) {
				t.Errorf("Verify() error = %v, want not ErrKeysUnavailable", err)
			}
			if !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("Verify() error = %v, want it to mention %q", err, tt.wantMsg)
			}
			if got != nil {
				t.Errorf("Verify() = %+v, want nil", got)
			}
		})
	}
}

func TestIDTokenVerifyClaims(t *testing.T) {
	iss, v, clock := newPinnedTestIssuer(t)
	now := clock.Now()
	got, err := v.Verify(t.Context(), iss.Token(t, "user-1", func(claims, _ map[string]any) {
		claims["admin"] = true
	}))
	if err != nil {
		t.Fatalf("Verify() error = %v, want nil", err)
	}
	want := IDToken{
		UserID:   "user-1",
		Issuer:   "https://securetoken.google.com/baton-test",
		Audience: "baton-test",
		IssuedAt: now,
		Expires:  now.Add(time.Hour),
		AuthTime: now.Add(-time.Minute),
	}
	if got.UserID != want.UserID || got.Issuer != want.Issuer || got.Audience != want.Audience ||
		!got.IssuedAt.Equal(want.IssuedAt) || !got.Expires.Equal(want.Expires) || !got.AuthTime.Equal(want.AuthTime) {
		t.Errorf("Verify() = %+v, want %+v", got, want)
	}
	if got.Claims["admin"] != true {
		t.Errorf("Verify().Claims[admin] = %v, want true", got.Claims["admin"])
	}
	firebase, _ := got.Claims["firebase"].(map[string]any)
	if firebase["sign_in_provider"] != "password" {
		t.Errorf("Verify().Claims[firebase] = %v, want sign_in_provider password", got.Claims["firebase"])
	}
}

func TestIDTokenVerifierCachesKeys(t *testing.T) {
	iss, v, _ := newPinnedTestIssuer(t)
	for i := range 5 {
		if _, err := v.Verify(t.Context(), iss.Token(t, fmt.Sprintf("user-%d", i), nil)); err != nil {
			t.Fatalf("Verify() error = %v, want nil", err)
		}
	}
	// Rejected tokens with a known kid use the cache too.
	if _, err := v.Verify(t.Context(), iss.Token(t, "", nil)); !errors.Is(err, ErrInvalidToken) {
		t.Fatalf("Verify() error = %v, want ErrInvalidToken", err)
	}
	if got := iss.hitCount(); got != 1 {
		t.Errorf("key server hits = %d, want 1", got)
	}
}

func TestIDTokenVerifierRefetchesAfterMaxAge(t *testing.T) {
	iss, v, clock := newPinnedTestIssuer(t)
	verify := func(wantHits int) {
		t.Helper()
		if _, err := v.Verify(t.Context(), iss.Token(t, "user-1", nil)); err != nil {
			t.Fatalf("Verify() error = %v, want nil", err)
		}
		if got := iss.hitCount(); got != wantHits {
			t.Errorf("key server hits = %d, want %d", got, wantHits)
		}
	}
	verify(1)
	clock.Advance(59 * time.Minute) // max-age is 3600 s
	verify(1)
	clock.Advance(2 * time.Minute)
	verify(2)
	clock.Advance(30 * time.Minute)
	verify(2)
}

func TestIDTokenVerifierMaxAgeMissing(t *testing.T) {
	iss, v, clock := newPinnedTestIssuer(t)
	iss.mu.Lock()
	iss.maxAge = -1
	iss.mu.Unlock()
	verify := func(wantHits int) {
		t.Helper()
		if _, err := v.Verify(t.Context(), iss.Token(t, "user-1", nil)); err != nil {
			t.Fatalf("Verify() error = %v, want nil", err)
		}
		if got := iss.hitCount(); got != wantHits {
			t.Errorf("key server hits = %d, want %d", got, wantHits)
		}
	}
	verify(1)
	clock.Advance(idTokenDefaultMaxAge - time.Second)
	verify(1)
	clock.Advance(time.Second)
	verify(2)
}

func TestIDTokenMaxAge(t *testing.T) {
	tests := []struct {
		name         string
		cacheControl string
		want         time.Duration
	}{
		{name: "google", cacheControl: "public, max-age=19838, must-revalidate, no-transform", want: 19838 * time.Second},
		{name: "only max-age", cacheControl: "max-age=600", want: 10 * time.Minute},
		{name: "upper case", cacheControl: "Public, MAX-AGE=600", want: 10 * time.Minute},
		{name: "quoted", cacheControl: `max-age="600"`, want: 10 * time.Minute},
		{name: "absent", cacheControl: "", want: idTokenDefaultMaxAge},
		{name: "no max-age", cacheControl: "public, no-transform", want: idTokenDefaultMaxAge},
		{name: "unreadable", cacheControl: "max-age=soon", want: idTokenDefaultMaxAge},
		{name: "negative", cacheControl: "max-age=-5", want: idTokenDefaultMaxAge},
		{name: "zero is floored", cacheControl: "max-age=0", want: idTokenRefetchInterval},
		{name: "s-maxage is not max-age", cacheControl: "s-maxage=600", want: idTokenDefaultMaxAge},
		{name: "huge", cacheControl: "max-age=99999999999999999", want: time.Duration(1<<63-1) / time.Second * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := idTokenMaxAge(tt.cacheControl); got != tt.want {
				t.Errorf("idTokenMaxAge(%q) = %v, want %v", tt.cacheControl, got, tt.want)
			}
		})
	}
}

func TestIDTokenVerifierUnknownKidRefetch(t *testing.T) {
	iss, v, clock := newPinnedTestIssuer(t)
	if _, err := v.Verify(t.Context(), iss.Token(t, "user-1", nil)); err != nil {
		t.Fatalf("Verify() error = %v, want nil", err)
	}
	unknown := func() string {
		return iss.Token(t, "user-1", func(_, header map[string]any) { header["kid"] = "no-such-kid" })
	}
	steps := []struct {
		name     string
		advance  time.Duration
		wantHits int
	}{
		{name: "just fetched: no refetch", advance: 0, wantHits: 1},
		{name: "within a minute: no refetch", advance: 59 * time.Second, wantHits: 1},
		{name: "after a minute: refetch", advance: time.Second, wantHits: 2},
		{name: "again at once: no refetch", advance: 0, wantHits: 2},
		{name: "a minute later: refetch", advance: time.Minute, wantHits: 3},
	}
	for _, step := range steps {
		clock.Advance(step.advance)
		if _, err := v.Verify(t.Context(), unknown()); !errors.Is(err, ErrInvalidToken) {
			t.Fatalf("%s: Verify() error = %v, want ErrInvalidToken", step.name, err)
		}
		if got := iss.hitCount(); got != step.wantHits {
			t.Errorf("%s: key server hits = %d, want %d", step.name, got, step.wantHits)
		}
	}
}

func TestIDTokenVerifierKeyRotation(t *testing.T) {
	iss, v, clock := newPinnedTestIssuer(t)
	oldToken := iss.Token(t, "user-1", nil)
	if _, err := v.Verify(t.Context(), oldToken); err != nil {
		t.Fatalf("Verify() error = %v, want nil", err)
	}
	iss.rotate(t)
	clock.Advance(idTokenRefetchInterval)
	// The cache is fresh, but does not know the new kid.
	if _, err := v.Verify(t.Context(), iss.Token(t, "user-1", nil)); err != nil {
		t.Fatalf("Verify(new kid) error = %v, want nil", err)
	}
	if _, err := v.Verify(t.Context(), oldToken); err != nil {
		t.Fatalf("Verify(old kid) error = %v, want nil", err)
	}
	if got := iss.hitCount(); got != 2 {
		t.Errorf("key server hits = %d, want 2", got)
	}
}

func TestIDTokenVerifierKeysUnavailable(t *testing.T) {
	tests := []struct {
		name  string
		setup func(iss *testIssuer)
	}{
		{name: "server answers 503", setup: func(iss *testIssuer) { iss.setDown(true) }},
		{name: "server closed", setup: func(iss *testIssuer) { iss.server.Close() }},
		{name: "no keys", setup: func(iss *testIssuer) {
			iss.mu.Lock()
			defer iss.mu.Unlock()
			iss.certs = map[string]string{}
		}},
		{name: "not a certificate", setup: func(iss *testIssuer) {
			iss.mu.Lock()
			defer iss.mu.Unlock()
			iss.certs[iss.kid] = "not PEM"
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			iss, v, _ := newPinnedTestIssuer(t)
			token := iss.Token(t, "user-1", nil)
			tt.setup(iss)
			_, err := v.Verify(t.Context(), token)
			if !errors.Is(err, ErrKeysUnavailable) {
				t.Fatalf("Verify() error = %v, want ErrKeysUnavailable", err)
			}
			if errors.Is(err, ErrInvalidToken) {
				t.Errorf("Verify() error = %v, want not ErrInvalidToken", err)
			}
		})
	}
}

func TestIDTokenVerifierRetriesAfterFailure(t *testing.T) {
	iss, v, clock := newPinnedTestIssuer(t)
	iss.setDown(true)
	verify := func(wantErr error, wantHits int) {
		t.Helper()
		_, err := v.Verify(t.Context(), iss.Token(t, "user-1", nil))
		if !errors.Is(err, wantErr) {
			t.Errorf("Verify() error = %v, want %v", err, wantErr)
		}
		if got := iss.hitCount(); got != wantHits {
			t.Errorf("key server hits = %d, want %d", got, wantHits)
		}
	}
	verify(ErrKeysUnavailable, 1)
	verify(ErrKeysUnavailable, 1) // no retry at once
	clock.Advance(idTokenRetryInterval)
	verify(ErrKeysUnavailable, 2)
	iss.setDown(false)
	clock.Advance(idTokenRetryInterval)
	verify(nil, 3)
}

func TestIDTokenVerifierUsesStaleKeys(t *testing.T) {
	iss, v, clock := newPinnedTestIssuer(t)
	verify := func(wantHits int) {
		t.Helper()
		if _, err := v.Verify(t.Context(), iss.Token(t, "user-1", nil)); err != nil {
			t.Fatalf("Verify() error = %v, want nil", err)
		}
		if got := iss.hitCount(); got != wantHits {
			t.Errorf("key server hits = %d, want %d", got, wantHits)
		}
	}
	verify(1)
	iss.setDown(true)
	clock.Advance(2 * time.Hour)
	verify(2) // fetch fails, stale key used
	verify(2) // no retry at once
	clock.Advance(idTokenRetryInterval)
	verify(3)
	iss.setDown(false)
	clock.Advance(idTokenRetryInterval)
	verify(4)
	verify(4) // fresh again

	// A kid the stale keys do not know cannot be judged.
	iss.setDown(true)
	clock.Advance(2 * time.Hour)
	iss.rotate(t)
	if _, err := v.Verify(t.Context(), iss.Token(t, "user-1", nil)); !errors.Is(err, ErrKeysUnavailable) {
		t.Errorf("Verify(new kid) error = %v, want ErrKeysUnavailable", err)
	}
}

func TestIDTokenVerifierCanceledContext(t *testing.T) {
	iss, v, _ := newPinnedTestIssuer(t)
	iss.mu.Lock()
	iss.delay = time.Minute
	iss.mu.Unlock()
	token := iss.Token(t, "user-1", nil)
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	_, err := v.Verify(ctx, token)
	if !errors.Is(err, ErrKeysUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Verify() error = %v, want ErrKeysUnavailable and context.DeadlineExceeded", err)
	}
	// The caller's deadline is not held against the key server: the next
	// call fetches at once.
	iss.mu.Lock()
	iss.delay = 0
	iss.mu.Unlock()
	if _, err := v.Verify(t.Context(), token); err != nil {
		t.Fatalf("Verify() error = %v, want nil", err)
	}
}

func TestIDTokenVerifierConcurrent(t *testing.T) {
	iss, v, _ := newPinnedTestIssuer(t)
	iss.mu.Lock()
	iss.delay = 50 * time.Millisecond // let the callers pile up on the first fetch
	iss.mu.Unlock()
	const callers = 32
	tokens := make([]string, callers)
	for i := range tokens {
		tokens[i] = iss.Token(t, fmt.Sprintf("user-%d", i), nil)
	}
	unknown := iss.Token(t, "user-x", func(_, header map[string]any) { header["kid"] = "no-such-kid" })

	var wg sync.WaitGroup
	for i, token := range tokens {
		wg.Go(func() {
			for range 5 {
				got, err := v.Verify(t.Context(), token)
				if err != nil {
					t.Errorf("Verify() error = %v, want nil", err)
					return
				}
				if want := fmt.Sprintf("user-%d", i); got.UserID != want {
					t.Errorf("Verify().UserID = %q, want %q", got.UserID, want)
				}
			}
		})
		wg.Go(func() {
			if _, err := v.Verify(t.Context(), unknown); !errors.Is(err, ErrInvalidToken) {
				t.Errorf("Verify() error = %v, want ErrInvalidToken", err)
			}
		})
	}
	wg.Wait()
	if got := iss.hitCount(); got != 1 {
		t.Errorf("key server hits = %d, want 1", got)
	}
}

func TestIDTokenVerifierEmptyProject(t *testing.T) {
	iss := newTestIssuer(t, "baton-test")
	v := NewIDTokenVerifier("", &IDTokenOptions{KeysURL: iss.URL()})
	_, err := v.Verify(t.Context(), iss.Token(t, "user-1", func(claims, _ map[string]any) {
		claims["aud"] = ""
		claims["iss"] = idTokenIssuerPrefix
	}))
	if err == nil || errors.Is(err, ErrInvalidToken) || errors.Is(err, ErrKeysUnavailable) {
		t.Fatalf("Verify() error = %v, want a configuration error", err)
	}
	if got := iss.hitCount(); got != 0 {
		t.Errorf("key server hits = %d, want 0", got)
	}
}

func TestIDTokenVerifierRealClock(t *testing.T) {
	// The default clock, as other tests in this package will use it.
	iss := newTestIssuer(t, "baton-test")
	got, err := iss.Verifier(nil).Verify(t.Context(), iss.Token(t, "user-1", nil))
	if err != nil {
		t.Fatalf("Verify() error = %v, want nil", err)
	}
	if got.UserID != "user-1" {
		t.Errorf("Verify().UserID = %q, want %q", got.UserID, "user-1")
	}
}
