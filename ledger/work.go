package ledger

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"time"

	"cloud.google.com/go/firestore"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/baton-run/baton/sessionstore"
)

// Work is what a background call's record (KindBackground) says of its
// work, besides the call's status: whether its task was created, which
// attempt runs it and until when, its last progress and its last failed
// attempt's error. Every change of it is a first-writer-wins update of
// the record, as an answer is, so that deliveries that come at least once
// and out of order change it once.
type Work struct {
	// Enqueued is when the call's task was created (or its work first
	// claimed); zero while it is still to be enqueued.
	Enqueued time.Time
	// Attempt counts the attempts claimed so far: the one running, or the
	// last one. MaxAttempts bounds it for errors worth another attempt.
	Attempt, MaxAttempts int
	// Holder names the attempt that runs the work, which holds it until
	// HeldUntil unless it renews the hold; "" when none runs.
	Holder    string
	HeldUntil time.Time
	// Progress is the last progress stored, a JSON value, at ProgressAt.
	Progress   json.RawMessage
	ProgressAt time.Time
	// Error is the error of the last attempt that failed and left the work
	// to another attempt.
	Error string
	// TokensPerDay is the user's daily token budget that held when the
	// call was made, which the tool's own model calls are held to; 0: none.
	TokensPerDay int64
}

// Held reports whether an attempt holds the work at now.
func (w *Work) Held(now time.Time) bool {
	return w != nil && w.Holder != "" && now.Before(w.HeldUntil)
}

// The fields of a record's work, under fieldWork.
const (
	fieldWork           = "work"
	fieldWorkOwner      = "work.owner"
	fieldWorkEnqueued   = "work.enqueued"
	fieldWorkAttempt    = "work.attempt"
	fieldWorkHolder     = "work.holder"
	fieldWorkHeldUntil  = "work.heldUntil"
	fieldWorkProgress   = "work.progress"
	fieldWorkProgressAt = "work.progressAt"
	fieldWorkError      = "work.error"
)

// workRecord is Work's stored form.
type workRecord struct {
	// Owner is "{root}/{app}/{user}", the user whose calls Running counts
	// over every session.
	Owner        string    `firestore:"owner"`
	Enqueued     time.Time `firestore:"enqueued"`
	Attempt      int       `firestore:"attempt"`
	MaxAttempts  int       `firestore:"maxAttempts"`
	Holder       string    `firestore:"holder"`
	HeldUntil    time.Time `firestore:"heldUntil"`
	Progress     []byte    `firestore:"progress"` // JSON
	ProgressAt   time.Time `firestore:"progressAt"`
	Error        string    `firestore:"error"`
	TokensPerDay int64     `firestore:"tokensPerDay"`
}

func (l *Ledger) workRecordOf(c *Call) *workRecord {
	w := c.Work
	return &workRecord{
		Owner: l.owner(c.UserID), Enqueued: w.Enqueued, Attempt: w.Attempt, MaxAttempts: w.MaxAttempts, Holder: w.Holder,
		HeldUntil: w.HeldUntil, Progress: w.Progress, ProgressAt: w.ProgressAt, Error: w.Error, TokensPerDay: w.TokensPerDay,
	}
}

func (r *workRecord) work() *Work {
	return &Work{
		Enqueued: r.Enqueued, Attempt: r.Attempt, MaxAttempts: r.MaxAttempts, Holder: r.Holder, HeldUntil: r.HeldUntil,
		Progress: r.Progress, ProgressAt: r.ProgressAt, Error: r.Error, TokensPerDay: r.TokensPerDay,
	}
}

// owner is the value of fieldWorkOwner for user's calls.
func (l *Ledger) owner(user string) string { return l.sessions.Root() + "/" + l.app + "/" + user }

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// withWork is a copy of c whose work is changed by f.
func withWork(c *Call, f func(w *Work)) *Call {
	out := *c
	w := Work{}
	if c.Work != nil {
		w = *c.Work
	}
	f(&w)
	out.Work = &w
	return &out
}

// Enqueued records that the task of c, a pending background or remote
// call, was created at now: the sweeper then looks at c only at its
// expiry, or, for a remote call whose task a notification already named,
// at its next poll (a mark after that notification must not undo its
// polls). For a closed remote call (CancelDue), the task is its cancel's:
// the sweeper looks at it again only while its agent does not have the
// call's outcome. First writer wins: ErrChanged when the record changed
// since c was read (its work claimed, its status settled); read it again
// to know whether the mark is still needed.
func (l *Ledger) Enqueued(ctx context.Context, c *Call, now time.Time) (*Call, error) {
	out := withWork(c, func(w *Work) { w.Enqueued = now })
	ups := []firestore.Update{{Path: fieldWorkEnqueued, Value: now}}
	switch {
	case c.Status == StatusPending && c.Remote != nil && c.Remote.TaskID != "":
		ups = append(ups, firestore.Update{Path: fieldSweepAt, Value: nextSweep(c, now)})
	case c.Status == StatusPending:
		ups = append(ups, firestore.Update{Path: fieldSweepAt, Value: c.Expires})
	case c.Resumed:
		ups = append(ups, firestore.Update{Path: fieldSweepAt, Value: firestore.Delete})
	}
	return l.change(ctx, c, out, "mark enqueued", ups...)
}

