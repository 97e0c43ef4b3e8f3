package functions

import (
	"context"
	"crypto"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ErrInvalidToken is returned by [IDTokenVerifier.Verify] when the token is
// missing, malformed, badly signed, or its claims do not hold. Every rejection
// wraps it with a short reason. The HTTP layer answers 401.
var ErrInvalidToken = errors.New("invalid id token")

// ErrKeysUnavailable is returned by [IDTokenVerifier.Verify] when the signing
// keys could not be fetched and no usable cached key exists. It says nothing
// about the token. The HTTP layer answers 503.
var ErrKeysUnavailable = errors.New("id token keys unavailable")

const (
	// idTokenKeysURL serves Firebase Auth's signing certificates as a JSON
	// object {kid: PEM certificate}.
	idTokenKeysURL = "https://www.googleapis.com/robot/v1/metadata/x509/securetoken@system.gserviceaccount.com"
	// idTokenIssuerPrefix followed by the project id is the required iss.
	idTokenIssuerPrefix = "https://securetoken.google.com/"

	idTokenMaxLen       = 8 << 10 // bytes of a raw token
	idTokenMaxSubLen    = 128     // bytes of the sub claim
	idTokenKeysMaxBytes = 1 << 20 // bytes of a key-server response

	idTokenDefaultSkew    = 30 * time.Second
	idTokenDefaultTimeout = 10 * time.Second
	// idTokenDefaultMaxAge applies when the key server sends no max-age.
	idTokenDefaultMaxAge = time.Hour
	// idTokenRefetchInterval is the least time between two fetches after a
	// successful one: it bounds fetches triggered by tokens naming unknown
	// kids, and is also the floor on the key cache lifetime.
	idTokenRefetchInterval = time.Minute
	// idTokenRetryInterval is the least time between two fetches after a
	// failed one.
	idTokenRetryInterval = 5 * time.Second
)

// IDTokenOptions are the optional settings of an [IDTokenVerifier].
// A nil *IDTokenOptions, and every zero field, means the default.
type IDTokenOptions struct {
	// KeysURL serves the signing certificates as a JSON object
	// {kid: PEM certificate}. Default: Google's certificates for Firebase
	// Auth ID tokens.
	KeysURL string
	// HTTPClient fetches the keys. Default: a client with a 10 s timeout.
	HTTPClient *http.Client
	// Now returns the current time. Default: time.Now.
	Now func() time.Time
	// ClockSkew is the leeway allowed on exp, iat and auth_time.
	// Default: 30 s; a negative value means no leeway.
	ClockSkew time.Duration
	// Issuer and Audience replace Firebase's (the project's securetoken
	// issuer, and the project id) to verify other Google-signed ID tokens,
	// such as the OIDC token Cloud Scheduler sends: issuer
	// https://accounts.google.com, audience the URL called, keys at
	// GoogleOIDCKeysURL. auth_time is required only for Firebase tokens.
	Issuer   string
	Audience string
}

// GoogleOIDCKeysURL serves the certificates of Google-signed OIDC tokens
// (service accounts, Cloud Scheduler) in the same format as Firebase's.
const GoogleOIDCKeysURL = "https://www.googleapis.com/oauth2/v1/certs"

// IDToken is a verified Firebase Auth ID token.
type IDToken struct {
	// UserID is the sub claim: the Firebase Auth uid.
	UserID   string
	Issuer   string
	Audience string
	IssuedAt time.Time
	Expires  time.Time
	AuthTime time.Time
	// Claims holds every claim of the payload, as decoded by encoding/json
	// (numbers are float64), including the ones above and custom claims.
	Claims map[string]any
}

// IDTokenVerifier checks Firebase Auth ID tokens for one project. It caches
// the signing keys for as long as the key server's Cache-Control max-age
// allows. It is safe for concurrent use.
type IDTokenVerifier struct {
	projectID string
	audience  string
	issuer    string
	firebase  bool // Firebase's rules: auth_time required
	keysURL   string
	client    *http.Client
	now       func() time.Time
	skew      time.Duration

	// refresh holds a token while a goroutine fetches keys, so that
	// concurrent calls wait for one fetch rather than each making their own.
	refresh chan struct{}

	mu       sync.Mutex // guards the fields below
	keys     map[string]*rsa.PublicKey
	expires  time.Time // keys are fresh before this
	fetched  time.Time // end of the last fetch attempt
	fetchErr error     // error of the last attempt; nil after a success
}

// NewIDTokenVerifier returns a verifier accepting tokens whose audience is
// projectID. opts may be nil.
func NewIDTokenVerifier(projectID string, opts *IDTokenOptions) *IDTokenVerifier {
	v := &IDTokenVerifier{
		projectID: projectID,
		audience:  projectID,
		issuer:    idTokenIssuerPrefix + projectID,
		firebase:  true,
		keysURL:   idTokenKeysURL,
		now:       time.Now,
		skew:      idTokenDefaultSkew,
		refresh:   make(chan struct{}, 1),
	}
	if opts != nil {
		if opts.KeysURL != "" {
			v.keysURL = opts.KeysURL
		}
		v.client = opts.HTTPClient
		if opts.Issuer != "" {
			v.issuer, v.firebase = opts.Issuer, false
		}
		if opts.Audience != "" {
			v.audience = opts.Audience
		}
		if opts.Now != nil {
			v.now = opts.Now
		}
		if opts.ClockSkew > 0 {
			v.skew = opts.ClockSkew
		} else if opts.ClockSkew < 0 {
			v.skew = 0
		}
	}
	if v.client == nil {
		v.client = &http.Client{Timeout: idTokenDefaultTimeout}
	}
	return v
}

// Verify checks rawToken (the JWT alone, without "Bearer ") and returns its
// claims. A rejected token gives an error wrapping [ErrInvalidToken]; keys
// that cannot be fetched give one wrapping [ErrKeysUnavailable]; any other
// error (a verifier without a project id) is the server's fault.
func (v *IDTokenVerifier) Verify(ctx context.Context, rawToken string) (*IDToken, error) {
	if v.audience == "" {
		return nil, errors.New("id token verifier: empty project id or audience")
	}
	if rawToken == "" {
		return nil, fmt.Errorf("%w: missing token", ErrInvalidToken)
	}
	if len(rawToken) > idTokenMaxLen {
		return nil, fmt.Errorf("%w: token longer than %d bytes", ErrInvalidToken, idTokenMaxLen)
	}
	for i := 0; i < len(rawToken); i++ {
		if !isIDTokenChar(rawToken[i]) {
			return nil, fmt.Errorf("%w: unexpected character at offset %d", ErrInvalidToken, i)
		}
	}
	parts := strings.Split(rawToken, ".")
	if len(parts) != 3 {
		return nil, fmt.Errorf("%w: %d parts, want 3", ErrInvalidToken, len(parts))
	}
	headerJSON, err := decodeIDTokenPart(parts[0])
	if err != nil {
		return nil, fmt.Errorf("%w: header: %w", ErrInvalidToken, err)
	}
	payloadJSON, err := decodeIDTokenPart(parts[1])
	if err != nil {
		return nil, fmt.Errorf("%w: payload: %w", ErrInvalidToken, err)
	}
	sig, err := decodeIDTokenPart(parts[2])
	if err != nil {
		return nil, fmt.Errorf("%w: signature: %w", ErrInvalidToken, err)
	}

	var header struct {
		Alg string `json:"alg"`
		Kid string `json:"kid"`
	}
	if err := json.Unmarshal(headerJSON, &header); err != nil {
		return nil, fmt.Errorf("%w: header: %w", ErrInvalidToken, err)
	}
	if header.Alg != "RS256" {
		return nil, fmt.Errorf("%w: alg %q, want RS256", ErrInvalidToken, header.Alg)
	}
	if header.Kid == "" {
		return nil, fmt.Errorf("%w: no kid", ErrInvalidToken)
	}
	var claims map[string]any
	if err := json.Unmarshal(payloadJSON, &claims); err != nil {
		return nil, fmt.Errorf("%w: payload: %w", ErrInvalidToken, err)
	}
	if claims == nil {
		return nil, fmt.Errorf("%w: payload is not a JSON object", ErrInvalidToken)
	}

	key, err := v.key(ctx, header.Kid)
	if err != nil {
		return nil, err
	}
	digest := sha256.Sum256([]byte(rawToken[:len(parts[0])+1+len(parts[1])]))
	if err := rsa.VerifyPKCS1v15(key, crypto.SHA256, digest[:], sig); err != nil {
		return nil, fmt.Errorf("%w: bad signature", ErrInvalidToken)
	}
	return v.checkClaims(claims)
}

// checkClaims applies Firebase's rules to the claims of a token whose
// signature holds.
func (v *IDTokenVerifier) checkClaims(claims map[string]any) (*IDToken, error) {
	tok := &IDToken{Claims: claims}
	var ok bool
	if tok.Issuer, ok = claims["iss"].(string); !ok || tok.Issuer != v.issuer {
		return nil, fmt.Errorf("%w: iss %q, want %q", ErrInvalidToken, tok.Issuer, v.issuer)
	}
	if tok.Audience, ok = claims["aud"].(string); !ok || tok.Audience != v.audience {
		return nil, fmt.Errorf("%w: aud %q, want %q", ErrInvalidToken, tok.Audience, v.audience)
	}
	tok.UserID, _ = claims["sub"].(string)
	if tok.UserID == "" {
		return nil, fmt.Errorf("%w: empty sub", ErrInvalidToken)
	}
	if len(tok.UserID) > idTokenMaxSubLen {
		return nil, fmt.Errorf("%w: sub longer than %d bytes", ErrInvalidToken, idTokenMaxSubLen)
	}
	var err error
	if tok.Expires, err = idTokenTime(claims, "exp"); err != nil {
		return nil, err
	}
	if tok.IssuedAt, err = idTokenTime(claims, "iat"); err != nil {
		return nil, err
	}
	if _, present := claims["auth_time"]; present || v.firebase {
		if tok.AuthTime, err = idTokenTime(claims, "auth_time"); err != nil {
			return nil, err
		}
	}
	now := v.now()
	if !now.Before(tok.Expires.Add(v.skew)) {
		return nil, fmt.Errorf("%w: expired at %s", ErrInvalidToken, tok.Expires.UTC().Format(time.RFC3339))
	}
	if tok.IssuedAt.After(now.Add(v.skew)) {
		return nil, fmt.Errorf("%w: issued in the future", ErrInvalidToken)
	}
	if tok.AuthTime.After(now.Add(v.skew)) {
		return nil, fmt.Errorf("%w: auth_time in the future", ErrInvalidToken)
	}
	return tok, nil
}

// key returns the public key named kid, fetching the key set when the cache
// is stale or does not know kid.
func (v *IDTokenVerifier) key(ctx context.Context, kid string) (*rsa.PublicKey, error) {
	v.mu.Lock()
	key, fetch, err := v.cachedKey(kid, v.now())
	v.mu.Unlock()
	if !fetch {
		return key, err
	}

	select {
	case v.refresh <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("%w: %w", ErrKeysUnavailable, ctx.Err())
	}
	defer func() { <-v.refresh }()

	// Another call may have fetched while this one waited.
	v.mu.Lock()
	key, fetch, err = v.cachedKey(kid, v.now())
	v.mu.Unlock()
	if !fetch {
		return key, err
	}

	keys, maxAge, fetchErr := v.fetchKeys(ctx)
	if fetchErr != nil && ctx.Err() != nil {
		// The caller gave up; that says nothing about the key server.
		return nil, fmt.Errorf("%w: %w", ErrKeysUnavailable, fetchErr)
	}
	now := v.now()
	v.mu.Lock()
	defer v.mu.Unlock()
	v.fetched = now
	v.fetchErr = fetchErr
	if fetchErr == nil {
		v.keys = keys
		v.expires = now.Add(maxAge)
	}
	key, _, err = v.cachedKey(kid, now)
	return key, err
}

// cachedKey decides, under v.mu, from the cache alone: it returns the key, or
// fetch = true when the key set should be fetched first, or an error.
func (v *IDTokenVerifier) cachedKey(kid string, now time.Time) (key *rsa.PublicKey, fetch bool, err error) {
	key = v.keys[kid]
	fresh := v.keys != nil && now.Before(v.expires)
	if fresh && key != nil {
		return key, false, nil
	}
	wait := idTokenRefetchInterval
	if v.fetchErr != nil {
		wait = idTokenRetryInterval
	}
	if v.fetched.IsZero() || now.Sub(v.fetched) >= wait {
		return nil, true, nil
	}
	// A fetch was made recently: answer without another one.
	switch {
	case key != nil:
		// Stale, and the last fetch failed: keep using it.
		return key, false, nil
	case v.fetchErr != nil:
		return nil, false, fmt.Errorf("%w: %w", ErrKeysUnavailable, v.fetchErr)
	default:
		return nil, false, fmt.Errorf("%w: unknown kid", ErrInvalidToken)
	}
}

// fetchKeys gets the key set and how long it may be cached.
func (v *IDTokenVerifier) fetchKeys(ctx context.Context) (map[string]*rsa.PublicKey, time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, v.keysURL, nil)
	if err != nil {
		return nil, 0, err
	}
	resp, err := v.client.Do(req)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, 0, fmt.Errorf("get %s: status %s", v.keysURL, resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, idTokenKeysMaxBytes+1))
	if err != nil {
		return nil, 0, fmt.Errorf("get %s: %w", v.keysURL, err)
	}
	if len(body) > idTokenKeysMaxBytes {
		return nil, 0, fmt.Errorf("get %s: response longer than %d bytes", v.keysURL, idTokenKeysMaxBytes)
	}
	var certs map[string]string
	if err := json.Unmarshal(body, &certs); err != nil {
		return nil, 0, fmt.Errorf("get %s: %w", v.keysURL, err)
	}
	if len(certs) == 0 {
		return nil, 0, fmt.Errorf("get %s: no keys", v.keysURL)
	}
	keys := make(map[string]*rsa.PublicKey, len(certs))
	for kid, certPEM := range certs {
		key, err := parseIDTokenCert(certPEM)
		if err != nil {
			return nil, 0, fmt.Errorf("get %s: kid %q: %w", v.keysURL, kid, err)
		}
		keys[kid] = key
	}
	return keys, idTokenMaxAge(resp.Header.Get("Cache-Control")), nil
}

