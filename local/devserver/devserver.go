package devserver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"cloud.google.com/go/firestore"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"google.golang.org/adk/v2/artifact"
	"google.golang.org/adk/v2/model"
	"google.golang.org/genai"

	"github.com/baton-run/baton/functions"
	"github.com/baton-run/baton/internal/emulator"
	"github.com/baton-run/baton/internal/localgcs"
	"github.com/baton-run/baton/local/web"
	"github.com/baton-run/baton/mcpregistry"
	"github.com/baton-run/baton/sessionstore"
	"github.com/baton-run/baton/toolcallback"
)

// Options say which agents to run and how. Exactly one of Agent, Team and
// TeamWithMCP is set: the same constructors a deployment registers with
// functions.UseAgent, UseTeam and UseTeamWithMCP.
type Options struct {
	Agent       functions.AgentFunc
	Team        functions.TeamFunc
	TeamWithMCP functions.MCPTeamFunc
	// MCPServers are the servers TeamWithMCP's registry connects to.
	MCPServers []mcpregistry.Server

	// Addr is the address to serve on. Default: 127.0.0.1:$PORT, or
	// 127.0.0.1:8080.
	Addr string
	// ModelName is what the page shows as the model. Default: none.
	ModelName string
	// TitleModel gives new chats their titles (toolcallback.Options.TitleModel).
	// Default: the functions' own (BATON_TITLE_MODEL on Gemini, when the
	// environment configures Gemini; none otherwise).
	TitleModel model.LLM
	// Suggestions are what the page offers to try with each agent, by the
	// agent's name: chips under the message box. Default: none.
	Suggestions map[string][]string
	// LiveRules answer live mode (GET /Chat/{chatId}/live) when the
	// environment configures no Gemini model (GOOGLE_API_KEY, or
	// GOOGLE_GENAI_USE_VERTEXAI): a Gemini Live stand-in
	// (modeltest.LiveServer, the real wire protocol through genai's own
	// client) runs in process with these rules behind it (an offline
	// model's), answering audio with tone audio and how long it heard.
	// Nil: live mode is off without credentials.
	LiveRules model.LLM
	// SessionStateOnly is functions.ServerOptions.SessionStateOnly: the
	// agents keep no app: or user: state.
	SessionStateOnly bool
	// Trace, when set, receives each request's spans as an indented tree
	// with durations (lease, session reads and appends, ledger, ADK's
	// agent, model and tool calls, Firestore calls).
	Trace io.Writer
	// Logger logs as the functions do. Default: functions.NewLogger(nil).
	Logger *slog.Logger
	// Ready, when set, is called with the base URL once the server accepts
	// connections.
	Ready func(url string)
	// A2APushAllow are URL prefixes the A2A function may send push
	// notifications to, beside BATON_A2A_PUSH_ALLOW's: a peer runner's
	// push door, when the two delegate to each other.
	A2APushAllow []string
	// AuthUsers are the ids of users Run makes in the Auth emulator when
	// they are missing: the user a peer runner presents
	// (localagent.PeerUser), since the emulator accepts tokens only of
	// users it has. Unused in development identity.
	AuthUsers []string
	// Configure, when set, is called by Main once the command line is
	// parsed, before Run: it may set the options from the caller's own
	// flags (go run ./local -peer). An error ends Main as Run's would.
	Configure func(*Options) error
}

// Main runs Run until Ctrl-C or SIGTERM, with the flags -addr and -trace
// (parsed here, with any the caller defined), and exits: status 1, with
// what to install, when the server cannot run.
func Main(opts *Options) {
	o := *opts
	addr := flag.String("addr", defaultAddr(), "address to serve on (PORT sets the port)")
	traces := flag.Bool("trace", false, "print each request's spans to stderr")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := configure(&o)
	if o.Addr == "" {
		o.Addr = *addr
	}
	if *traces {
		o.Trace = os.Stderr
	}
	if err == nil {
		err = Run(ctx, &o)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "baton local:", err)
		if errors.Is(err, emulator.ErrMissing) {
			fmt.Fprintln(os.Stderr, "To run locally,", emulator.InstallHint+".")
		}
		stop()
		os.Exit(1)
	}
}

