package toolcallback

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"google.golang.org/adk/v2/platform"
	"google.golang.org/adk/v2/session"
	"google.golang.org/genai"

	"github.com/baton-run/baton/a2ui"
	"github.com/baton-run/baton/limits"
	"github.com/baton-run/baton/sessionstore"
	"github.com/baton-run/baton/transcript"
)

// turnRequest is a user message to run in a chat, its ids checked and its
// files stored: a new message (TurnRequest), or a rewind's.
type turnRequest struct {
	TurnRequest
	// rewind, when set, takes back a turn and what followed it, and runs
	// its user message (or Content, an edit) in its place.
	rewind *rewindRequest
	// live opens a live segment instead of running a message (OpenLive).
	live bool
}

// started is what a carried-out plan started: a turn's invocation, or a
// live segment.
type started struct {
	inv  *Invocation
	live *LiveSegment
}

// carrier carries out a plan that is neither a refusal nor a switch: a
// turn's (Team.carryOut) or a live segment's (Team.carryOutLive).
type carrier func(ctx context.Context, req turnRequest, p turnPlan) (started, error)

// turnView is what a turn knows of its chat before it decides how to run.
type turnView struct {
	chat *sessionstore.Chat // nil: no such chat
	// sess is the chat's active session, whole; nil: never stored.
	sess *sessionstore.Session
	// copy: sess is this instance's copy (chatMemory), not a read.
	copy bool
	// shared, for a copy whose agents may keep app: or user: state,
	// waits for the read beside the model that checks the copy's against
	// the store (sessionstore.Service.SharedStateCurrent); nil: nothing to
	// check.
	shared func() error
	meter  *limits.Meter // nil: no limits
	first  string        // the session id a new chat starts with
}

// turnWay is how a turn runs.
type turnWay int

const (
	// wayRefuse writes nothing: err says why.
	wayRefuse turnWay = iota
	// wayFirst runs the first turn of the chat's session: one commit
	// creates the session (and the chat, unless stored), takes its lease
	// and stores the message.
	wayFirst
	// waySwitch moves the chat to the agent asked for; the turn is then
	// planned again.
	waySwitch
	// wayClaim stores the message in a commit that takes the session's
	// lease, conditional on the session being as seen.
	wayClaim
	// waySettle takes the lease first, settles what the session left open
	// (pending calls, a dead invocation's leftovers), then runs.
	waySettle
)

// turnPlan is how one turn runs, as planTurn decided it.
type turnPlan struct {
	way turnWay
	err error // wayRefuse
	// chat is the chat the turn runs in; for wayFirst of a chat not
	// stored, the chat the commit creates (createChat).
	chat       *sessionstore.Chat
	createChat bool
	// sess is the session the turn runs on (wayClaim), as seen.
	sess *sessionstore.Session
	// fromCopy: sess is this instance's copy; the model starts beside
	// the claiming commit, which waits for shared (turnView.shared).
	fromCopy bool
	shared   func() error
	// current: the chat was read with the session the turn claims, so
	// what it says is current (ChatMCPSessions).
	current bool
	meter   *limits.Meter
	// content and messageID are the user message to run; a rewind's is
	// the taken-back turn's unless it edits it.
	content   *genai.Content
	messageID string
	// rewind is what a rewind's mark takes back; nil for a new message.
	rewind *rewindPlan
	// replan: a lost race (the commit found the session written, gone or
	// the message taken) plans the turn again rather than failing.
	replan bool
	// takeOver: a live segment of the same device holds the chat (it lost
	// its socket, or its instance died); the new one asks it to stop and
	// takes the lease over (waySettle, settledLive).
	takeOver bool
}

// maxPlans bounds how often one turn is planned: a plan that loses its race
// (planned on a copy or a read that another request made stale) is planned
// again on a fresh read.
const maxPlans = 3

