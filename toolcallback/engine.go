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
	"google.golang.org/adk/v2/plugin"
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
	root     agent.Agent
	agent    string // the root agent's name
	sessions *sessionstore.Service
	client   *firestore.Client
	opts     Options
}

// newEngine returns an engine running root for app, storing sessions in sessions
// and the ledger beside them through client.
func newEngine(client *firestore.Client, sessions *sessionstore.Service, app string, root agent.Agent, opts *Options) (*engine, error) {
	if err := sessionstore.ValidateID("app name", app); err != nil {
		return nil, err
	}
	e := &engine{app: app, root: root, agent: root.Name(), sessions: sessions, client: client, opts: opts.withDefaults()}
	// Each invocation builds its own runner (see start); this one checks
	// the agent tree once.
	if _, err := runner.New(runner.Config{AppName: app, Agent: root, SessionService: sessions}); err != nil {
		return nil, err
	}
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
	// meter is what the caller's limits read; nil: no limits.
	meter *meter
	// keep receives the session the invocation leaves, for a warm turn
	// (invocationRun.keep); nil: not kept.
	keep func(session.Session)
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
// This is where the turn's way is decided: when the session has no ledger
// records open and nothing to repair, the commit that stores the user
// message claims the lease (fastTurn); otherwise the lease is taken first
// and the open calls settled (settledTurn).
func (e *engine) turn(ctx context.Context, req turnRequest, sess session.Session) (*Invocation, error) {
	var inv *Invocation
	var err error
	if sess == nil {
		sess, err = e.getSession(ctx, nil, req.UserID, req.SessionID, 0, !e.opts.SessionStateOnly)
	}
	if err == nil {
		// Refused before anything is written.
		if err := req.meter.checkChat(sess, req.MessageID); err != nil {
			return nil, err
		}
	}
	switch {
	case errors.Is(err, sessionstore.ErrNotFound):
		inv, err = e.firstTurn(ctx, req, nil)
	case err != nil:
		return nil, err
	case !sessionstore.MayHaveOpenDocs(sess) && !needsRepair(sess.Events(), nil):
		inv, err = e.fastTurn(ctx, req, sess, false)
	default:
		return e.settledTurn(ctx, req)
	}
	if !errors.Is(err, sessionstore.ErrBusy) || e.opts.LeasePolicy != LeaseEnqueue {
		return inv, err
	}
	return e.settledTurn(ctx, req)
}

// fastTurn runs the turn on sess, read by the request: the commit that
// stores the user message claims the lease, conditional on the session
// being as read, so the model is called after two round trips (the read
// and that commit). warm: sess is this instance's copy (see warm.go), and
// the model is called at once, beside that commit.
func (e *engine) fastTurn(ctx context.Context, req turnRequest, sess session.Session, warm bool) (*Invocation, error) {
	// Checked on the session as read: the claiming commit fails if another
	// request took a message since.
	if req.MessageID != "" && takenMessage(sess) == req.MessageID {
		return nil, fmt.Errorf("%w: %q", ErrMessageTaken, req.MessageID)
	}
	claim, err := e.sessions.ClaimLease(ctx, sess, holderID(ctx, req.ClientID), e.opts.LeaseTTL)
	if err != nil {
		return nil, err
	}
	run := req.run(sess)
	run.claim, run.warm = claim, warm
	run.turnLog, run.writes, run.committed = req.meter.chatLog(sess), req.meter.userWrites(true), req.meter.committed
	return e.start(ctx, run)
}

// firstTurn runs the first turn of a new session: the commit that stores
// the user message also creates the session, its lease and chat (if not
// nil).
func (e *engine) firstTurn(ctx context.Context, req turnRequest, chat *sessionstore.Chat) (*Invocation, error) {
	sess, claim, err := e.sessions.ClaimNewSession(ctx, &session.CreateRequest{AppName: e.app, UserID: req.UserID, SessionID: req.SessionID},
		chat, holderID(ctx, req.ClientID), e.opts.LeaseTTL)
	if err != nil {
		return nil, err
	}
	run := req.run(sess)
	run.claim = claim
	run.turnLog, run.writes, run.committed = req.meter.chatLog(nil), req.meter.userWrites(true), req.meter.committed
	return e.start(ctx, run)
}

// settledTurn takes the lease, settles what the session left open (pending
// calls, a dead invocation's leftovers) and runs the turn on the session
// as read under the lease.
func (e *engine) settledTurn(ctx context.Context, req turnRequest) (*Invocation, error) {
	// The chat may have changed while the lease was waited for.
	ctx = withoutChatRead(ctx)
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
	sess, err := e.settleOpenCalls(ctx, h.lease, req.UserID, req.SessionID, req.MessageID)
	if err != nil {
		e.release(ctx, h)
		return nil, err
	}
	run := req.run(sess)
	// No ledger record is left open: the message's commit says so.
	run.held, run.docsClosed = h, true
	// The lease is taken: the counts join whatever is stored by now.
	run.turnLog, run.writes = req.meter.chatLog(sess), req.meter.userWrites(false)
	return e.start(ctx, run)
}

// invocationRun is one run of the agent to start.
type invocationRun struct {
	user, session, client string
	msg                   *genai.Content
	opts                  []runner.RunOption
	// handle is the session as the request read it, which the runner uses
	// instead of reading it again; nil: the runner reads it.
	handle session.Session
	// Exactly one of held and claim is set: the lease the request holds,
	// or the claim the commit storing the message takes.
	held  *heldLease
	claim *sessionstore.LeaseClaim
	// docsClosed makes the message's commit record that the ledger holds
	// no open record of the session.
	docsClosed bool
	// turnLog and writes count the turn against its limits in the
	// message's commit (see limits.go), and committed learns its time.
	turnLog   []time.Time
	writes    []sessionstore.DocWrite
	committed func(time.Time)
	// after runs once the runner is done, before the lease is released,
	// if the lease was held (a claim that lost its race delivered nothing).
	after func(context.Context)
	// warm stages the claiming append (see invocationSessions.stageClaim).
	warm bool
	// keep, when set, receives the session once the invocation released
	// it, if the handle is still the session as stored (a warm copy).
	keep func(session.Session)
}

// run is the invocation that answers req on sess.
func (req turnRequest) run(sess session.Session) invocationRun {
	return invocationRun{user: req.UserID, session: req.SessionID, client: req.ClientID, msg: req.Content, opts: req.runOptions(), handle: sess, keep: req.keep}
}

// start runs the agent in the background, detached from the caller's
// cancellation and bounded by InvocationTimeout (and by the lease: an
// invocation whose lease is lost stops), and releases the lease when it
// ends. With a claim, it returns once the commit that takes the lease is
// made, or has failed writing nothing: a busy session is reported before
// anything is streamed.
//
// Every event is stored before it is pushed to readers, and an event that
// pauses calls is stored with their ledger records (invocationSessions): a
// reader never sees a call that has no record.
func (e *engine) start(ctx context.Context, run invocationRun) (*Invocation, error) {
	svc := &invocationSessions{Service: e.sessions, e: e, client: run.client, tools: &pausingTools{}, handle: run.handle,
		first: sessionstore.AppendOptions{Claim: run.claim, DocsClosed: run.docsClosed, TurnLog: run.turnLog, Writes: run.writes,
			Committed: run.committed},
		stageClaim: run.warm && run.claim != nil, claimStored: make(chan struct{})}
	h := run.held
	if run.claim != nil {
		h = &heldLease{lease: run.claim.Lease()}
		svc.claimed = make(chan error, 1)
	}
	svc.held = h
	inv := newInvocation()
	svc.tools.live = &liveAsker{e: e, client: run.client, inv: inv}
	// The run is detached from the request's cancellation, not from its
	// trace: its span, and ADK's under it, stay in the request's trace.
	ctx, span := tracer.Start(ctx, "baton.invocation", trace.WithAttributes(attribute.String("baton.session.id", run.session)))
	runCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.opts.InvocationTimeout)
	sw := e.watchStop(runCtx, h) // the runner runs under sw.ctx, which a stop cancels
	go func() {
		select {
		case <-h.lease.Lost():
			e.opts.Logger.Error("lease lost mid-invocation", "session", run.session)
			cancel()
		case <-runCtx.Done():
		}
	}()
	go func() {
		var runErr error
		defer func() { endSpan(span, runErr) }()
		defer cancel()
		defer inv.close()
		defer func() {
			if sess := svc.finish(runCtx, h, inv); sess != nil && run.keep != nil {
				run.keep(sess)
			}
		}()
		// A run that ends (or panics) before its claiming append reports
		// that the claim was not taken; once the append reported, this
		// report does not count.
		defer func() {
			if runErr != nil {
				svc.claimDone(runCtx, fmt.Errorf("%w: %w", errNoClaimingAppend, runErr))
			}
			svc.claimDone(runCtx, errNoClaimingAppend)
		}()
		defer svc.awaitStagedClaim()
		defer func() {
			// A panicking tool or model must not take the instance down
			// with every other request on it.
			if p := recover(); p != nil {
				e.opts.Logger.Error("invocation panicked", "session", run.session, "panic", fmt.Sprint(p))
				runErr = fmt.Errorf("invocation panicked: %v", p)
				inv.fail(runErr)
			}
		}()
		runErr = e.run(sw.ctx, svc, run, inv, sw)
		svc.awaitStagedClaim() // then h says whether the lease is held
		runErr = e.afterRun(runCtx, svc, run, h, sw, inv, runErr)
	}()
	if svc.claimed == nil {
		return inv, nil
	}
	select {
	case err := <-svc.claimed:
		if err != nil {
			// Nothing was stored; the invocation ends (a warm turn's
			// model request, already sent, is cancelled).
			cancel()
			return nil, err
		}
		return inv, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// afterRun follows up a run that ended with runErr, when the lease was
// held: the staged replies are stored before anything else is appended,
// what a stop leaves is stored, then run.after. It returns the run's
// outcome.
func (e *engine) afterRun(ctx context.Context, svc *invocationSessions, run invocationRun, h *heldLease, sw *stopWatch, inv *Invocation, runErr error) error {
	if h.stop == nil {
		return runErr // a claim that was not taken delivered nothing
	}
	if sw.asked.Load() || run.after != nil {
		// What follows appends through other handles.
		if err := svc.pushHeld(ctx, inv); err != nil {
			inv.fail(err)
			return err
		}
	}
	if sw.asked.Load() {
		runErr = e.endStopped(ctx, h, run, sw, runErr != nil, inv)
		if runErr != nil {
			e.opts.Logger.Error("store what a stop leaves", "session", run.session, "error", runErr)
			inv.fail(runErr)
		}
	}
	if run.after != nil {
		run.after(ctx)
	}
	return runErr
}

// run runs the agent through a runner built around svc, pushing its events
// to inv (and noting them in sw), and returns the run's error.
func (e *engine) run(ctx context.Context, svc *invocationSessions, run invocationRun, inv *Invocation, sw *stopWatch) error {
	r, err := e.newRunner(svc)
	if err != nil {
		inv.fail(err)
		return err
	}
	ctx = withPausingTools(ctx, svc.tools)
	for ev, err := range r.Run(ctx, run.user, run.session, run.msg, agent.RunConfig{StreamingMode: e.opts.StreamingMode}, run.opts...) {
		if err != nil {
			if sw.asked.Load() {
				return err // cut by a stop: not a failure (endStopped follows)
			}
			e.opts.Logger.Error("invocation", "session", run.session, "error", err)
			inv.fail(err)
			return err
		}
		if ev != nil {
			sw.note(ev)
			if svc.holds(ev) {
				continue // pushed once stored
			}
			if err := svc.pushHeld(ctx, inv); err != nil {
				inv.fail(err)
				return err
			}
			inv.push(ev)
		}
		if paused := svc.takeFollowUps(); len(paused) > 0 {
			// A tool asked for input again: the invocation pauses on it.
			// Leaving the loop stops the runner before it calls the model.
			for _, ev := range paused {
				inv.push(ev)
			}
			return nil
		}
	}
	return nil
}

// newRunner builds the runner of one invocation on svc: with the file
// store and the plugin that hands the model the files, when there is one.
func (e *engine) newRunner(svc session.Service) (*runner.Runner, error) {
	cfg := runner.Config{AppName: e.app, Agent: e.root, SessionService: svc}
	if e.opts.Files != nil {
		files, err := filesPlugin(e.opts.Files, e.app)
		if err != nil {
			return nil, err
		}
		cfg.ArtifactService = chatArtifacts{e.opts.Files} // tools' files are keyed by the chat (toolfiles.go)
		cfg.PluginConfig = runner.PluginConfig{Plugins: []*plugin.Plugin{files}}
	}
	return runner.New(cfg)
}

// recentWindow is how many of a session's latest events the engine reads to
// repair what a dead invocation left and to check what a resume already
// delivered. Every turn repairs, so such a state is always among the events
// appended since the last turn; reading only those keeps a long history
// from being read twice per turn (ADK's runner reads it all anyway).
const recentWindow = 500

// loadRecent reads a session with its latest recentWindow events, under
// lease when not nil.
func (e *engine) loadRecent(ctx context.Context, lease *sessionstore.Lease, user, sid string) (session.Session, error) {
	return e.getSession(ctx, lease, user, sid, recentWindow, false)
}

// getSession reads a session with its latest recent events (0: all), with
// app: and user: state when shared (the runner's needs; the ledger reads
// events and appends). Under lease (when not nil) the read fails once the
// lease is lost, and the handle's appends are fenced by it.
func (e *engine) getSession(ctx context.Context, lease *sessionstore.Lease, user, sid string, recent int, shared bool) (session.Session, error) {
	if lease != nil {
		ctx = sessionstore.WithLease(ctx, lease)
	}
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
