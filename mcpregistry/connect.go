package mcpregistry

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/baton-run/baton/sessionstore"
	"github.com/baton-run/baton/toolcallback"
)

// Protocol versions. A new connection lets go-sdk negotiate: it offers
// 2026-07-28 (stateless; a server that speaks it answers server/discover)
// and falls back to the initialize handshake of 2025-11-25 for a server
// that does not. A recorded session is continued with sessionsVersion, the
// last version with sessions (Mcp-Session-Id): only such a server has one.
const (
	sessionsVersion  = "2025-11-25"
	statelessVersion = "2026-07-28"
)

// conn is one client session and the tool list cached for it.
type conn struct {
	server string
	cs     *mcp.ClientSession
	http   *sessionTransport // nil for stdio
	dead   atomic.Bool
	// stateless: the server speaks 2026-07-28; it keeps no session, asks
	// for input by multi-round-trip results, and nothing is recorded.
	stateless bool
	live      liveCalls // calls in flight, for the server's elicitations

	// unrecorded: a new session of a stored chat, not yet recorded in
	// it (see Registry.record), which recordMu serializes.
	recordMu   sync.Mutex
	unrecorded atomic.Bool

	changes atomic.Uint64 // notifications/tools/list_changed received
	mu      sync.Mutex
	tools   []*mcp.Tool
	listed  uint64 // changes when tools was fetched
}

func (c *conn) broken() bool { return c.dead.Load() }
func (c *conn) markBroken()  { c.dead.Store(true) }

// endSession makes the next close end the server's session (HTTP DELETE);
// otherwise a close only drops this instance's connection. A stdio
// server's session ends with its process either way.
func (c *conn) endSession() {
	if c.http != nil {
		c.http.ending.Store(true)
	}
}

// toolList returns the server's tools, listed once per connection and
// again after the server says the list changed.
func (c *conn) toolList(ctx context.Context) ([]*mcp.Tool, error) {
	seen := c.changes.Load()
	c.mu.Lock()
	tools, fresh := c.tools, c.tools != nil && c.listed == seen
	c.mu.Unlock()
	if fresh {
		return tools, nil
	}
	tools = []*mcp.Tool{}
	for t, err := range c.cs.Tools(ctx, nil) {
		if err != nil {
			return nil, err
		}
		tools = append(tools, t)
	}
	c.mu.Lock()
	c.tools, c.listed = tools, seen
	c.mu.Unlock()
	return tools, nil
}

// open connects chat to srv. A Streamable HTTP server's session recorded
// in the chat is continued; when the server no longer has it, or none is
// recorded, a new one is started, which record records before its first
// use.
func (r *Registry) open(ctx context.Context, chat Chat, srv Server) (*conn, error) {
	if srv.Transport() == "stdio" {
		cmd := exec.Command(srv.Command[0], srv.Command[1:]...)
		if len(srv.Env) > 0 {
			cmd.Env = append(cmd.Environ(), srv.Env...)
		}
		return r.handshake(ctx, srv, &mcp.CommandTransport{Command: cmd, TerminateDuration: r.opts.CloseTimeout / 2}, nil, "")
	}
	if chat.Stored {
		recorded, err := r.recorded(ctx, chat)
		switch {
		case errors.Is(err, sessionstore.ErrNotFound):
			chat.Stored = false // nowhere to record a session
		case err != nil:
			return nil, err
		}
		if stored, ok := recorded[srv.Name]; ok {
			c, err := r.dial(ctx, srv, &stored, true)
			if err != nil {
				return nil, err
			}
			// The handshake was answered locally: listing the tools is the
			// first request the server sees, and says whether it still has
			// the session.
			if _, err = c.toolList(ctx); err == nil {
				return c, nil
			}
			r.closeConn(c, false)
			if !errors.Is(err, mcp.ErrSessionMissing) {
				return nil, err
			}
			r.opts.Logger.Info("MCP session gone from its server; starting a new one", "server", srv.Name, "chat", chat.ID)
		}
	}
	c, err := r.dial(ctx, srv, nil, true)
	if err != nil {
		return nil, err
	}
	// Recorded before its first use (record), not here: a turn's
	// connect comes before its first model request.
	c.unrecorded.Store(chat.Stored && !c.stateless)
	return c, nil
}

// recorded returns the chat's recorded MCP sessions: as the running turn
// read them with its chat (toolcallback.ChatMCPSessions), or else read from
// the chat record. A missing chat wraps sessionstore.ErrNotFound.
func (r *Registry) recorded(ctx context.Context, chat Chat) (map[string]sessionstore.MCPSession, error) {
	if m, ok := toolcallback.ChatMCPSessions(ctx); ok {
		return m, nil
	}
	rec, err := r.sessions.GetChat(ctx, chat.App, chat.User, chat.ID)
	if err != nil {
		return nil, err
	}
	return rec.MCP, nil
}

