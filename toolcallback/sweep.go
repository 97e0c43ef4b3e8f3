package toolcallback

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/baton-run/baton/ledger"
)

// SweepReport says what one Sweep did.
type SweepReport struct {
	Expired  int `json:"expired"`  // calls marked expired
	Resumed  int `json:"resumed"`  // model steps resumed with their answers or expiry errors
	Skipped  int `json:"skipped"`  // steps left for a later sweep (session busy, siblings pending)
	Repaired int `json:"repaired"` // chats whose switch leftovers were removed
	Idle     int `json:"idle"`     // idle chats deleted with all their documents
	Enqueued int `json:"enqueued"` // background calls whose task a crash or a failure left uncreated, created
	Polled   int `json:"polled"`   // remote agents' tasks read (RemoteConfig.PollEvery)
	// Accounts are accounts whose deletion the sweep finished: asked for
	// and left unfinished, or of users the identity provider no longer
	// has (Options.AccountGone).
	Accounts int `json:"accounts"`
	// Checked are the accounts the sweep asked AccountGone about.
	Checked int `json:"checked"`
	// Overdue counts the calls this sweep found due for longer than
	// overdueAfter: sweeps that did not run, or could not keep up.
	Overdue int `json:"overdue"`
}

// overdueAfter is how long past its due time a call counts as overdue
// for the baton.calls.overdue metric (the console's stuck calls).
const overdueAfter = 5 * time.Minute

// sweepBatch bounds the records one Sweep handles, so that it finishes
// within its deadline; the scheduler runs it again.
const sweepBatch = 100

// sweep expires overdue calls and resumes the agent for every model step
// whose calls are all settled but not yet delivered, so the model can tell
// the user. It is idempotent and safe to run from several instances at
// once: marking a call expired is first-writer-wins, and a step is resumed
// under the session lease after checking the session does not have it.
func (e *engine) sweep(ctx context.Context, now time.Time) (SweepReport, error) {
	var report SweepReport
	docs, err := e.ledger.Due(ctx, e.agent, now, sweepBatch)
	if err != nil {
		return report, err
	}
	type stepKey struct{ user, session, step string }
	seen := map[stepKey]bool{}
	for _, d := range docs {
		if due := dueAt(d, e.opts.AnswerGrace); now.Sub(due) > overdueAfter {
			report.Overdue++
		}
	}
	for _, d := range docs {
		if ctx.Err() != nil {
			break
		}
		if d.Status == StatusPending && !now.Before(d.Expires) {
			expired, err := e.expire(ctx, d, now)
			if errors.Is(err, ledger.ErrChanged) {
				continue // answered or expired by someone else meanwhile; next sweep
			}
			if err != nil {
				return report, err
			}
			if expired.Status == StatusExpired {
				report.Expired++
				e.dropWork(ctx, []*Call{expired})
			}
			d = expired
		}
		if e.toEnqueue(d, now) {
			if err := e.enqueueDue(ctx, d); err != nil {
				e.opts.Logger.Warn("sweep: enqueue a background call", "call", d.ID, "error", err)
				continue
			}
			report.Enqueued++
			if d.Status == StatusPending || d.Resumed {
				continue // a closed call's mark took it off the sweeper once resumed
			}
		} else if d.Resumed {
			e.takeOff(ctx, d)
			continue
		}
		if toPoll(d, now) {
			e.sweepPoll(ctx, d, now)
			report.Polled++
			continue
		}
		k := stepKey{d.UserID, d.SessionID, d.Step}
		if seen[k] || d.Status == StatusPending {
			continue
		}
		seen[k] = true
		if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < e.opts.InvocationTimeout {
			// A resume started now could outlive the sweep's request.
			report.Skipped++
			continue
		}
		sctx, span := startResume(ctx, d)
		res, err := e.resumeStep(sctx, d, d.ClientID, 0)
		endSpan(span, err)
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
			e.opts.Logger.Error("sweep resume", "session", d.SessionID, "error", err)
		}
		report.Resumed++
	}
	return report, nil
}