// configure calls o.Configure, if set.
func configure(o *Options) error {
	if o.Configure == nil {
		return nil
	}
	return o.Configure(o)
}

func defaultAddr() string {
	if port := os.Getenv("PORT"); port != "" {
		return net.JoinHostPort("127.0.0.1", port)
	}
	return "127.0.0.1:8080"
}

// localDefaults are what a local run sets when the environment does not.
// The page signs in anonymously: the turn limits are raised so that a
// demo, or a browser scenario of thirty quick turns, is not refused (set
// the variables to try the limits; docs/limits.md).
var localDefaults = map[string]string{
	"GOOGLE_CLOUD_PROJECT":             "baton-local",
	"BATON_PENDING_POLICY":             "cancel",
	"BATON_ANON_USER_TURNS_PER_MINUTE": "60",
	"BATON_CHAT_TURNS_PER_MINUTE":      "60",
	// The local operator (console.go): the id development identity names.
	"BATON_OPERATORS": localOperatorDevID,
}

// Run serves until ctx ends, then stops what it started.
func Run(ctx context.Context, opts *Options) error {
	start := time.Now()
	o := *opts
	if n := btoi(o.Agent != nil) + btoi(o.Team != nil) + btoi(o.TeamWithMCP != nil); n != 1 {
		return fmt.Errorf("devserver: set exactly one of Agent, Team and TeamWithMCP (%d set)", n)
	}
	if o.Addr == "" {
		o.Addr = defaultAddr()
	}
	if o.Logger == nil {
		o.Logger = functions.NewLogger(nil)
	}
	env := &environment{overrides: map[string]string{}}
	emus, err := startEmulators(env, o.Logger, start)
	if err != nil {
		return err
	}
	defer emus.stop()
	// Listen first: the queue delivers to this address's Work function.
	ln, err := net.Listen("tcp", o.Addr)
	if err != nil {
		return err
	}
	defer ln.Close()
	work, err := startWork(ctx, env, "http://"+ln.Addr().String()+"/"+functions.NameWork)
	if err != nil {
		return err
	}
	env.remoteAgents("http://"+ln.Addr().String(), o.A2APushAllow)
	defer work.stop()
	cfg, err := functions.ConfigFromEnv(env.lookup)
	if err != nil {
		return err
	}
	var processors []sdktrace.SpanProcessor
	if o.Trace != nil {
		processors = append(processors, newSummary(o.Trace))
	}
	stopTracing, err := functions.InstallTracing(ctx, cfg, processors...)
	if err != nil {
		return err
	}
	defer stopTracing(context.Background())
	metrics, stopMetrics, err := functions.InstallMetrics(ctx, cfg)
	if err != nil {
		return err
	}
	defer stopMetrics(context.Background())
	if emus.signIn != nil {
		if err := ensureUsers(ctx, cfg, o.AuthUsers); err != nil {
			return err
		}
	}
	if len(cfg.TokenKey) == 0 {
		cfg.TokenKey = randomKey()
	}
	client, err := firestore.NewClientWithDatabase(ctx, cfg.Project, cfg.Database)
	if err != nil {
		return fmt.Errorf("firestore: %w", err)
	}
	defer client.Close()
	live, err := liveModel(ctx, o.LiveRules)
	if err != nil {
		return err
	}
	defer live.stop()
	server, closeMCP, err := newServer(ctx, cfg, client, &o, serverParts{live: live.client, tasks: work, metrics: metrics})
	if err != nil {
		return err
	}
	defer closeMCP()
	mux, err := routes(server, emus.signIn, cfg, &o)
	if err != nil {
		return err
	}
	return serve(ctx, &o, ln, mux, server, emus.signIn, start, live.describe(server.LiveModel()))
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// environment is the process's environment, with what a local run
// decides (development identity, when the Auth emulator cannot run) over
// it and localDefaults under it.
type environment struct{ overrides map[string]string }

func (e *environment) lookup(k string) (string, bool) {
	if v, ok := e.overrides[k]; ok {
		return v, true
	}
	if v, ok := os.LookupEnv(k); ok {
		return v, true
	}
	v, ok := localDefaults[k]
	return v, ok
}

// remoteAgents sets what remote agents need of a runner at base: remotes
// notify its A2A function (BATON_REMOTE_PUSH_URL, unless set), and its A2A
// function may push to the prefixes given (Options.A2APushAllow, beside
// BATON_A2A_PUSH_ALLOW's).
func (e *environment) remoteAgents(base string, pushAllow []string) {
	if _, set := e.lookup("BATON_REMOTE_PUSH_URL"); !set {
		e.overrides["BATON_REMOTE_PUSH_URL"] = base + "/" + functions.NameA2A + functions.RemotePushPath
	}
	if len(pushAllow) == 0 {
		return
	}
	all := slices.Clone(pushAllow)
	if v, _ := e.lookup("BATON_A2A_PUSH_ALLOW"); v != "" {
		all = append(all, v)
	}
	e.overrides["BATON_A2A_PUSH_ALLOW"] = strings.Join(all, ",")
}

// serverParts are what Run made for the server besides Firestore: the
// live model's client, the background calls' queue and the process's
// metrics.
type serverParts struct {
	live    *genai.Client
	tasks   *localWork
	metrics *functions.Metrics
}

// newServer builds the agents the options name, and the MCP registry
// TeamWithMCP uses; the returned func closes it.

func newServer(ctx context.Context, cfg functions.Config, client *firestore.Client, o *Options, parts serverParts) (*functions.Server, func(), error) {
	sopts := &functions.ServerOptions{Logger: o.Logger, SessionStateOnly: o.SessionStateOnly, Live: parts.live, Metrics: parts.metrics,
		TitleModel: o.TitleModel, Tasks: parts.tasks.server.Client(), SchedulerKeys: parts.tasks.keys}
	files, err := localFiles(ctx)
	if err != nil {
		return nil, nil, err
	}
	sopts.Files = files.store
	closeMCP := files.stop
	newTeam := o.Team
	if o.Agent != nil {
		newTeam = func(ctx context.Context) ([]toolcallback.Member, error) {
			a, err := o.Agent(ctx)
			if err != nil {
				return nil, err
			}
			return []toolcallback.Member{{Agent: a}}, nil
		}
	}
	if o.TeamWithMCP != nil {
		reg, err := mcpregistry.New(sessionstore.New(client, &sessionstore.Options{Root: cfg.Root}), o.MCPServers,
			&mcpregistry.Options{Logger: o.Logger})
		if err != nil {
			return nil, nil, fmt.Errorf("MCP servers: %w", err)
		}
		sopts.MCP = reg
		closeMCP = func() { reg.Close(); files.stop() } // its stdio servers end; HTTP sessions stay, as for another instance
		newTeam = func(ctx context.Context) ([]toolcallback.Member, error) { return o.TeamWithMCP(ctx, reg) }
	}
	members, err := newTeam(ctx)
	if err != nil {
		closeMCP()
		return nil, nil, fmt.Errorf("build agents: %w", err)
	}
	server, err := functions.NewServer(cfg, sessionstore.New(client, &sessionstore.Options{Root: cfg.Root}), members, sopts)
	if err != nil {
		closeMCP()
		return nil, nil, err
	}
	return server, closeMCP, nil
}

// routes adds to the functions' routes the page, what it reads at
// /config.json and, when it signs in through the Auth emulator, the
// Firebase JS SDK; and what the console signs in with.
func routes(server *functions.Server, signIn *pageAuth, cfg functions.Config, o *Options) (*http.ServeMux, error) {
	mux := server.Mux()
	mux.Handle("GET /admin/config.json", consoleConfig(cfg, signIn))
	page, err := web.Files()
	if err != nil {
		return nil, err
	}
	mux.Handle("/", http.FileServerFS(page))
	// liveModel is "" when live mode is off: the page then offers no Live
	// button.
	// limits lets the page say a message or a file is too large before
	// sending it, in words a person reads (local/web/src/files.jsx).
	limits := map[string]int64{"fileBytes": cfg.MaxFileBytes, "messageBytes": cfg.MaxBodyBytes, "bodyBytes": cfg.MaxChatBodyBytes}
	config := map[string]any{"model": o.ModelName, "liveModel": server.LiveModel(), "agents": server.Team().Agents(),
		"suggestions": o.Suggestions, "auth": map[string]any{"mode": "dev"}, "limits": limits}
	if signIn != nil {
		config["auth"] = signIn.config(cfg.Project)
		mux.Handle("GET /vendor/firebase/", signIn.sdk())
	}
	mux.HandleFunc("GET /config.json", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(config)
	})
	return mux, nil
}

