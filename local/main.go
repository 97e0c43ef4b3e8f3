// Command local runs all of Baton on one machine with the demo agents:
// devserver.Main (the Firestore and Auth emulators, every function at
// /<Name>, the demo page at /, a sweeper) with the agents on Gemini or,
// without credentials, an offline model, and the demo's notes MCP server.
//
//	go run ./local [-addr 127.0.0.1:8080] [-trace]
//
// With -trace it prints each request's spans to stderr as an indented tree
// with durations.
package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"google.golang.org/adk/v2/model"

	localagent "github.com/baton-run/baton/local/agent"
	"github.com/baton-run/baton/local/devserver"
	"github.com/baton-run/baton/local/events"
	"github.com/baton-run/baton/local/notes"
	"github.com/baton-run/baton/mcpregistry"
	"github.com/baton-run/baton/toolcallback"
)

func main() {
	opts, stopNotes, err := demo(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, "baton local:", err)
		os.Exit(1)
	}
	defer stopNotes()
	devserver.Main(opts)
}

// demo returns the devserver options of the demo: its agents on the model
// localagent.Model picks, and the notes MCP server they use, started here
// on a port of its own, as an MCP server elsewhere would be; the returned
// func stops it.
func demo(ctx context.Context) (*devserver.Options, func(), error) {
	m, err := localagent.Model(ctx)
	if err != nil {
		return nil, nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, err
	}
	srv := &http.Server{Handler: notes.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	// The events agent, an A2A agent of its own on a port of its own, as
	// another team's agent would run elsewhere; the concierge delegates
	// to it (docs/remote-agents.md).
	eln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		srv.Close()
		return nil, nil, err
	}
	eventsURL := "http://" + eln.Addr().String()
	esrv := &http.Server{Handler: events.Handler(eventsURL), ReadHeaderTimeout: 10 * time.Second}
	go esrv.Serve(eln)
	eventsTool, err := localagent.EventsTool(eventsURL)
	if err != nil {
		srv.Close()
		esrv.Close()
		return nil, nil, err
	}
	return &devserver.Options{
		MCPServers: []mcpregistry.Server{{Name: localagent.NotesServer, URL: "http://" + ln.Addr().String() + "/"}},
		TeamWithMCP: func(_ context.Context, reg *mcpregistry.Registry) ([]toolcallback.Member, error) {
			return localagent.TeamWithMCP(m, reg, eventsTool)
		},
		ModelName:        m.Name(),
		Suggestions:      localagent.Suggestions(),
		LiveRules:        offlineRules(m),
		TitleModel:       offlineRules(m), // with Gemini, the functions' own title model
		SessionStateOnly: true,            // the demo agents keep no app: or user: state
	}, func() { srv.Close(); esrv.Close() }, nil
}

// offlineRules are the rules the live stand-in answers with, and the
// model that titles new chats: the offline model, when it answers text
// turns too; nil with Gemini (the live model is then Gemini Live, and
// titles come from BATON_TITLE_MODEL).
func offlineRules(m model.LLM) model.LLM {
	if _, ok := m.(localagent.Offline); ok {
		return m
	}
	return nil
}
