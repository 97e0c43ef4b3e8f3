package functions

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"

	"firebase.google.com/go/v4/auth"

	"github.com/baton-run/baton/console"
	"github.com/baton-run/baton/errclass"
	"github.com/baton-run/baton/sessionstore"
)

// Who is an operator (docs/operator.md): a Firebase user whose custom
// claim BATON_OPERATOR_CLAIM is true, or whose verified email is listed in
// BATON_OPERATORS; in development identity mode, a user id listed there.
// Every console request checks it against the user's record in Firebase
// Auth (one Auth API call per console request, which are few), not
// against the token's claims alone: a claim removed takes effect at once,
// and a token whose claims were edited is refused even where signatures
// are not checked (the Auth emulator).
//
// Blocked users carry the custom claim blockedClaim. The door refuses
// their tokens where it verifies them (caller), at no cost per request:
// a block takes effect when the user's ID token is next refreshed (within
// the hour), at once for a new sign-in, and at once everywhere with
// BATON_CHECK_REVOKED=true, under which blocking also revokes the user's
// tokens.

// blockedClaim is the custom claim of a blocked user.
const blockedClaim = "baton_blocked"

// errBlocked refuses a blocked user's request (403 blocked).
var errBlocked = errclass.ErrBlocked

// blocked reports whether a verified token's claims say its user is
// blocked.
func blocked(tok *auth.Token) bool {
	b, _ := tok.Claims[blockedClaim].(bool)
	return b
}

// operatorOf returns the name of the operator who sent r (their email, or
// their uid when the claim alone makes them one): 401 without valid
// credentials, 403 for anyone who is not an operator.
func (s *Server) operatorOf(ctx context.Context, r *http.Request) (string, error) {
	if s.cfg.DevIdentity {
		user, err := devIdentity{}.userID(ctx, r)
		if err != nil {
			return "", err
		}
		if !slices.Contains(s.cfg.Operators, user) {
			return "", fmt.Errorf("%w: %q is not an operator", errForbidden, user)
		}
		return user, nil
	}
	c, err := s.ident.caller(ctx, r)
	if err != nil {
		return "", err
	}
	if c.kind == anonymous {
		return "", fmt.Errorf("%w: an anonymous user is never an operator", errForbidden)
	}
	users, err := s.users()
	if err != nil {
		return "", err
	}
	rec, err := users.GetUser(ctx, c.user)
	if err != nil {
		return "", firebaseError(err)
	}
	if on, _ := rec.CustomClaims[cmp.Or(s.cfg.OperatorClaim, DefaultOperatorClaim)].(bool); on {
		return strings.ToLower(firstOf(rec.Email, rec.UID)), nil
	}
	if rec.EmailVerified && rec.Email != "" && slices.ContainsFunc(s.cfg.Operators, func(e string) bool { return strings.EqualFold(e, rec.Email) }) {
		return strings.ToLower(rec.Email), nil
	}
	return "", fmt.Errorf("%w: %q is not an operator", errForbidden, c.user)
}

func firstOf(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// firebaseUsers is the console's view of Firebase Auth (console.Identity):
// who a user is, and blocking by custom claim.
type firebaseUsers struct {
	users        func() (*auth.Client, error)
	checkRevoked bool
}

var _ console.Identity = firebaseUsers{}

func (f firebaseUsers) User(ctx context.Context, uid string) (*console.UserInfo, error) {
	client, err := f.users()
	if err != nil {
		return nil, err
	}
	rec, err := client.GetUser(ctx, uid)
	if auth.IsUserNotFound(err) {
		return nil, fmt.Errorf("%w: user %q", sessionstore.ErrNotFound, uid)
	}
	if err != nil {
		return nil, firebaseError(err)
	}
	info := &console.UserInfo{Kind: "user", Email: rec.Email}
	if len(rec.ProviderUserInfo) == 0 && rec.Email == "" {
		info.Kind = "anonymous"
	}
	info.Blocked, _ = rec.CustomClaims[blockedClaim].(bool)
	return info, nil
}

// SetBlocked sets or removes the user's blocked claim, keeping their
// other claims; with revocation checks on, a block also revokes their
// tokens, so that their next request is refused.
func (f firebaseUsers) SetBlocked(ctx context.Context, uid string, block bool) error {
	client, err := f.users()
	if err != nil {
		return err
	}
	rec, err := client.GetUser(ctx, uid)
	if auth.IsUserNotFound(err) {
		return fmt.Errorf("%w: user %q", sessionstore.ErrNotFound, uid)
	}
	if err != nil {
		return firebaseError(err)
	}
	claims := map[string]any{}
	for k, v := range rec.CustomClaims {
		claims[k] = v
	}
	delete(claims, blockedClaim)
	if block {
		claims[blockedClaim] = true
	}
	if err := client.SetCustomUserClaims(ctx, uid, claims); err != nil {
		return firebaseError(err)
	}
	if block && f.checkRevoked {
		if err := client.RevokeRefreshTokens(ctx, uid); err != nil {
			return firebaseError(err)
		}
	}
	return nil
}

// usersClient returns the Admin SDK's client for reading and changing
// users, built on first use: it needs credentials (Application Default
// Credentials; the Auth emulator needs none), which verifying tokens
// does not.
func usersClient(project string, given *auth.Client) func() (*auth.Client, error) {
	if given != nil {
		return func() (*auth.Client, error) { return given, nil }
	}
	return sync.OnceValues(func() (*auth.Client, error) {
		return newAuthClient(context.Background(), project, true)
	})
}
