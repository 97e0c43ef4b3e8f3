package functions

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	cloudtasks "cloud.google.com/go/cloudtasks/apiv2"
	"firebase.google.com/go/v4/auth"
	"google.golang.org/adk/v2/artifact"
	"google.golang.org/adk/v2/model"
	"google.golang.org/genai"

	"github.com/baton-run/baton/a2aserver"
	"github.com/baton-run/baton/account"
	"github.com/baton-run/baton/console"
	"github.com/baton-run/baton/limits"
	"github.com/baton-run/baton/live"
	"github.com/baton-run/baton/mcpregistry"
	"github.com/baton-run/baton/sessionstore"
	"github.com/baton-run/baton/toolcallback"
	"github.com/baton-run/baton/usechat"
)

// Server holds what the functions share on one instance: configuration,
// the session store, the engine and the identity checks. It keeps nothing
// about any request between requests.
type Server struct {
	cfg        Config
	team       *toolcallback.Team
	ident      identity
	sweepCheck func(ctx context.Context, r *http.Request) error
	workCheck  *workIdentity // nil: Work refuses everyone
	a2a        *a2aserver.Server
	log        *slog.Logger
	usechat    *usechat.Server // Chat's routes for the AI SDK's useChat
	account    *account.Server // the Account function
	// accountAuth, when set, gives the Firebase Auth client Sweep asks
	// about the users that have data (cfg.AccountCheck).
	accountAuth func(ctx context.Context) (*auth.Client, error)
	live        *live.Runner // nil when live mode is off
	// conversations are the live conversations this instance holds.
	conversations conversations
	// console is the operator's side (the Admin function); users reads
	// and changes Firebase users for it (nil in development identity).
	console *console.Console
	users   func() (*auth.Client, error)
	metrics *Metrics // nil: the console shows no metrics
}

// ServerOptions are the optional parts of a Server. Nil fields take the
// production defaults.
type ServerOptions struct {
	Logger *slog.Logger
	// Auth verifies users' Firebase ID tokens. Default: the Firebase Admin
	// SDK's client for cfg.Project (the Auth emulator's when
	// FIREBASE_AUTH_EMULATOR_HOST is set).
	Auth *auth.Client
	// SchedulerKeys fetches Google's OIDC signing keys, against which Sweep
	// checks the scheduler's token. Default: a client with a 10 s timeout.
	SchedulerKeys *http.Client
	// SessionStateOnly says the members keep no app: or user: state
	// (toolcallback.Options.SessionStateOnly): turns skip two lookups. It
	// is a property of the agents' code, not of a deployment, so it is an
	// option here rather than an environment variable.
	SessionStateOnly bool
	// WarmChats and WarmBytes bound the sessions an instance keeps for
	// warm turns (toolcallback.Options.WarmChats): defaults 1,000 chats
	// and 32 MiB of stored session; WarmChats < 0 turns warm turns off.
	// Without SessionStateOnly a warm turn also looks up the app and
	// user state beside the model (two lookups, no round trip before it).
	WarmChats, WarmBytes int
	// PushClient posts A2A push notifications. Default: a client with a
	// 10 s timeout.
	PushClient *http.Client
	// MCP is the instance's MCP registry, when the agents use MCP servers:
	// the team then ends a chat's MCP sessions when Sweep deletes the chat,
	// and those its new agent does not declare when it switches. The
	// registry's owner closes it when the instance stops.
	MCP *mcpregistry.Registry
	// Files stores the chats' files. Default: ADK's gcsartifact on
	// cfg.FilesBucket when it is set; otherwise files are refused.
	// `go run ./local` and the tests give a store on an in-process Cloud
	// Storage API (internal/localgcs).
	Files artifact.Service
	// Live is the client of the live model (cfg.LiveModel) of live mode,
	// GET /Chat/{chatId}/live. Default: genai's client from the
	// environment (GOOGLE_API_KEY, or GOOGLE_GENAI_USE_VERTEXAI with
	// GOOGLE_CLOUD_PROJECT and GOOGLE_CLOUD_LOCATION); without one, live
	// mode is off. `go run ./local` and the tests give the Gemini Live
	// stand-in's (modeltest.LiveServer).
	Live *genai.Client
	// LiveSetup is the live model's base configuration (live.Model.Setup).
	// Default: live.DefaultSetup.
	LiveSetup *genai.LiveConnectConfig
	// Tasks is the Cloud Tasks client of the background calls' queue
	// (cfg.WorkQueue). Default: the client from the environment's
	// credentials. `go run ./local` and the tests give one connected to
	// an in-process Cloud Tasks server (internal/localtasks).
	Tasks *cloudtasks.Client
	// ProgressInterval is how often, at most, a background call's progress
	// is stored (toolcallback.Options.ProgressInterval). Default 3 s; the
	// tests' is shorter.
	ProgressInterval time.Duration
	// TitleModel gives new chats their titles. Default: Gemini's
	// cfg.TitleModel from the environment's credentials; none without.
	// `go run ./local` gives its offline model.
	TitleModel model.LLM
	// Metrics is the process's meter provider (InstallMetrics), whose
	// reading the console shows. Nil: none.
	Metrics *Metrics
}