// turn runs req: it looks at the chat (this instance's copy, or one read),
// plans the turn (planTurn decides, once per look) and carries the plan
// out. A switch is carried out, then the turn is planned again on the chat
// as it now is; a plan that lost its race is planned again on a read.
func (t *Team) turn(ctx context.Context, req turnRequest, carry carrier) (started, *SwitchReport, error) {
	ctx = withTokenBudget(ctx, req.Limits.UserTokensPerDay) // the background calls it makes carry it
	report := &SwitchReport{}
	useCopy := !req.live
	for attempt := 1; ; attempt++ {
		v, err := t.look(ctx, req, useCopy)
		if err != nil {
			return started{}, nil, err
		}
		p := t.planTurn(ctx, req, v)
		if p.way == wayRefuse {
			return started{}, nil, p.err
		}
		if p.way != waySwitch {
			s, err := carry(ctx, req, p)
			if p.replan && lostRace(err) && attempt < maxPlans {
				useCopy = false
				continue
			}
			if err != nil {
				return started{}, nil, err
			}
			report.To = p.chat.Agent
			t.memory.points(req.UserID, req.ChatID, p.chat.SessionID)
			return s, report, nil
		}
		if err := t.switchAgent(ctx, p.chat, req.Agent); err != nil {
			return started{}, nil, err
		}
		if !report.Switched {
			report.Switched, report.From = true, p.chat.Agent
		}
		useCopy = false
	}
}

// lostRace reports whether a plan's claiming commit failed because what it
// was planned on changed: the session was written or deleted, the chat
// created, the message taken, or a copy's shared state changed by another
// request since.
func lostRace(err error) bool {
	return errors.Is(err, sessionstore.ErrBusy) || errors.Is(err, sessionstore.ErrNotFound) || errors.Is(err, ErrMessageTaken) ||
		errors.Is(err, sessionstore.ErrSharedStateChanged)
}

// beside runs check in the background and returns what waits for its
// result.
func beside(check func() error) func() error {
	done := make(chan struct{})
	var err error
	go func() {
		defer close(done)
		err = check()
	}()
	return func() error {
		<-done
		return err
	}
}

// gate is what must pass before p's claiming commit is sent: the token
// budget's read and, for a copy, its shared state checked against the
// store.
func (p turnPlan) gate() error {
	if err := p.meter.CheckBudget(); err != nil {
		return err
	}
	if p.shared != nil {
		return p.shared()
	}
	return nil
}

// newChat returns the chat req creates, with its agent (or the default)
// and first session sid, not yet stored.
func (t *Team) newChat(ctx context.Context, req TurnRequest, sid string) *sessionstore.Chat {
	agentName := req.Agent
	if agentName == "" {
		agentName = t.names[0]
	}
	now := platform.Now(ctx)
	// The commit that creates the chat stores its listing whole: the
	// first words of the message, and that a turn holds it.
	until := now.Add(t.opts.InvocationTimeout + t.opts.LeaseTTL)
	return &sessionstore.Chat{App: t.app, UserID: req.UserID, ID: req.ChatID, Agent: agentName, SessionID: sid,
		Created: now, LastActivity: now, Listing: sessionstore.Listing{FirstWords: firstWords(req.Content), ActiveUntil: &until}}
}

// newChat is the chat the plan's first commit creates, nil when it
// exists.
func (p turnPlan) newChat() *sessionstore.Chat {
	if p.createChat {
		return p.chat
	}
	return nil
}

