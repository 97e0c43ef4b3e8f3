// Command local runs all of Baton on one machine with the demo agents: the
// Firestore and Auth emulators, every function at /<Name>, the demo page
// at /, and a sweeper (see package local/devserver, which a module of one's
// own uses the same way), with the agents on Gemini or, without
// credentials, an offline model; and the demo's notes MCP server.
//
//	go run ./local [-addr 127.0.0.1:8080] [-trace]
//
// With -trace it prints each request's spans to stderr as an indented tree
// with durations.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"google.golang.org/adk/v2/model"

	"github.com/baton-run/baton/functions"
	"github.com/baton-run/baton/internal/emulator"
	localagent "github.com/baton-run/baton/local/agent"
	"github.com/baton-run/baton/local/devserver"
	"github.com/baton-run/baton/local/notes"
	"github.com/baton-run/baton/mcpregistry"
	"github.com/baton-run/baton/toolcallback"
)

// tracing, set by -trace, prints each request's spans.
var tracing bool

func main() {
	addr := flag.String("addr", defaultAddr(), "address to serve on (PORT sets the port)")
	flag.BoolVar(&tracing, "trace", false, "print each request's spans to stderr")
	flag.Parse()
	log := functions.NewLogger(os.Stderr)
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

// offlineRules are the rules the live stand-in answers with: the offline
// model's, when it answers text turns too; nil with Gemini (the live model
// is then Gemini Live).
func offlineRules(m model.LLM) model.LLM {
	if _, ok := m.(localagent.Offline); ok {
		return m
	}
	return nil
}

// run serves the demo until ctx ends. ready, if set, receives the base URL
// once the server accepts connections.
func run(ctx context.Context, addr string, log *slog.Logger, ready chan<- string) error {
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
	opts := &devserver.Options{
		MCPServers: []mcpregistry.Server{{Name: localagent.NotesServer, URL: "http://" + notesLn.Addr().String() + "/"}},
		TeamWithMCP: func(_ context.Context, reg *mcpregistry.Registry) ([]toolcallback.Member, error) {
			return localagent.TeamWithMCP(m, reg)
		},
		Addr:             addr,
		ModelName:        m.Name(),
		LiveRules:        offlineRules(m),
		SessionStateOnly: true, // the demo agents keep no app: or user: state
		Logger:           log,
	}
	if tracing {
		opts.Trace = os.Stderr
	}
	if ready != nil {
		opts.Ready = func(url string) { ready <- url }
	}
	return devserver.Run(ctx, opts)
}
