package functions

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"sync"

	"cloud.google.com/go/firestore"
	"github.com/GoogleCloudPlatform/functions-framework-go/functions"
	"google.golang.org/adk/v2/agent"

	"github.com/baton-run/baton/toolcallback"
)

// Function names: the entry points registered with functions-framework-go
// and deployed by infra/terraform.
const (
	NameTurn       = "Turn"
	NameToolResult = "ToolResult"
	NamePending    = "Pending"
	NameSweep      = "Sweep"
	// NameChat serves the AI SDK's useChat (DefaultChatTransport): POST
	// /Chat, GET /Chat/{chatId} and GET /Chat/{chatId}/stream.
	NameChat = "Chat"
)

// Names lists every registered function.
var Names = []string{NameTurn, NameToolResult, NamePending, NameSweep, NameChat}

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
}

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
	registered.newTeam = f
}

// instance is this instance's server, built on the first request. The
// error is kept: a misconfigured instance answers 500 and logs why.
var instance = sync.OnceValues(func() (*Server, error) {
	registered.Lock()
	newTeam := registered.newTeam
	registered.Unlock()
	cfg, err := ConfigFromEnv(os.LookupEnv)
	if err != nil {
		return nil, err
	}
	// Spans are exported in the background; Cloud Run gives no hook to
	// flush them at shutdown, so the last few of an instance may be lost.
	if _, err := InstallTracing(context.Background(), cfg); err != nil {
		return nil, err
	}
	ctx := context.Background()
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
	return NewServer(cfg, client, members, nil)
})

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
