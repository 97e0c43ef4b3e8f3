package toolcallback

import "github.com/baton-run/baton/ledger"

// ErrInvalidCallToken: a call token is malformed, forged, expired or bound
// to other arguments (calltoken.ErrInvalid).
var ErrInvalidCallToken = ledger.ErrInvalidToken