// NewServer builds the team of members on sessions (which must store under
// cfg.Root: sessionstore.Options.Root), whose database also holds the
// ledger and the A2A tasks, and the identity checks; the first member is
// the agent of new chats.
func NewServer(cfg Config, sessions *sessionstore.Service, members []toolcallback.Member, opts *ServerOptions) (*Server, error) {
	if opts == nil {
		opts = &ServerOptions{}
	}
	if root := cmp.Or(cfg.Root, sessionstore.DefaultRoot); sessions.Root() != root {
		return nil, fmt.Errorf("the session store stores under %q, the configuration says %q", sessions.Root(), root)
	}
	s := &Server{cfg: cfg, log: opts.Logger}
	var err error
	if s.log == nil {
		s.log = NewLogger(nil)
	}
	topts := s.teamOptions(opts)
	if topts.Queue, err = newQueue(context.Background(), cfg, opts.Tasks); err != nil {
		return nil, err
	}
	s.dataOptions(topts, opts)
	s.followMCP(topts, opts.MCP)
	var files *usechat.FileURLs
	if topts.Files, files, err = newFiles(cfg, opts.Files, s.log); err != nil {
		return nil, err
	}
	team, err := toolcallback.NewTeam(sessions, cfg.AppName, members, topts)
	if err != nil {
		return nil, err
	}
	s.team = team
	s.usechat = usechat.New(team, usechat.Config{MaxBodyBytes: cfg.MaxBodyBytes, MaxChatBodyBytes: cfg.MaxChatBodyBytes,
		MaxFileBytes: cfg.MaxFileBytes, InvocationTimeout: cfg.InvocationTimeout, KeepAlive: cfg.KeepAlive}, s.chatCaller, files)
	s.live = s.newLive(team, opts)
	ctx := context.Background() // the clients keep no context; this one only builds them
	if s.workCheck, err = newWorkIdentity(ctx, cfg, opts.SchedulerKeys); err != nil {
		return nil, err
	}
	s.account = account.New(team, sessions, topts.Files, func(r *http.Request) (string, error) { return s.ident.userID(r.Context(), r) }, s.log)
	s.metrics = opts.Metrics
	copts := s.consoleOptions(opts)
	if cfg.DevIdentity {
		s.ident = devIdentity{}
		s.sweepCheck = devSchedulerCheck
		s.a2a = s.newA2A(sessions, a2aIdentity{users: s.ident}, opts)
		s.console = console.New(team, sessions, copts)
		return s, nil
	}
	auth := opts.Auth
	if auth == nil {
		if auth, err = newAuthClient(ctx, cfg.Project, cfg.CheckRevoked); err != nil {
			return nil, err
		}
	}
	s.ident = firebaseIdentity{client: auth, checkRevoked: cfg.CheckRevoked}
	s.accountAuth = accountAuthClient(cfg, opts.Auth, auth)
	s.users = usersClient(cfg.Project, opts.Auth)
	copts.Identity = firebaseUsers{users: s.users, checkRevoked: cfg.CheckRevoked}
	s.console = console.New(team, sessions, copts)
	service, err := newServiceIdentity(ctx, opts.SchedulerKeys)
	if err != nil {
		return nil, err
	}
	s.sweepCheck = (&schedulerIdentity{service: service, audience: cfg.SweepAudience, invoker: cfg.SweepInvoker}).check
	s.a2a = s.newA2A(sessions, a2aIdentity{users: s.ident, services: service, audience: cfg.A2AAudience, invokers: cfg.A2AInvokers}, opts)
	return s, nil
}

// teamOptions are the team's options from the configuration and opts.
func (s *Server) teamOptions(opts *ServerOptions) *toolcallback.Options {
	return &toolcallback.Options{
		LeasePolicy:        s.cfg.LeasePolicy,
		MaxWait:            s.cfg.LeaseMaxWait,
		PendingPolicy:      s.cfg.PendingPolicy,
		CallTimeout:        s.cfg.CallTimeout,
		InvocationTimeout:  s.cfg.InvocationTimeout,
		TokenKey:           s.cfg.TokenKey,
		IdleRetention:      s.cfg.IdleRetention,
		SessionStateOnly:   opts.SessionStateOnly,
		WarmChats:          opts.WarmChats,
		WarmBytes:          opts.WarmBytes,
		CountTokens:        s.cfg.TurnLimits.countsTokens(),
		CountServiceTokens: s.cfg.TurnLimits.ServiceTokens > 0,
		BackgroundPerUser:  s.cfg.BackgroundPerUser,
		RemotePushURL:      s.cfg.RemotePushURL,
		MaxFileBytes:       s.cfg.MaxFileBytes,
		ProgressInterval:   opts.ProgressInterval,
		IncludeThoughts:    s.cfg.IncludeThoughts,
		Logger:             s.log,
	}
}

