package mcpregistry_test

import (
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/adk/v2/model"
	"google.golang.org/genai"

	"github.com/baton-run/baton/internal/firestoretest"
	"github.com/baton-run/baton/internal/polltest"
	"github.com/baton-run/baton/mcpregistry"
	"github.com/baton-run/baton/modeltest"
	"github.com/baton-run/baton/sessionstore"
	"github.com/baton-run/baton/toolcallback"
)

// atFirstRequest notes an instance's Firestore operations when its model
// is first asked after arm.
type atFirstRequest struct {
	counter *firestoretest.Counter

	mu    sync.Mutex
	armed bool
	at    firestoretest.Ops
}

// strict is whoamiModel noting the operations.
func (m *atFirstRequest) strict(t *testing.T) *modeltest.Strict {
	return &modeltest.Strict{T: t, Repeat: func(req *model.LLMRequest) *genai.Content {
		m.mu.Lock()
		if m.armed {
			m.at, m.armed = m.counter.Snapshot(), false
		}
		m.mu.Unlock()
		return whoamiReply(req)
	}}
}

// arm starts counting and returns the round trips sent before the model's
// first request since, listens for a Stop left out, once that request came
// (-1 until then).
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
		// The invocation's listen for a Stop (toolcallback's stop delay,
		// 500 ms) opens in the background and delays nothing: on a loaded
		// machine it can open before the model's first request, so it is
		// not a round trip the model waits for.
		pre := m.at.Sub(before)
		return pre.RoundTrips - pre.Listens
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
	modelA := &atFirstRequest{counter: counterA}
	modelB := &atFirstRequest{counter: counterB}
	a := newTeamInstanceWith(t, clientA, servers, modelA.strict(t))
	b := newTeamInstanceWith(t, clientB, servers, modelB.strict(t))
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

// TestUnusedSessionIsNotRecorded: a turn that lists a server's tools but
// calls none writes nothing for MCP, and the session it opened, which no
// other instance knows of, ends when this instance lets go of it.
func TestUnusedSessionIsNotRecorded(t *testing.T) {
	t.Parallel()
	srv := newHTTPServer(t)
	client := firestoretest.NewClient(t)
	ti := newTeamInstanceWith(t, client, []mcpregistry.Server{{Name: "notes", URL: srv.URL}}, &modeltest.Strict{T: t, Repeat: modeltest.TextReply("hello")})
	if got := ti.whoami("chat-1", ""); got.Session != "" {
		t.Fatalf("the text model called notes_whoami: %+v", got)
	}
	srv.initialized(t, 1) // the turn listed the tools on a new session
	chat := getChat(t, sessionstore.New(client, nil), mcpregistry.Chat{App: "app", User: "user-1", ID: "chat-1", Stored: true})
	if len(chat.MCP) != 0 {
		t.Errorf("chat records MCP sessions %+v after a turn that called no tool; want none", chat.MCP)
	}
	if err := ti.reg.Close(); err != nil {
		t.Fatal(err)
	}
	polltest.Until(t, "the server to end the session nobody recorded", func() bool { return srv.live() == 0 })
}

// TestWaitedTurnRereadsTheChat: a turn that read its chat, found the
// session busy and waited for the lease does not trust that read for its
// MCP sessions: the turn it waited for may have recorded one meanwhile,
// which it continues.
func TestWaitedTurnRereadsTheChat(t *testing.T) {
	t.Parallel()
	srv := newHTTPServer(t)
	servers := []mcpregistry.Server{{Name: "notes", URL: srv.URL}}
	clientA, _ := firestoretest.NewCountingClient(t)
	clientB, counterB := firestoretest.Reopen(t, clientA)
	enqueue := func(o *toolcallback.Options) { o.LeasePolicy, o.MaxWait = toolcallback.LeaseEnqueue, 20*time.Second }
	modelA := whoamiModel(t)
	modelA.Gate = make(chan struct{})
	a := newTeamInstanceWith(t, clientA, servers, modelA, enqueue)
	b := newTeamInstanceWith(t, clientB, servers, whoamiModel(t), enqueue)

	// A's turn holds the chat's lease, its model not yet answered: no MCP
	// session is recorded.
	type result struct {
		w   whoami
		err error
	}
	firstDone := make(chan result, 1)
	go func() {
		w, err := a.tryWhoami("chat-1", "")
		firstDone <- result{w, err}
	}()
	polltest.Until(t, "instance A's model to be asked", func() bool { return modelA.Calls() > 0 })
	// A's model is asked beside the commit that takes the lease.
	polltest.Until(t, "A's message stored", func() bool {
		_, err := sessionstore.New(clientA, nil).GetChat(t.Context(), "app", "user-1", "chat-1")
		return err == nil
	})
	// B reads the chat with its session, finds it busy, and waits.
	var reads atomic.Int32
	counterB.SetHook(func(method string, _ any) error {
		if strings.HasSuffix(method, "/BatchGetDocuments") {
			reads.Add(1)
		}
		return nil
	})
	secondDone := make(chan result, 1)
	go func() {
		w, err := b.tryWhoami("chat-1", "")
		secondDone <- result{w, err}
	}()
	polltest.Until(t, "instance B's turn to find the chat busy and wait", func() bool { return reads.Load() >= 2 })
	close(modelA.Gate) // A calls notes_whoami, recording its session
	first, second := <-firstDone, <-secondDone
	if first.err != nil || second.err != nil {
		t.Fatalf("turns on A and B: %v, %v", first.err, second.err)
	}
	if first.w.Session == "" || second.w.Session != first.w.Session {
		t.Fatalf("MCP session of the turn on A %q, of the turn that waited on B %q; want the one A recorded", first.w.Session, second.w.Session)
	}
	srv.initialized(t, 1)
}
