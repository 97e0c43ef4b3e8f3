package ledger

import (
	"context"
	"encoding/json"
	"fmt"

	"google.golang.org/adk/v2/platform"

	"github.com/baton-run/baton/calltoken"
	"github.com/baton-run/baton/sessionstore"
)

// ErrInvalidToken: a call token is malformed, forged, expired or bound to
// other arguments (calltoken.ErrInvalid).
var ErrInvalidToken = calltoken.ErrInvalid

// Token returns an opaque token that alone authorises answering c: signed
// with Options.TokenKey, bound to its call, session, user and arguments,
// and expiring with it.
func (l *Ledger) Token(c *Call) (string, error) {
	args, err := json.Marshal(c.Args)
	if err != nil {
		return "", fmt.Errorf("encode arguments of %q: %w", c.ID, err)
	}
	return calltoken.Sign(l.opts.TokenKey, calltoken.For(c.ID, c.SessionID, c.UserID, args, c.Expires))
}

// TokenCallError is ByToken's failure to read the call a valid token
// names (ErrNotFound once its session is gone): the token's user and
// session say where the call was.
type TokenCallError struct {
	User, Session string
	Err           error
}

func (e *TokenCallError) Error() string { return e.Err.Error() }
func (e *TokenCallError) Unwrap() error { return e.Err }

// ByToken verifies token and reads the call it names, which must still
// have the arguments the token binds.
func (l *Ledger) ByToken(ctx context.Context, token string) (*Call, error) {
	return l.byToken(ctx, l.opts.TokenKey, token)
}

// byToken verifies token, signed with key, and reads the call it names,
// which must still have the arguments the token binds.
func (l *Ledger) byToken(ctx context.Context, key []byte, token string) (*Call, error) {
	claims, err := calltoken.Verify(key, token, platform.Now(ctx))
	if err != nil {
		return nil, err
	}
	// Only a holder of the key can sign such claims; still, they become
	// Firestore paths.
	for _, id := range [][2]string{{"user id", claims.User}, {"session id", claims.Session}, {"call id", claims.Call}} {
		if err := sessionstore.ValidateID(id[0], id[1]); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalidToken, err)
		}
	}
	c, err := l.Get(ctx, claims.User, claims.Session, claims.Call)
	if err != nil {
		return nil, &TokenCallError{User: claims.User, Session: claims.Session, Err: err}
	}
	args, err := json.Marshal(c.Args)
	if err != nil || !claims.Binds(args) {
		return nil, fmt.Errorf("%w: arguments differ from the call's", ErrInvalidToken)
	}
	return c, nil
}