// look returns what the turn knows of its chat: this instance's copy when
// useCopy and there is one that can serve req, else one read of the chat
// with the session it is believed to point at and what req's limits count
// (a second read when the guess was wrong).
func (t *Team) look(ctx context.Context, req turnRequest, useCopy bool) (turnView, error) {
	reading := t.limits.Begin(ctx, req.UserID, req.Limits, platform.Now(ctx))
	if req.live {
		reading.CountLive(ctx)
	}
	first := sessionstore.ChatSessionID(req.ChatID, 0)
	guess, chat, sess := t.memory.recall(req.UserID, req.ChatID, first, useCopy && req.rewind == nil)
	if sess != nil {
		if meter, ok := reading.Cached(ctx); ok {
			v := turnView{chat: chat, sess: sess, copy: true, meter: meter, first: first}
			if !t.opts.SessionStateOnly {
				v.shared = beside(func() error { return t.sessions.SharedStateCurrent(ctx, sess) })
			}
			return v, nil
		}
	}
	st, err := t.sessions.ReadChat(ctx, sessionstore.ChatRead{App: t.app, User: req.UserID, ChatID: req.ChatID,
		SessionID: guess, Shared: !t.opts.SessionStateOnly, Also: reading.Docs()})
	if err != nil {
		return turnView{}, err
	}
	meter, err := reading.Meter(st.Also)
	if err != nil {
		return turnView{}, err
	}
	v := turnView{chat: st.Chat, sess: st.Session, meter: meter, first: first}
	if v.chat == nil || v.sess != nil || v.chat.Deleted != nil {
		return v, nil // a deleted chat is refused (planUnclaimed)
	}
	v.sess, err = t.sessions.Read(ctx, sessionstore.ReadRequest{App: t.app, User: req.UserID, SessionID: v.chat.SessionID,
		Shared: !t.opts.SessionStateOnly})
	if errors.Is(err, sessionstore.ErrNotFound) {
		return v, nil // the chat's first turn never stored its session
	}
	return v, err
}

// planTurn decides how req runs, given v. It reads and writes nothing.
func (t *Team) planTurn(ctx context.Context, req turnRequest, v turnView) turnPlan {
	// Actions on cards first, as a request's own input: the message runs
	// with their text, or is refused.
	sess := v.sess
	if v.chat == nil {
		sess = nil // a leftover session of a deleted chat shows nothing
	}
	content, err := cardContent(req.Content, req.Actions, sess)
	if err != nil {
		return refusal(err)
	}
	req.Content = content
	if p, ok := t.planUnclaimed(ctx, req, v); ok {
		return p
	}
	p := turnPlan{way: wayClaim, chat: v.chat, sess: v.sess, fromCopy: v.copy, shared: v.shared, current: !v.copy, meter: v.meter,
		content: req.Content, messageID: req.MessageID}
	if req.rewind != nil {
		rp, err := planRewind(v.sess, *req.rewind)
		if err != nil {
			return refusal(err)
		}
		p.rewind, p.content, p.messageID = rp, rp.content, rp.messageID
	} else if req.MessageID != "" && transcript.TakenMessage(v.sess) == req.MessageID {
		return refusal(fmt.Errorf("%w: %q", ErrMessageTaken, req.MessageID))
	}
	// Limits after the message: a message sent again is answered with the
	// turn it started, and starts nothing.
	if err := v.meter.Check(v.sess); err != nil {
		return refusal(err)
	}
	_, held := v.sess.LiveLease(ctx)
	enqueue := t.opts.LeasePolicy == LeaseEnqueue
	settle := req.rewind == nil && (v.sess.MayHaveOpenDocs() || transcript.NeedsRepair(v.sess.Events(), nil))
	if req.live {
		// A live segment adopts what is open: its open path repairs and
		// reads the ledger under the lease, and cancels nothing.
		p.replan = enqueue
		p.takeOver = parseHolder(v.sess.LiveHolder(ctx)).YieldsTo(Holder{Client: req.ClientID, Live: true})
		if settle || held && enqueue || p.takeOver {
			p.way, p.current = waySettle, false
		}
		return p
	}
	if settle || held && enqueue {
		// A rewind's commit closes the open records itself. The chat may
		// change while the lease is waited for.
		p.way, p.current = waySettle, false
	}
	p.replan = v.copy || enqueue
	return p
}

// refusal is a plan that refuses its turn with err.
func refusal(err error) turnPlan { return turnPlan{way: wayRefuse, err: err} }

