package functions

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	firebase "firebase.google.com/go/v4"
	"firebase.google.com/go/v4/auth"
	"firebase.google.com/go/v4/errorutils"
	"golang.org/x/oauth2"
	"google.golang.org/api/idtoken"
	"google.golang.org/api/option"

	"github.com/baton-run/baton/errclass"
	"github.com/baton-run/baton/sessionstore"
)

// Who may call: users with a Firebase Auth ID token, checked by the Firebase
// Admin SDK, and the scheduler with a Google-signed OIDC token, checked by
// google.golang.org/api/idtoken. Neither library's errors say by type whether
// the token or the key server is at fault; this file sorts them into the two
// sentinels below, which wrap errclass.ErrUnauthenticated (401) and
// errclass.ErrUnavailable (503).

// errInvalidIDToken wraps every rejection of an ID token or of the scheduler's
// OIDC token: missing, malformed, badly signed, expired, for another audience
// or issuer, revoked, or of a disabled or deleted user. The HTTP layer
// answers 401.
var errInvalidIDToken = fmt.Errorf("%w: invalid id token", errclass.ErrUnauthenticated)

// errAuthUnavailable wraps failures to reach what vouches for a token: the
// server of Google's signing keys, or the Firebase Auth API that a revocation
// check (and the Auth emulator) asks. It says nothing about the token. The
// HTTP layer answers 503 with Retry-After.
var errAuthUnavailable = fmt.Errorf("%w: token verification", errclass.ErrUnavailable)

// keyFetchTimeout bounds one fetch of the scheduler's signing keys.
const keyFetchTimeout = 10 * time.Second

// newAuthClient returns the Firebase Admin SDK's Auth client for project.
// Verifying a token needs only Google's public keys; revocation checks call
// the Auth API, and only then does the client get Application Default
// Credentials. (Without credentials given, the SDK looks them up when the
// client is made, which off Google Cloud probes the metadata server.) With
// FIREBASE_AUTH_EMULATOR_HOST set, the SDK talks to that emulator instead and
// accepts its unsigned tokens; ConfigFromEnv refuses the variable on Cloud Run.
func newAuthClient(ctx context.Context, project string, checkRevoked bool) (*auth.Client, error) {
	var opts []option.ClientOption
	if !checkRevoked {
		opts = append(opts, option.WithTokenSource(noCredentials{}))
	}
	app, err := firebase.NewApp(ctx, &firebase.Config{ProjectID: project}, opts...)
	if err != nil {
		return nil, fmt.Errorf("firebase: %w", err)
	}
	client, err := app.Auth(ctx)
	if err != nil {
		return nil, fmt.Errorf("firebase auth: %w", err)
	}
	return client, nil
}

// noCredentials stands in for credentials the Auth client never needs.
type noCredentials struct{}

func (noCredentials) Token() (*oauth2.Token, error) {
	return nil, errors.New("no credentials: the Auth API is called only with BATON_CHECK_REVOKED=true")
}

// firebaseIdentity takes the user from a Firebase Auth ID token verified by
// the Admin SDK: signature (Google's keys, cached as long as their
// Cache-Control allows), audience (the project id), issuer, expiry and
// issue time, and a non-empty sub of at most 128 bytes.
type firebaseIdentity struct {
	client *auth.Client
	// checkRevoked also asks the Firebase Auth API whether the user's tokens
	// were revoked or the user disabled or deleted: one more API call per
	// request (BATON_CHECK_REVOKED).
	checkRevoked bool
}

func (f firebaseIdentity) userID(ctx context.Context, r *http.Request) (string, error) {
	c, err := f.caller(ctx, r)
	return c.user, err
}

// caller is the token's user, anonymous when Firebase signed it in
// anonymously.
func (f firebaseIdentity) caller(ctx context.Context, r *http.Request) (caller, error) {
	raw, ok := bearer(r)
	if !ok {
		return caller{}, fmt.Errorf("%w: no bearer token", errUnauthenticated)
	}
	verify := f.client.VerifyIDToken
	if f.checkRevoked {
		verify = f.client.VerifyIDTokenAndCheckRevoked
	}
	tok, err := verify(ctx, raw)
	if err != nil {
		return caller{}, firebaseError(err)
	}
	if err := sessionstore.ValidateID("user id", tok.UID); err != nil {
		return caller{}, fmt.Errorf("%w: %w", errUnauthenticated, err)
	}
	if blocked(tok) {
		return caller{}, fmt.Errorf("%w: user %q", errBlocked, tok.UID)
	}
	c := caller{user: tok.UID, signedIn: time.Unix(tok.AuthTime, 0)}
	if tok.Firebase.SignInProvider == "anonymous" {
		c.kind = anonymous
	}
	return c, nil
}

