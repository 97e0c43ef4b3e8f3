package ledger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"cloud.google.com/go/firestore"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/baton-run/baton/sessionstore"
)

// Record is the write that creates c's record, for the commit that stores
// the event holding the call (sessionstore.AppendOptions.Create): the call
// and its record are stored together or not at all; and listing are the
// writes of the same commit (AppendOptions.Writes) that count the call in
// its chat's listing (waiting.go). c is pending; its record is swept at
// its expiry and collected Retention later.
func (l *Ledger) Record(c *Call) (create sessionstore.Write, listing []sessionstore.Write, err error) {
	r, err := l.recordOf(c)
	if err != nil {
		return sessionstore.Write{}, nil, err
	}
	return sessionstore.Create(l.Doc(c.UserID, c.SessionID, c.ID), r), l.waitingWrites(c, true), nil
}

// Ask creates c's record on its own: an in-call question (c.InCall),
// written resumed so that nothing ever delivers it to the agent (its tool
// returns the answer itself) and the sweeper never looks at it.
func (l *Ledger) Ask(ctx context.Context, c *Call) error {
	w, listing, err := l.Record(c)
	if err == nil {
		_, err = l.sessions.Commit(ctx, append(listing, w)...)
	}
	if err != nil {
		return fmt.Errorf("record question %q: %w", c.ID, err)
	}
	return nil
}

// Answer records a as c's answer, given by client by (empty for a token's
// holder) at now, first writer wins: the update is conditional on the
// record being as read, and fails with ErrChanged, writing nothing, when
// another answer, an expiry or a cancellation got there first. It returns
// c as now recorded; the sweeper resumes its step after AnswerGrace unless
// MarkResumed says the agent has it by then.
func (l *Ledger) Answer(ctx context.Context, c *Call, a Answer, by string, now time.Time) (_ *Call, err error) {
	ctx, span := tracer.Start(ctx, "baton.ledger.answer", trace.WithAttributes(attribute.String("baton.call.id", c.ID)))
	defer func() { endSpan(span, err) }()
	w, answered, err := l.AnswerWrite(c, a, by, now)
	if err != nil {
		return nil, err
	}
	if err := l.commit(ctx, c, w...); err != nil {
		return nil, fmt.Errorf("record answer to %q: %w", c.ID, err)
	}
	return answered, nil
}

// AnswerWrite is Answer as writes of another commit (one that also takes
// the session's lease and delivers the answer), with c as that commit
// records it: the commit fails, writing nothing, when the record changed
// since c was read.
func (l *Ledger) AnswerWrite(c *Call, a Answer, by string, now time.Time) ([]sessionstore.Write, *Call, error) {
	b, err := json.Marshal(a)
	if err != nil {
		return nil, nil, fmt.Errorf("encode answer to %q: %w", c.ID, err)
	}
	sweepAt := now.Add(l.opts.AnswerGrace)
	answered := *c
	answered.Status, answered.Answer, answered.answer, answered.ResolvedBy, answered.Resolved = StatusResolved, &a, b, by, now
	w := sessionstore.Update(l.Doc(c.UserID, c.SessionID, c.ID), c.version,
		firestore.Update{Path: fieldStatus, Value: string(StatusResolved)},
		firestore.Update{Path: fieldAnswer, Value: b},
		firestore.Update{Path: fieldBy, Value: by},
		firestore.Update{Path: fieldResolved, Value: now},
		firestore.Update{Path: fieldSweepAt, Value: sweepAt},
	)
	return append([]sessionstore.Write{w}, l.waitingWrites(c, false)...), &answered, nil
}

// Cancel closes a pending call nobody will answer any more (a new message,
// a stop, an agent switch): it becomes cancelled, or expired when its time
// ran out by now; first writer wins (ErrChanged: an answer or another
// closer got there first). It returns c as now recorded.
func (l *Ledger) Cancel(ctx context.Context, c *Call, now time.Time) (*Call, error) {
	return l.settle(ctx, c, closing(c, now), now)
}

// Expire closes a pending call whose time ran out (the sweeper, an
// in-call question's asker); first writer wins, as Cancel.
func (l *Ledger) Expire(ctx context.Context, c *Call, now time.Time) (*Call, error) {
	return l.settle(ctx, c, StatusExpired, now)
}

// ExpireBecause closes a pending call as Expire does, for reason, which
// the model reads in the call's error response (an operator's expiry);
// first writer wins.
func (l *Ledger) ExpireBecause(ctx context.Context, c *Call, reason string, now time.Time) (*Call, error) {
	if c.Status != StatusPending {
		return nil, fmt.Errorf("%w: call %q is %s", ErrChanged, c.ID, c.Status)
	}
	ups := []firestore.Update{
		{Path: fieldStatus, Value: string(StatusExpired)},
		{Path: fieldResolved, Value: now},
		{Path: fieldReason, Value: reason},
		{Path: fieldSweepAt, Value: now},
	}
	if cu := l.cancelUpdates(c, now); cu != nil {
		ups = append(ups[:3], cu...)
	}
	w := sessionstore.Update(l.Doc(c.UserID, c.SessionID, c.ID), c.version, ups...)
	at, err := l.sessions.Commit(ctx, w)
	if err != nil {
		return nil, fmt.Errorf("expire call %q: %w", c.ID, changed(err))
	}
	closed := *closedWork(c)
	closed.Status, closed.Resolved, closed.Reason, closed.version = StatusExpired, now, reason, at
	return &closed, nil
}

