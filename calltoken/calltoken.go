package calltoken

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// ErrInvalid: a call token is malformed, forged, expired or bound to other
// arguments.
var ErrInvalid = errors.New("invalid call token")

// Claims are what a token binds: one call of one session of one user, the
// call's arguments (by hash) and an expiry.
type Claims struct {
	Call     string `json:"c"`
	Session  string `json:"s"`
	User     string `json:"u"`
	ArgsHash string `json:"a"`
	Expires  int64  `json:"x"` // Unix seconds
}

// domain separates call-token MACs from any other use of the key.
const domain = "baton-call-token-v1."

// maxLen bounds a token before any work is done on it.
const maxLen = 4096

// For returns the claims of a call of user's session, whose arguments are
// args (JSON), expiring at expires.
func For(call, sessionID, user string, args []byte, expires time.Time) Claims {
	return Claims{Call: call, Session: sessionID, User: user, ArgsHash: ArgsHash(args), Expires: expires.Unix()}
}

// Sign returns the token that carries c, signed with key.
func Sign(key []byte, c Claims) (string, error) {
	if len(key) == 0 {
		return "", errors.New("call tokens need a key")
	}
	payload, err := json.Marshal(c)
	if err != nil {
		return "", err
	}
	body := base64.RawURLEncoding.EncodeToString(payload)
	return body + "." + base64.RawURLEncoding.EncodeToString(mac(key, body)), nil
}

func mac(key []byte, body string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(domain + body))
	return m.Sum(nil)
}

// Verify checks token's signature under key and its expiry at now, and
// returns its claims. The ids in the claims are only as valid as whoever
// holds the key made them: callers check them before they become paths.
func Verify(key []byte, token string, now time.Time) (*Claims, error) {
	if len(key) == 0 {
		return nil, fmt.Errorf("%w: this deployment issues no call tokens", ErrInvalid)
	}
	if len(token) > maxLen {
		return nil, fmt.Errorf("%w: too long", ErrInvalid)
	}
	body, sig, ok := strings.Cut(token, ".")
	if !ok {
		return nil, fmt.Errorf("%w: malformed", ErrInvalid)
	}
	got, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil || !hmac.Equal(got, mac(key, body)) {
		return nil, fmt.Errorf("%w: bad signature", ErrInvalid)
	}
	payload, err := base64.RawURLEncoding.DecodeString(body)
	if err != nil {
		return nil, fmt.Errorf("%w: malformed", ErrInvalid)
	}
	var c Claims
	if err := json.Unmarshal(payload, &c); err != nil || c.Call == "" || c.Session == "" || c.User == "" {
		return nil, fmt.Errorf("%w: malformed claims", ErrInvalid)
	}
	if !now.Before(time.Unix(c.Expires, 0)) {
		return nil, fmt.Errorf("%w: expired", ErrInvalid)
	}
	return &c, nil
}

// Binds reports whether the claims were made for a call whose arguments
// are args (JSON).
func (c *Claims) Binds(args []byte) bool { return ArgsHash(args) == c.ArgsHash }

// ArgsHash hashes a call's arguments in a canonical JSON form (decoded and
// encoded again, so map order and number spelling do not matter).
func ArgsHash(raw []byte) string {
	var v any
	if len(raw) > 0 {
		_ = json.Unmarshal(raw, &v)
	}
	canonical, _ := json.Marshal(v)
	sum := sha256.Sum256(canonical)
	return hex.EncodeToString(sum[:])
}