// dueAt is when the sweeper was due to look at c: its expiry while
// pending, grace after its answer.
func dueAt(c *Call, grace time.Duration) time.Time {
	if c.Status == StatusPending {
		return c.Expires
	}
	return c.Resolved.Add(grace)
}

// Sweep expires overdue calls for every agent, removes what switches that
// died left behind, finishes the deletions of chats and accounts that
// died or were held, deletes chats idle beyond Options.IdleRetention, and
// deletes the data of users the identity provider no longer has
// (Options.AccountGone).
func (t *Team) Sweep(ctx context.Context, now time.Time) (SweepReport, error) {
	var report SweepReport
	for _, name := range t.names {
		r, err := t.engines[name].sweep(ctx, now)
		report.Expired += r.Expired
		report.Resumed += r.Resumed
		report.Skipped += r.Skipped
		report.Enqueued += r.Enqueued
		report.Polled += r.Polled
		report.Overdue += r.Overdue
		if err != nil {
			return report, err
		}
	}
	defer func() { countSweep(ctx, report, report.Overdue) }()
	due, err := t.sessions.ChatsToClean(ctx, t.app, now, chatBatch)
	if err != nil {
		return report, err
	}
	for _, chat := range due {
		if ctx.Err() != nil {
			return report, nil
		}
		if err := t.repairChat(ctx, chat); err != nil {
			t.opts.Logger.Warn("chat cleanup", "chat", chat.ID, "error", err)
			continue
		}
		report.Repaired++
	}
	idle, err := t.sessions.IdleChats(ctx, t.app, now.Add(-t.opts.IdleRetention), chatBatch)
	if err != nil {
		return report, err
	}
	for _, chat := range idle {
		if ctx.Err() != nil {
			return report, nil
		}
		deleted, err := t.deleteIdleChat(ctx, chat, now)
		if err != nil {
			t.opts.Logger.Warn("idle chat cleanup", "chat", chat.ID, "error", err)
			continue
		}
		if deleted {
			report.Idle++
		}
	}
	return report, t.sweepAccounts(ctx, now, &report)
}

// expire expires d, a pending call whose time ran out by now, and returns
// it as now recorded. A background call's running attempt writes its
// record every few seconds (its progress, its hold): a change that is
// only that is read again and the expiry tried again, so that the work
// cannot outrun the sweeper. Settled by someone else, it is returned as
// settled.
func (e *engine) expire(ctx context.Context, d *Call, now time.Time) (*Call, error) {
	for range 3 {
		expired, err := e.ledger.Expire(ctx, d, now)
		if !errors.Is(err, ledger.ErrChanged) || d.Kind != KindBackground {
			return expired, err
		}
		if d, err = e.ledger.Get(ctx, d.UserID, d.SessionID, d.ID); err != nil || d.Status != StatusPending {
			return d, err
		}
	}
	return nil, fmt.Errorf("%w: call %q keeps changing", ledger.ErrChanged, d.ID)
}

// sweepPoll reads d's remote task and applies it (poll), waiting for the
// agent it resumes, if any. Failures are logged: the next sweep reads it
// again.
func (e *engine) sweepPoll(ctx context.Context, d *Call, now time.Time) {
	out, err := e.poll(ctx, d, now)
	if err != nil {
		e.opts.Logger.Warn("sweep: read a remote agent's task", "call", d.ID, "error", err)
		return
	}
	if out.Invocation != nil {
		if err := out.Invocation.Wait(); err != nil {
			e.opts.Logger.Error("sweep: agent resumed with a remote agent's result", "call", d.ID, "error", err)
		}
	}
}

// takeOff takes d, a record whose agent has the call's outcome and that
// the sweeper has nothing more to do for, off the sweeper: a closed
// remote call whose cancel was queued or sent after its agent was told
// (CancelDue keeps it there until then).
func (e *engine) takeOff(ctx context.Context, d *Call) {
	if _, err := e.ledger.Swept(ctx, d); err != nil && !errors.Is(err, ledger.ErrChanged) {
		e.opts.Logger.Warn("sweep: take a record off the sweeper", "call", d.ID, "error", err)
	}
}
