package functions

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"github.com/GoogleCloudPlatform/functions-framework-go/functions"
	"google.golang.org/adk/v2/agent"

	"github.com/baton-run/baton/account"
	"github.com/baton-run/baton/mcpregistry"
	"github.com/baton-run/baton/sessionstore"
	"github.com/baton-run/baton/toolcallback"
)

// Function names: the entry points registered with functions-framework-go
// and deployed by infra/terraform.
const (
	NameTurn       = "Turn"
	NameToolResult = "ToolResult"
	NamePending    = "Pending"
	NameSweep      = "Sweep"
	NameA2A        = "A2A"
	// NameChat serves the AI SDK's useChat (DefaultChatTransport): POST
	// /Chat, GET /Chat/{chatId} and GET /Chat/{chatId}/stream; and the
	// user's chats (GET /Chat, PATCH and DELETE /Chat/{chatId}).
	NameChat = "Chat"
	// NameAccount serves a person's data as a whole: its export and its
	// deletion (package account).
	NameAccount = account.Name
	// NameAdmin serves the operator's console: the page at /admin and
	// its API at /admin/api/ (docs/operator.md).
	NameAdmin = "Admin"
	// NameWork runs background calls' work, delivered by Cloud Tasks
	// (docs/background.md).
	NameWork = "Work"
)

// Names lists every registered function.
var Names = []string{NameTurn, NameToolResult, NamePending, NameSweep, NameA2A, NameChat, NameAccount, NameAdmin, NameWork}

// AgentFunc builds the agent the registered functions serve.
type AgentFunc func(ctx context.Context) (agent.Agent, error)

// TeamFunc builds the agents a chat may switch between; the first is the
// agent of new chats.
type TeamFunc func(ctx context.Context) ([]toolcallback.Member, error)

// registered holds the constructor a deployment supplies with UseAgent or
// UseTeam, from an init function (the deployment packager generates one).
var registered struct {
	sync.Mutex
	newTeam TeamFunc
	mcp     []mcpregistry.Server
	withMCP MCPTeamFunc
}

// MCPTeamFunc builds agents that use MCP servers: reg gives them the
// servers' tools (reg.Toolsets), with connections kept per chat.
type MCPTeamFunc func(ctx context.Context, reg *mcpregistry.Registry) ([]toolcallback.Member, error)

// UseAgent sets the one agent the registered functions serve. Call it from
// an init function, before the first request; the instance builds its
// server once, on that request.
func UseAgent(f AgentFunc) {
	UseTeam(func(ctx context.Context) ([]toolcallback.Member, error) {
		a, err := f(ctx)
		if err != nil {
			return nil, err
		}
		return []toolcallback.Member{{Agent: a}}, nil
	})
}

// UseTeam sets the agents the registered functions serve, for chats that
// switch between them. It replaces an earlier UseAgent.
func UseTeam(f TeamFunc) {
	registered.Lock()
	defer registered.Unlock()
	registered.newTeam, registered.mcp, registered.withMCP = f, nil, nil
}

// UseTeamWithMCP is UseTeam for agents that use the MCP servers given. The
// instance makes one registry of them on its first request and hands it to
// f; the functions then end a chat's MCP sessions when the chat is swept or
// switches to an agent that does not declare a server, and the instance
// closes its connections when Cloud Run sends SIGTERM (their server-side
// sessions stay, for the chat's next instance).
func UseTeamWithMCP(servers []mcpregistry.Server, f MCPTeamFunc) {
	registered.Lock()
	defer registered.Unlock()
	registered.newTeam, registered.mcp, registered.withMCP = nil, servers, f
}

// instance is this instance's server, built on the first request. The
// error is kept: a misconfigured instance answers 500 and logs why.
var instance = sync.OnceValues(func() (*Server, error) {
	cfg, err := ConfigFromEnv(os.LookupEnv)
	if err != nil {
		return nil, err
	}
	// Spans are exported in the background; Cloud Run gives no hook to
	// flush them at shutdown, so the last few of an instance may be lost.
	if _, err := InstallTracing(context.Background(), cfg); err != nil {
		return nil, err
	}
	// Metrics likewise: exported every minute while the instance has CPU.
	metrics, _, err := InstallMetrics(context.Background(), cfg)
	if err != nil {
		return nil, err
	}
	sessions, err := sessionstore.Open(context.Background(), cfg.Project, cfg.Database, &sessionstore.Options{Root: cfg.Root})
	if err != nil {
		return nil, err
	}
	s, reg, err := buildServer(context.Background(), cfg, sessions, metrics)
	if err == nil {
		closeOnTerm(s, reg)
	}
	return s, err
})

// buildServer builds the registered team on sessions, and the MCP registry
// its agents use if they were registered with UseTeamWithMCP.
func buildServer(ctx context.Context, cfg Config, sessions *sessionstore.Service, metrics *Metrics) (*Server, *mcpregistry.Registry, error) {
	registered.Lock()
	newTeam, servers, withMCP := registered.newTeam, registered.mcp, registered.withMCP
	registered.Unlock()
	if withMCP == nil {
		if newTeam == nil {
			return nil, nil, errors.New("no agent: call functions.UseAgent, UseTeam or UseTeamWithMCP from an init function of the deployment")
		}
		members, err := newTeam(ctx)
		if err != nil {
			return nil, nil, fmt.Errorf("build agents: %w", err)
		}
		s, err := NewServer(cfg, sessions, members, &ServerOptions{Metrics: metrics})
		return s, nil, err
	}
	log := NewLogger(nil)
	reg, err := mcpregistry.New(sessions, servers, &mcpregistry.Options{Logger: log})
	if err != nil {
		return nil, nil, fmt.Errorf("MCP servers: %w", err)
	}
	members, err := withMCP(ctx, reg)
	if err != nil {
		reg.Close()
		return nil, nil, fmt.Errorf("build agents: %w", err)
	}
	s, err := NewServer(cfg, sessions, members, &ServerOptions{Logger: log, MCP: reg, Metrics: metrics})
	if err != nil {
		reg.Close()
		return nil, nil, err
	}
	return s, reg, nil
}

// closeOnTerm ends s's live conversations and closes reg (nil: none) when
// the process gets SIGTERM (Cloud Run sends it ten seconds before it stops
// an instance; each close is bounded well within that), then lets the
// signal end the process as it would have.
func closeOnTerm(s *Server, reg *mcpregistry.Registry) {
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGTERM)
	go func() {
		<-c
		s.CloseLive()
		if reg != nil {
			reg.Close()
		}
		signal.Reset(syscall.SIGTERM)
		syscall.Kill(os.Getpid(), syscall.SIGTERM)
	}()
}

func init() {
	for _, name := range Names {
		functions.HTTP(name, func(w http.ResponseWriter, r *http.Request) {
			s, err := instance()
			if err != nil {
				startupFailed(w, r, err)
				return
			}
			s.Handler(name).ServeHTTP(w, r)
		})
	}
}
