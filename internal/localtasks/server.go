package localtasks

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	cloudtasks "cloud.google.com/go/cloudtasks/apiv2"
	"cloud.google.com/go/cloudtasks/apiv2/cloudtaskspb"
	"google.golang.org/adk/v2/platform"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// DefaultTombstone is how long the name of a finished or deleted task stays
// taken, as on a queue made through the Cloud Tasks API.
const DefaultTombstone = time.Hour

// Signer returns a signed OIDC token (a JWT) for serviceAccount with the
// given audience, as Cloud Tasks mints one for a task that asks for it.
// Issuer.Sign is one.
type Signer func(ctx context.Context, serviceAccount, audience string) (string, error)

// Duplication says which deliveries the server sends twice, to test that a
// worker takes a task's work once however often it is delivered.
type Duplication int

const (
	// NoDuplicates delivers each attempt once.
	NoDuplicates Duplication = iota
	// DuplicateConcurrently sends every attempt's request twice at once;
	// the first request's response decides the attempt.
	DuplicateConcurrently
	// DuplicateAfterCompletion sends the request that completed a task once
	// more, after the task is gone.
	DuplicateAfterCompletion
)

// Options are the server's settings; nil means the defaults.
type Options struct {
	// Signer mints the OIDC tokens tasks ask for. Without one, CreateTask
	// refuses a task with an OIDC token (FailedPrecondition).
	Signer Signer
	// Tombstone is how long a completed, exhausted or deleted task's name
	// cannot be used again (default DefaultTombstone).
	Tombstone time.Duration
	// TimeScale multiplies every retry backoff and dispatch deadline the
	// server waits for (default 1): 0.01 turns a 10-minute deadline into 6 s.
	// The task's fields and headers still say the unscaled times.
	TimeScale float64
	// Duplicate makes the server deliver tasks twice.
	Duplicate Duplication
	// Logger receives a line per failed attempt (default: discarded).
	Logger *slog.Logger
}

// Stats counts what the server was asked to do and did.
type Stats struct {
	Creates    int // tasks created
	Dispatches int // requests sent to targets, duplicates included
	Duplicates int // requests sent by Options.Duplicate
}

// ErrStopped is returned by Wait when the server stops first.
var ErrStopped = errors.New("localtasks: server stopped")

// Server is a Cloud Tasks API served over gRPC on a loopback port, holding
// its queues and tasks in memory and dispatching them to their HTTP targets.
type Server struct {
	opts   Options
	grpc   *grpc.Server
	lis    net.Listener
	client *cloudtasks.Client
	http   *http.Client
	base   context.Context // carries Start's values, not its cancellation
	cancel context.CancelFunc
	wake   chan struct{}
	wg     sync.WaitGroup
	once   sync.Once

	mu         sync.Mutex
	stopped    bool // no new attempt starts
	finished   bool // every goroutine has ended: no event will come
	queues     map[string]*queue
	tasks      map[string]*task
	tombstones map[string]time.Time // name → when it may be used again
	stats      Stats
	events     []Event
	changed    chan struct{} // closed (and replaced) when events grow, and when the server has stopped
}

// Start serves an empty Cloud Tasks API on 127.0.0.1 and connects a client
// to it. ctx's values (ADK's platform clock and ids) reach every request;
// its cancellation does not: Stop ends the server.
func Start(ctx context.Context, opts *Options) (*Server, error) {
	s := &Server{
		queues:     map[string]*queue{},
		tasks:      map[string]*task{},
		tombstones: map[string]time.Time{},
		changed:    make(chan struct{}),
		wake:       make(chan struct{}, 1),
		http:       &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()},
	}
	if opts != nil {
		s.opts = *opts
	}
	if s.opts.Tombstone <= 0 {
		s.opts.Tombstone = DefaultTombstone
	}
	if s.opts.TimeScale <= 0 {
		s.opts.TimeScale = 1
	}
	if s.opts.Logger == nil {
		s.opts.Logger = slog.New(slog.DiscardHandler)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("in-process Cloud Tasks: %w", err)
	}
	s.lis = lis
	s.base, s.cancel = context.WithCancel(context.WithoutCancel(ctx))
	s.grpc = grpc.NewServer(grpc.WaitForHandlers(true))
	cloudtaskspb.RegisterCloudTasksServer(s.grpc, &api{s: s})
	s.wg.Go(func() { _ = s.grpc.Serve(lis) })
	s.wg.Go(s.schedule)
	s.client, err = cloudtasks.NewClient(ctx, s.ClientOptions()...)
	if err != nil {
		s.Stop()
		return nil, fmt.Errorf("in-process Cloud Tasks client: %w", err)
	}
	return s, nil
}

// Client is a Cloud Tasks client connected to the server; Stop closes it.
func (s *Server) Client() *cloudtasks.Client { return s.client }

// Addr is the server's host:port, for a client made elsewhere.
func (s *Server) Addr() string { return s.lis.Addr().String() }

// ClientOptions connect a Cloud Tasks client to the server: its address, no
// transport security, no credentials.
func (s *Server) ClientOptions() []option.ClientOption {
	return []option.ClientOption{
		option.WithEndpoint(s.Addr()),
		option.WithoutAuthentication(),
		option.WithGRPCDialOption(grpc.WithTransportCredentials(insecure.NewCredentials())),
	}
}

// Stats returns the counts so far.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats
}

// Stop closes the client and the listener, cancels the dispatches in flight
// (their events say Cancelled) and returns once every goroutine of the
// server has ended. It may be called more than once.
func (s *Server) Stop() {
	s.once.Do(func() {
		if s.client != nil {
			_ = s.client.Close()
		}
		s.grpc.Stop()
		s.mu.Lock()
		s.stopped = true
		s.mu.Unlock()
		s.cancel()
		s.wg.Wait()
		s.http.CloseIdleConnections()
		s.mu.Lock()
		s.finished = true
		close(s.changed)
		s.mu.Unlock()
	})
}

// now is the server's clock: ADK's platform clock of Start's context.
func (s *Server) now() time.Time { return platform.Now(s.base) }

// scaled is d as the server waits for it (Options.TimeScale).
func (s *Server) scaled(d time.Duration) time.Duration {
	return time.Duration(float64(d) * s.opts.TimeScale)
}

// notify wakes the scheduler: a task became due or a dispatch slot freed.
func (s *Server) notify() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}
