package toolcallback

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"cloud.google.com/go/firestore"
	"google.golang.org/adk/v2/platform"
	"google.golang.org/adk/v2/session"
	"google.golang.org/genai"

	"github.com/baton-run/baton/sessionstore"
)

// Rewinding a chat: regenerate an answer, or edit an earlier user message.
// Both take a turn back, with everything after it, and run a user message
// in its place, under the session's lease like any turn:
//
//  1. read the chat and the session whole, and find the turn: a request
//     refused here (unknown or taken-back message, served before) writes
//     nothing;
//  2. query the ledger for the records still open;
//  3. one commit takes the session's lease (conditional on the session as
//     read: else busy, writing nothing), stores the rewind mark
//     (sessionstore.RewindSession), which puts session-scoped state back,
//     and closes those records: pending ones become cancelled (a late
//     answer gets ErrExpired), and none is resumed;
//  4. the user message runs as a turn (its commit, then the agent).
//
// The mark names the request that made it (Rewind.key), so the same
// request again is recognised: after step 4 it is ErrMessageTaken (the
// caller replays the turn); after step 3 only (the process died), the
// turn runs now, without a second mark.

var (
	// ErrMessageNotFound: a rewind names a message the chat does not have.
	ErrMessageNotFound = errors.New("message not found")
	// ErrRewound: a rewind names a message an earlier rewind took back.
	ErrRewound = errors.New("message taken back by a rewind")
)

// Rewind asks a chat to take back a turn, and everything after it, and to
// run a user message in its place.
type Rewind struct {
	UserID   string
	ChatID   string
	ClientID string
	// Message names the turn: the id of its user message (the client's
	// MessageID, or the event's id when the client gave none) or of its
	// assistant message (the turn's id, see StartsTurn). Empty: the chat's
	// latest turn.
	Message string
	// Content, when set, is an edit: it replaces the turn's user message.
	// When nil, the user message runs again as it was (a regenerate).
	Content *genai.Content
	// Limits are the caller's turn limits, as ChatTurn's: a rewind runs the
	// model, so it counts as a turn (a replay of a request served before
	// does not).
	Limits Limits
}

// key names the request in the mark it stores; "" when it cannot be told
// from another (a regenerate of "the latest turn").
func (r Rewind) key() string {
	switch {
	case r.Message == "":
		return ""
	case r.Content != nil:
		return "edit:" + r.Message
	}
	return "regenerate:" + r.Message
}

// Rewind takes back the turn req names and what followed it, and runs its
// user message again (or req.Content in its place). It fails with
// ErrMessageNotFound for a message the chat does not have, ErrRewound for
// one an earlier rewind took back, and ErrMessageTaken when the same
// request was served already (the caller shows the chat's latest turn).
func (t *Team) Rewind(ctx context.Context, req Rewind) (*Invocation, error) {
	if err := validIDs("user id", req.UserID, "chat id", req.ChatID, "client id", req.ClientID); err != nil {
		return nil, err
	}
	t.warm.drop(req.UserID, req.ChatID) // the rewind writes the session
	if req.Message != "" {
		if err := validIDs("message id", req.Message); err != nil {
			return nil, err
		}
	}
	if req.Content != nil && (req.Message == "" || len(req.Content.Parts) == 0) {
		return nil, fmt.Errorf("%w: an edit names its message and has content", ErrInvalidAnswer)
	}
	if req.Content == nil {
		return t.rewindChat(ctx, req)
	}
	// An edit: its files are stored as a turn's are.
	var inv *Invocation
	err := t.withFiles(ctx, req.UserID, req.ChatID, req.Content, func(content *genai.Content) (err error) {
		req.Content = content
		inv, err = t.rewindChat(ctx, req)
		return err
	})
	return inv, err
}

// rewindChat rewinds the chat as req asks, its files stored.
func (t *Team) rewindChat(ctx context.Context, req Rewind) (*Invocation, error) {
	// One round trip reads the chat with the session it is believed to
	// point at, and what the limits count, as a turn does.
	chat, sess, m, err := t.readChat(ctx, req.UserID, req.ChatID, req.Limits)
	if err != nil {
		return nil, err
	}
	t.active.put(req.UserID, req.ChatID, chat.SessionID)
	return t.engine(chat.Agent).rewind(ctx, req, chat.SessionID, sess, m)
}

// rewind rewinds session sid (sess, when the caller read it whole, not
// under a lease) and runs the turn. The request is checked on the session
// as read, so a refused one writes nothing; then the commit that stores
// the mark takes the session's lease, conditional on the session being as
// read (claimedRewind). Under LeaseEnqueue, a busy session is waited for
// (heldRewind).
func (e *engine) rewind(ctx context.Context, req Rewind, sid string, sess session.Session, m *meter) (*Invocation, error) {
	var err error
	if sess == nil {
		if sess, err = e.getSession(ctx, nil, req.UserID, sid, 0, !e.opts.SessionStateOnly); err != nil {
			return nil, err
		}
	}
	plan, err := planRewind(sess, req)
	if err != nil {
		return nil, err
	}
	// Limits after the plan: a request served before is replayed, not run.
	if err := m.check(sess, ""); err != nil {
		return nil, err
	}
	inv, err := e.claimedRewind(ctx, req, sess, plan, m)
	if !errors.Is(err, sessionstore.ErrBusy) || e.opts.LeasePolicy != LeaseEnqueue {
		return inv, err
	}
	return e.heldRewind(ctx, req, sid, m)
}

