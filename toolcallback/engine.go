package toolcallback

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"cloud.google.com/go/firestore"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/platform"
	"google.golang.org/adk/v2/runner"
	"google.golang.org/adk/v2/session"
	"google.golang.org/genai"

	"github.com/baton-run/baton/sessionstore"
)

// LeasePolicy says what a turn does when another invocation holds the
// session.
type LeasePolicy string

const (
	// LeaseReject fails at once with a *sessionstore.BusyError.
	LeaseReject LeasePolicy = "reject"
	// LeaseEnqueue waits up to Options.MaxWait for the session.
	LeaseEnqueue LeasePolicy = "enqueue"
)

// PendingPolicy says what a new message does to calls still pending.
type PendingPolicy string

const (
	// PendingCancel answers each pending call with a cancellation error,
	// then lets the message proceed.
	PendingCancel PendingPolicy = "cancel"
	// PendingReject refuses the message with a *PendingCallsError.
	PendingReject PendingPolicy = "reject"
)

// Options tunes an Engine. Nil or zero fields take the defaults.
type Options struct {
	LeasePolicy   LeasePolicy   // default LeaseReject
	MaxWait       time.Duration // LeaseEnqueue's bound; default 10s
	PendingPolicy PendingPolicy // default PendingCancel
	// ResumeWait bounds how long a resume waits for a busy session (a
	// resume continues an interaction already under way, so it waits
	// whatever the lease policy). Default 12s: a little over LeaseTTL's
	// default, so an answer outwaits the lease of a holder that died.
	ResumeWait time.Duration
	// InvocationTimeout bounds one invocation, detached from the caller.
	// Default 2m.
	InvocationTimeout time.Duration
	// LeaseTTL is the term of a session lease. The holder renews it every
	// third of a term while it works, so a holder that dies frees the
	// session within one term. Default 10s.
	LeaseTTL time.Duration
	// CallTimeout is how long a paused call waits for its answer when its
	// tool sets no timeout (approvals always use it). Default 10m.
	CallTimeout time.Duration
	// AnswerGrace is how long after an answer Sweep leaves a step to the
	// request that recorded it before resuming it itself. Default 1m.
	AnswerGrace time.Duration
	// Retention is how long a finished ledger record is kept (its TTL
	// field) after it expires. Default 7 days.
	Retention time.Duration
	// MaxAnswerBytes limits one answer's JSON. Default 256 KiB.
	MaxAnswerBytes int
	// TokenKey signs call tokens; Token fails without one.
	TokenKey []byte
	// ApprovalsAnyDevice lets any of the user's clients answer approvals.
	// By default only the client that started the turn may.
	ApprovalsAnyDevice bool
	// StreamingMode of the runner. Default SSE, so text streams as partial
	// events.
	StreamingMode agent.StreamingMode
	// IdleRetention: a Team's Sweep deletes chats idle for longer, with all
	// their documents. Default 30 days.
	IdleRetention time.Duration
	Logger        *slog.Logger
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
	if out.LeasePolicy == "" {
		out.LeasePolicy = LeaseReject
	}
	if out.PendingPolicy == "" {
		out.PendingPolicy = PendingCancel
	}
	def(&out.MaxWait, 10*time.Second)
	def(&out.ResumeWait, 12*time.Second)
	def(&out.InvocationTimeout, 2*time.Minute)
	def(&out.LeaseTTL, 10*time.Second)
	def(&out.CallTimeout, 10*time.Minute)
	def(&out.AnswerGrace, time.Minute)
	def(&out.Retention, 7*24*time.Hour)
	def(&out.IdleRetention, 30*24*time.Hour)
	if out.MaxAnswerBytes <= 0 {
		out.MaxAnswerBytes = 256 << 10
	}
	if out.StreamingMode == "" {
		out.StreamingMode = agent.StreamingModeSSE
	}
	if out.Logger == nil {
		out.Logger = slog.New(slog.DiscardHandler)
	}
	return out
}

// Engine runs turns and resumes for one app and agent, keeping paused
// calls in the ledger. It holds no state between requests: any Engine
// value, on any instance, can resume a call another one paused.
type Engine struct {
	app      string
	agent    string // the root agent's name
	sessions *sessionstore.Service
	client   *firestore.Client
	runner   *runner.Runner
	opts     Options
}

// New returns an Engine running root for app, storing sessions in sessions
// and the ledger beside them through client.
func New(client *firestore.Client, sessions *sessionstore.Service, app string, root agent.Agent, opts *Options) (*Engine, error) {
	if err := sessionstore.ValidateID("app name", app); err != nil {
		return nil, err
	}
	e := &Engine{app: app, agent: root.Name(), sessions: sessions, client: client, opts: opts.withDefaults()}
	r, err := runner.New(runner.Config{AppName: app, Agent: root, SessionService: ledgerSessions{Service: sessions, e: e}})
	if err != nil {
		return nil, err
	}
	e.runner = r
	return e, nil
}

// TurnRequest is one user message.
type TurnRequest struct {
	UserID    string
	SessionID string // created on first use
	ClientID  string // the device or tab sending the message
	Content   *genai.Content
	// MessageID, when set, is the client's id for the message. It is stored
	// with the message (session state MessageKey), and a turn whose
	// MessageID is the one the session last took fails with
	// ErrMessageTaken, checked under the lease: a client that sends the
	// same message twice gets one turn.
	MessageID string
}

