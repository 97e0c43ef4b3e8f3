package functions

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"cloud.google.com/go/firestore"

	"github.com/baton-run/baton/sessionstore"
	"github.com/baton-run/baton/toolcallback"
)

// Server holds what the functions share on one instance: configuration,
// the session store, the engine and the identity checks. It keeps nothing
// about any request between requests.
type Server struct {
	cfg        Config
	sessions   *sessionstore.Service
	team       *toolcallback.Team
	ident      identity
	sweepCheck func(ctx context.Context, r *http.Request) error
	log        *slog.Logger
}

// ServerOptions are the optional parts of a Server. Nil fields take the
// production defaults.
type ServerOptions struct {
	Logger *slog.Logger
	// UserTokens verifies users' Firebase ID tokens. Default: a verifier for
	// cfg.Project with Google's keys.
	UserTokens *IDTokenVerifier
	// SchedulerTokens verifies the scheduler's OIDC token on Sweep.
	// Default: Google's OIDC keys, audience cfg.SweepAudience.
	SchedulerTokens *IDTokenVerifier
}

// NewServer returns a Server for a team already built over sessions.
func NewServer(cfg Config, sessions *sessionstore.Service, team *toolcallback.Team, opts *ServerOptions) (*Server, error) {
	if opts == nil {
		opts = &ServerOptions{}
	}
	s := &Server{cfg: cfg, sessions: sessions, team: team, log: opts.Logger}
	if s.log == nil {
		s.log = NewLogger(nil)
	}
	if cfg.DevIdentity {
		s.ident = devIdentity{}
	} else {
		v := opts.UserTokens
		if v == nil {
			v = NewIDTokenVerifier(cfg.Project, nil)
		}
		s.ident = tokenIdentity{v}
	}
	s.sweepCheck = s.schedulerCheck(opts.SchedulerTokens)
	return s, nil
}

// NewServerFromConfig connects to Firestore and builds the team newTeam
// returns.
func NewServerFromConfig(ctx context.Context, cfg Config, newTeam TeamFunc, opts *ServerOptions) (*Server, error) {
	if newTeam == nil {
		return nil, errors.New("no agent: call functions.UseAgent or UseTeam from an init function of the deployment")
	}
	members, err := newTeam(ctx)
	if err != nil {
		return nil, fmt.Errorf("build agents: %w", err)
	}
	client, err := firestore.NewClientWithDatabase(ctx, cfg.Project, cfg.Database)
	if err != nil {
		return nil, fmt.Errorf("firestore: %w", err)
	}
	return NewServerWithClient(cfg, client, members, opts)
}

// NewServerWithClient builds the session store and the team on client. The
// first member is the agent of new chats.
func NewServerWithClient(cfg Config, client *firestore.Client, members []toolcallback.Member, opts *ServerOptions) (*Server, error) {
	log := NewLogger(nil)
	if opts != nil && opts.Logger != nil {
		log = opts.Logger
	}
	sessions := sessionstore.New(client, &sessionstore.Options{Root: cfg.Root})
	team, err := toolcallback.NewTeam(client, sessions, cfg.AppName, members, &toolcallback.Options{
		LeasePolicy:       cfg.LeasePolicy,
		MaxWait:           cfg.LeaseMaxWait,
		PendingPolicy:     cfg.PendingPolicy,
		CallTimeout:       cfg.CallTimeout,
		InvocationTimeout: cfg.InvocationTimeout,
		TokenKey:          cfg.TokenKey,
		IdleRetention:     cfg.IdleRetention,
		Logger:            log,
	})
	if err != nil {
		return nil, err
	}
	return NewServer(cfg, sessions, team, opts)
}

// Handler returns the handler of a registered function, by name.
func (s *Server) Handler(name string) http.Handler {
	switch name {
	case NameTurn:
		return s.wrap(name, []string{http.MethodPost}, s.turn)
	case NameToolResult:
		return s.wrap(name, []string{http.MethodPost}, s.toolResult)
	case NamePending:
		return s.wrap(name, []string{http.MethodGet}, s.pending)
	case NameSweep:
		return s.wrap(name, []string{http.MethodPost}, s.sweep)
	}
	return http.NotFoundHandler()
}

// Team returns the server's team (the local runner sweeps with it).
func (s *Server) Team() *toolcallback.Team { return s.team }

// schedulerCheck returns Sweep's authorisation: a Google-signed OIDC token
// for the configured audience and service account. In development
// identity mode the X-Baton-User header must name "scheduler".
func (s *Server) schedulerCheck(v *IDTokenVerifier) func(context.Context, *http.Request) error {
	if s.cfg.DevIdentity {
		return func(_ context.Context, r *http.Request) error {
			if r.Header.Get("X-Baton-User") != "scheduler" {
				return fmt.Errorf("%w: Sweep is for the scheduler", errUnauthenticated)
			}
			return nil
		}
	}
	if v == nil {
		v = NewIDTokenVerifier(s.cfg.Project, &IDTokenOptions{
			KeysURL: GoogleOIDCKeysURL, Issuer: "https://accounts.google.com", Audience: s.cfg.SweepAudience,
		})
	}
	return func(ctx context.Context, r *http.Request) error {
		if s.cfg.SweepAudience == "" || s.cfg.SweepInvoker == "" {
			return fmt.Errorf("%w: BATON_SWEEP_AUDIENCE and BATON_SWEEP_INVOKER are not configured", errUnauthenticated)
		}
		raw, ok := bearer(r)
		if !ok {
			return fmt.Errorf("%w: no bearer token", errUnauthenticated)
		}
		tok, err := v.Verify(ctx, raw)
		if err != nil {
			return err
		}
		email, _ := tok.Claims["email"].(string)
		verified, _ := tok.Claims["email_verified"].(bool)
		if email != s.cfg.SweepInvoker || !verified {
			return fmt.Errorf("%w: %q may not sweep", errForbidden, email)
		}
		return nil
	}
}

// sweep expires overdue calls; the scheduler calls it.
func (s *Server) sweep(w http.ResponseWriter, r *http.Request, log *slog.Logger) error {
	if err := s.sweepCheck(r.Context(), r); err != nil {
		return err
	}
	report, err := s.team.Sweep(r.Context(), time.Now())
	if err != nil {
		return err
	}
	log.InfoContext(r.Context(), "sweep", "expired", report.Expired, "resumed", report.Resumed, "skipped", report.Skipped,
		"repaired", report.Repaired, "idle", report.Idle)
	writeJSON(w, http.StatusOK, report)
	return nil
}
