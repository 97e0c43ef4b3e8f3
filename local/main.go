// Command local runs all of Baton on one machine: the Firestore emulator,
// every function at /<Name>, the demo page at /, and a sweeper, with the
// default agent on Gemini or, without credentials, an offline model.
//
//	go run ./local [-addr 127.0.0.1:8080] [-trace]
//
// With -trace it prints each request's spans (lease, session reads and
// appends, ledger, resume, ADK's agent, model and tool calls, Firestore
// calls) to stderr as an indented tree with durations.
//
// It uses FIRESTORE_EMULATOR_HOST when set and otherwise starts the emulator
// itself, stopping it (its whole process group) on exit or Ctrl-C. Likewise
// the Firebase Auth emulator (FIREBASE_AUTH_EMULATOR_HOST; npm firebase-tools,
// installed once with npm ci): the page signs in anonymously through the
// Firebase JS SDK and the functions verify its ID tokens with the Admin SDK,
// as in production. Without node and npm it says so and falls back to
// development identity (BATON_DEV_IDENTITY=true, which can also be set by
// hand for scripts): the page then names its user in X-Baton-User. Other
// settings come from the same environment variables as the deployed
// functions.
package main

import (
	"context"
	"crypto/rand"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"cloud.google.com/go/firestore"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/baton-run/baton/functions"
	"github.com/baton-run/baton/internal/emulator"
	localagent "github.com/baton-run/baton/local/agent"
	"github.com/baton-run/baton/local/notes"
	"github.com/baton-run/baton/mcpregistry"
	"github.com/baton-run/baton/sessionstore"
)

// webFiles is the demo page as local/web builds it (npm run build there);
// the build is committed, so go run ./local needs no npm step.
//
//go:embed web/dist
var webFiles embed.FS

// tracing, set by -trace, prints each request's spans.
var tracing *summary

// localDefaults are what the local runner sets when the environment does
// not: a project for the emulators.
var localDefaults = map[string]string{
	"GOOGLE_CLOUD_PROJECT": "baton-local",
	"BATON_PENDING_POLICY": "cancel",
}

// authEmulatorAPIKey is the API key the page gives the Firebase JS SDK; the
// Auth emulator accepts any.
const authEmulatorAPIKey = "local-demo-key"

func main() {
	addr := flag.String("addr", defaultAddr(), "address to serve on (PORT sets the port)")
	traces := flag.Bool("trace", false, "print each request's spans to stderr")
	flag.Parse()
	log := functions.NewLogger(os.Stderr)
	if *traces {
		tracing = newSummary(os.Stderr)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *addr, log, nil); err != nil {
		fmt.Fprintln(os.Stderr, "baton local:", err)
		if errors.Is(err, emulator.ErrMissing) {
			fmt.Fprintln(os.Stderr, "To run locally,", emulator.InstallHint+".")
		}
		os.Exit(1)
	}
}

func defaultAddr() string {
	if port := os.Getenv("PORT"); port != "" {
		return net.JoinHostPort("127.0.0.1", port)
	}
	return "127.0.0.1:8080"
}

