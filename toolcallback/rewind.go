package toolcallback

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"google.golang.org/adk/v2/platform"
	"google.golang.org/genai"

	"github.com/baton-run/baton/limits"
	"github.com/baton-run/baton/sessionstore"
)

var (
	// ErrMessageNotFound: a rewind names a message the chat does not have.
	ErrMessageNotFound = errors.New("message not found")
	// ErrRewound: a rewind names a message an earlier rewind took back.
	ErrRewound = errors.New("message taken back by a rewind")
)

// RewindRequest asks a chat to take back a turn, and everything after it,
// and to run a user message in its place.
type RewindRequest struct {
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
	// Limits are the caller's turn limits, as TurnRequest's: a rewind runs
	// the model, so it counts as a turn (a replay of a request served
	// before does not).
	Limits limits.Limits
}

// rewindRequest is what a turn needs of a RewindRequest.
type rewindRequest struct {
	message string
	edit    *genai.Content // nil: a regenerate
}

// key names the request in the mark it stores; "" when it cannot be told
// from another (a regenerate of "the latest turn").
func (r rewindRequest) key() string {
	switch {
	case r.message == "":
		return ""
	case r.edit != nil:
		return "edit:" + r.message
	}
	return "regenerate:" + r.message
}

// Rewind takes back the turn req names and what followed it, and runs its
// user message again (or req.Content in its place), planned as any turn
// (planTurn). It fails with ErrMessageNotFound for a message the chat does
// not have, ErrRewound for one an earlier rewind took back, and
// ErrMessageTaken when the same request was served already (the caller
// shows the chat's latest turn).
func (t *Team) Rewind(ctx context.Context, req RewindRequest) (*Invocation, error) {
	if err := validIDs("user id", req.UserID, "chat id", req.ChatID, "client id", req.ClientID); err != nil {
		return nil, err
	}
	if req.Content != nil && len(req.Content.Parts) == 0 {
		return nil, fmt.Errorf("%w: empty message", ErrInvalidAnswer)
	}
	in := turnRequest{TurnRequest: TurnRequest{UserID: req.UserID, ChatID: req.ChatID, ClientID: req.ClientID, Limits: req.Limits},
		rewind: &rewindRequest{message: req.Message}}
	if req.Content == nil {
		s, _, err := t.turn(ctx, in, t.carryOut)
		return s.inv, err
	}
	// An edit: its files are stored as a turn's are.
	var s started
	err := t.withFiles(ctx, req.UserID, req.ChatID, req.Content, func(content *genai.Content) (err error) {
		in.Content, in.rewind.edit = content, content
		s, _, err = t.turn(ctx, in, t.carryOut)
		return err
	})
	return s.inv, err
}

// claimedRewind stores p's rewind mark on p.sess in the commit that takes
// the session's lease (claim), with run's counts of the turn, and runs the
// turn under it.
func (e *engine) claimedRewind(ctx context.Context, run invocationRun, p turnPlan, claim *sessionstore.LeaseClaim) (*Invocation, error) {
	counts := sessionstore.AppendOptions{TurnLog: run.turnLog, Writes: run.writes}
	if err := e.commitRewind(ctx, p.sess, p.rewind, claim, counts, run.chat); err != nil {
		return nil, err
	}
	h := &heldLease{lease: claim.Lease()}
	e.keep(ctx, h)
	// The rewind closed every open ledger record; its commit counted the
	// turn.
	run.held, run.docsClosed = h, true
	run.turnLog, run.writes, run.committed = nil, nil, nil
	return e.start(ctx, run)
}

// rewindHeld, under the lease h, stores the rewind p planned (unless the
// same request stored it before) and returns the turn to run: the rewind
// is planned again on the session as read under the lease. A ledger
// record that changed between its read and the commit (an answer landed)
// makes it read again.
func (e *engine) rewindHeld(ctx context.Context, h *heldLease, run invocationRun, p turnPlan) (invocationRun, error) {
	for attempt := 0; ; attempt++ {
		sess, err := e.readWhole(ctx, h.lease, run.user, run.session)
		if err != nil {
			return run, err
		}
		plan, err := planRewind(sess, p.rewind.request)
		if err != nil {
			return run, err
		}
		// The lease is taken: the counts join whatever is stored by now.
		counts := sessionstore.AppendOptions{TurnLog: p.meter.ChatLog(sess), Writes: p.meter.WritesUnderLease()}
		if !plan.stored {
			err = e.commitRewind(ctx, sess, plan, nil, counts, run.chat)
			if errors.Is(err, sessionstore.ErrConflict) && !errors.Is(err, sessionstore.ErrLeaseLost) && attempt < 3 {
				continue
			}
			if err != nil {
				return run, err
			}
			counts = sessionstore.AppendOptions{}
		}
		run.handle, run.msg, run.opts = sess, plan.content, runOptions(plan.messageID)
		run.turnLog, run.writes = counts.TurnLog, counts.Writes
		return run, nil
	}
}

// commitRewind stores the mark of plan in sess, closing in the same commit
// every ledger record still open: each belongs to a call of the part taken
// back (a turn settles the calls before it), and none will be delivered;
// and deleting the user's ratings of the assistant messages taken back
// (package feedback) of chat. With claim, the commit takes the session's
// lease.
func (e *engine) commitRewind(ctx context.Context, sess *sessionstore.Session, plan *rewindPlan, claim *sessionstore.LeaseClaim, counts sessionstore.AppendOptions, chat string) error {
	docs, err := e.ledger.Unresumed(ctx, sess.UserID(), sess.ID())
	if err != nil {
		return err
	}
	for _, d := range docs {
		if !plan.calls[d.ID] && !plan.calls[d.OriginalID] {
			return fmt.Errorf("rewind session %q: call %q is open outside the part taken back", sess.ID(), d.ID)
		}
	}
	writes := slices.Concat(counts.Writes, e.ledger.Closed(docs, platform.Now(ctx)))
	if chat != "" {
		writes = append(writes, e.feedback.Removed(sess.UserID(), chat, plan.turns)...)
	}
	_, err = e.sessions.RewindSession(ctx, sess, e.agent, sessionstore.RewindMark{Before: plan.before, Request: plan.key},
		sessionstore.AppendOptions{Writes: writes, DocsClosed: true, Claim: claim, TurnLog: counts.TurnLog})
	if err == nil {
		e.dropWork(ctx, docs) // the commit closed them
	}
	return err
}
