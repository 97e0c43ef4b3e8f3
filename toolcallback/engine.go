package toolcallback

import (
	"context"
	"errors"
	"fmt"
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

// engine runs turns and resumes for one app and agent, keeping paused
// calls in the ledger. It holds no state between requests: any engine
// value, on any instance, can resume a call another one paused.
type engine struct {
	app      string
	agent    string // the root agent's name
	sessions *sessionstore.Service
	client   *firestore.Client
	runner   *runner.Runner
	opts     Options
}

// newEngine returns an engine running root for app, storing sessions in sessions
// and the ledger beside them through client.
func newEngine(client *firestore.Client, sessions *sessionstore.Service, app string, root agent.Agent, opts *Options) (*engine, error) {
	if err := sessionstore.ValidateID("app name", app); err != nil {
		return nil, err
	}
	e := &engine{app: app, agent: root.Name(), sessions: sessions, client: client, opts: opts.withDefaults()}
	r, err := runner.New(runner.Config{AppName: app, Agent: root, SessionService: ledgerSessions{Service: sessions, e: e}})
	if err != nil {
		return nil, err
	}
	e.runner = r
	return e, nil
}

// turnRequest is one user message.
type turnRequest struct {
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

// runOptions stores the client's message id with the user message, so a
// second turn for the same message is refused (ErrMessageTaken).
func (req turnRequest) runOptions() []runner.RunOption {
	if req.MessageID == "" {
		return nil
	}
	return []runner.RunOption{runner.WithStateDelta(map[string]any{MessageKey: req.MessageID})}
}

// turn runs the agent on a user message. It takes the session's lease
// (policy LeaseReject or LeaseEnqueue), applies the pending-call policy, and
// returns the running invocation. Errors before the invocation starts are
// returned here: a busy session, pending calls under PendingReject.
//
// sess is the session as the caller read it (not under a lease), or nil.
// When it has no ledger records open and nothing to repair, the lease is
// taken by the append of the user message (see fastTurn); otherwise the
// lease is taken first and the open calls settled (see settledTurn).
func (e *engine) turn(ctx context.Context, req turnRequest, sess session.Session) (*Invocation, error) {
	var inv *Invocation
	var err error
	if sess == nil {
		sess, err = e.getSession(ctx, req.UserID, req.SessionID, 0, !e.opts.SessionStateOnly)
	}
	switch {
	case errors.Is(err, sessionstore.ErrNotFound):
		inv, err = e.firstTurn(ctx, req, nil)
	case err != nil:
		return nil, err
	case !sessionstore.MayHaveSideDocs(sess) && !needsRepair(sess.Events(), nil):
		inv, err = e.fastTurn(ctx, req, sess)
	default:
		return e.settledTurn(ctx, req)
	}
	if !errors.Is(err, sessionstore.ErrBusy) || e.opts.LeasePolicy != LeaseEnqueue {
		return inv, err
	}
	return e.settledTurn(ctx, req)
}

// fastTurn runs the turn on sess, read by the request: the lease is taken
// by the commit that stores the user message, conditional on the session
// being as read, so the model is called after two round trips (the read
// and that commit).
func (e *engine) fastTurn(ctx context.Context, req turnRequest, sess session.Session) (*Invocation, error) {
	// Checked on the session as read: the lease-taking commit below fails
	// if another request took a message since.
	if req.MessageID != "" && takenMessage(sess) == req.MessageID {
		return nil, fmt.Errorf("%w: %q", ErrMessageTaken, req.MessageID)
	}
	lease, err := e.sessions.TakeLeaseOnAppend(ctx, sess, req.ClientID+"/"+platform.NewUUID(ctx), e.opts.LeaseTTL)
	if err != nil {
		return nil, err
	}
	return e.startTaking(ctx, req, sess, lease, nil)
}

// firstTurn runs the first turn of a new session: the commit that stores
// the user message also creates the session, its lease and chat (if not
// nil).
func (e *engine) firstTurn(ctx context.Context, req turnRequest, chat *sessionstore.Chat) (*Invocation, error) {
	sess, lease, err := e.sessions.CreateOnAppend(ctx, &session.CreateRequest{AppName: e.app, UserID: req.UserID, SessionID: req.SessionID},
		chat, req.ClientID+"/"+platform.NewUUID(ctx), e.opts.LeaseTTL)
	if err != nil {
		return nil, err
	}
	return e.startTaking(ctx, req, sess, lease, nil)
}

// startTaking starts the turn on sess, whose first append takes lease, and
// returns once that append is made (or has failed, writing nothing): a busy
// session is reported before anything is streamed. after is as for start.
func (e *engine) startTaking(ctx context.Context, req turnRequest, sess session.Session, lease *sessionstore.Lease, after func(context.Context)) (*Invocation, error) {
	h := &hold{lease: lease, taken: make(chan error, 1)}
	inv := e.start(ctx, h, req.UserID, req.SessionID, req.ClientID, req.Content, sess, after, req.runOptions()...)
	var err error
	select {
	case err = <-h.taken:
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err != nil {
		// Nothing was stored; the invocation ends on its own.
		return nil, err
	}
	return inv, nil
}

// settledTurn takes the lease, settles what the session left open (pending
// calls, a dead invocation's leftovers) and runs the turn on the session
// as read under the lease.
func (e *engine) settledTurn(ctx context.Context, req turnRequest) (*Invocation, error) {
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
	sess, err := e.settleOpenCalls(ctx, req.UserID, req.SessionID, req.MessageID)
	if err != nil {
		e.release(ctx, h)
		return nil, err
	}
	return e.start(ctx, h, req.UserID, req.SessionID, req.ClientID, req.Content, sess, nil, req.runOptions()...), nil
}

// start runs the agent on msg in the background, detached from the
// caller's cancellation and bounded by InvocationTimeout (and by the lease:
// an invocation whose lease is lost stops), and releases the lease when it
// ends. after runs once the runner is done, before the lease is released.
// sess, when not nil, is the session as the caller read it under h: the
// runner uses it instead of reading the session again.
//
// Every event is stored before it is pushed to readers, and an event that
// pauses calls is stored with their ledger records (ledgerSessions): a
// reader never sees a call that has no record.
func (e *engine) start(ctx context.Context, h *hold, user, sid, client string, msg *genai.Content, sess session.Session, after func(context.Context), opts ...runner.RunOption) *Invocation {
	inv := newInvocation()
	// The run is detached from the request's cancellation, not from its
	// trace: its span, and ADK's under it, stay in the request's trace.
	ctx, span := tracer.Start(ctx, "baton.invocation", trace.WithAttributes(attribute.String("baton.session.id", sid)))
	runCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.opts.InvocationTimeout)
	runCtx = withHandoff(withRunState(h.bind(runCtx), client), &handoff{sess: sess, hold: h})
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
		h.took(e, runCtx, fmt.Errorf("invocation ended before storing the message: %w", runErr))
		if after != nil {
			after(runCtx)
		}
	}()
	return inv
}

// recentWindow is how many of a session's latest events the engine reads to
// repair what a dead invocation left and to check what a resume already
// delivered. Every turn repairs, so such a state is always among the events
// appended since the last turn; reading only those keeps a long history
// from being read twice per turn (ADK's runner reads it all anyway).
const recentWindow = 500

// loadRecent reads a session with its latest recentWindow events.
func (e *engine) loadRecent(ctx context.Context, user, sid string) (session.Session, error) {
	return e.getSession(ctx, user, sid, recentWindow, false)
}

// getSession reads a session with its latest recent events (0: all), with
// app: and user: state when shared (the runner's needs; the ledger reads
// events and appends).
func (e *engine) getSession(ctx context.Context, user, sid string, recent int, shared bool) (session.Session, error) {
	req := &session.GetRequest{AppName: e.app, UserID: user, SessionID: sid, NumRecentEvents: recent}
	get := e.sessions.GetSessionScoped
	if shared {
		get = e.sessions.Get
	}
	got, err := get(ctx, req)
	if err != nil {
		return nil, err
	}
	return got.Session, nil
}
