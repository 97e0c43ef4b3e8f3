package toolcallback

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"sync"
	"time"

	"go.opentelemetry.io/otel/metric"
	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/platform"
	"google.golang.org/adk/v2/plugin"
	"google.golang.org/adk/v2/runner"
	"google.golang.org/adk/v2/session"
	"google.golang.org/genai"

	"github.com/baton-run/baton/limits"
	"github.com/baton-run/baton/sessionstore"
)

// LiveSegment is a stretch of a chat run by a live model that its caller
// drives (package live), not by ADK's runner: a holder like any
// invocation. It holds the chat's lease from OpenLive to Close (renewed;
// a stop request or a takeover ends it, Done), the events the caller
// stores through Append carry the ledger records of the calls they pause
// in the same commit, and the answers to its calls, recorded on any
// instance by Team.Resume (which finds the session busy and resumes
// nothing), reach it through Answers.
type LiveSegment struct {
	Chat *sessionstore.Chat
	// Session is the chat's session as held: the caller appends through
	// it, and it is read whole (the conversation the live model is seeded
	// with).
	Session *sessionstore.Session
	Agent   agent.Agent
	// Open are the ledger's records the segment adopted: calls paused
	// before it opened, pending or answered but not delivered. The
	// segment answers them; it cancels none.
	Open []*Call

	e      *engine
	client string
	held   *heldLease
	tools  *pausingTools
	stop   *stopWatch
	cancel context.CancelFunc
	meter  *limits.Meter

	mu   sync.Mutex
	docs map[string]*Call // the records handed out (Open, Answers), by id
}

// liveKey marks, in an event's CustomMetadata, the event that opens a live
// segment: no content, so neither a model nor a page shows it.
const liveKey = "baton_live"

// IsLive reports whether err refuses a turn because a live segment holds
// the chat.
func IsLive(err error) bool {
	var busy *sessionstore.BusyError
	return errors.As(err, &busy) && parseHolder(busy.Holder).Live
}

// OpenLive opens a live segment of req's chat, planned as a turn (planTurn:
// refused for the same reasons, a switch first when asked) whose commit
// stores an event marking the segment instead of a message, counts it
// against req.Limits and takes the chat's lease. It adopts the ledger's
// open records instead of cancelling them. req.Content and MessageID are
// not used.
func (t *Team) OpenLive(ctx context.Context, req TurnRequest) (*LiveSegment, *SwitchReport, error) {
	if err := validIDs("user id", req.UserID, "chat id", req.ChatID, "client id", req.ClientID); err != nil {
		return nil, nil, err
	}
	if req.Agent != "" && t.engines[req.Agent] == nil {
		return nil, nil, &UnknownAgentError{Name: req.Agent, Known: t.Agents()}
	}
	req.Content, req.MessageID = nil, ""
	s, report, err := t.turn(ctx, turnRequest{TurnRequest: req, live: true}, t.carryOutLive)
	if err == nil && s.live != nil {
		instruments().segments.Add(ctx, 1, metric.WithAttributes(agentAttr(s.live.e.agent)))
	}
	return s.live, report, err
}

// carryOutLive carries out p for a live segment (openLive).
func (t *Team) carryOutLive(ctx context.Context, req turnRequest, p turnPlan) (started, error) {
	live, err := t.engine(p.chat.Agent).openLive(ctx, req, p)
	return started{live: live}, err
}

// openLive carries out p for a live segment: the lease is claimed by the
// marker's commit (wayFirst, wayClaim) or taken first, with the session's
// leftovers repaired and its open records adopted (waySettle).
func (e *engine) openLive(ctx context.Context, req turnRequest, p turnPlan) (*LiveSegment, error) {
	if err := p.meter.CheckBudget(); err != nil {
		return nil, err
	}
	if p.way == waySettle {
		return e.settledLive(ctx, req, p, marker(ctx, e.agent))
	}
	holder := newHolder(ctx, req.ClientID, true).String()
	opts := sessionstore.AppendOptions{TurnLog: p.meter.ChatLog(p.sess), Writes: p.meter.Writes(), Committed: p.meter.Committed}
	if c := p.newChat(); c != nil {
		until := platform.Now(ctx).Add(liveActiveBound)
		c.ActiveUntil, c.Live = &until, true
	} else {
		opts.Writes = append(opts.Writes, e.activity(ctx, req.UserID, req.ChatID, true))
	}
	var sess *sessionstore.Session
	var err error
	if p.way == wayFirst {
		req := &session.CreateRequest{AppName: e.app, UserID: req.UserID, SessionID: p.chat.SessionID}
		sess, opts.Claim, err = e.sessions.ClaimNewSession(ctx, req, p.newChat(), holder, e.opts.LeaseTTL)
	} else {
		sess = p.sess
		opts.Claim, err = e.sessions.ClaimLease(ctx, sess, holder, e.opts.LeaseTTL)
	}
	if err == nil { // after the claim, which refuses a chat a live segment holds
		err = p.meter.CheckLive(p.sess)
	}
	if err == nil {
		opts.Claim.Live()
		err = e.sessions.AppendEventWith(ctx, sess, marker(ctx, e.agent), opts)
	}
	if err != nil {
		return nil, err
	}
	h := &heldLease{lease: opts.Claim.Lease()}
	e.keep(ctx, h)
	return e.newLive(ctx, p, sess, req.ClientID, h, nil), nil
}