// Turn runs the agent on a user message. It takes the session's lease
// (policy LeaseReject or LeaseEnqueue), applies the pending-call policy, and
// returns the running invocation. Errors before the invocation starts are
// returned here: a busy session, pending calls under PendingReject, invalid
// ids.
func (e *Engine) Turn(ctx context.Context, req TurnRequest) (*Invocation, error) {
	if err := validateIDs(req.UserID, req.SessionID, req.ClientID); err != nil {
		return nil, err
	}
	if req.Content == nil || len(req.Content.Parts) == 0 {
		return nil, fmt.Errorf("%w: empty message", ErrInvalidAnswer)
	}
	if e.opts.PendingPolicy == PendingReject {
		// Refuse before taking the lease, so a refused message writes
		// nothing; settleOpenCalls checks again under the lease.
		if err := e.rejectIfPending(ctx, req.UserID, req.SessionID); err != nil {
			return nil, err
		}
	}
	wait := time.Duration(0)
	if e.opts.LeasePolicy == LeaseEnqueue {
		wait = e.opts.MaxWait
	}
	h, err := e.acquire(ctx, req.UserID, req.SessionID, req.ClientID, wait, true)
	if err != nil {
		return nil, err
	}
	ctx = h.bind(ctx)
	if err := e.settleOpenCalls(ctx, req.UserID, req.SessionID, req.MessageID); err != nil {
		e.release(ctx, h)
		return nil, err
	}
	var opts []runner.RunOption
	if req.MessageID != "" {
		opts = append(opts, runner.WithStateDelta(map[string]any{MessageKey: req.MessageID}))
	}
	return e.start(ctx, h, req.UserID, req.SessionID, req.ClientID, req.Content, nil, opts...), nil
}

// hold is a session lease this instance holds and keeps renewed until it
// releases it.
type hold struct {
	lease *sessionstore.Lease
	stop  func() // stops renewing
}

// bind returns ctx under which session reads and appends act as the
// lease's holder (see sessionstore.WithLease).
func (h *hold) bind(ctx context.Context) context.Context { return sessionstore.WithLease(ctx, h.lease) }

// acquire takes the session's lease, waiting up to wait while it is busy,
// and keeps it renewed.
func (e *Engine) acquire(ctx context.Context, user, sid, client string, wait time.Duration, create bool) (*hold, error) {
	holder := client + "/" + platform.NewUUID(ctx)
	deadline := time.Now().Add(wait)
	delay := 50 * time.Millisecond
	for {
		lease, err := e.sessions.AcquireLease(ctx, e.app, user, sid, holder, e.opts.LeaseTTL)
		if err == nil {
			return &hold{lease: lease, stop: e.sessions.KeepLease(ctx, lease, e.opts.LeaseTTL)}, nil
		}
		if errors.Is(err, sessionstore.ErrNotFound) && create {
			_, cerr := e.sessions.Create(ctx, &session.CreateRequest{AppName: e.app, UserID: user, SessionID: sid})
			if cerr != nil && !isAlreadyExists(cerr) {
				return nil, cerr
			}
			continue
		}
		if errors.Is(err, sessionstore.ErrNotFound) {
			return nil, fmt.Errorf("%w: session %q", ErrNotFound, sid)
		}
		left := time.Until(deadline)
		if !errors.Is(err, sessionstore.ErrBusy) || left <= 0 {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(min(delay, left)): // the last try is at the deadline
		}
		delay = min(delay*2, 500*time.Millisecond)
	}
}

func (e *Engine) release(ctx context.Context, h *hold) {
	h.stop()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := e.sessions.ReleaseLease(ctx, h.lease); err != nil {
		e.opts.Logger.Warn("release lease", "session", h.lease.SessionID, "error", err)
	}
}

// start runs the agent on msg in the background, detached from the
// caller's cancellation and bounded by InvocationTimeout (and by the lease:
// an invocation whose lease is lost stops), and releases the lease when it
// ends. after runs once the runner is done, before the lease is released.
//
// Every event is stored before it is pushed to readers, and an event that
// pauses calls is stored with their ledger records (ledgerSessions): a
// reader never sees a call that has no record.
func (e *Engine) start(ctx context.Context, h *hold, user, sid, client string, msg *genai.Content, after func(context.Context), opts ...runner.RunOption) *Invocation {
	inv := newInvocation()
	// The run is detached from the request's cancellation, not from its
	// trace: its span, and ADK's under it, stay in the request's trace.
	ctx, span := tracer.Start(ctx, "baton.invocation", trace.WithAttributes(attribute.String("baton.session.id", sid)))
	runCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.opts.InvocationTimeout)
	runCtx = withRunState(h.bind(runCtx), client)
	go func() {
		select {
		case <-h.lease.Lost():
			e.opts.Logger.Error("lease lost mid-invocation", "session", sid)
			cancel()
		case <-runCtx.Done():
		}
	}()
	go func() {
		var runErr error
		defer func() { endSpan(span, runErr) }()
		defer cancel()
		defer inv.close()
		defer e.release(runCtx, h)
		defer func() {
			// A panicking tool or model must not take the instance down
			// with every other request on it.
			if p := recover(); p != nil {
				e.opts.Logger.Error("invocation panicked", "session", sid, "panic", fmt.Sprint(p))
				runErr = fmt.Errorf("invocation panicked: %v", p)
				inv.fail(runErr)
			}
		}()
		for ev, err := range e.runner.Run(runCtx, user, sid, msg, agent.RunConfig{StreamingMode: e.opts.StreamingMode}, opts...) {
			if err != nil {
				e.opts.Logger.Error("invocation", "session", sid, "error", err)
				runErr = err
				inv.fail(err)
				break
			}
			if ev != nil {
				inv.push(ev)
			}
		}
		if after != nil {
			after(runCtx)
		}
	}()
	return inv
}

func validateIDs(user, sid, client string) error {
	if err := sessionstore.ValidateID("user id", user); err != nil {
		return err
	}
	if err := sessionstore.ValidateID("session id", sid); err != nil {
		return err
	}
	if client == "" {
		return nil
	}
	return sessionstore.ValidateID("client id", client)
}