// planUnclaimed plans the turns that claim no stored session: refused, the
// first turn of a chat or of its session, or an agent switch first. It
// reports false for a turn on a stored session of the chat's agent.
func (t *Team) planUnclaimed(ctx context.Context, req turnRequest, v turnView) (turnPlan, bool) {
	switch {
	case v.chat != nil && v.chat.Deleted != nil:
		return refusal(fmt.Errorf("%w: %q", ErrChatDeleted, req.ChatID)), true
	case v.chat == nil && req.rewind != nil:
		return refusal(fmt.Errorf("%w: chat %q", sessionstore.ErrNotFound, req.ChatID)), true
	case v.chat == nil:
		if err := v.meter.Check(nil); err != nil {
			return refusal(err), true
		}
		chat := t.newChat(ctx, req.TurnRequest, v.first)
		return turnPlan{way: wayFirst, chat: chat, createChat: true, current: true, meter: v.meter,
			content: req.Content, messageID: req.MessageID, replan: true}, true
	case req.Agent != "" && req.Agent != v.chat.Agent:
		// Refused before anything is written, the switch included.
		if req.rewind == nil && v.sess != nil && req.MessageID != "" && transcript.TakenMessage(v.sess) == req.MessageID {
			return refusal(fmt.Errorf("%w: %q", ErrMessageTaken, req.MessageID)), true
		}
		if err := v.meter.Check(v.sess); err != nil {
			return refusal(err), true
		}
		return turnPlan{way: waySwitch, chat: v.chat}, true
	case v.sess == nil && req.rewind != nil:
		return refusal(fmt.Errorf("%w: %q", ErrMessageNotFound, req.rewind.message)), true
	case v.sess == nil:
		if err := v.meter.Check(nil); err != nil {
			return refusal(err), true
		}
		return turnPlan{way: wayFirst, chat: v.chat, current: true, meter: v.meter, content: req.Content, messageID: req.MessageID, replan: true}, true
	}
	return turnPlan{}, false
}

// rewindPlan is a rewind found in a session.
type rewindPlan struct {
	request   rewindRequest   // what was asked
	before    string          // the invocation of the turn's user message
	key       string          // the request, stored with the mark
	calls     map[string]bool // the call ids (model and confirmation) in the part taken back
	turns     []string        // the turns taken back: the ids of their assistant messages
	content   *genai.Content  // the user message to run
	messageID string          // the client's id for it
	stored    bool            // the mark is stored: the same request died before its turn
}

// planRewind finds in sess, read whole, what req takes back.
func planRewind(sess *sessionstore.Session, req rewindRequest) (*rewindPlan, error) {
	events := slices.Collect(sess.Events().All())
	if p, err := retried(events, sess.Rewound(), req); p != nil || err != nil {
		return p, err
	}
	at := transcript.FindTurn(events, req.message)
	if at < 0 {
		if req.message != "" && transcript.FindTurn(sess.Rewound(), req.message) >= 0 {
			return nil, fmt.Errorf("%w: %q", ErrRewound, req.message)
		}
		return nil, fmt.Errorf("%w: %q", ErrMessageNotFound, req.message)
	}
	msg := events[at]
	if req.edit != nil && transcript.FindTurn(events, "") == at && transcript.SameText(msg.Content, req.edit) {
		// The latest message, sent again as it is: the request served.
		return nil, fmt.Errorf("%w: %q", ErrMessageTaken, req.message)
	}
	p := &rewindPlan{request: req, before: msg.InvocationID, key: req.key(), calls: transcript.CallIDs(events[at:]), content: req.edit, messageID: transcript.ClientMessageID(msg)}
	for _, ev := range events[at:] {
		if transcript.StartsTurn(ev) {
			p.turns = append(p.turns, ev.InvocationID)
		}
	}
	if p.content == nil {
		p.content = msg.Content
	}
	return p, nil
}

