package toolcallback

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/plugin"
	"google.golang.org/adk/v2/runner"
	"google.golang.org/adk/v2/session"
	"google.golang.org/genai"

	"github.com/baton-run/baton/feedback"
	"github.com/baton-run/baton/ledger"
	"github.com/baton-run/baton/limits"
	"github.com/baton-run/baton/runguard"
	"github.com/baton-run/baton/sessionstore"
	"github.com/baton-run/baton/thoughts"
	"github.com/baton-run/baton/transcript"
)

// engine runs one agent's invocations: the turns, resumes and stops of the
// sessions that agent holds. It holds no state between requests: any
// engine value, on any instance, can resume a call another one paused.
type engine struct {
	app      string
	root     agent.Agent
	agent    string // the root agent's name
	sessions *sessionstore.Service
	ledger   *ledger.Ledger
	feedback *feedback.Store
	limits   *limits.Counter // the team's: a background tool's own model calls are held to the budget
	opts     *Options
	// work are the member's background tools, by name: the worker finds
	// a call's tool here, on any instance.
	background map[string]*BackgroundTool
	// remote are the member's remote agents, by tool name.
	remote map[string]*RemoteTool
}

// newEngine returns the engine running m's agent for t.
func newEngine(t *Team, m Member) (*engine, error) {
	root := m.Agent
	e := &engine{app: t.app, root: root, agent: root.Name(), sessions: t.sessions, ledger: t.ledger, feedback: t.feedback, limits: t.limits, opts: t.opts,
		background: map[string]*BackgroundTool{}, remote: map[string]*RemoteTool{}}
	for _, rt := range m.Remote {
		if _, dup := e.remote[rt.Name()]; dup {
			return nil, fmt.Errorf("two remote agents named %q", rt.Name())
		}
		e.remote[rt.Name()] = rt
	}
	for _, bt := range m.Background {
		if _, dup := e.background[bt.Name()]; dup {
			return nil, fmt.Errorf("two background tools named %q", bt.Name())
		}
		e.background[bt.Name()] = bt
	}
	// Each invocation builds its own runner (see start); this one checks
	// the agent tree once.
	if _, err := runner.New(runner.Config{AppName: t.app, Agent: root, SessionService: t.sessions}); err != nil {
		return nil, err
	}
	return e, nil
}

// countTokens counts the n model tokens an event reported at at in the
// commit that stores it: the session's day (Options.CountTokens) and the
// deployment's (Options.CountServiceTokens).
func (e *engine) countTokens(opts *sessionstore.AppendOptions, n int64, at time.Time) {
	if n <= 0 {
		return
	}
	if e.opts.CountTokens {
		opts.Tokens = sessionstore.TokenUse{N: n, At: at}
	}
	if e.opts.CountServiceTokens {
		opts.Writes = append(opts.Writes, e.limits.TokensWrite(n, at)...)
	}
}

// runOptions stores the client's message id with the user message, so a
// second turn for the same message is refused (ErrMessageTaken).
func runOptions(messageID string) []runner.RunOption {
	if messageID == "" {
		return nil
	}
	return []runner.RunOption{runner.WithStateDelta(map[string]any{transcript.MessageIDKey: messageID})}
}

