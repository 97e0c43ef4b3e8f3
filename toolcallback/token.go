package toolcallback

import (
	"context"
	"encoding/json"
	"fmt"

	"cloud.google.com/go/firestore"
	"google.golang.org/adk/v2/platform"

	"github.com/baton-run/baton/calltoken"
)

// ErrInvalidCallToken: a call token is malformed, forged, expired or bound
// to other arguments (calltoken.ErrInvalid).
var ErrInvalidCallToken = calltoken.ErrInvalid

// token returns an opaque token that alone authorises answering c (see
// Team.Token).
func (l *ledger) token(c *Call) (string, error) {
	args, err := json.Marshal(c.Args)
	if err != nil {
		return "", fmt.Errorf("encode arguments of %q: %w", c.ID, err)
	}
	return calltoken.Sign(l.opts.TokenKey, calltoken.For(c.ID, c.SessionID, c.UserID, args, c.Expires))
}

// tokenCall verifies r's token, sets r's user and call ids from its claims
// and reads the call it names (in the session the claims name), which must
// still have the arguments the token binds.
func (l *ledger) tokenCall(ctx context.Context, r *ResumeRequest) (*callDoc, *firestore.DocumentSnapshot, error) {
	claims, err := calltoken.Verify(l.opts.TokenKey, r.Token, platform.Now(ctx))
	if err != nil {
		return nil, nil, err
	}
	// Only a holder of the key can sign such claims; still, they become
	// Firestore paths.
	if err := validIDs("user id", claims.User, "session id", claims.Session, "call id", claims.Call); err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrInvalidCallToken, err)
	}
	r.UserID, r.CallID = claims.User, claims.Call
	doc, snap, err := l.read(ctx, l.ref(r.UserID, claims.Session, r.CallID))
	if err != nil {
		return nil, nil, err
	}
	if !claims.Binds(doc.Args) {
		return nil, nil, fmt.Errorf("%w: arguments differ from the call's", ErrInvalidCallToken)
	}
	return doc, snap, nil
}