// retried recognises the same request again from the latest rewind mark:
// a mark of req followed by no turn (the process died before running it)
// is completed; followed by its own turn only, req was served
// (ErrMessageTaken). Anything else is nil: not a retry.
func retried(events, rewound []*session.Event, req rewindRequest) (*rewindPlan, error) {
	key := req.key()
	if key == "" {
		return nil, nil
	}
	last := -1
	var mark sessionstore.RewindMark
	for i := len(events) - 1; i >= 0 && last < 0; i-- {
		if r, ok := sessionstore.RewindMarkOf(events[i]); ok {
			last, mark = i, r
		}
	}
	if last < 0 || mark.Request != key {
		return nil, nil
	}
	var turns []*session.Event
	for _, ev := range events[last+1:] {
		if transcript.StartsTurn(ev) {
			turns = append(turns, ev)
		}
	}
	switch {
	case len(turns) == 1 && (req.edit == nil || transcript.SameText(turns[0].Content, req.edit)):
		return nil, fmt.Errorf("%w: %q", ErrMessageTaken, key)
	case len(turns) > 0:
		return nil, nil
	}
	at := slices.IndexFunc(rewound, func(ev *session.Event) bool { return transcript.StartsTurn(ev) && ev.InvocationID == mark.Before })
	if at < 0 {
		return nil, nil
	}
	p := &rewindPlan{request: req, before: mark.Before, key: key, stored: true, content: req.edit, messageID: transcript.ClientMessageID(rewound[at])}
	if p.content == nil {
		p.content = rewound[at].Content
	}
	return p, nil
}

// carryOut runs the turn as p says; it returns p's refusal as it is.
func (t *Team) carryOut(ctx context.Context, req turnRequest, p turnPlan) (started, error) {
	e := t.engine(p.chat.Agent)
	if p.current {
		// The chat was read with the session whose lease the turn's
		// commit claims: what it says is current (ChatMCPSessions).
		ctx = withChatRead(ctx, p.chat)
	} else {
		ctx = withoutChatRead(ctx)
	}
	run := invocationRun{user: req.UserID, session: p.chat.SessionID, chat: p.chat.ID, newChat: p.createChat, client: req.ClientID, msg: p.content,
		opts: runOptions(p.messageID), handle: p.sess, keep: t.memory.keeper(p.chat)}
	if p.createChat {
		// A new chat's title is made beside its first turn (title.go).
		run.title = t.startTitle(ctx, sessionstore.ChatKey{App: t.app, User: req.UserID, ID: req.ChatID}, messageText(p.content))
	}
	var inv *Invocation
	var err error
	switch p.way {
	case wayFirst:
		inv, err = e.firstTurn(ctx, run, p.newChat(), p.meter)
	case wayClaim:
		inv, err = e.claimTurn(ctx, run, p)
	case waySettle:
		inv, err = e.settledTurn(ctx, run, p)
	default:
		err = fmt.Errorf("turn plan of way %d carried out", p.way)
	}
	return started{inv: inv}, err
}

// firstTurn runs the first turn of run's session: the commit that stores
// the message also creates the session, its lease and chat (if not nil),
// and counts the turn against meter.
func (e *engine) firstTurn(ctx context.Context, run invocationRun, chat *sessionstore.Chat, meter *limits.Meter) (*Invocation, error) {
	create := &session.CreateRequest{AppName: e.app, UserID: run.user, SessionID: run.session}
	sess, claim, err := e.sessions.ClaimNewSession(ctx, create, chat, holderID(ctx, run.client), e.opts.LeaseTTL)
	if err != nil {
		return nil, err
	}
	run.handle, run.claim, run.speculative, run.gate = sess, claim, true, meter.CheckBudget
	run.turnLog, run.writes, run.committed = meter.ChatLog(nil), meter.Writes(), meter.Committed
	return e.start(ctx, run)
}

// claimTurn runs the turn on p.sess as seen: the commit that stores the
// message (or a rewind's mark) takes the session's lease, conditional on
// the session being as seen, and counts the turn. From this instance's
// copy (run.warm), the model is called at once, beside that commit.
func (e *engine) claimTurn(ctx context.Context, run invocationRun, p turnPlan) (*Invocation, error) {
	claim, err := e.sessions.ClaimLease(ctx, p.sess, holderID(ctx, run.client), e.opts.LeaseTTL)
	if err != nil {
		return nil, err
	}
	run.turnLog, run.writes, run.committed = p.meter.ChatLog(p.sess), p.meter.Writes(), p.meter.Committed
	if p.rewind != nil && !p.rewind.stored {
		if err := p.meter.CheckBudget(); err != nil {
			return nil, err
		}
		return e.claimedRewind(ctx, run, p, claim)
	}
	// The model is asked beside the commit that stores the message (a
	// rewind's whose mark a request that died stored, as a plain turn's).
	run.claim, run.docsClosed, run.speculative, run.gate = claim, p.rewind != nil, true, p.gate
	return e.start(ctx, run)
}

