package mcpregistry_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/baton-run/baton/internal/firestoretest"
	"github.com/baton-run/baton/internal/polltest"
	"github.com/baton-run/baton/mcpregistry"
	"github.com/baton-run/baton/sessionstore"
)

// stdioEnv makes the test binary an MCP server on its stdin and stdout.
const stdioEnv = "BATON_MCPREGISTRY_TEST_STDIO"

func TestMain(m *testing.M) {
	if os.Getenv(stdioEnv) == "1" {
		s := newMCPServer(nil)
		mcp.AddTool(s, &mcp.Tool{Name: "crash"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			os.Exit(3)
			return nil, nil, nil
		})
		if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	firestoretest.Main(m)
}

type whoami struct {
	Session string `json:"session"`
	PID     int    `json:"pid"`
}

// newMCPServer is a go-sdk server whose whoami tool names the MCP session
// and the process serving it; inits counts the sessions it initialized.
func newMCPServer(inits *atomic.Int32) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, &mcp.ServerOptions{
		InitializedHandler: func(context.Context, *mcp.InitializedRequest) {
			if inits != nil {
				inits.Add(1)
			}
		},
	})
	mcp.AddTool(s, &mcp.Tool{Name: "whoami"}, func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, whoami, error) {
		return nil, whoami{Session: req.Session.ID(), PID: os.Getpid()}, nil
	})
	return s
}

// httpServer is a stateful Streamable HTTP MCP server in the test process.
type httpServer struct {
	URL    string
	mcp    *mcp.Server
	inits  atomic.Int32
	hangOn atomic.Bool   // DELETE requests block until the test ends
	hung   chan struct{} // closed at the end of the test
}

func newHTTPServer(t *testing.T) *httpServer {
	t.Helper()
	s := &httpServer{hung: make(chan struct{})}
	s.mcp = newMCPServer(&s.inits)
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.mcp }, nil)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodDelete && s.hangOn.Load() {
			<-s.hung
			return
		}
		h.ServeHTTP(w, r)
	}))
	s.URL = hs.URL
	t.Cleanup(func() {
		close(s.hung)
		hs.CloseClientConnections()
		hs.Close()
	})
	return s
}

// initialized waits until the server has received want initialized
// notifications, which the client sends after Connect returns and the
// server handles asynchronously, and has want sessions open, then checks
// that there are exactly want. A session is opened synchronously, by the
// initialize request, so the open count catches any extra connect; go-sdk
// also opens one for the request that asks whether the server is
// stateless (server/discover) and closes it only after answering, so that
// one may still be open for a moment after the handshake.
func (s *httpServer) initialized(t *testing.T, want int) {
	t.Helper()
	polltest.Until(t, fmt.Sprintf("the server to receive %d initialized notifications and have %d sessions open", want, want), func() bool {
		return int(s.inits.Load()) >= want && s.live() == want
	})
	if inits := int(s.inits.Load()); inits != want {
		t.Errorf("server initialized %d sessions; want %d", inits, want)
	}
}

// live counts the server's open MCP sessions.
func (s *httpServer) live() int {
	n := 0
	for range s.mcp.Sessions() {
		n++
	}
	return n
}

func newRegistry(t *testing.T, sessions *sessionstore.Service, servers []mcpregistry.Server, opts *mcpregistry.Options) *mcpregistry.Registry {
	t.Helper()
	r, err := mcpregistry.New(sessions, servers, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// call calls whoami on the chat's session with server.
func call(t *testing.T, r *mcpregistry.Registry, chat mcpregistry.Chat, server string) whoami {
	t.Helper()
	cs, err := r.Session(t.Context(), chat, server)
	if err != nil {
		t.Fatalf("Session(%v, %s) error = %v", chat, server, err)
	}
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "whoami"})
	if err != nil {
		t.Fatalf("whoami on %s: %v", server, err)
	}
	m := res.StructuredContent.(map[string]any)
	return whoami{Session: m["session"].(string), PID: int(m["pid"].(float64))}
}