// run serves until ctx ends. ready, if set, receives the base URL once the
// server accepts connections.
func run(ctx context.Context, addr string, log *slog.Logger, ready chan<- string) error {
	start := time.Now()
	overrides := map[string]string{}
	lookup := func(k string) (string, bool) {
		if v, ok := overrides[k]; ok {
			return v, true
		}
		if v, ok := os.LookupEnv(k); ok {
			return v, true
		}
		v, ok := localDefaults[k]
		return v, ok
	}
	project, _ := lookup("GOOGLE_CLOUD_PROJECT")
	dev, _ := lookup("BATON_DEV_IDENTITY")

	// The two emulators start at once: the Auth emulator takes longer.
	var signIn *pageAuth
	authDone := make(chan error, 1)
	if ok, _ := strconv.ParseBool(dev); ok {
		authDone <- nil
	} else {
		go func() {
			var err error
			signIn, err = startAuth(project, log)
			authDone <- err
		}()
	}
	if os.Getenv("FIRESTORE_EMULATOR_HOST") == "" {
		emu, err := emulator.Start("", 30*time.Second)
		if err != nil {
			<-authDone
			signIn.stop()
			return err
		}
		defer func() {
			emu.Stop()
			os.Unsetenv("FIRESTORE_EMULATOR_HOST")
			log.Info("emulator stopped", "pid", emu.Pid())
		}()
		os.Setenv("FIRESTORE_EMULATOR_HOST", emu.Addr)
		log.Info("emulator started", "addr", emu.Addr, "pid", emu.Pid(), "after", time.Since(start).Round(time.Millisecond).String())
	}
	if err := <-authDone; err != nil {
		log.Warn("no Firebase Auth emulator: development identity instead", "error", err.Error())
		fmt.Fprintf(os.Stderr, "\n  Firebase Auth emulator unavailable: %v\n  Falling back to development identity: the page names its user in X-Baton-User.\n  To sign in through Firebase Auth as in production, %s.\n\n",
			err, emulator.AuthInstallHint)
		overrides["BATON_DEV_IDENTITY"] = "true"
	}
	defer signIn.stop()
	cfg, err := functions.ConfigFromEnv(lookup)
	if err != nil {
		return err
	}
	var processors []sdktrace.SpanProcessor
	if tracing != nil {
		processors = append(processors, tracing)
	}
	stopTracing, err := functions.InstallTracing(ctx, cfg, processors...)
	if err != nil {
		return err
	}
	defer stopTracing(context.Background())
	if len(cfg.TokenKey) == 0 {
		cfg.TokenKey = randomKey()
	}
	client, err := firestore.NewClient(ctx, cfg.Project)
	if err != nil {
		return fmt.Errorf("firestore: %w", err)
	}
	defer client.Close()
	m, err := localagent.Model(ctx)
	if err != nil {
		return err
	}
	// The notes MCP server both agents use, on a port of its own, as an
	// MCP server elsewhere would be.
	notesLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	notesSrv := &http.Server{Handler: notes.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go notesSrv.Serve(notesLn)
	defer notesSrv.Close()
	reg, err := mcpregistry.New(sessionstore.New(client, &sessionstore.Options{Root: cfg.Root}),
		[]mcpregistry.Server{{Name: localagent.NotesServer, URL: "http://" + notesLn.Addr().String() + "/"}},
		&mcpregistry.Options{Logger: log})
	if err != nil {
		return err
	}
	defer reg.Close() // the instance stops: its stdio servers end, HTTP sessions stay for other instances
	team, err := localagent.TeamWithMCP(m, reg)
	if err != nil {
		return err
	}
	server, err := functions.NewServer(cfg, client, team, &functions.ServerOptions{Logger: log, MCP: reg, SessionStateOnly: true}) // the demo agents keep no app: or user: state
	if err != nil {
		return err
	}

	mux := http.NewServeMux()
	for _, name := range functions.Names {
		mux.Handle("/"+name, server.Handler(name))
	}
	// Chat's resume stream and messages: /Chat/{chatId}/stream, /Chat/{chatId}.
	mux.Handle("/"+functions.NameChat+"/", server.Handler(functions.NameChat))
	// A2A's agent card is below its URL: /A2A/.well-known/agent-card.json.
	mux.Handle("/"+functions.NameA2A+"/", server.Handler(functions.NameA2A))
	web, err := fs.Sub(webFiles, "web/dist")
	if err != nil {
		return err
	}
	mux.Handle("/", http.FileServerFS(web))
	page := map[string]any{"model": m.Name(), "agents": server.Team().Agents(), "auth": map[string]any{"mode": "dev"}}
	if signIn != nil {
		page["auth"] = signIn.config(cfg.Project)
		mux.Handle("GET /vendor/firebase/", signIn.sdk())
	}
	mux.HandleFunc("GET /config.json", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(page)
	})

	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go sweep(ctx, server, log)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	url := "http://" + ln.Addr().String()
	identity := "development identity (X-Baton-User)"
	if signIn != nil {
		identity = "Firebase Auth emulator at " + signIn.addr + " (anonymous sign-in)"
	}
	log.Info("Baton is running", "url", url, "model", m.Name(), "identity", identity, "startup", time.Since(start).Round(time.Millisecond).String())
	fmt.Fprintf(os.Stderr, "\n  Baton is running at %s\n  A2A agent card: %s/A2A/.well-known/agent-card.json\n  Model: %s\n  Users: %s\n  Started in %s. Ctrl-C stops it.\n\n",
		url, url, m.Name(), identity, time.Since(start).Round(time.Millisecond))
	if ready != nil {
		ready <- url
	}
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil {
		log.Warn("shutdown", "error", err)
	}
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