// serve serves mux and sweeps until ctx ends, then shuts the server down.
func serve(ctx context.Context, o *Options, ln net.Listener, mux http.Handler, server *functions.Server, signIn *pageAuth, start time.Time, liveModel string) error {
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go sweep(ctx, server, o.Logger)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	url := "http://" + ln.Addr().String()
	identity := "development identity (X-Baton-User)"
	if signIn != nil {
		identity = "Firebase Auth emulator at " + signIn.addr + " (anonymous sign-in)"
	}
	took := time.Since(start).Round(time.Millisecond)
	o.Logger.Info("Baton is running", "url", url, "model", o.ModelName, "liveModel", liveModel, "identity", identity, "startup", took.String())
	fmt.Fprintf(os.Stderr, "\n  Baton is running at %s\n  Operator's console: %s/admin/\n  A2A agent card: %s/.well-known/agent-card.json (and %s/A2A/.well-known/agent-card.json)\n"+
		"  Model: %s\n  Live model: %s\n  Users: %s\n  Started in %s. Ctrl-C stops it.\n\n", url, url, url, url, o.ModelName, liveModel, identity, took)
	if o.Ready != nil {
		o.Ready(url)
	}
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil {
		o.Logger.Warn("shutdown", "error", err)
	}
	server.CloseLive() // Shutdown leaves hijacked connections to their handlers
	return nil
}