// settledTurn takes the lease (waiting under LeaseEnqueue), settles what
// the session left open (pending calls, a dead invocation's leftovers), or
// stores a rewind's mark, and runs the turn on the session as read under
// the lease.
func (e *engine) settledTurn(ctx context.Context, run invocationRun, p turnPlan) (*Invocation, error) {
	if p.rewind == nil && e.opts.PendingPolicy == PendingReject {
		// Refuse before taking the lease, so a refused message writes
		// nothing; settleOpenCalls checks again under the lease.
		if err := e.rejectIfPending(ctx, run.user, run.session); err != nil {
			return nil, err
		}
	}
	if err := p.meter.CheckBudget(); err != nil {
		return nil, err // refused before the lease is taken: nothing is written
	}
	h, err := e.acquire(ctx, run.user, run.session, run.client, e.leaseWait())
	if err != nil {
		return nil, err
	}
	if p.rewind != nil {
		run, err = e.rewindHeld(ctx, h, run, p)
	} else {
		run.handle, err = e.settleOpenCalls(ctx, h.lease, run.user, run.session, p.messageID)
		// The lease is taken: the counts join whatever is stored by now.
		run.turnLog, run.writes = p.meter.ChatLog(run.handle), p.meter.WritesUnderLease()
	}
	if err != nil {
		e.release(ctx, h)
		return nil, err
	}
	// No ledger record is left open: the message's commit says so.
	run.held, run.docsClosed = h, true
	return e.start(ctx, run)
}

// leaseWait is how long a turn waits for a busy session: MaxWait under
// LeaseEnqueue, not at all under LeaseReject.
func (e *engine) leaseWait() time.Duration {
	if e.opts.LeasePolicy == LeaseEnqueue {
		return e.opts.MaxWait
	}
	return 0
}

// Actions on cards (docs/a2ui.md): a user message may carry presses on
// surfaces no call waits on (TurnRequest.Actions). The planner checks each
// against the surfaces the session it plans on shows, as they last were
// (a2ui.CheckCardAction), so an action costs no read of its own, and the
// model reads each as the text a2ui.ActionText writes, after the message's
// own parts. A refused action refuses the turn before anything is written.

// cardContent is the content a turn runs on sess for a message of content
// and actions: the message's parts, then the text of each action, checked
// against the surfaces sess shows (nil: the chat has stored nothing, so it
// shows no surface).
func cardContent(content *genai.Content, actions []a2ui.Action, sess *sessionstore.Session) (*genai.Content, error) {
	if len(actions) == 0 {
		return content, nil
	}
	if sess == nil {
		return nil, fmt.Errorf("%w: the chat shows no surface", a2ui.ErrNoSurface)
	}
	events := sess.Events()
	c := &genai.Content{Role: genai.RoleUser}
	if content != nil {
		c.Parts = slices.Clone(content.Parts)
	}
	for _, a := range actions {
		if err := a2ui.CheckCardAction(events, a); err != nil {
			return nil, err
		}
		text, err := a2ui.ActionText(a)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", a2ui.ErrInvalid, err)
		}
		c.Parts = append(c.Parts, genai.NewPartFromText(text))
	}
	return c, nil
}

// refusedAction reports whether err is an action on a card refused by
// the plan, which writes nothing.
func refusedAction(err error) bool {
	return errors.Is(err, a2ui.ErrNoSurface) || errors.Is(err, a2ui.ErrSurfaceWaits) ||
		errors.Is(err, a2ui.ErrNotOffered) || errors.Is(err, a2ui.ErrInvalid)
}
