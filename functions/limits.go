package functions

import (
	"context"
	"fmt"
	"net/http"
	"strconv"

	"github.com/baton-run/baton/limits"
)

// Turn limits by kind of caller (docs/limits.md): a Firebase user signed
// in anonymously (the token's firebase.sign_in_provider is "anonymous"), a
// service account calling A2A, and every other user (development identity
// included). The per-chat limit is the same for all.

// callerKind is what kind of identity sent a request.
type callerKind int

const (
	signedIn callerKind = iota
	anonymous
	serviceAccount
)

// caller is the verified sender of a request.
type caller struct {
	user string
	kind callerKind
}

// TurnLimits are the limits of each kind of caller. Zero: no limit.
type TurnLimits struct {
	User      limits.Limits // signed-in users (and development identity)
	Anonymous limits.Limits // users signed in anonymously
	Service   limits.Limits // service accounts calling A2A
}

// of returns the limits of a kind of caller.
func (l TurnLimits) of(kind callerKind) limits.Limits {
	switch kind {
	case anonymous:
		return l.Anonymous
	case serviceAccount:
		return l.Service
	}
	return l.User
}

// countsTokens reports whether any kind of caller has a token budget, for
// which every model response's tokens are counted.
func (l TurnLimits) countsTokens() bool {
	return l.User.UserTokensPerDay > 0 || l.Anonymous.UserTokensPerDay > 0 || l.Service.UserTokensPerDay > 0
}

func (l *TurnLimits) read(get func(string) string) []error {
	var errs []error
	count := func(name string) int64 {
		n, err := strconv.ParseInt(get(name), 10, 64)
		if err != nil || n < 0 || n > 1<<40 {
			errs = append(errs, fmt.Errorf("%s=%q: want a count, 0 for no limit", name, get(name)))
		}
		return n
	}
	// A turn log keeps up to a minute's limit of times in one document.
	rate := func(name string) int {
		n := count(name)
		if n > 10000 {
			errs = append(errs, fmt.Errorf("%s=%d: at most 10000 turns a minute", name, n))
		}
		return int(n)
	}
	chat := rate("BATON_CHAT_TURNS_PER_MINUTE")
	// The live segments a user holds at once: the same bound for every
	// kind of caller (docs/live.md).
	segments := rate("BATON_LIVE_SEGMENTS_PER_USER")
	l.User = limits.Limits{UserTurnsPerMinute: rate("BATON_USER_TURNS_PER_MINUTE"), ChatTurnsPerMinute: chat,
		UserTokensPerDay: count("BATON_USER_TOKENS_PER_DAY"), LiveSegmentsPerUser: segments}
	l.Anonymous = limits.Limits{UserTurnsPerMinute: rate("BATON_ANON_USER_TURNS_PER_MINUTE"), ChatTurnsPerMinute: chat,
		UserTokensPerDay: count("BATON_ANON_USER_TOKENS_PER_DAY"), LiveSegmentsPerUser: segments}
	l.Service = limits.Limits{UserTurnsPerMinute: rate("BATON_SERVICE_TURNS_PER_MINUTE"), ChatTurnsPerMinute: chat,
		UserTokensPerDay: count("BATON_SERVICE_TOKENS_PER_DAY"), LiveSegmentsPerUser: segments}
	return errs
}

// caller: development identity counts as signed in.
func (d devIdentity) caller(ctx context.Context, r *http.Request) (caller, error) {
	user, err := d.userID(ctx, r)
	return caller{user: user}, err
}

// limitsOf are the turn limits of c.
func (s *Server) limitsOf(c caller) limits.Limits { return s.cfg.TurnLimits.of(c.kind) }
