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

	"github.com/baton-run/baton/ledger"
	"github.com/baton-run/baton/sessionstore"
	"github.com/baton-run/baton/transcript"
)

// pending returns the session's pending calls that client may answer (an
// empty client: every client's), oldest first, so a reloaded tab can pick
// its tool requests up again, and
// the session's latest events (up to recentWindow; all of them when all
// is set), and whether those begin with its first event. When a dead
// invocation left the session needing repair and nobody holds its lease,
// it repairs it first, so the reloaded tab shows the repaired
// conversation. While a turn runs, its open questions asked on a live call
// (AskInCall) are among the calls.
func (e *engine) pending(ctx context.Context, user, sid, client string, all bool) ([]*Call, []*session.Event, bool, error) {
	recent := recentWindow
	if all {
		recent = 0
	}
	sess, err := e.sessions.Read(ctx, sessionstore.ReadRequest{App: e.app, User: user, SessionID: sid, Recent: recent})
	if err != nil {
		return nil, nil, false, err
	}
	// A turn in flight looks like one to repair (a message not answered
	// yet): with its lease live as read, trying to take the lease would
	// only find it busy, one lookup more for every reader of a running
	// turn. Its questions asked on a live call are written resumed: the
	// same query finds them, open only while it runs.
	_, running := sess.LiveLease(ctx)
	docs, err := e.ledger.Open(ctx, user, sid, running)
	if err == nil && !running {
		docs, err = e.remoteQuestions(ctx, docs)
	}
	if err != nil {
		return nil, nil, false, err
	}
	e.repairEnqueues(ctx, docs)
	read := sess
	if !running && transcript.NeedsRepair(sess.Events(), knownCalls(docs)) {
		if sess, err = e.repairIfIdle(ctx, sess, docs); err != nil {
			return nil, nil, false, err
		}
	}
	now := platform.Now(ctx)
	var out []*Call
	for _, d := range docs {
		if d.Status != StatusPending || !now.Before(d.Expires) || (client != "" && !d.AnyDevice && d.ClientID != client) {
			continue
		}
		out = append(out, d)
	}
	// A window is cut only when it holds as many events, rewound ones
	// included, as it was read with (a repair reads the window again).
	events := slices.Collect(sess.Events().All())
	whole := (all && sess == read) || len(events)+len(sess.Rewound()) < recentWindow
	return out, events, whole, nil
}

// settleOpenCalls applies the pending-call policy before a new message,
// under the session's lease. Every call the agent still waits for gets a
// response: a recorded answer that never reached the agent is delivered,
// a pending call is cancelled (or reported, under PendingReject), and what
// a dead invocation left unanswered is closed (repairTail). It returns the
// session as read under the lease (its whole history: the runner reads
// it); no ledger record is left open. A messageID the session already
// took is ErrMessageTaken.
func (e *engine) settleOpenCalls(ctx context.Context, lease *sessionstore.Lease, user, sid, messageID string) (*sessionstore.Session, error) {
	sess, err := e.readWhole(ctx, lease, user, sid)
	if err != nil {
		return nil, err
	}
	if messageID != "" && transcript.TakenMessage(sess) == messageID {
		return nil, fmt.Errorf("%w: %q", ErrMessageTaken, messageID)
	}
	if e.opts.PendingPolicy == PendingReject {
		if err := e.rejectIfPending(ctx, user, sid); err != nil {
			return nil, err
		}
	}
	docs, err := e.closeOpenCalls(ctx, sess)
	if err != nil {
		return nil, err
	}
	var lead []*genai.Part
	if todo := undelivered(sess, docs); len(todo) > 0 {
		lead = responseParts(todo, false)
	}
	if err := e.repairTail(ctx, sess, lead, knownCalls(docs)); err != nil {
		return nil, err
	}
	if err := e.ledger.MarkResumed(ctx, docs); err != nil {
		return nil, err
	}
	return sess, nil
}

// closeOpenCalls cancels the session's pending calls (expired ones are
// marked expired) and returns every call whose answer the agent does not
// have yet, as now recorded. An answer that lands first wins and is
// returned instead.
func (e *engine) closeOpenCalls(ctx context.Context, sess *sessionstore.Session) ([]*Call, error) {
	user, sid := sess.UserID(), sess.ID()
	docs, err := e.ledger.Unresumed(ctx, user, sid)
	if err != nil || len(docs) == 0 {
		return nil, err
	}
	now := platform.Now(ctx)
	for i, d := range docs {
		if d.Status != StatusPending {
			continue
		}
		closed, err := e.cancel(ctx, d, now)
		if err != nil {
			return nil, err
		}
		docs[i] = closed
	}
	e.dropWork(ctx, docs)
	return docs, nil
}

// cancel cancels d, a pending call, and returns it as now recorded: an
// answer (or another closer) that got there first wins. A background
// call's running attempt writes its record every few seconds (its
// progress, its hold) and leaves it pending: such a change is read again
// and the cancel tried again, so that the work cannot outrun a stop or a
// new message.
func (e *engine) cancel(ctx context.Context, d *Call, now time.Time) (*Call, error) {
	for range 5 {
		closed, err := e.ledger.Cancel(ctx, d, now)
		if !errors.Is(err, ledger.ErrChanged) {
			return closed, err
		}
		if d, err = e.ledger.Get(ctx, d.UserID, d.SessionID, d.ID); err != nil || d.Status != StatusPending {
			return d, err
		}
	}
	return nil, fmt.Errorf("%w: call %q keeps changing", ledger.ErrChanged, d.ID)
}

// rejectIfPending fails with a *PendingCallsError when the session has
// calls still waiting for an answer.
func (e *engine) rejectIfPending(ctx context.Context, user, sid string) error {
	docs, err := e.ledger.Pending(ctx, user, sid)
	if err != nil {
		return err
	}
	e.repairEnqueues(ctx, docs)
	return pendingError(docs, platform.Now(ctx))
}

func pendingError(docs []*Call, now time.Time) error {
	var pending []*Call
	for _, d := range docs {
		if d.Status != StatusPending || !now.Before(d.Expires) {
			continue
		}
		pending = append(pending, d)
	}
	if len(pending) > 0 {
		return &PendingCallsError{Calls: pending}
	}
	return nil
}
