package mcpregistry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/adk/v2/platform"

	"github.com/baton-run/baton/sessionstore"
)

// Errors the Registry returns.
var (
	// ErrUnknownServer: no server of that name was given to New.
	ErrUnknownServer = errors.New("unknown MCP server")
	// ErrTooManyProcesses: the instance already runs Options.MaxStdio
	// stdio servers.
	ErrTooManyProcesses = errors.New("too many stdio MCP servers on this instance")
	// ErrClosed: the registry was closed (the instance is shutting down).
	ErrClosed = errors.New("MCP registry closed")
	// ErrTimeout: a connect or close took longer than its deadline; the
	// registry stopped waiting for it.
	ErrTimeout = errors.New("MCP server did not answer in time")
)

// Options tunes a Registry. Zero fields take the defaults.
type Options struct {
	// ConnectTimeout bounds one connect, handshake and first tool listing
	// included. Default 10s.
	ConnectTimeout time.Duration
	// CloseTimeout bounds how long a close (and, at a chat's end, the
	// request that terminates the server's session) is waited for; a close
	// that takes longer is abandoned to run out on its own. Default 5s.
	CloseTimeout time.Duration
	// CallTimeout bounds one tool call. Default 1m.
	CallTimeout time.Duration
	// IdleTimeout: a connection unused for longer is closed on this
	// instance (the server keeps its session; the chat continues it later).
	// Default 10m.
	IdleTimeout time.Duration
	// MaxStdio bounds how many stdio server processes the instance runs.
	// Default 8.
	MaxStdio int
	// HTTPClient carries Streamable HTTP requests. Default: a client with
	// no overall timeout (the session's listening stream is long-lived).
	HTTPClient *http.Client
	Logger     *slog.Logger
}

func (o *Options) withDefaults() Options {
	var out Options
	if o != nil {
		out = *o
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&out.ConnectTimeout, 10*time.Second)
	def(&out.CloseTimeout, 5*time.Second)
	def(&out.CallTimeout, time.Minute)
	def(&out.IdleTimeout, 10*time.Minute)
	if out.MaxStdio <= 0 {
		out.MaxStdio = 8
	}
	if out.HTTPClient == nil {
		out.HTTPClient = &http.Client{}
	}
	if out.Logger == nil {
		out.Logger = slog.New(slog.DiscardHandler)
	}
	return out
}

// Chat names the conversation a connection belongs to. When Stored is
// false the id is an ADK session's rather than a chat's (an Engine used
// without a Team, or a chat id too long to recover): its sessions are not
// recorded, so they stay on this instance.
type Chat struct {
	App, User, ID string
	Stored        bool
}

func chatOf(c *sessionstore.Chat) Chat {
	return Chat{App: c.App, User: c.UserID, ID: c.ID, Stored: true}
}

type key struct {
	chat   Chat
	server string
}

// entry is one key's connection. ready is closed once the connect that
// created the entry has finished; conn and err are set before. used and
// endSession are guarded by Registry.mu.
type entry struct {
	ready      chan struct{}
	conn       *conn
	err        error
	used       time.Time
	endSession bool // set when removed: closing ends the server's session
}

// Registry holds this instance's MCP client sessions, one per chat and
// server, for every agent of the chat. Its lock guards the map only: no
// connect, close or request runs under it.
type Registry struct {
	sessions *sessionstore.Service
	servers  map[string]Server
	opts     Options

	mu     sync.Mutex
	conns  map[key]*entry
	stdio  int                 // stdio entries present (starting or running)
	uses   map[string][]string // agent name → servers it declares
	closed bool
	stop   chan struct{} // ends the idle sweeper
}

// New returns a registry for servers. Chat records, where Streamable HTTP
// sessions are kept for other instances, are read and written through
// sessions. It closes idle connections in the background until Close.
func New(sessions *sessionstore.Service, servers []Server, opts *Options) (*Registry, error) {
	r := &Registry{sessions: sessions, servers: map[string]Server{}, opts: opts.withDefaults(),
		conns: map[key]*entry{}, uses: map[string][]string{}, stop: make(chan struct{})}
	for _, s := range servers {
		if err := s.validate(); err != nil {
			return nil, err
		}
		if _, dup := r.servers[s.Name]; dup {
			return nil, fmt.Errorf("two MCP servers named %q", s.Name)
		}
		r.servers[s.Name] = s
	}
	go r.sweepIdle()
	return r, nil
}

// Session returns the chat's session with server, connecting on first use.
// Concurrent callers for one chat and server share one connect. A
// connection found broken is dropped and replaced.
func (r *Registry) Session(ctx context.Context, chat Chat, server string) (*mcp.ClientSession, error) {
	c, err := r.conn(ctx, chat, server)
	if err == nil {
		// The caller may do anything with it.
		err = r.record(ctx, chat, c)
	}
	if err != nil {
		return nil, err
	}
	return c.cs, nil
}

func (r *Registry) conn(ctx context.Context, chat Chat, server string) (*conn, error) {
	srv, ok := r.servers[server]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownServer, server)
	}
	k := key{chat: chat, server: server}
	for {
		r.mu.Lock()
		if r.closed {
			r.mu.Unlock()
			return nil, ErrClosed
		}
		e := r.conns[k]
		if e == nil {
			if srv.Transport() == "stdio" && r.stdio >= r.opts.MaxStdio {
				r.mu.Unlock()
				return nil, fmt.Errorf("%w (%d)", ErrTooManyProcesses, r.opts.MaxStdio)
			}
			e = &entry{ready: make(chan struct{}), used: platform.Now(ctx)}
			r.conns[k] = e
			if srv.Transport() == "stdio" {
				r.stdio++
			}
			r.mu.Unlock()
			r.connect(ctx, k, srv, e)
		} else {
			e.used = platform.Now(ctx)
			r.mu.Unlock()
		}
		select {
		case <-e.ready:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if errors.Is(e.err, errRemoved) {
			continue
		}
		if e.err != nil {
			return nil, e.err
		}
		if !e.conn.broken() {
			return e.conn, nil
		}
		r.drop(k, e, false)
	}
}

