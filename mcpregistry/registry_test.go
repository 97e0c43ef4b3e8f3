package mcpregistry_test

import (
	"context"
	"errors"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/adk/v2/platform"

	"github.com/baton-run/baton/internal/firestoretest"
	"github.com/baton-run/baton/internal/polltest"
	"github.com/baton-run/baton/mcpregistry"
	"github.com/baton-run/baton/sessionstore"
)

// newChat stores a chat record and names it for the registry.
func newChat(t *testing.T, sessions *sessionstore.Service, id string) mcpregistry.Chat {
	t.Helper()
	now := time.Now()
	err := sessions.CreateChat(t.Context(), &sessionstore.Chat{App: "app", UserID: "user-1", ID: id, Agent: "concierge",
		SessionID: id + "~0", Created: now, LastActivity: now})
	if err != nil {
		t.Fatal(err)
	}
	return mcpregistry.Chat{App: "app", User: "user-1", ID: id, Stored: true}
}

func getChat(t *testing.T, sessions *sessionstore.Service, c mcpregistry.Chat) *sessionstore.Chat {
	t.Helper()
	chat, err := sessions.GetChat(t.Context(), c.App, c.User, c.ID)
	if err != nil {
		t.Fatal(err)
	}
	return chat
}

func TestOneConnectUnderContention(t *testing.T) {
	t.Parallel()
	srv := newHTTPServer(t)
	reg := newRegistry(t, nil, []mcpregistry.Server{{Name: "notes", URL: srv.URL}}, nil)
	chat := mcpregistry.Chat{App: "app", User: "user-1", ID: "chat"}

	const n = 50
	got := make([]*mcp.ClientSession, n)
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			got[i], errs[i] = reg.Session(t.Context(), chat, "notes")
		})
	}
	close(start)
	wg.Wait()
	for i := range n {
		if errs[i] != nil || got[i] != got[0] {
			t.Fatalf("Session #%d = %p, %v; want %p, nil like #0", i, got[i], errs[i], got[0])
		}
	}
	srv.initialized(t, 1)
}

func TestTwoInstancesOneSession(t *testing.T) {
	t.Parallel()
	srv := newHTTPServer(t)
	servers := []mcpregistry.Server{{Name: "notes", URL: srv.URL}}
	clientA := firestoretest.NewClient(t)
	clientB, _ := firestoretest.Reopen(t, clientA)
	a := newTeamInstance(t, clientA, servers)
	b := newTeamInstance(t, clientB, servers)

	first := a.whoami("chat-1", "")
	second := b.whoami("chat-1", "")
	if first.Session == "" || second.Session != first.Session {
		t.Fatalf("MCP sessions of the chat's two turns = %q on instance A, %q on instance B; want one session", first.Session, second.Session)
	}
	srv.initialized(t, 1)

	// The chat ends on instance B, which never opened the session itself.
	b.idleOut(t, "chat-1")
	polltest.Until(t, "the server to close the chat's session", func() bool { return srv.live() == 0 })
}

func TestHungServerDelaysNoOneElse(t *testing.T) {
	t.Parallel()
	sessions := sessionstore.New(firestoretest.NewClient(t), nil)
	hung, good := newHTTPServer(t), newHTTPServer(t)
	hung.hangOn.Store(true)
	const deadline = 2 * time.Second
	reg := newRegistry(t, sessions, []mcpregistry.Server{{Name: "hung", URL: hung.URL}, {Name: "good", URL: good.URL}},
		&mcpregistry.Options{CloseTimeout: deadline})
	chatA, chatB := newChat(t, sessions, "a"), newChat(t, sessions, "b")
	call(t, reg, chatA, "hung")

	start := time.Now()
	closedA := make(chan error, 1)
	go func() { closedA <- reg.CloseChat(context.Background(), getChat(t, sessions, chatA)) }()
	call(t, reg, chatB, "good")
	if err := reg.CloseChat(t.Context(), getChat(t, sessions, chatB)); err != nil {
		t.Fatalf("CloseChat(b) error = %v", err)
	}
	tookB := time.Since(start)
	select {
	case err := <-closedA:
		t.Fatalf("CloseChat(a) returned %v before chat b was done; its server hangs on close", err)
	default:
	}
	if tookB >= deadline {
		t.Errorf("chat b's connect and close took %v while chat a's close hung; want under %v", tookB, deadline)
	}
	polltest.Until(t, "the good server to close chat b's session", func() bool { return good.live() == 0 })
	err := <-closedA
	if took := time.Since(start); !errors.Is(err, mcpregistry.ErrTimeout) || took > deadline+time.Second {
		t.Errorf("CloseChat(a) on a hung server = %v after %v; want ErrTimeout after about %v", err, took, deadline)
	}
}

