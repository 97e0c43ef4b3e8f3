package functions

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/baton-run/baton/a2aserver"
	"github.com/baton-run/baton/sessionstore"
)

// ServiceUserPrefix starts the user id of a service caller of A2A: a
// Google-signed OIDC token of service account sa@p.iam.gserviceaccount.com
// acts as user "serviceAccount:sa@p.iam.gserviceaccount.com" (IAM's member
// syntax), so its chats and tasks are its own. A Firebase user is its uid.
const ServiceUserPrefix = "serviceAccount:"

// a2aIdentity says who sends an A2A request: a Google-signed OIDC token
// (issuer accounts.google.com) of an allowed service account, or else
// whatever the other functions accept (a Firebase ID token, or development
// identity). The issuer read before verification only picks the check;
// each check verifies the whole token.
type a2aIdentity struct {
	users    identity
	services *serviceIdentity // nil in development identity mode
	audience string
	invokers []string
}

func (a a2aIdentity) userID(ctx context.Context, r *http.Request) (string, error) {
	c, err := a.caller(ctx, r)
	return c.user, err
}

func (a a2aIdentity) caller(ctx context.Context, r *http.Request) (caller, error) {
	raw, ok := bearer(r)
	if ok && a.services != nil && googleIssuer(unverifiedIssuer(raw)) {
		email, err := a.services.email(ctx, raw, a.audience, a.invokers)
		if err != nil {
			return caller{}, err
		}
		user := ServiceUserPrefix + email
		if err := sessionstore.ValidateID("user id", user); err != nil {
			return caller{}, fmt.Errorf("%w: %w", errUnauthenticated, err)
		}
		return caller{user: user, kind: serviceAccount}, nil
	}
	return a.users.caller(ctx, r)
}

// unverifiedIssuer reads the iss claim of a JWT without checking anything:
// it only chooses which verifier checks the token.
func unverifiedIssuer(raw string) string {
	parts := strings.Split(raw, ".")
	if len(parts) != 3 {
		return ""
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return ""
	}
	var claims struct {
		Iss string `json:"iss"`
	}
	if json.Unmarshal(payload, &claims) != nil {
		return ""
	}
	return claims.Iss
}

// newA2A builds the A2A server of the team on the same sessions (chats),
// its card naming the security scheme a2aIdentity verifies.
func (s *Server) newA2A(sessions *sessionstore.Service, ident a2aIdentity, opts *ServerOptions) *a2aserver.Server {
	scheme := a2a.HTTPAuthSecurityScheme{Scheme: "Bearer", BearerFormat: "JWT", Description: fmt.Sprintf(
		"A Firebase Auth ID token of project %s (the user is its uid), or a Google-signed OIDC token "+
			"with audience %q of an allowed service account (the user is %s<email>).",
		s.cfg.Project, s.cfg.A2AAudience, ServiceUserPrefix)}
	if s.cfg.DevIdentity {
		scheme = a2a.HTTPAuthSecurityScheme{Scheme: "Bearer", Description: "Development identity: the X-Baton-User header names the user."}
	}
	return a2aserver.New(sessions.Client(), sessions, s.team, func(r *http.Request) (a2aserver.Caller, error) {
		c, err := ident.caller(r.Context(), r)
		if errors.Is(err, errForbidden) {
			// A service account that may not call is told only that its
			// credentials are not accepted, as A2A's card names one bearer
			// scheme for every caller.
			err = fmt.Errorf("%w: %w", a2aserver.ErrUnauthenticated, err)
		}
		return a2aserver.Caller{User: c.user, Limits: s.limitsOf(r.Context(), c)}, err
	}, &a2aserver.Options{
		Name:             s.cfg.AppName,
		MaxBodyBytes:     s.cfg.MaxBodyBytes,
		ExecutionTimeout: s.cfg.InvocationTimeout,
		PushAllow:        s.cfg.A2APushAllow,
		PushClient:       opts.PushClient,
		SecuritySchemes:  a2a.NamedSecuritySchemes{"bearer": scheme},
		Logger:           s.log,
	})
}

// serveA2A hands the request to the A2A server, which answers JSON-RPC
// errors itself.
func (s *Server) serveA2A(w http.ResponseWriter, r *http.Request, log *slog.Logger) error {
	if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, RemotePushPath) {
		return s.remotePush(w, r, log)
	}
	s.a2a.ServeHTTP(w, r)
	return nil
}