// followMCP makes the team's chats tell reg (nil: none) when they switch
// agents or are deleted, so that it ends their MCP sessions.
func (s *Server) followMCP(topts *toolcallback.Options, reg *mcpregistry.Registry) {
	if reg == nil {
		return
	}
	topts.ChatSwitched = func(ctx context.Context, chat *sessionstore.Chat, from string) {
		if err := reg.Switched(ctx, chat, from); err != nil {
			s.log.WarnContext(ctx, "end MCP sessions after an agent switch", "chat", chat.ID, "error", err)
		}
	}
	topts.ChatDeleted = func(ctx context.Context, chat *sessionstore.Chat) {
		if err := reg.CloseChat(ctx, chat); err != nil {
			s.log.WarnContext(ctx, "end a deleted chat's MCP sessions", "chat", chat.ID, "error", err)
		}
	}
}

// consoleOptions are the console's settings: the limits each kind of
// user is held to and the deployment's caps, shown against what was used.
func (s *Server) consoleOptions(opts *ServerOptions) *console.Options {
	tl := s.cfg.TurnLimits
	return &console.Options{
		Limits:  map[string]limits.Limits{"user": tl.User, "anonymous": tl.Anonymous, "service": tl.Service},
		Service: limits.Limits{ServiceTokensPerDay: tl.ServiceTokens, NewAnonymousPerDay: tl.NewAnonymous},
		Account: consoleAccount{team: s.team}, Logger: s.log,
	}
}

// newLive is the runner of live conversations, nil when there is no live
// model to talk to.
func (s *Server) newLive(team *toolcallback.Team, opts *ServerOptions) *live.Runner {
	client := opts.Live
	if client == nil {
		var err error
		// genai reads its credentials and backend from the environment
		// itself; on Vertex AI the live model may need another location.
		if client, err = genai.NewClient(context.Background(), &genai.ClientConfig{Location: s.cfg.LiveLocation}); err != nil {
			s.log.Info("live mode is off: no live model", "reason", err.Error())
			return nil
		}
	}
	r, err := live.New(team, live.Model{Client: client, Name: s.cfg.LiveModel, Setup: opts.LiveSetup}, &live.Options{
		CountTokens: s.cfg.TurnLimits.countsTokens(), MaxDuration: s.cfg.LiveTimeout, Logger: s.log,
	})
	if err != nil {
		s.log.Info("live mode is off", "reason", err.Error())
		return nil
	}
	return r
}

// LiveModel is the name of the model live mode talks to, "" when live mode
// is off (the local runner says which in its startup lines).
func (s *Server) LiveModel() string {
	if s.live == nil {
		return ""
	}
	return s.live.ModelName()
}

// Handler returns the handler of a registered function, by name.
func (s *Server) Handler(name string) http.Handler {
	switch name {
	case NameTurn:
		return s.wrap(name, []string{http.MethodPost, http.MethodDelete}, s.turn)
	case NameToolResult:
		return s.wrap(name, []string{http.MethodPost}, s.toolResult)
	case NamePending:
		return s.wrap(name, []string{http.MethodGet}, s.pending)
	case NameSweep:
		return s.wrap(name, []string{http.MethodPost}, s.sweep)
	case NameA2A:
		return s.wrap(name, []string{http.MethodGet, http.MethodHead, http.MethodPost}, s.serveA2A)
	case NameChat:
		return s.wrap(name, []string{http.MethodPost, http.MethodGet, http.MethodPatch, http.MethodPut, http.MethodDelete}, s.chat)
	case NameWork:
		return s.wrap(name, []string{http.MethodPost}, s.work)
	case NameAccount:
		return s.wrap(name, []string{http.MethodGet, http.MethodDelete}, s.accountRoutes)
	case NameAdmin:
		return s.wrap(name, []string{http.MethodGet, http.MethodPost, http.MethodDelete}, s.admin)
	}
	return http.NotFoundHandler()
}

// Team returns the server's team (the local runner sweeps with it).
func (s *Server) Team() *toolcallback.Team { return s.team }

// devSchedulerCheck is Sweep's authorisation in development identity mode:
// the X-Baton-User header must name "scheduler".
func devSchedulerCheck(_ context.Context, r *http.Request) error {
	if r.Header.Get("X-Baton-User") != "scheduler" {
		return fmt.Errorf("%w: Sweep is for the scheduler", errUnauthenticated)
	}
	return nil
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
	log.InfoContext(r.Context(), "sweep", "expired", report.Expired, "resumed", report.Resumed, "skipped", report.Skipped, "enqueued", report.Enqueued,
		"repaired", report.Repaired, "idle", report.Idle, "accounts", report.Accounts, "checked", report.Checked)
	writeJSON(w, http.StatusOK, report)
	return nil
}