func TestCrashedStdioServerIsRecreated(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	reg := newRegistry(t, nil, []mcpregistry.Server{{Name: "local", Command: []string{exe}, Env: []string{stdioEnv + "=1"}}}, nil)
	chat := mcpregistry.Chat{App: "app", User: "user-1", ID: "chat"}
	before := call(t, reg, chat, "local")
	cs, err := reg.Session(t.Context(), chat, "local")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "crash"}); err == nil {
		t.Fatal("crash returned; want an error from the dead process")
	}
	polltest.Until(t, "a new session in place of the crashed server's", func() bool {
		next, err := reg.Session(t.Context(), chat, "local")
		return err == nil && next != cs
	})
	if after := call(t, reg, chat, "local"); after.PID == before.PID || after.PID == 0 {
		t.Errorf("whoami after the crash ran in process %d, before in %d; want a new process", after.PID, before.PID)
	}
}

func TestIdleEviction(t *testing.T) {
	t.Parallel()
	sessions := sessionstore.New(firestoretest.NewClient(t), nil)
	srv := newHTTPServer(t)
	reg := newRegistry(t, sessions, []mcpregistry.Server{{Name: "notes", URL: srv.URL}}, &mcpregistry.Options{IdleTimeout: 5 * time.Minute})
	t0 := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	at := func(t time.Time) context.Context {
		return platform.WithTimeProvider(context.Background(), func() time.Time { return t })
	}
	chats := []mcpregistry.Chat{newChat(t, sessions, "idle-1"), newChat(t, sessions, "idle-2"), newChat(t, sessions, "busy")}
	used := []time.Time{t0, t0.Add(time.Minute), t0.Add(4 * time.Minute)}
	conns := map[string]*mcp.ClientSession{}
	ids := map[string]string{}
	for i, c := range chats {
		cs, err := reg.Session(at(used[i]), c, "notes")
		if err != nil {
			t.Fatal(err)
		}
		conns[c.ID] = cs
		ids[c.ID] = call(t, reg, c, "notes").Session
	}

	// call used each connection again at the wall clock's time: use them at
	// their times once more, then evict at t0+7m (idle-1 and idle-2 are
	// more than 5 minutes old, busy is 3).
	for i, c := range chats {
		if _, err := reg.Session(at(used[i]), c, "notes"); err != nil {
			t.Fatal(err)
		}
	}
	if n := reg.EvictIdle(t0.Add(7 * time.Minute)); n != 2 {
		t.Errorf("EvictIdle closed %d connections, want 2", n)
	}
	for _, c := range chats {
		cs, err := reg.Session(at(t0.Add(7*time.Minute)), c, "notes")
		if err != nil {
			t.Fatal(err)
		}
		if kept := cs == conns[c.ID]; kept != (c.ID == "busy") {
			t.Errorf("chat %s kept its connection: %v, want %v", c.ID, kept, c.ID == "busy")
		}
		// An evicted connection only leaves this instance: the chat
		// continues its server session.
		if got := call(t, reg, c, "notes").Session; got != ids[c.ID] {
			t.Errorf("chat %s is on MCP session %q after eviction, want %q", c.ID, got, ids[c.ID])
		}
	}
	srv.initialized(t, 3)
}