// claimedRewind stores plan's mark on sess in the commit that takes the
// session's lease, and runs the turn under it. A mark the same request
// stored before is not stored again: the turn's first commit takes the
// lease, as a plain turn's does.
func (e *engine) claimedRewind(ctx context.Context, req Rewind, sess session.Session, plan *rewindPlan, m *meter) (*Invocation, error) {
	claim, err := e.sessions.ClaimLease(ctx, sess, holderID(ctx, req.ClientID), e.opts.LeaseTTL)
	if err != nil {
		return nil, err
	}
	turn := turnRequest{UserID: req.UserID, SessionID: sess.ID(), ClientID: req.ClientID, Content: plan.content, MessageID: plan.messageID}
	run := turn.run(sess)
	// The rewind closes every open ledger record (or, stored before,
	// closed them).
	run.docsClosed = true
	// The commit that takes the lease counts the turn, as a turn's does.
	counts := sessionstore.AppendOptions{TurnLog: m.chatLog(sess), Writes: m.userWrites(true)}
	if plan.stored {
		run.claim = claim
		run.turnLog, run.writes = counts.TurnLog, counts.Writes
		return e.start(ctx, run)
	}
	if err := e.commitRewind(ctx, sess, plan, claim, counts); err != nil {
		return nil, err
	}
	h := &heldLease{lease: claim.Lease()}
	e.keep(ctx, h)
	run.held = h
	return e.start(ctx, run)
}

// heldRewind takes the lease of session sid, waiting up to MaxWait, then
// rewinds it and runs the turn.
func (e *engine) heldRewind(ctx context.Context, req Rewind, sid string, m *meter) (*Invocation, error) {
	h, err := e.acquire(ctx, req.UserID, sid, req.ClientID, e.opts.MaxWait, false)
	if err != nil {
		return nil, err
	}
	run, err := e.rewindHeld(ctx, h, req, sid, m)
	if err != nil {
		e.release(ctx, h)
		return nil, err
	}
	run.held, run.docsClosed = h, true
	return e.start(ctx, *run)
}

// rewindHeld, under the lease h, stores the rewind (unless the same
// request stored it before) and returns the turn to run. A ledger record
// that changed between its read and the commit (an answer landed) makes
// it read again.
func (e *engine) rewindHeld(ctx context.Context, h *heldLease, req Rewind, sid string, m *meter) (*invocationRun, error) {
	for attempt := 0; ; attempt++ {
		sess, err := e.getSession(ctx, h.lease, req.UserID, sid, 0, !e.opts.SessionStateOnly)
		if err != nil {
			return nil, err
		}
		plan, err := planRewind(sess, req)
		if err != nil {
			return nil, err
		}
		// The lease is taken: the counts join whatever is stored by now.
		counts := sessionstore.AppendOptions{TurnLog: m.chatLog(sess), Writes: m.userWrites(false)}
		if !plan.stored {
			err = e.commitRewind(ctx, sess, plan, nil, counts)
			if errors.Is(err, sessionstore.ErrConflict) && !errors.Is(err, sessionstore.ErrLeaseLost) && attempt < 3 {
				continue
			}
			if err != nil {
				return nil, err
			}
		}
		turn := turnRequest{UserID: req.UserID, SessionID: sid, ClientID: req.ClientID, Content: plan.content, MessageID: plan.messageID}
		run := turn.run(sess)
		if plan.stored {
			run.turnLog, run.writes = counts.TurnLog, counts.Writes
		}
		return &run, nil
	}
}

// rewindPlan is a rewind found in a session.
type rewindPlan struct {
	before    string          // the invocation of the turn's user message
	key       string          // the request, stored with the mark
	calls     map[string]bool // the call ids (model and confirmation) in the part taken back
	content   *genai.Content  // the user message to run
	messageID string          // the client's id for it
	stored    bool            // the mark is stored: the same request died before its turn
}

// planRewind finds in sess, read whole, what req takes back.
func planRewind(sess session.Session, req Rewind) (*rewindPlan, error) {
	events := slices.Collect(sess.Events().All())
	if p, err := retried(events, sessionstore.Rewound(sess), req); p != nil || err != nil {
		return p, err
	}
	at := findTurn(events, req.Message)
	if at < 0 {
		if req.Message != "" && findTurn(sessionstore.Rewound(sess), req.Message) >= 0 {
			return nil, fmt.Errorf("%w: %q", ErrRewound, req.Message)
		}
		return nil, fmt.Errorf("%w: %q", ErrMessageNotFound, req.Message)
	}
	msg := events[at]
	if req.Content != nil && findTurn(events, "") == at && sameText(msg.Content, req.Content) {
		// The latest message, sent again as it is: the request served.
		return nil, fmt.Errorf("%w: %q", ErrMessageTaken, req.Message)
	}
	p := &rewindPlan{before: msg.InvocationID, key: req.key(), calls: callIDs(events[at:]), content: req.Content, messageID: clientMessageID(msg)}
	if p.content == nil {
		p.content = msg.Content
	}
	return p, nil
}