// connect opens the connection of a new entry, outside the lock and
// detached from the caller (other callers wait for it too), bounded by
// ConnectTimeout. If the entry was removed meanwhile (the chat ended, the
// registry closed), the new connection is closed, again outside the lock,
// and ending its server session if the remover asked for that.
func (r *Registry) connect(ctx context.Context, k key, srv Server, e *entry) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.opts.ConnectTimeout)
	defer cancel()
	c, err := r.open(ctx, k.chat, srv)
	if err != nil && ctx.Err() != nil {
		err = fmt.Errorf("%w: connect to %s: %w", ErrTimeout, srv.Name, err)
	}
	var late *conn
	r.mu.Lock()
	current := r.conns[k] == e
	switch {
	case err != nil && current:
		r.remove(k, e, false)
	case err == nil && !current:
		late, c, err = c, nil, errRemoved
	}
	e.conn, e.err = c, err
	end := e.endSession
	close(e.ready)
	r.mu.Unlock()
	switch {
	case late != nil:
		r.closeConn(late, end)
		return
	case err != nil:
		r.opts.Logger.Warn("MCP connect", "server", srv.Name, "chat", k.chat.ID, "error", err)
		return
	}
	go func() {
		c.cs.Wait() // the server went away or the connection broke
		c.markBroken()
		r.drop(k, e, false)
	}()
}

// errRemoved: the entry was removed while it connected; its waiters look
// again.
var errRemoved = errors.New("connection removed while connecting")

// remove deletes k's entry, if it is still e; endSession says whether
// closing it ends the server's session. r.mu must be held.
func (r *Registry) remove(k key, e *entry, endSession bool) bool {
	if r.conns[k] != e {
		return false
	}
	delete(r.conns, k)
	e.endSession = endSession
	if r.servers[k.server].Transport() == "stdio" {
		r.stdio--
	}
	return true
}

// drop removes k's entry if it is still e and closes its connection;
// endSession also ends the server's session.
func (r *Registry) drop(k key, e *entry, endSession bool) error {
	r.mu.Lock()
	removed := r.remove(k, e, endSession)
	r.mu.Unlock()
	if !removed {
		return nil
	}
	return r.closeEntry(e)
}

// closeEntry closes an entry already removed from the map. An entry still
// connecting is left to its connect, which closes what it opens.
func (r *Registry) closeEntry(e *entry) error {
	select {
	case <-e.ready:
	default:
		return nil
	}
	if e.conn == nil {
		return nil
	}
	return r.closeConn(e.conn, e.endSession)
}

// closeConn closes c, waiting at most CloseTimeout: a server that hangs
// on close delays nobody beyond that.
func (r *Registry) closeConn(c *conn, endSession bool) error {
	// A session no other instance knows of cannot be continued.
	if endSession || c.unrecorded.Load() {
		c.endSession()
	}
	done := make(chan error, 1)
	go func() { done <- c.cs.Close() }()
	t := time.NewTimer(r.opts.CloseTimeout)
	defer t.Stop()
	select {
	case err := <-done:
		return err
	case <-t.C:
		return fmt.Errorf("%w: close %s", ErrTimeout, c.server)
	}
}

// EvictIdle closes the connections unused since before now-IdleTimeout
// and returns how many it closed. Their servers keep the sessions, which
// the chats continue later. The registry calls it periodically.
func (r *Registry) EvictIdle(now time.Time) int {
	cutoff := now.Add(-r.opts.IdleTimeout)
	var idle []*entry
	r.mu.Lock()
	for k, e := range r.conns {
		if e.used.Before(cutoff) && r.remove(k, e, false) {
			idle = append(idle, e)
		}
	}
	r.mu.Unlock()
	r.closeAll(idle)
	return len(idle)
}

func (r *Registry) sweepIdle() {
	t := time.NewTicker(max(r.opts.IdleTimeout/4, time.Second))
	defer t.Stop()
	for {
		select {
		case <-r.stop:
			return
		case now := <-t.C:
			r.EvictIdle(now)
		}
	}
}

// closeAll closes entries concurrently, each bounded by CloseTimeout, and
// returns the first error.
func (r *Registry) closeAll(entries []*entry) error {
	errs := make([]error, len(entries))
	var wg sync.WaitGroup
	for i, e := range entries {
		wg.Go(func() { errs[i] = r.closeEntry(e) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Close closes every connection of the instance, for its shutdown: stdio
// processes end; Streamable HTTP servers keep their sessions, which the
// chats continue on other instances. Later calls get ErrClosed.
func (r *Registry) Close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	close(r.stop)
	var all []*entry
	for k, e := range r.conns {
		r.remove(k, e, false)
		all = append(all, e)
	}
	r.mu.Unlock()
	return r.closeAll(all)
}

// discard drops k's connection if it is still c.
func (r *Registry) discard(k key, c *conn) {
	r.mu.Lock()
	e := r.conns[k]
	r.mu.Unlock()
	if e == nil {
		return
	}
	select {
	case <-e.ready:
		if e.conn == c {
			r.drop(k, e, false)
		}
	default:
	}
}