// OpensLive reports whether ev is the event that opened a live segment
// (a chat's timeline shows where each began).
func OpensLive(ev *session.Event) bool { return ev != nil && ev.CustomMetadata[liveKey] != nil }

// marker is the event that opens a live segment (liveKey), by agent.
func marker(ctx context.Context, agent string) *session.Event {
	ev := session.NewEvent(ctx, "baton-live-"+platform.NewUUID(ctx))
	ev.Author, ev.CustomMetadata = agent, map[string]any{liveKey: "open"}
	return ev
}

// takeoverWait bounds how long a live segment taking the chat over from
// the same device's (turnPlan.takeOver) waits for it to end by itself,
// storing what it has, before taking the lease over: a holder alive on
// any instance hears the stop within milliseconds; a dead one never does,
// and its lease (LeaseTTL) is not waited for.
const takeoverWait = time.Second

// settledLive takes the lease first (waiting under LeaseEnqueue, taking
// it over from the same device's segment), repairs what a dead holder
// left, adopts the open records and stores the marker.
func (e *engine) settledLive(ctx context.Context, req turnRequest, p turnPlan, marker *session.Event) (*LiveSegment, error) {
	if err := p.meter.CheckLive(p.sess); err != nil {
		return nil, err
	}
	if p.takeOver {
		fence, _ := p.sess.LiveLease(ctx)
		if err := e.sessions.RequestStop(ctx, e.app, req.UserID, p.sess.ID(), fence); err != nil {
			return nil, err
		}
		awaitIdle(ctx, e.sessions, e.app, req.UserID, p.sess.ID(), takeoverWait)
	}
	h, err := e.acquireAs(ctx, req.UserID, p.chat.SessionID, newHolder(ctx, req.ClientID, true), e.leaseWait())
	if err != nil {
		return nil, err
	}
	sess, err := e.readWhole(ctx, h.lease, req.UserID, p.chat.SessionID)
	var docs []*Call
	if err == nil {
		docs, err = e.ledger.Unresumed(ctx, req.UserID, p.chat.SessionID)
	}
	if err == nil {
		err = e.repairTail(ctx, sess, nil, knownCalls(docs))
	}
	if err == nil {
		err = e.sessions.AppendEventWith(ctx, sess, marker, sessionstore.AppendOptions{TurnLog: p.meter.ChatLog(sess),
			Writes: append(p.meter.WritesUnderLease(), e.activity(ctx, req.UserID, req.ChatID, true))})
	}
	if err != nil {
		e.release(ctx, h)
		return nil, err
	}
	return e.newLive(ctx, p, sess, req.ClientID, h, docs), nil
}

// newLive is the segment p opened, holding h on sess, with the records it
// adopted.
func (e *engine) newLive(ctx context.Context, p turnPlan, sess *sessionstore.Session, client string, h *heldLease, docs []*Call) *LiveSegment {
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s := &LiveSegment{Chat: p.chat, Session: sess, Agent: e.root, e: e, client: client, held: h, tools: &pausingTools{}, cancel: cancel,
		meter: p.meter, docs: map[string]*Call{}}
	for _, d := range docs {
		s.Open = append(s.Open, d)
		s.docs[d.ID] = d
	}
	s.stop = e.watchStop(ctx, h)
	go cancelOnLostLease(ctx, h, s.stop.cancel, e.opts.Logger)
	return s
}

// Done is closed when the segment must end: a stop was requested (from any
// instance, Team.Stop), its lease was lost, or it was closed.
func (s *LiveSegment) Done() <-chan struct{} { return s.stop.ctx.Done() }

// Lease is the lease the segment holds.
func (s *LiveSegment) Lease() *sessionstore.Lease { return s.held.lease }

// Runner is the runner configuration of the segment's agent on its
// session (for geminilive.Capture): the session service hands the runner
// the segment's handle, and the file store and its plugin are there as for
// a turn. Run it under Context, so that pausing tools declare themselves.
func (s *LiveSegment) Runner() (runner.Config, error) {
	cfg := runner.Config{AppName: s.e.app, Agent: s.e.root, SessionService: &liveSessions{Service: s.e.sessions, handle: s.Session}}
	if files := s.e.opts.Files; files != nil {
		p, err := files.Plugin()
		if err != nil {
			return cfg, err
		}
		cfg.ArtifactService = files.Artifacts()
		cfg.PluginConfig = runner.PluginConfig{Plugins: []*plugin.Plugin{p}}
	}
	return cfg, nil
}

// Context is ctx carrying the segment's pausing tools, which learn there
// which of the agent's tools pause when the runner builds a model request.
func (s *LiveSegment) Context(ctx context.Context) context.Context {
	return withPausingTools(ctx, s.tools)
}

// liveSessions is the session service of a segment's runner: Get returns
// the segment's handle; nothing is appended through it.
type liveSessions struct {
	*sessionstore.Service
	handle *sessionstore.Session
}