// retried recognises the same request again from the latest rewind mark:
// a mark of req followed by no turn (the process died before running it)
// is completed; followed by its own turn only, req was served
// (ErrMessageTaken). Anything else is nil: not a retry.
func retried(events, rewound []*session.Event, req Rewind) (*rewindPlan, error) {
	key := req.key()
	if key == "" {
		return nil, nil
	}
	last := -1
	var mark sessionstore.Rewind
	for i := len(events) - 1; i >= 0 && last < 0; i-- {
		if r, ok := sessionstore.RewindOf(events[i]); ok {
			last, mark = i, r
		}
	}
	if last < 0 || mark.Request != key {
		return nil, nil
	}
	var turns []*session.Event
	for _, ev := range events[last+1:] {
		if StartsTurn(ev) {
			turns = append(turns, ev)
		}
	}
	switch {
	case len(turns) == 1 && (req.Content == nil || sameText(turns[0].Content, req.Content)):
		return nil, fmt.Errorf("%w: %q", ErrMessageTaken, key)
	case len(turns) > 0:
		return nil, nil
	}
	at := slices.IndexFunc(rewound, func(ev *session.Event) bool { return StartsTurn(ev) && ev.InvocationID == mark.Before })
	if at < 0 {
		return nil, nil
	}
	p := &rewindPlan{before: mark.Before, key: key, stored: true, content: req.Content, messageID: clientMessageID(rewound[at])}
	if p.content == nil {
		p.content = rewound[at].Content
	}
	return p, nil
}

// findTurn returns the index of the user message that starts the turn
// message names (see Rewind.Message; "" is the latest), or -1.
func findTurn(events []*session.Event, message string) int {
	found := -1
	for i, ev := range events {
		if !StartsTurn(ev) {
			continue
		}
		if message == "" || ev.InvocationID == message || ev.ID == message || clientMessageID(ev) == message {
			found = i
		}
	}
	return found
}

// clientMessageID is the client's id of a user message, "" when it gave
// none.
func clientMessageID(ev *session.Event) string {
	id, _ := ev.Actions.StateDelta[MessageKey].(string)
	return id
}

// callIDs are the ids of the calls events make: the model's and ADK's
// confirmation requests'.
func callIDs(events []*session.Event) map[string]bool {
	ids := map[string]bool{}
	for _, ev := range events {
		if ev.Content == nil {
			continue
		}
		for _, p := range ev.Content.Parts {
			if p != nil && p.FunctionCall != nil {
				ids[p.FunctionCall.ID] = true
			}
		}
	}
	return ids
}

// sameText reports whether two messages have the same text.
func sameText(a, b *genai.Content) bool {
	text := func(c *genai.Content) []string {
		var out []string
		for _, p := range c.Parts {
			if p != nil && p.Text != "" {
				out = append(out, p.Text)
			}
		}
		return out
	}
	return a != nil && slices.Equal(text(a), text(b))
}

// commitRewind stores the mark of plan in sess, closing in the same commit
// every ledger record still open: each belongs to a call of the part taken
// back (a turn settles the calls before it), and none will be delivered.
// With claim, the commit takes the session's lease.
func (e *engine) commitRewind(ctx context.Context, sess session.Session, plan *rewindPlan, claim *sessionstore.LeaseClaim, counts sessionstore.AppendOptions) error {
	docs, snaps, err := queryCalls(ctx, e.callsOf(sess.UserID(), sess.ID()).Where("resumed", "==", false))
	if err != nil {
		return err
	}
	now := platform.Now(ctx)
	writes := counts.Writes
	for i, d := range docs {
		if !plan.calls[d.ID] && !plan.calls[d.OriginalID] {
			return fmt.Errorf("rewind session %q: call %q is open outside the part taken back", sess.ID(), d.ID)
		}
		ups := []firestore.Update{{Path: "resumed", Value: true}, {Path: "sweepAt", Value: firestore.Delete}}
		if Status(d.Status) == StatusPending {
			next := StatusCancelled
			if !now.Before(d.Expires) {
				next = StatusExpired
			}
			ups = append(ups, firestore.Update{Path: "status", Value: string(next)}, firestore.Update{Path: "resolved", Value: now})
		}
		writes = append(writes, sessionstore.DocUpdate{Ref: snaps[i].Ref, Updates: ups, Pre: firestore.LastUpdateTime(snaps[i].UpdateTime)}.Write())
	}
	_, err = e.sessions.RewindSession(ctx, sess, e.agent, sessionstore.Rewind{Before: plan.before, Request: plan.key},
		sessionstore.AppendOptions{Writes: writes, DocsClosed: true, Claim: claim, TurnLog: counts.TurnLog})
	return err
}