// Claim gives the work of c, a pending background call as read, to the
// attempt holder, which holds it until until (then another may claim it,
// unless holder renews the hold with Report). It counts the attempt, and
// marks the call enqueued if it was not (its task was delivered). First
// writer wins: ErrChanged when another attempt claimed it or the call was
// settled since c was read.
func (l *Ledger) Claim(ctx context.Context, c *Call, holder string, until, now time.Time) (*Call, error) {
	if c.Status != StatusPending {
		return nil, fmt.Errorf("%w: call %q is %s", ErrChanged, c.ID, c.Status)
	}
	out := withWork(c, func(w *Work) {
		w.Attempt++
		w.Holder, w.HeldUntil = holder, until
		if w.Enqueued.IsZero() {
			w.Enqueued = now
		}
	})
	return l.change(ctx, c, out, "claim work",
		firestore.Update{Path: fieldWorkAttempt, Value: out.Work.Attempt},
		firestore.Update{Path: fieldWorkHolder, Value: holder},
		firestore.Update{Path: fieldWorkHeldUntil, Value: until},
		firestore.Update{Path: fieldWorkEnqueued, Value: out.Work.Enqueued},
		firestore.Update{Path: fieldSweepAt, Value: c.Expires})
}

// Report stores progress (a JSON value; nil: nothing new) of the work of
// c, as its holder last wrote or read it, and renews the holder's hold
// until until. First writer wins: ErrChanged when the record changed
// since (a stop, an expiry, another attempt).
func (l *Ledger) Report(ctx context.Context, c *Call, progress json.RawMessage, until, now time.Time) (*Call, error) {
	ups := []firestore.Update{{Path: fieldWorkHeldUntil, Value: until}}
	out := withWork(c, func(w *Work) {
		w.HeldUntil = until
		if progress != nil {
			w.Progress, w.ProgressAt = progress, now
		}
	})
	if progress != nil {
		ups = append(ups, firestore.Update{Path: fieldWorkProgress, Value: []byte(progress)},
			firestore.Update{Path: fieldWorkProgressAt, Value: now})
	}
	return l.change(ctx, c, out, "report progress", ups...)
}

// Release ends the attempt that holds the work of c, as it last wrote or
// read it, which failed with errText: the call stays pending, and the
// next attempt may claim it at once. First writer wins, as Report.
func (l *Ledger) Release(ctx context.Context, c *Call, errText string) (*Call, error) {
	out := withWork(c, func(w *Work) {
		w.Holder, w.HeldUntil, w.Error = "", time.Time{}, errText
	})
	return l.change(ctx, c, out, "release work",
		firestore.Update{Path: fieldWorkHolder, Value: ""},
		firestore.Update{Path: fieldWorkHeldUntil, Value: time.Time{}},
		firestore.Update{Path: fieldWorkError, Value: errText})
}

// change makes updates of c's record, conditional on its version as read,
// and returns out, c as now recorded, at the record's new version.
func (l *Ledger) change(ctx context.Context, c, out *Call, what string, updates ...firestore.Update) (_ *Call, err error) {
	ctx, span := tracer.Start(ctx, "baton.ledger.work", trace.WithAttributes(
		attribute.String("baton.call.id", c.ID), attribute.String("baton.ledger.change", what)))
	defer func() { endSpan(span, err) }()
	at, err := l.sessions.Commit(ctx, sessionstore.Update(l.Doc(c.UserID, c.SessionID, c.ID), c.version, updates...))
	if err != nil {
		return nil, fmt.Errorf("%s of call %q: %w", what, c.ID, changed(err))
	}
	out.version = at
	return out, nil
}

// Running counts user's background calls still pending, over every
// session of the app: one aggregation query (a read per thousand records
// counted) on the records' work owner, status and kind.
func (l *Ledger) Running(ctx context.Context, user string) (_ int64, err error) {
	ctx, span := tracer.Start(ctx, "baton.ledger.running")
	defer func() { endSpan(span, err) }()
	q := l.client.CollectionGroup(collection).
		Where(fieldWorkOwner, "==", l.owner(user)).
		Where(fieldStatus, "==", string(StatusPending)).
		Where(fieldKind, "==", string(KindBackground)) // a remote agent's call carries work too, and is not counted
	res, err := q.NewAggregationQuery().WithCount("n").Get(ctx)
	if err != nil {
		return 0, fmt.Errorf("count background calls: %w", sessionstore.FirestoreError(err))
	}
	switch n := res.Data()["n"].(type) {
	case int64:
		return n, nil
	case nil:
		return 0, nil
	default:
		return 0, fmt.Errorf("count background calls: unexpected result %T", n)
	}
}

// Working follows a session's background and remote calls while they are pending,
// from any instance, until ctx ends: it yields each one pending when it
// starts, each change of those (their progress), and each once settled,
// as then recorded. It listens to the session's pending background
// records: a read per record yielded, none while nothing changes.
func (l *Ledger) Working(ctx context.Context, user, sid string) iter.Seq2[*Call, error] {
	return func(yield func(*Call, error) bool) {
		q := l.calls(user, sid).Where(fieldKind, "in", []string{string(KindBackground), string(KindRemote)}).
			Where(fieldStatus, "==", string(StatusPending))
		it := q.Snapshots(ctx)
		defer it.Stop()
		for {
			snap, err := it.Next()
			if err != nil {
				if ctx.Err() == nil {
					yield(nil, fmt.Errorf("follow background calls: %w", sessionstore.FirestoreError(err)))
				}
				return
			}
			for _, ch := range snap.Changes {
				var c *Call
				if ch.Kind == firestore.DocumentRemoved {
					c, err = l.Get(ctx, user, sid, ch.Doc.Ref.ID)
				} else {
					c, err = decode(ch.Doc)
				}
				if !yield(c, err) || err != nil {
					return
				}
			}
		}
	}
}
