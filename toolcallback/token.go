package toolcallback

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/adk/v2/platform"

	"github.com/baton-run/baton/sessionstore"
)

// tokenClaims is what a call token binds: one call of one session of one
// user, the call's arguments (by hash) and an expiry.
type tokenClaims struct {
	Call     string `json:"c"`
	Session  string `json:"s"`
	User     string `json:"u"`
	ArgsHash string `json:"a"`
	Expires  int64  `json:"x"` // Unix seconds
}

// tokenDomain separates call-token MACs from any other use of the key.
const tokenDomain = "baton-call-token-v1."

// token returns an opaque token that alone authorises answering c, for an
// external system or an approval link. It expires with the call. The same
// exactly-once rules apply to answers carrying it.
func (l *ledger) token(c *Call) (string, error) {
	if len(l.opts.TokenKey) == 0 {
		return "", errors.New("call tokens need Options.TokenKey")
	}
	args, err := json.Marshal(c.Args)
	if err != nil {
		return "", fmt.Errorf("encode arguments of %q: %w", c.ID, err)
	}
	payload, err := json.Marshal(tokenClaims{
		Call: c.ID, Session: c.SessionID, User: c.UserID, ArgsHash: argsHash(args), Expires: c.Expires.Unix(),
	})
	if err != nil {
		return "", err
	}
	body := base64.RawURLEncoding.EncodeToString(payload)
	return body + "." + base64.RawURLEncoding.EncodeToString(l.mac(body)), nil
}

func (l *ledger) mac(body string) []byte {
	m := hmac.New(sha256.New, l.opts.TokenKey)
	m.Write([]byte(tokenDomain + body))
	return m.Sum(nil)
}

func (l *ledger) verifyToken(ctx context.Context, token string) (*tokenClaims, error) {
	if len(l.opts.TokenKey) == 0 {
		return nil, fmt.Errorf("%w: this deployment issues no call tokens", ErrInvalidCallToken)
	}
	if len(token) > 4096 {
		return nil, fmt.Errorf("%w: too long", ErrInvalidCallToken)
	}
	body, sig, ok := strings.Cut(token, ".")
	if !ok {
		return nil, fmt.Errorf("%w: malformed", ErrInvalidCallToken)
	}
	got, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil || !hmac.Equal(got, l.mac(body)) {
		return nil, fmt.Errorf("%w: bad signature", ErrInvalidCallToken)
	}
	payload, err := base64.RawURLEncoding.DecodeString(body)
	if err != nil {
		return nil, fmt.Errorf("%w: malformed", ErrInvalidCallToken)
	}
	var c tokenClaims
	if err := json.Unmarshal(payload, &c); err != nil || c.Call == "" || c.Session == "" || c.User == "" {
		return nil, fmt.Errorf("%w: malformed claims", ErrInvalidCallToken)
	}
	for _, id := range []struct{ kind, v string }{{"user id", c.User}, {"session id", c.Session}, {"call id", c.Call}} {
		// Only a holder of the key can sign such claims; still, they
		// become Firestore paths.
		if err := sessionstore.ValidateID(id.kind, id.v); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalidCallToken, err)
		}
	}
	if !platform.Now(ctx).Before(time.Unix(c.Expires, 0)) {
		return nil, fmt.Errorf("%w: expired", ErrInvalidCallToken)
	}
	return &c, nil
}

// argsHash hashes a call's arguments in a canonical JSON form (decoded and
// encoded again, so map order and number spelling do not matter).
func argsHash(raw []byte) string {
	var v any
	if len(raw) > 0 {
		_ = json.Unmarshal(raw, &v)
	}
	canonical, _ := json.Marshal(v)
	sum := sha256.Sum256(canonical)
	return hex.EncodeToString(sum[:])
}

// tokenCall verifies r's token, sets r's user and call ids from its claims
// and reads the call it names (in the session the claims name), which must
// still have the arguments the token binds.
func (l *ledger) tokenCall(ctx context.Context, r *ResumeRequest) (*callDoc, *firestore.DocumentSnapshot, error) {
	claims, err := l.verifyToken(ctx, r.Token)
	if err != nil {
		return nil, nil, err
	}
	r.UserID, r.CallID = claims.User, claims.Call
	doc, snap, err := l.read(ctx, l.ref(r.UserID, claims.Session, r.CallID))
	if err != nil {
		return nil, nil, err
	}
	if argsHash(doc.Args) != claims.ArgsHash {
		return nil, nil, fmt.Errorf("%w: arguments differ from the call's", ErrInvalidCallToken)
	}
	return doc, snap, nil
}