// invocationRun is one run of the agent to start.
type invocationRun struct {
	user, session, client string
	// chat is the chat whose session the run is on ("" for none): the
	// commits that claim and release the session keep its listing
	// current (sessionstore.Listing). newChat: the claiming commit creates
	// the chat, listing and all.
	chat    string
	newChat bool
	// title, when not nil, is the chat's title being made beside the run.
	title *titleJob
	msg   *genai.Content
	opts  []runner.RunOption
	// handle is the session as the request read it, which the runner uses
	// instead of reading it again; nil: the runner reads it.
	handle *sessionstore.Session
	// Exactly one of held and claim is set: the lease the request holds,
	// or the claim the commit storing the message takes.
	held  *heldLease
	claim *sessionstore.LeaseClaim
	// docsClosed makes the message's commit record that the ledger holds
	// no open record of the session.
	docsClosed bool
	// turnLog and writes count the turn against its limits in the
	// message's commit (see package limits), and committed learns its
	// time.
	turnLog   []time.Time
	writes    []sessionstore.Write
	committed func(time.Time)
	// resumed are the ledger records whose answers the run delivers (a
	// resume's): once the runner is done, and before the lease is
	// released, they are marked resumed, if the lease was held (a claim
	// that lost its race delivered nothing). closesDocs: they are all the
	// session's open records, so the release may record that none is open
	// when the run created none (the next turn then takes the short path).
	resumed    []*Call
	closesDocs bool
	// speculative stages the claiming append, so that the model is asked
	// beside its commit (see invocationSessions.stageClaim); gate must pass
	// before that commit is sent.
	speculative bool
	gate        func() error
	// keep, when set, receives the session once the invocation released
	// it, if the handle is still the session as stored (a warm copy).
	keep func(*sessionstore.Session)
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
	svc := e.sessionsFor(ctx, run)
	inv := newInvocation()
	inv.first = countInvocation(ctx, e.agent, run.resumed, time.Now())
	svc.tools.asker = &questionAsker{e: e, client: run.client, chat: run.chat, push: inv.push}
	// The run is detached from the request's cancellation, not from its
	// trace: its span, and ADK's under it, stay in the request's trace.
	ctx, span := tracer.Start(ctx, "baton.invocation", trace.WithAttributes(attribute.String("baton.session.id", run.session)))
	runCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.opts.InvocationTimeout)
	sw := e.watchStop(runCtx, svc.held) // the runner runs under sw.ctx, which a stop cancels
	go cancelOnLostLease(runCtx, svc.held, cancel, e.opts.Logger)
	go func() {
		err := e.runToEnd(runCtx, svc, run, inv, sw)
		endSpan(span, err)
		cancel()
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

// sessionsFor is the session service of run's invocation.
func (e *engine) sessionsFor(ctx context.Context, run invocationRun) *invocationSessions {
	writes := run.writes
	if run.chat != "" && !run.newChat {
		writes = append(slices.Clone(writes), e.activity(ctx, run.user, run.chat, false))
	}
	svc := &invocationSessions{Service: e.sessions, e: e, client: run.client, chat: run.chat, title: run.title, tools: &pausingTools{}, handle: run.handle,
		resumed: run.resumed,
		first: sessionstore.AppendOptions{Claim: run.claim, DocsClosed: run.docsClosed, TurnLog: run.turnLog, Writes: writes,
			Committed: run.committed},
		stageClaim: run.speculative && run.claim != nil, gate: run.gate, claimStored: make(chan struct{}), held: run.held}
	if run.claim != nil {
		svc.held = &heldLease{lease: run.claim.Lease()}
		svc.claimed = make(chan error, 1)
	}
	return svc
}

// cancelOnLostLease cancels an invocation whose lease h is lost, until ctx
// ends.
func cancelOnLostLease(ctx context.Context, h *heldLease, cancel context.CancelFunc, log *slog.Logger) {
	select {
	case <-h.lease.Lost():
		log.Error("lease lost mid-invocation", "session", h.lease.SessionID)
		cancel()
	case <-ctx.Done():
	}
}

// errPanicked wraps the value a panicking tool or model raised.
var errPanicked = errors.New("invocation panicked")

// runToEnd runs the agent and ends the invocation, in this order: the
// runner runs; a staged claim's commit reports (then the handle says
// whether the lease is held), and a run that ended before its claiming
// append reports the claim as not taken; under the lease, what the run
// left is stored (afterRun); the lease is released, with the staged
// replies, and the handle kept for a warm turn; the readers are told the
// invocation ended. It returns the run's outcome.
func (e *engine) runToEnd(ctx context.Context, svc *invocationSessions, run invocationRun, inv *Invocation, sw *stopWatch) error {
	err := e.runGuarded(sw.ctx, svc, run, inv, sw)
	_ = svc.awaitStagedClaim() // its outcome went to the caller through claimed
	if err != nil {
		svc.claimDone(ctx, fmt.Errorf("%w: %w", errNoClaimingAppend, err))
	}
	svc.claimDone(ctx, errNoClaimingAppend) // only the first report counts
	if !errors.Is(err, errPanicked) {
		err = e.afterRun(ctx, svc, run, sw, inv, err)
	}
	if sess := svc.finish(ctx, inv); sess != nil && run.keep != nil {
		run.keep(sess)
	}
	inv.close()
	return err
}

// runGuarded is run, with a panic of a tool or model turned into the
// invocation's error: it must not take the instance down with every other
// request on it.
func (e *engine) runGuarded(ctx context.Context, svc *invocationSessions, run invocationRun, inv *Invocation, sw *stopWatch) (err error) {
	defer func() {
		if p := recover(); p != nil {
			e.opts.Logger.Error("invocation panicked", "session", run.session, "panic", fmt.Sprint(p))
			err = fmt.Errorf("%w: %v", errPanicked, p)
			inv.fail(err)
		}
	}()
	return e.run(ctx, svc, run, inv, sw)
}

// afterRun follows up a run that ended with runErr, when the lease was
// held: the staged replies are stored before anything else is appended,
// what a stop leaves is stored, then run.resumed are marked resumed. It
// returns the run's outcome.
func (e *engine) afterRun(ctx context.Context, svc *invocationSessions, run invocationRun, sw *stopWatch, inv *Invocation, runErr error) error {
	if svc.held.stop == nil {
		return runErr // a claim that was not taken delivered nothing
	}
	if sw.asked.Load() || len(run.resumed) > 0 {
		// What follows appends through other handles.
		if err := svc.pushHeld(ctx, inv); err != nil {
			inv.fail(err)
			return err
		}
	}
	if sw.asked.Load() {
		runErr = e.endStopped(ctx, svc.held, run, sw, runErr != nil, inv)
		if runErr != nil {
			e.opts.Logger.Error("store what a stop leaves", "session", run.session, "error", runErr)
			inv.fail(runErr)
		}
	}
	if len(run.resumed) > 0 {
		err := e.ledger.MarkResumed(ctx, run.resumed)
		if err != nil {
			e.opts.Logger.Warn("mark resumed", "session", run.session, "error", err) // Sweep looks at them again
		}
		svc.closeDocs(run.closesDocs && err == nil && runErr == nil && !sw.asked.Load())
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
			e.logRunError(run, svc.claimError(), err)
			inv.fail(err)
			return err
		}
		if ev != nil {
			streamed := sw.streaming()
			sw.note(ev)
			if svc.holds(ev) {
				// Pushed once stored, with the lease's release; its text is
				// shown now, as partial events' text is, when none came.
				if preview := textPreview(ev); preview != nil && !streamed {
					inv.push(preview)
				}
				continue
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

// logRunError logs why a run failed: at INFO when its claim lost a race
// another request won (a session written meanwhile: the caller gets its
// outcome, nothing ran twice) or was refused for a limit, at ERROR
// otherwise. A run whose staged claim failed is cancelled, so its own
// error is the cancellation: claimErr says why.
func (e *engine) logRunError(run invocationRun, claimErr, err error) {
	if claimErr != nil {
		err = claimErr
	}
	var limited *limits.LimitError
	if lostRace(err) || errors.As(err, &limited) {
		e.opts.Logger.Info("invocation not started: refused, or another request got there first", "session", run.session, "error", err)
		return
	}
	e.opts.Logger.Error("invocation", "session", run.session, "error", err)
}

// newRunner builds the runner of one invocation on svc: with runguard's
// plugin, thoughts's (a call paused under another model, or made
// without a signature, stays acceptable to the model now asked), and
// with the file store and the plugin that hands the model the files, when
// there is one.
func (e *engine) newRunner(svc session.Service) (*runner.Runner, error) {
	guard, err := runguard.Plugin()
	if err != nil {
		return nil, err
	}
	sigs, err := thoughts.Plugin()
	if err != nil {
		return nil, err
	}
	cfg := runner.Config{AppName: e.app, Agent: e.root, SessionService: svc,
		PluginConfig: runner.PluginConfig{Plugins: []*plugin.Plugin{guard, sigs}}}
	if e.opts.IncludeThoughts {
		p, err := thoughts.SummariesPlugin()
		if err != nil {
			return nil, err
		}
		cfg.PluginConfig.Plugins = append(cfg.PluginConfig.Plugins, p)
	}
	if files := e.opts.Files; files != nil {
		p, err := files.Plugin()
		if err != nil {
			return nil, err
		}
		cfg.ArtifactService = files.Artifacts() // keyed by the chat (package chatfiles)
		cfg.PluginConfig.Plugins = append(cfg.PluginConfig.Plugins, p)
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
func (e *engine) loadRecent(ctx context.Context, lease *sessionstore.Lease, user, sid string) (*sessionstore.Session, error) {
	return e.sessions.Read(ctx, sessionstore.ReadRequest{App: e.app, User: user, SessionID: sid, Recent: recentWindow, Lease: lease})
}

// readWhole reads a session with its whole history, under lease when not
// nil, with the state the runner needs (app: and user: state unless the
// agents keep none).
func (e *engine) readWhole(ctx context.Context, lease *sessionstore.Lease, user, sid string) (*sessionstore.Session, error) {
	return e.sessions.Read(ctx, sessionstore.ReadRequest{App: e.app, User: user, SessionID: sid, Shared: !e.opts.SessionStateOnly, Lease: lease})
}

// textPreview is a partial event carrying the text of ev, a final reply
// held until stored: readers see the text at once, as they see a
// streamed response's, and the reply itself (which sends no text again)
// once it is stored. Nil when ev has no text.
func textPreview(ev *session.Event) *session.Event {
	var parts []*genai.Part
	for _, p := range ev.Content.Parts {
		if p != nil && p.Text != "" && !p.Thought {
			parts = append(parts, &genai.Part{Text: p.Text})
		}
	}
	if len(parts) == 0 {
		return nil
	}
	preview := *ev
	preview.Partial = true
	preview.Content = &genai.Content{Role: ev.Content.Role, Parts: parts}
	return &preview
}