// closing is the status a call closed at now takes.
func closing(c *Call, now time.Time) Status {
	if !now.Before(c.Expires) {
		return StatusExpired
	}
	return StatusCancelled
}

// settle moves the pending call c to status, on condition of its record
// being as read.
func (l *Ledger) settle(ctx context.Context, c *Call, status Status, now time.Time) (*Call, error) {
	if c.Status != StatusPending {
		return nil, fmt.Errorf("%w: call %q is %s", ErrChanged, c.ID, c.Status)
	}
	ups := append([]firestore.Update{{Path: fieldStatus, Value: string(status)}, {Path: fieldResolved, Value: now}},
		l.cancelUpdates(c, now)...)
	w := sessionstore.Update(l.Doc(c.UserID, c.SessionID, c.ID), c.version, ups...)
	at, err := l.sessions.Commit(ctx, append([]sessionstore.Write{w}, l.waitingWrites(c, false)...)...)
	if err != nil {
		return nil, fmt.Errorf("close call %q: %w", c.ID, changed(err))
	}
	closed := *closedWork(c)
	closed.Status, closed.Resolved, closed.version = status, now, at
	return &closed, nil
}

// commit makes w, an update of c's record conditional on its version
// (with what rides with it).
func (l *Ledger) commit(ctx context.Context, c *Call, w ...sessionstore.Write) error {
	_, err := l.sessions.Commit(ctx, w...)
	return changed(err)
}

// changed is err, a commit's, with a failed condition marked ErrChanged.
func changed(err error) error {
	if errors.Is(err, sessionstore.ErrConflict) {
		return fmt.Errorf("%w: %w", ErrChanged, err)
	}
	return err
}

// MarkResumed records that the agent has the answers of calls: the
// sweeper stops looking at them, and they are no longer open. It is
// idempotent (no condition: the agent has them, whoever marks it).
func (l *Ledger) MarkResumed(ctx context.Context, calls []*Call) (err error) {
	if len(calls) == 0 {
		return nil
	}
	ctx, span := tracer.Start(ctx, "baton.ledger.mark_resumed", trace.WithAttributes(attribute.Int("baton.ledger.records", len(calls))))
	defer func() { endSpan(span, err) }()
	_, err = l.sessions.Commit(ctx, l.Delivered(calls)...)
	return err
}

// Delivered are MarkResumed's writes, for the commit that stores the
// responses delivering calls (a live segment's): the answer reaches the
// transcript and the record closes at once.
func (l *Ledger) Delivered(calls []*Call) []sessionstore.Write {
	out := make([]sessionstore.Write, 0, len(calls))
	for _, c := range calls {
		out = append(out, sessionstore.Update(l.Doc(c.UserID, c.SessionID, c.ID), time.Time{}, resumedUpdates(c)...))
	}
	return out
}

// resumedUpdates mark c resumed, and take it off the sweeper unless it is
// a closed remote call whose cancel is not sent (CancelDue: the sweeper
// sees to it; CancelSent takes it off).
func resumedUpdates(c *Call) []firestore.Update {
	if c.Status != StatusResolved && cancelable(c) {
		return []firestore.Update{{Path: fieldResumed, Value: true}}
	}
	return []firestore.Update{{Path: fieldResumed, Value: true}, {Path: fieldSweepAt, Value: firestore.Delete}}
}

// Closed are the writes that close calls for good, for the commit of a
// rewind that takes them back: each is marked resumed (none will be
// delivered), and a pending one becomes cancelled (expired, when its time
// ran out by now). Each is conditional on its record being as read, so an
// answer landing meanwhile fails that commit, writing nothing.
func (l *Ledger) Closed(calls []*Call, now time.Time) []sessionstore.Write {
	out := make([]sessionstore.Write, 0, len(calls))
	for _, c := range calls {
		ups := resumedUpdates(c)
		if c.Status == StatusPending {
			ups = append(ups, firestore.Update{Path: fieldStatus, Value: string(closing(c, now))}, firestore.Update{Path: fieldResolved, Value: now})
			ups = append(ups, l.cancelUpdates(c, now)...)
		}
		out = append(out, sessionstore.Update(l.Doc(c.UserID, c.SessionID, c.ID), c.version, ups...))
		if c.Status == StatusPending {
			out = append(out, l.waitingWrites(c, false)...)
		}
	}
	return out
}
