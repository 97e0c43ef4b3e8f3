package functions

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"google.golang.org/adk/v2/platform"

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
	// signedIn is when the user signed in (the token's auth_time); zero
	// when unknown.
	signedIn time.Time
}

// TurnLimits are the limits of each kind of caller, and the deployment's
// caps. Zero: no limit.
type TurnLimits struct {
	User      limits.Limits // signed-in users (and development identity)
	Anonymous limits.Limits // users signed in anonymously
	Service   limits.Limits // service accounts calling A2A
	// ServiceTokens caps every user's model tokens together per UTC day;
	// NewAnonymous the anonymous users admitted per UTC day (limits'
	// ServiceTokensPerDay and NewAnonymousPerDay, docs/limits.md).
	ServiceTokens int64 // BATON_SERVICE_TOKENS_CAP
	NewAnonymous  int64 // BATON_NEW_ANONYMOUS_PER_DAY
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

// countsTokens reports whether any kind of caller has a token budget, or
// the deployment a cap, for which every model response's tokens are
// counted.
func (l TurnLimits) countsTokens() bool {
	return l.User.UserTokensPerDay > 0 || l.Anonymous.UserTokensPerDay > 0 || l.Service.UserTokensPerDay > 0 || l.ServiceTokens > 0
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
	l.ServiceTokens, l.NewAnonymous = count("BATON_SERVICE_TOKENS_CAP"), count("BATON_NEW_ANONYMOUS_PER_DAY")
	return errs
}

// caller: development identity counts as signed in.
func (d devIdentity) caller(ctx context.Context, r *http.Request) (caller, error) {
	user, err := d.userID(ctx, r)
	return caller{user: user}, err
}

// limitsOf are the turn limits of c: its kind's, and the deployment's
// caps. The cap on new anonymous users applies to an anonymous user who
// signed in on the UTC day of the request (docs/limits.md).
func (s *Server) limitsOf(ctx context.Context, c caller) limits.Limits {
	now := platform.Now(ctx)
	tl := s.cfg.TurnLimits
	l := tl.of(c.kind)
	l.ServiceTokensPerDay = tl.ServiceTokens
	if c.kind == anonymous && tl.NewAnonymous > 0 && !c.signedIn.IsZero() && sameUTCDay(c.signedIn, now) {
		l.NewAnonymousPerDay = tl.NewAnonymous
	}
	return l
}

func sameUTCDay(a, b time.Time) bool {
	return a.UTC().Format(time.DateOnly) == b.UTC().Format(time.DateOnly)
}
