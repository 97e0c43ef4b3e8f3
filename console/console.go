package console

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/baton-run/baton/ledger"
	"github.com/baton-run/baton/limits"
	"github.com/baton-run/baton/sessionstore"
	"github.com/baton-run/baton/toolcallback"
)

var (
	// ErrBadInput: a request the console does not take (an unknown state,
	// a filter a list cannot apply, a bad page size or cursor, a reason
	// too long); nothing was read or written.
	ErrBadInput = errors.New("bad console request")
	// ErrUnsupported: an action this deployment cannot carry out (no
	// account deletion, no identity provider to block with).
	ErrUnsupported = errors.New("not available on this deployment")
)

// Account is what a person's data (issue 45) gives the console for a
// user: the deletion of everything Baton holds for them, the one a user's
// own DELETE /Account runs, and the ratings they gave in some of their
// chats. The console takes it as an option so that its action calls that
// deletion, and has none of its own.
type Account interface {
	// DeleteAccount deletes user's data; a deletion that stays under way
	// (a chat held) is finished by the sweeper, and is not an error.
	DeleteAccount(ctx context.Context, user string) error
	// Feedback is the ratings user gave in chats (a page of them: one
	// read per chat).
	Feedback(ctx context.Context, user string, chats []string) ([]Feedback, error)
}

// Identity is what the door knows of users and where it blocks them
// (functions: Firebase Auth, its custom claims).
type Identity interface {
	User(ctx context.Context, user string) (*UserInfo, error)
	SetBlocked(ctx context.Context, user string, blocked bool) error
}

// Options are a Console's optional settings.
type Options struct {
	// StuckAfter is how long past its due time a lease, a call or a
	// cleanup counts as stuck. Default 5 minutes: the sweep runs every
	// minute, so this is several runs that did not happen.
	StuckAfter time.Duration
	// Limits are the limits each kind of user is held to, shown on a
	// user's page against what they used; Service the deployment's caps
	// (ServiceTokensPerDay, NewAnonymousPerDay) shown on the overview.
	Limits  map[string]limits.Limits
	Service limits.Limits
	// Account deletes a user's data and lists their feedback (nil: the
	// deletion is unsupported and no feedback is shown).
	Account Account
	// Identity tells who a user is and blocks them (nil: blocking is
	// unsupported).
	Identity Identity
	Logger   *slog.Logger
}

// Console is the operator's views and actions on one team's chats.
type Console struct {
	team     *toolcallback.Team
	sessions *sessionstore.Service
	ledger   *ledger.Ledger
	counter  *limits.Counter
	opts     Options
	log      *slog.Logger
}

// New returns the console of team, whose chats sessions stores.
func New(team *toolcallback.Team, sessions *sessionstore.Service, opts *Options) *Console {
	c := &Console{team: team, sessions: sessions, ledger: ledger.New(sessions, team.App(), nil),
		counter: limits.NewCounter(sessions, team.App())}
	if opts != nil {
		c.opts = *opts
	}
	if c.opts.StuckAfter <= 0 {
		c.opts.StuckAfter = 5 * time.Minute
	}
	c.log = c.opts.Logger
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	return c
}
