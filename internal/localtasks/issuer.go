package localtasks

import (
	"bytes"
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"time"

	"google.golang.org/adk/v2/platform"
)

// googleCertsURL is where google.golang.org/api/idtoken fetches the keys of
// Google's OIDC tokens (RS256).
const googleCertsURL = "https://www.googleapis.com/oauth2/v3/certs"

// tokenLifetime is how long a Google-signed ID token lasts.
const tokenLifetime = time.Hour

// Issuer stands in for Google's token service in tests and local runs: it
// signs OIDC tokens for any service account, shaped as Google's (issuer
// accounts.google.com, RS256, a verified email), with a key of its own, and
// serves that key to a worker's token check through KeyClient, so the
// check Baton runs in production accepts them.
type Issuer struct {
	key *rsa.PrivateKey
	kid string
}

// NewIssuer makes an issuer with a fresh RSA key.
func NewIssuer() (*Issuer, error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, fmt.Errorf("issuer key: %w", err)
	}
	return &Issuer{key: key, kid: rand.Text()}, nil
}

// Sign returns an ID token for serviceAccount with audience, valid for an
// hour from ADK's platform clock. It is a Signer.
func (i *Issuer) Sign(ctx context.Context, serviceAccount, audience string) (string, error) {
	now := platform.Now(ctx)
	header := map[string]any{"alg": "RS256", "kid": i.kid, "typ": "JWT"}
	claims := map[string]any{
		"iss": "https://accounts.google.com", "aud": audience, "azp": serviceAccount, "sub": serviceAccount,
		"email": serviceAccount, "email_verified": true,
		"iat": now.Unix(), "exp": now.Add(tokenLifetime).Unix(),
	}
	var parts [2]string
	for n, v := range []any{header, claims} {
		b, err := json.Marshal(v)
		if err != nil {
			return "", fmt.Errorf("token: %w", err)
		}
		parts[n] = base64.RawURLEncoding.EncodeToString(b)
	}
	signed := parts[0] + "." + parts[1]
	digest := sha256.Sum256([]byte(signed))
	sig, err := rsa.SignPKCS1v15(rand.Reader, i.key, crypto.SHA256, digest[:])
	if err != nil {
		return "", fmt.Errorf("token: %w", err)
	}
	return signed + "." + base64.RawURLEncoding.EncodeToString(sig), nil
}

// KeyClient is an HTTP client that answers the URL where idtoken fetches
// Google's keys (https://www.googleapis.com/oauth2/v3/certs) with the
// issuer's public key, in process, and refuses every other URL: give it to
// idtoken.NewValidator (idtoken.WithHTTPClient).
func (i *Issuer) KeyClient() *http.Client {
	return &http.Client{Transport: keyServer{i}}
}

type keyServer struct{ i *Issuer }

func (k keyServer) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		req.Body.Close()
	}
	if req.URL.String() != googleCertsURL {
		return nil, fmt.Errorf("issuer key client: refusing %s", req.URL.Redacted())
	}
	pub := k.i.key.PublicKey
	jwks, err := json.Marshal(map[string]any{"keys": []map[string]any{{
		"kty": "RSA", "alg": "RS256", "use": "sig", "kid": k.i.kid,
		"n": base64.RawURLEncoding.EncodeToString(pub.N.Bytes()),
		"e": base64.RawURLEncoding.EncodeToString(big.NewInt(int64(pub.E)).Bytes()),
	}}})
	if err != nil {
		return nil, fmt.Errorf("issuer key client: %w", err)
	}
	return &http.Response{
		StatusCode: http.StatusOK, Status: "200 OK", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{"Content-Type": {"application/json"}, "Cache-Control": {"public, max-age=3600"}},
		Body:   io.NopCloser(bytes.NewReader(jwks)), ContentLength: int64(len(jwks)), Request: req,
	}, nil
}
