// Command local runs all of Baton on one machine with the demo agents:
// devserver.Main (the Firestore and Auth emulators, every function at
// /<Name>, the demo page at /, a sweeper) with the agents on Gemini or,
// without credentials, an offline model, and the demo's notes MCP server.
//
//	go run ./local [-addr 127.0.0.1:8080] [-trace] [-peer http://127.0.0.1:8081]
//
// With -trace it prints each request's spans to stderr as an indented tree
// with durations. With -peer, the concierge may delegate to the concierge
// of the runner at that URL (the tool ask_peer), and that runner may push
// its answers to this one: two runners each given the other's URL are
// each other's remote agent (docs/remote-agents.md, "Two local runners").
package main

import (
	"context"
	"flag"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"google.golang.org/adk/v2/model"

	localagent "github.com/baton-run/baton/local/agent"
	"github.com/baton-run/baton/local/devserver"
	"github.com/baton-run/baton/local/events"
	"github.com/baton-run/baton/local/notes"
	"github.com/baton-run/baton/mcpregistry"
	"github.com/baton-run/baton/toolcallback"
)

var peer = flag.String("peer", "", "base URL of another local runner whose concierge this one's may ask (ask_peer)")

func main() {
	stop := func() {}
	devserver.Main(&devserver.Options{Configure: func(o *devserver.Options) error {
		opts, stopDemo, err := demo(context.Background(), peering{url: *peer, user: localagent.PeerUser})
		if err != nil {
			return err
		}
		*o, stop = *opts, stopDemo
		return nil
	}})
	stop()
}

// demo returns the devserver options of the demo: its agents on the model
// localagent.Model picks, and the notes MCP server they use, started here
// on a port of its own, as an MCP server elsewhere would be; the returned
// func stops it. With a peer, the concierge also delegates to that
// runner's concierge, which may push to this one.
func demo(ctx context.Context, peer peering) (*devserver.Options, func(), error) {
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
	remote, pushAllow, err := remoteAgents(eventsURL, peer)
	if err != nil {
		srv.Close()
		esrv.Close()
		return nil, nil, err
	}
	return &devserver.Options{
		MCPServers: []mcpregistry.Server{{Name: localagent.NotesServer, URL: "http://" + ln.Addr().String() + "/"}},
		TeamWithMCP: func(_ context.Context, reg *mcpregistry.Registry) ([]toolcallback.Member, error) {
			return localagent.TeamWithMCP(m, reg, remote...)
		},
		A2APushAllow:     pushAllow,
		AuthUsers:        peer.users(),
		ModelName:        m.Name(),
		Suggestions:      localagent.Suggestions(),
		LiveRules:        offlineRules(m),
		TitleModel:       offlineRules(m), // with Gemini, the functions' own title model
		SessionStateOnly: true,            // the demo agents keep no app: or user: state
	}, func() { srv.Close(); esrv.Close() }, nil
}

// peering is go run ./local -peer: the other runner's base URL ("" for
// none), and the user the two runners' concierges call each other as.
type peering struct{ url, user string }

// users are the users a runner with a peer makes in its Auth emulator:
// the one the peer's concierge calls as.
func (p peering) users() []string {
	if p.url == "" {
		return nil
	}
	return []string{p.user}
}

// remoteAgents are the concierge's remote agents: the events agent at
// eventsURL and, with a peer, the other runner's concierge (whose pushes
// this runner's A2A function may then send: pushAllow).
func remoteAgents(eventsURL string, peer peering) (remote []*toolcallback.RemoteTool, pushAllow []string, err error) {
	events, err := localagent.EventsTool(eventsURL)
	if err != nil || peer.url == "" {
		return []*toolcallback.RemoteTool{events}, nil, err
	}
	project := os.Getenv("GOOGLE_CLOUD_PROJECT") // the Auth emulator's, as devserver defaults it
	if project == "" {
		project = "baton-local"
	}
	other, err := localagent.PeerTool(peer.url, project, peer.user)
	if err != nil {
		return nil, nil, err
	}
	return []*toolcallback.RemoteTool{events, other}, []string{strings.TrimSuffix(peer.url, "/") + "/"}, nil
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
