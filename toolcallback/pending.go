package toolcallback

import (
	"context"
	"fmt"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/adk/v2/platform"
	"google.golang.org/adk/v2/session"
	"google.golang.org/genai"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Pending returns the session's pending calls that client may answer,
// oldest first, so a reloaded tab can pick its tool requests up again; an
// empty client lists every client's.
// When a dead invocation left the session needing repair and nobody holds
// its lease, it repairs it first, so the reloaded tab shows the repaired
// conversation.
func (e *Engine) Pending(ctx context.Context, user, sid, client string) ([]*Call, error) {
	if err := validateIDs(user, sid, client); err != nil {
		return nil, err
	}
	sess, err := e.loadRecent(ctx, user, sid)
	if err != nil {
		return nil, err
	}
	docs, _, err := queryCalls(ctx, e.callsOf(user, sid).Where("resumed", "==", false))
	if err != nil {
		return nil, err
	}
	if needsRepair(sess.Events(), knownCalls(docs)) {
		if err := e.repairIfIdle(ctx, user, sid); err != nil {
			return nil, err
		}
	}
	now := platform.Now(ctx)
	var out []*Call
	for _, d := range docs {
		if Status(d.Status) != StatusPending || !now.Before(d.Expires) || (client != "" && !d.AnyDevice && d.Client != client) {
			continue
		}
		c, err := d.call()
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// settleOpenCalls applies the pending-call policy before a new message,
// under the session's lease. Every call the agent still waits for gets a
// response: a recorded answer that never reached the agent is delivered,
// a pending call is cancelled (or reported, under PendingReject), and what
// a dead invocation left unanswered is closed (repairTail).
func (e *Engine) settleOpenCalls(ctx context.Context, user, sid, messageID string) error {
	sess, err := e.loadRecent(ctx, user, sid)
	if err != nil {
		return err
	}
	if messageID != "" && TakenMessage(sess) == messageID {
		return fmt.Errorf("%w: %q", ErrMessageTaken, messageID)
	}
	if e.opts.PendingPolicy == PendingReject {
		if err := e.rejectIfPending(ctx, user, sid); err != nil {
			return err
		}
	}
	docs, err := e.closeOpenCalls(ctx, sess)
	if err != nil {
		return err
	}
	var lead []*genai.Part
	if todo := undelivered(sess, docs); len(todo) > 0 {
		lead = responseParts(todo, false)
	}
	if err := e.repairTail(ctx, sess, lead, knownCalls(docs)); err != nil {
		return err
	}
	return e.markResumed(ctx, docs)
}

// closeOpenCalls cancels the session's pending calls (expired ones are
// marked expired) and returns every call whose answer the agent does not
// have yet, as now recorded. An answer that lands first wins and is
// returned instead.
func (e *Engine) closeOpenCalls(ctx context.Context, sess session.Session) ([]*callDoc, error) {
	user, sid := sess.UserID(), sess.ID()
	docs, snaps, err := queryCalls(ctx, e.callsOf(user, sid).Where("resumed", "==", false))
	if err != nil || len(docs) == 0 {
		return nil, err
	}
	now := platform.Now(ctx)
	for i, d := range docs {
		if Status(d.Status) != StatusPending {
			continue
		}
		next := StatusCancelled
		if !now.Before(d.Expires) {
			next = StatusExpired
		}
		_, err := snaps[i].Ref.Update(ctx, []firestore.Update{
			{Path: "status", Value: string(next)},
			{Path: "resolved", Value: now},
		}, firestore.LastUpdateTime(snaps[i].UpdateTime))
		if status.Code(err) == codes.FailedPrecondition {
			fresh, _, rerr := e.readCall(ctx, snaps[i].Ref)
			if rerr != nil {
				return nil, rerr
			}
			docs[i] = fresh
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("cancel call %q: %w", d.ID, translate(err))
		}
		d.Status = string(next)
	}
	return docs, nil
}

// rejectIfPending fails with a *PendingCallsError when the session has
// calls still waiting for an answer.
func (e *Engine) rejectIfPending(ctx context.Context, user, sid string) error {
	docs, _, err := queryCalls(ctx, e.callsOf(user, sid).Where("status", "==", string(StatusPending)))
	if err != nil {
		return err
	}
	return pendingError(docs, platform.Now(ctx))
}

func pendingError(docs []*callDoc, now time.Time) error {
	var pending []*Call
	for _, d := range docs {
		if Status(d.Status) != StatusPending || !now.Before(d.Expires) {
			continue
		}
		c, err := d.call()
		if err != nil {
			return err
		}
		pending = append(pending, c)
	}
	if len(pending) > 0 {
		return &PendingCallsError{Calls: pending}
	}
	return nil
}

// SweepReport says what one Sweep did.
type SweepReport struct {
	Expired int `json:"expired"` // calls marked expired
	Resumed int `json:"resumed"` // model steps resumed with their answers or expiry errors
	Skipped int `json:"skipped"` // steps left for a later sweep (session busy, siblings pending)
}

// sweepBatch bounds the records one Sweep handles, so that it finishes
// within its deadline; the scheduler runs it again.
const sweepBatch = 100

// Sweep expires overdue calls and resumes the agent for every model step
// whose calls are all settled but not yet delivered, so the model can tell
// the user. It is idempotent and safe to run from several instances at
// once: marking a call expired is first-writer-wins, and a step is resumed
// under the session lease after checking the session does not have it.
func (e *Engine) Sweep(ctx context.Context, now time.Time) (SweepReport, error) {
	var report SweepReport
	q := e.client.CollectionGroup(callsCollection).
		Where("scope", "==", e.scope()).
		Where("sweepAt", "<=", now).
		OrderBy("sweepAt", firestore.Asc).
		Limit(sweepBatch)
	docs, snaps, err := queryCalls(ctx, q)
	if err != nil {
		return report, err
	}
	type stepKey struct{ user, session, step string }
	seen := map[stepKey]bool{}
	for i, d := range docs {
		if ctx.Err() != nil {
			break
		}
		if Status(d.Status) == StatusPending && !now.Before(d.Expires) {
			_, err := snaps[i].Ref.Update(ctx, []firestore.Update{
				{Path: "status", Value: string(StatusExpired)},
				{Path: "resolved", Value: now},
			}, firestore.LastUpdateTime(snaps[i].UpdateTime))
			if status.Code(err) == codes.FailedPrecondition {
				continue // answered or expired by someone else meanwhile; next sweep
			}
			if err != nil {
				return report, fmt.Errorf("expire call %q: %w", d.ID, translate(err))
			}
			d.Status = string(StatusExpired)
			report.Expired++
		}
		k := stepKey{d.User, d.Session, d.Step}
		if seen[k] || Status(d.Status) == StatusPending {
			continue
		}
		seen[k] = true
		if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < e.opts.InvocationTimeout {
			// A resume started now could outlive the sweep's request.
			report.Skipped++
			continue
		}
		res, err := e.resumeStep(ctx, d, d.Client, 0)
		if err != nil {
			return report, err
		}
		if res.Invocation == nil {
			if res.Deferred || len(res.Waiting) > 0 {
				report.Skipped++
			}
			continue
		}
		if err := res.Invocation.Wait(); err != nil {
			e.opts.Logger.Error("sweep resume", "session", d.Session, "error", err)
		}
		report.Resumed++
	}
	return report, nil
}

// scope is the Sweep filter of this engine's calls: its app and agent, so
// that each agent's engine resumes only the calls its own runner made.
func (e *Engine) scope() string { return e.sessions.Root() + "/" + e.app + "/" + e.agent }