// firebaseError sorts an error of the Admin SDK's token verification. Errors
// it does not recognise (a client without a project id) are the server's and
// pass unchanged.
func firebaseError(err error) error {
	resp := errorutils.HTTPResponse(err) // set when the Auth API answered
	switch {
	case auth.IsCertificateFetchFailed(err):
		return fmt.Errorf("%w: %w", errAuthUnavailable, err)
	case auth.IsIDTokenInvalid(err), // malformed, forged, expired, revoked, user disabled
		auth.IsUserNotFound(err), // the user was deleted
		auth.IsTenantIDMismatch(err):
		return fmt.Errorf("%w: %w", errInvalidIDToken, err)
	case errorutils.IsUnavailable(err), errorutils.IsDeadlineExceeded(err),
		errorutils.IsUnknown(err) && resp == nil, // the Auth API could not be reached
		resp != nil && resp.StatusCode >= 500:
		return fmt.Errorf("%w: %w", errAuthUnavailable, err)
	}
	return err
}

// schedulerIdentity checks the OIDC token Cloud Scheduler sends to Sweep:
// a Google-signed token (see serviceIdentity) for the configured service
// account.
type schedulerIdentity struct {
	service  *serviceIdentity
	audience string
	invoker  string
}

// serviceIdentity checks Google-signed OIDC tokens of service accounts:
// google.golang.org/api/idtoken checks the signature, the audience and the
// expiry; the issuer must be accounts.google.com and the email verified.
type serviceIdentity struct {
	validator *idtoken.Validator
}

// newServiceIdentity returns the check of service accounts' tokens. keys
// fetches Google's signing keys (nil: a client with a 10 s timeout); its
// failures to answer are reported as errAuthUnavailable.
func newServiceIdentity(ctx context.Context, keys *http.Client) (*serviceIdentity, error) {
	if keys == nil {
		keys = &http.Client{Timeout: keyFetchTimeout}
	}
	base := keys.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	marked := *keys
	marked.Transport = keyServerTransport{base: base}
	v, err := idtoken.NewValidator(ctx, idtoken.WithHTTPClient(&marked))
	if err != nil {
		return nil, fmt.Errorf("idtoken validator: %w", err)
	}
	return &serviceIdentity{validator: v}, nil
}

// email verifies raw for audience and returns its service account's email
// when it is one of invokers (errForbidden otherwise).
func (s *serviceIdentity) email(ctx context.Context, raw, audience string, invokers []string) (string, error) {
	if audience == "" || len(invokers) == 0 {
		// idtoken skips the audience check for an empty audience.
		return "", fmt.Errorf("%w: no audience or service accounts configured", errUnauthenticated)
	}
	payload, err := s.validator.Validate(ctx, raw, audience)
	switch {
	case errors.Is(err, errAuthUnavailable), errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return "", err
	case err != nil:
		return "", fmt.Errorf("%w: %w", errInvalidIDToken, err)
	}
	if !googleIssuer(payload.Issuer) {
		return "", fmt.Errorf("%w: issuer %q is not Google's", errInvalidIDToken, payload.Issuer)
	}
	email, _ := payload.Claims["email"].(string)
	verified, _ := payload.Claims["email_verified"].(bool)
	if !verified || !slices.Contains(invokers, email) {
		return "", fmt.Errorf("%w: service account %q is not allowed", errForbidden, email)
	}
	return email, nil
}

func googleIssuer(iss string) bool {
	return iss == "https://accounts.google.com" || iss == "accounts.google.com"
}

// check returns nil when r carries the scheduler's token.
func (s *schedulerIdentity) check(ctx context.Context, r *http.Request) error {
	if s.audience == "" || s.invoker == "" {
		return fmt.Errorf("%w: BATON_SWEEP_AUDIENCE and BATON_SWEEP_INVOKER are not configured", errUnauthenticated)
	}
	raw, ok := bearer(r)
	if !ok {
		return fmt.Errorf("%w: no bearer token", errUnauthenticated)
	}
	_, err := s.service.email(ctx, raw, s.audience, []string{s.invoker})
	return err
}

// keyServerTransport marks a key server that cannot be reached, or answers
// anything but 200, with errAuthUnavailable: idtoken reports such failures
// and bad tokens alike as plain errors.
type keyServerTransport struct{ base http.RoundTripper }

func (t keyServerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errAuthUnavailable, err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("%w: GET %s: %s", errAuthUnavailable, req.URL.Redacted(), resp.Status)
	}
	return resp, nil
}
