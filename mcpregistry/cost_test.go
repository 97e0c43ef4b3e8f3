package mcpregistry_test

import (
	"context"
	"iter"
	"sync"
	"testing"

	"google.golang.org/adk/v2/model"

	"github.com/baton-run/baton/internal/firestoretest"
	"github.com/baton-run/baton/mcpregistry"
	"github.com/baton-run/baton/sessionstore"
)

// atFirstRequest is whoamiModel that notes its instance's Firestore
// operations when it is first asked after arm.
type atFirstRequest struct {
	whoamiModel
	counter *firestoretest.Counter

	mu    sync.Mutex
	armed bool
	at    firestoretest.Ops
}

func (m *atFirstRequest) GenerateContent(ctx context.Context, req *model.LLMRequest, stream bool) iter.Seq2[*model.LLMResponse, error] {
	m.mu.Lock()
	if m.armed {
		m.at, m.armed = m.counter.Snapshot(), false
	}
	m.mu.Unlock()
	return m.whoamiModel.GenerateContent(ctx, req, stream)
}

// arm starts counting and returns the round trips sent before the model's
// first request since, once that request came (-1 until then).
func (m *atFirstRequest) arm() func() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	before := m.counter.Snapshot()
	m.armed = true
	return func() int64 {
		m.mu.Lock()
		defer m.mu.Unlock()
		if m.armed {
			return -1
		}
		return m.at.Sub(before).RoundTrips
	}
}

// TestMCPOffTheCriticalPath: a chat's first turn through a Team whose agent
// uses a Streamable HTTP MCP server makes no more Firestore round trips
// before the model than a turn without one (the read of the chat and the
// commit that claims it): the chat's MCP sessions come with the turn's own
// read of the chat, and a new session is recorded before its first tool
// call, after the model's first request. Another instance's turn continues
// the recorded session, again with nothing read for it.
func TestMCPOffTheCriticalPath(t *testing.T) {
	t.Parallel()
	srv := newHTTPServer(t)
	servers := []mcpregistry.Server{{Name: "notes", URL: srv.URL}}
	clientA, counterA := firestoretest.NewCountingClient(t)
	clientB, counterB := firestoretest.Reopen(t, clientA)
	modelA := &atFirstRequest{whoamiModel: whoamiModel{t}, counter: counterA}
	modelB := &atFirstRequest{whoamiModel: whoamiModel{t}, counter: counterB}
	a := newTeamInstanceWith(t, clientA, servers, modelA)
	b := newTeamInstanceWith(t, clientB, servers, modelB)
	const bound = 2

	preA := modelA.arm()
	first := a.whoami("chat-1", "")
	t.Logf("chat's first turn on instance A: %d round trips before the model, %+v in all", preA(), counterA.Snapshot())
	if n := preA(); n < 0 || n > bound {
		t.Errorf("chat's first turn on instance A: %d Firestore round trips before the model, want at most %d", n, bound)
	}
	chat := getChat(t, sessionstore.New(clientA, nil), mcpregistry.Chat{App: "app", User: "user-1", ID: "chat-1", Stored: true})
	if first.Session == "" || chat.MCP["notes"].ID != first.Session {
		t.Fatalf("chat records MCP session %q, the turn's tool call ran on %q; want the same", chat.MCP["notes"].ID, first.Session)
	}

	preB := modelB.arm()
	second := b.whoami("chat-1", "")
	t.Logf("chat's turn on instance B: %d round trips before the model", preB())
	if n := preB(); n < 0 || n > bound {
		t.Errorf("chat's turn on instance B: %d Firestore round trips before the model, want at most %d", n, bound)
	}
	if second.Session != first.Session {
		t.Fatalf("MCP session on instance B %q, on instance A %q; want the one recorded", second.Session, first.Session)
	}
	srv.initialized(t, 1)
}