func (l *liveSessions) Get(context.Context, *session.GetRequest) (*session.GetResponse, error) {
	return &session.GetResponse{Session: l.handle}, nil
}

func (l *liveSessions) AppendEvent(context.Context, session.Session, *session.Event) error {
	return errors.New("a live segment's runner stores nothing: append through LiveSegment.Append")
}

// Append stores ev, with what opts asks, and the ledger records of the
// calls it pauses (calls of the agent's pausing tools, and confirmation
// requests for approvals, as in a turn) in one commit; it returns those
// calls, which the caller shows to the client and does not run.
func (s *LiveSegment) Append(ctx context.Context, ev *session.Event, opts sessionstore.AppendOptions) ([]*Call, error) {
	creates, listing, calls, err := s.e.records(withTokenBudget(ctx, s.meter.Budget()), s.Session, ev, s.tools, s.client, s.Chat.ID)
	if err != nil {
		return nil, err
	}
	opts.Create = append(opts.Create, creates...)
	opts.Writes = append(opts.Writes, listing...)
	if err := s.e.opts.Files.SaveEventFiles(ctx, s.Session.UserID(), s.Session.ID(), ev); err != nil {
		return nil, err
	}
	if n := opts.Tokens.N; n > 0 && s.e.opts.CountServiceTokens {
		opts.Writes = append(opts.Writes, s.e.limits.TokensWrite(n, opts.Tokens.At)...)
	}
	if err := s.e.sessions.AppendEventWith(ctx, s.Session, ev, opts); err != nil {
		return calls, err
	}
	s.e.enqueueWork(ctx, calls) // stored: the background calls' work goes to the queue
	countPaused(ctx, calls)
	countTokenUsage(ctx, s.e.agent, ev.ModelVersion, ev.UsageMetadata)
	return calls, nil
}

// Delivered are the writes that mark calls' records resumed, for the
// commit that stores the responses that deliver them (Append's
// opts.Writes): the answer reaches the transcript and the record closes at
// once.
func (s *LiveSegment) Delivered(calls []*Call) []sessionstore.Write {
	return s.e.ledger.Delivered(calls)
}

// Answers yields each call of the segment's session that has an answer its
// agent does not have yet (answered, not resumed), once, as Team.Resume
// records them on any instance, until ctx ends: one listener on the
// session's ledger.
func (s *LiveSegment) Answers(ctx context.Context) iter.Seq2[*Call, error] {
	return func(yield func(*Call, error) bool) {
		for c, err := range s.e.ledger.Answers(ctx, s.Session.UserID(), s.Session.ID()) {
			if err == nil {
				s.mu.Lock()
				s.docs[c.ID] = c
				s.mu.Unlock()
			}
			if !yield(c, err) {
				return
			}
		}
	}
}

// Working follows the background calls of the segment's session while
// they run, from any instance, until ctx ends (FollowedChat.Working): each
// change of a pending call's record, its progress among them.
func (s *LiveSegment) Working(ctx context.Context) iter.Seq2[*Call, error] {
	return s.e.ledger.Working(ctx, s.Session.UserID(), s.Session.ID())
}

// Response is the function response that gives the agent the answer to c,
// a call of Open or of Answers, as a resume would: the tool's output or
// error, or for an approval or a question the confirmation's response
// (after which the tool runs, with it).
func (s *LiveSegment) Response(c *Call) (*genai.FunctionResponse, error) {
	s.mu.Lock()
	doc := s.docs[c.ID]
	s.mu.Unlock()
	if doc == nil {
		return nil, fmt.Errorf("%w: %q is not a call of the segment", ErrCallNotFound, c.ID)
	}
	return responseParts([]*Call{doc}, true)[0].FunctionResponse, nil
}

// TokensLeft is what the user's token budget had left when the segment
// opened; false without a budget. The segment's model turns count against
// it as they come (package limits).
func (s *LiveSegment) TokensLeft() (int64, bool) { return s.meter.TokensLeft() }

// OnAsk sets where a question a tool asks while it runs (AskInCall) is shown:
// f receives the event of the question, a call of userinput.ToolName. Set
// it before the agent's tools run.
func (s *LiveSegment) OnAsk(f func(*session.Event)) {
	s.tools.asker = &questionAsker{e: s.e, client: s.client, chat: s.Chat.ID, push: f}
}

// Close ends the segment's hold on the chat: the lease is released (any
// later append through the segment fails) and Done closes.
func (s *LiveSegment) Close(ctx context.Context) {
	s.cancel()
	// The listing says nothing holds the chat any more: a write of its
	// own, once per segment, made while the lease is still held so that
	// it cannot land after the next holder's claim.
	idleCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	key := sessionstore.ChatKey{App: s.e.app, User: s.Chat.UserID, ID: s.Chat.ID}
	if _, err := s.e.sessions.Commit(idleCtx, s.e.sessions.ChatIdle(key, "")); err != nil {
		s.e.opts.Logger.Warn("record a live segment's end in its chat's listing", "chat", s.Chat.ID, "error", err)
	}
	s.e.release(ctx, s.held)
}