// parseIDTokenCert returns the RSA public key of a PEM x509 certificate.
func parseIDTokenCert(certPEM string) (*rsa.PublicKey, error) {
	block, _ := pem.Decode([]byte(certPEM))
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, errors.New("no PEM certificate")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, err
	}
	key, ok := cert.PublicKey.(*rsa.PublicKey)
	if !ok {
		return nil, fmt.Errorf("public key is %T, want RSA", cert.PublicKey)
	}
	return key, nil
}

// idTokenMaxAge reads max-age from a Cache-Control header: the default when
// absent or unreadable, never less than idTokenRefetchInterval.
func idTokenMaxAge(cacheControl string) time.Duration {
	for directive := range strings.SplitSeq(cacheControl, ",") {
		name, value, ok := strings.Cut(strings.TrimSpace(directive), "=")
		if !ok || !strings.EqualFold(name, "max-age") {
			continue
		}
		secs, err := strconv.ParseInt(strings.Trim(value, `"`), 10, 64)
		if err != nil || secs < 0 {
			break
		}
		if secs > math.MaxInt64/int64(time.Second) {
			secs = math.MaxInt64 / int64(time.Second)
		}
		return max(time.Duration(secs)*time.Second, idTokenRefetchInterval)
	}
	return idTokenDefaultMaxAge
}

// idTokenTime reads a NumericDate claim (seconds since the epoch).
func idTokenTime(claims map[string]any, name string) (time.Time, error) {
	secs, ok := claims[name].(float64)
	if !ok {
		return time.Time{}, fmt.Errorf("%w: %s missing or not a number", ErrInvalidToken, name)
	}
	if secs <= 0 || secs >= 1<<40 {
		return time.Time{}, fmt.Errorf("%w: %s out of range", ErrInvalidToken, name)
	}
	whole, frac := math.Modf(secs)
	return time.Unix(int64(whole), int64(frac*1e9)), nil
}

// decodeIDTokenPart decodes unpadded base64url, rejecting non-canonical input.
func decodeIDTokenPart(s string) ([]byte, error) {
	return base64.RawURLEncoding.Strict().DecodeString(s)
}

// isIDTokenChar reports whether c may appear in a compact JWS: the base64url
// alphabet and the dot. (The base64 decoder alone would skip newlines.)
func isIDTokenChar(c byte) bool {
	return 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' ||
		c == '-' || c == '_' || c == '.'
}