// sweep does locally what Cloud Scheduler does in production.
func sweep(ctx context.Context, s *functions.Server, log *slog.Logger) {
	t := time.NewTicker(15 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			report, err := s.Team().Sweep(ctx, now)
			if err != nil && ctx.Err() == nil {
				log.Warn("sweep", "error", err)
			} else if report.Expired+report.Resumed+report.Repaired+report.Idle > 0 {
				log.Info("sweep", "expired", report.Expired, "resumed", report.Resumed, "repaired", report.Repaired, "idle", report.Idle)
			}
		}
	}
}

func randomKey() []byte {
	b := make([]byte, 32)
	rand.Read(b)
	return []byte(hex.EncodeToString(b))
}

// localBucket is the bucket of the chats' files in a local run.
const localBucket = "baton-local-files"

// files is a local run's file store: ADK's gcsartifact, as deployed, on a
// Cloud Storage API served in process (internal/localgcs).
type files struct {
	store artifact.Service
	stop  func()
}

func localFiles(ctx context.Context) (files, error) {
	gcs, err := localgcs.Start(localBucket)
	if err != nil {
		return files{}, err
	}
	store, err := gcs.Artifacts(ctx)
	if err != nil {
		gcs.Stop()
		return files{}, err
	}
	return files{store: store, stop: gcs.Stop}, nil
}