// record records c's session in chat, once, so that any instance can
// continue it: before the first request that may leave state on the
// server (a tool call, or a caller's own use of Session). Until then a
// session no other instance knows of ends with this connection. A chat
// deleted meanwhile leaves nowhere to record it, which is no failure;
// another failure is, and the next use tries again.
func (r *Registry) record(ctx context.Context, chat Chat, c *conn) error {
	c.recordMu.Lock()
	defer c.recordMu.Unlock()
	if !c.unrecorded.Load() {
		return nil
	}
	init, err := json.Marshal(c.cs.InitializeResult())
	if err == nil {
		err = r.sessions.SetChatMCP(ctx, sessionstore.ChatKey{App: chat.App, User: chat.User, ID: chat.ID}, c.server, &sessionstore.MCPSession{ID: c.cs.ID(), Init: string(init)})
	}
	if err != nil && !errors.Is(err, sessionstore.ErrNotFound) {
		return fmt.Errorf("record MCP session: %w", err)
	}
	c.unrecorded.Store(false)
	return nil
}

// dial opens a Streamable HTTP connection: a new session, or, with
// resume, the recorded one, which needs no request to the server. listen opens the stream on which the server
// announces changes to its tool list (a server allows one such stream per
// session, so a second instance may go without).
func (r *Registry) dial(ctx context.Context, srv Server, resume *sessionstore.MCPSession, listen bool) (*conn, error) {
	base := r.opts.HTTPClient.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	st := &sessionTransport{base: base, headers: srv.Headers, resume: resume}
	hc := *r.opts.HTTPClient
	hc.Transport = st
	version := "" // negotiate
	if resume != nil {
		version = sessionsVersion
	}
	c, err := r.handshake(ctx, srv, &mcp.StreamableClientTransport{Endpoint: srv.URL, HTTPClient: &hc, MaxRetries: -1, DisableStandaloneSSE: !listen}, st, version)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// handshake connects over t, asking for version ("" lets go-sdk
// negotiate). Multi-round-trip results are not fulfilled by go-sdk: they
// reach the tool call, which pauses the turn on them (input.go).
func (r *Registry) handshake(ctx context.Context, srv Server, t mcp.Transport, st *sessionTransport, version string) (*conn, error) {
	c := &conn{server: srv.Name, http: st}
	client := mcp.NewClient(&mcp.Implementation{Name: "baton", Version: "1"}, &mcp.ClientOptions{
		Logger:                 r.opts.Logger,
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { c.changes.Add(1) },
		MultiRoundTrip:         &mcp.MultiRoundTripOptions{Disabled: true},
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return r.elicit(c, req)
		},
	})
	cs, err := client.Connect(ctx, t, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		return nil, fmt.Errorf("connect to MCP server %s: %w", srv.Name, err)
	}
	c.cs = cs
	c.stateless = cs.InitializeResult().ProtocolVersion >= statelessVersion
	return c, nil
}

// sessionTransport carries one connection's HTTP requests. It adds the
// server's headers; for a resumed session it answers the initialize
// handshake itself, from the recorded session (a server refuses a second
// initialize, and the point is not to start a new session); and it sends
// the session-ending DELETE only once the chat has ended, since go-sdk's
// Close always sends one and an instance letting go of a connection must
// not end a session the chat still uses.
type sessionTransport struct {
	base      http.RoundTripper
	headers   map[string]string
	resume    *sessionstore.MCPSession
	ending    atomic.Bool
	handshook atomic.Bool
}

func (t *sessionTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodDelete && !t.ending.Load() {
		return reply(req, http.StatusNoContent, nil, nil), nil
	}
	if t.resume != nil && !t.handshook.Load() && req.Method == http.MethodPost {
		if resp, err := t.handshake(req); resp != nil || err != nil {
			return resp, err
		}
	}
	req = req.Clone(req.Context())
	for k, v := range t.headers {
		req.Header.Set(k, v)
	}
	return t.base.RoundTrip(req)
}

// handshake answers the initialize request and the initialized
// notification of a resumed session; other requests (nil, nil) go on.
func (t *sessionTransport) handshake(req *http.Request) (*http.Response, error) {
	body, err := io.ReadAll(req.Body)
	req.Body.Close()
	if err != nil {
		return nil, err
	}
	req.Body = io.NopCloser(bytes.NewReader(body))
	msg, err := jsonrpc.DecodeMessage(body)
	call, ok := msg.(*jsonrpc.Request)
	if err != nil || !ok {
		return nil, nil
	}
	switch call.Method {
	case "initialize":
		out, err := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: call.ID, Result: json.RawMessage(t.resume.Init)})
		if err != nil {
			return nil, err
		}
		h := http.Header{"Content-Type": {"application/json"}, "Mcp-Session-Id": {t.resume.ID}}
		return reply(req, http.StatusOK, h, out), nil
	case "notifications/initialized":
		t.handshook.Store(true)
		return reply(req, http.StatusAccepted, nil, nil), nil
	}
	return nil, nil
}

func reply(req *http.Request, status int, h http.Header, body []byte) *http.Response {
	if h == nil {
		h = http.Header{}
	}
	return &http.Response{StatusCode: status, Status: http.StatusText(status), Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: h, Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body)), Request: req}
}
