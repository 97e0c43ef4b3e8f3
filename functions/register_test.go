package functions

import (
	"context"
	"testing"

	"google.golang.org/adk/v2/agent/llmagent"

	"github.com/baton-run/baton/internal/firestoretest"
	"github.com/baton-run/baton/mcpregistry"
	"github.com/baton-run/baton/modeltest"
	"github.com/baton-run/baton/sessionstore"
	"github.com/baton-run/baton/toolcallback"
)

// TestUseTeamWithMCP: a deployment registered with UseTeamWithMCP gets one
// registry of its servers, handed to its team builder and kept by the
// instance (to end chats' sessions and close on SIGTERM); UseTeam after it
// registers a team without one; a bad server configuration fails the
// instance rather than a later request.
func TestUseTeamWithMCP(t *testing.T) {
	t.Cleanup(func() { UseTeam(nil) })
	client := firestoretest.NewClient(t)
	cfg := testConfig()
	cfg.DevIdentity = true
	team := func(reg *mcpregistry.Registry) ([]toolcallback.Member, error) {
		a, err := llmagent.New(llmagent.Config{Name: "assistant", Model: &modeltest.Strict{T: t}})
		return []toolcallback.Member{{Agent: a}}, err
	}
	var got *mcpregistry.Registry
	UseTeamWithMCP([]mcpregistry.Server{{Name: "notes", URL: "http://127.0.0.1:1/"}},
		func(_ context.Context, reg *mcpregistry.Registry) ([]toolcallback.Member, error) {
			got = reg
			return team(reg)
		})
	s, reg, err := buildServer(t.Context(), cfg, sessionstore.New(client, &sessionstore.Options{Root: cfg.Root}), nil)
	if err != nil {
		t.Fatalf("buildServer: %v", err)
	}
	t.Cleanup(func() { reg.Close() })
	if s == nil || reg == nil || got != reg {
		t.Errorf("buildServer = %v, %p; the team builder got %p, want the same registry", s, reg, got)
	}

	UseTeam(func(context.Context) ([]toolcallback.Member, error) { return team(nil) })
	if _, reg, err := buildServer(t.Context(), cfg, sessionstore.New(client, &sessionstore.Options{Root: cfg.Root}), nil); err != nil || reg != nil {
		t.Errorf("after UseTeam: registry %p, error %v; want none", reg, err)
	}

	UseTeamWithMCP([]mcpregistry.Server{{Name: "no spaces allowed", URL: "http://127.0.0.1:1/"}},
		func(_ context.Context, reg *mcpregistry.Registry) ([]toolcallback.Member, error) { return team(reg) })
	if _, _, err := buildServer(t.Context(), cfg, sessionstore.New(client, &sessionstore.Options{Root: cfg.Root}), nil); err == nil {
		t.Error("an invalid MCP server name: buildServer succeeded, want an error")
	}
}
