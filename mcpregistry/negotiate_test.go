package mcpregistry_test

import (
	"testing"

	"github.com/baton-run/baton/internal/firestoretest"
	"github.com/baton-run/baton/mcpregistry"
	"github.com/baton-run/baton/sessionstore"
)

// A server that answers server/discover (a stateless go-sdk handler) gets
// 2026-07-28 and no session in the chat; one that does not gets 2025-11-25,
// its session recorded and continued by another instance.
func TestNegotiatesPerServer(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		stateless bool
		version   string
	}{
		{name: "stateless server", stateless: true, version: "2026-07-28"},
		{name: "server with sessions", version: "2025-11-25"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := newAskingServer(t, tc.stateless)
			servers := []mcpregistry.Server{{Name: "notes", URL: srv.URL}}
			clientA := firestoretest.NewClient(t)
			clientB, _ := firestoretest.Reopen(t, clientA)
			sessionsA, sessionsB := sessionstore.New(clientA, nil), sessionstore.New(clientB, nil)
			chat := newChat(t, sessionsA, "chat-1")

			for i, sessions := range []*sessionstore.Service{sessionsA, sessionsB} {
				cs, err := newRegistry(t, sessions, servers, nil).Session(t.Context(), chat, "notes")
				if err != nil {
					t.Fatalf("instance %d: Session: %v", i, err)
				}
				if got := cs.InitializeResult().ProtocolVersion; got != tc.version {
					t.Errorf("instance %d speaks %s; want %s", i, got, tc.version)
				}
				recorded, ok := getChat(t, sessions, chat).MCP["notes"]
				if ok == tc.stateless {
					t.Errorf("instance %d: chat's MCP record = %+v, %v; want one only for a server with sessions", i, recorded, ok)
				}
				if !tc.stateless && cs.ID() != recorded.ID {
					t.Errorf("instance %d uses session %q; the chat records %q", i, cs.ID(), recorded.ID)
				}
			}
		})
	}
}
