package toolcallback

import (
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/adk/v2/platform"

	"github.com/baton-run/baton/ledger"
	"github.com/baton-run/baton/sessionstore"
)

// What an operator does to a chat (the console) goes through the paths a
// client's request takes: an answer is Resume with ResumeRequest.Operator,
// a stop is Stop, a sweep is Sweep. The two below have no client
// counterpart, and use the same parts: the ledger's first writer wins for
// an expiry, the lease's fence for a release.

// maxReasonBytes bounds an operator's reason, which the model reads.
const maxReasonBytes = 2000

// ExpireCall closes a pending call of a chat for reason, for an operator:
// the record becomes expired, first writer wins (an answer or a closer
// that got there first wins, and ExpireCall reports it as Resume would:
// *AlreadyResolvedError or ErrExpired), and the model reads reason as the
// call's error response when its step is resumed, through the path that
// delivers answers (at once when no other call of the step is pending).
func (t *Team) ExpireCall(ctx context.Context, user, chatID, callID, reason string) (_ *ResumeOutcome, err error) {
	if reason == "" || len(reason) > maxReasonBytes {
		return nil, fmt.Errorf("%w: a reason of 1 to %d bytes", ErrInvalidAnswer, maxReasonBytes)
	}
	v, err := t.findCall(ctx, ResumeRequest{UserID: user, ChatID: chatID, CallID: callID, Operator: "expiry"})
	if err != nil {
		return nil, err
	}
	c := v.call
	ctx, span := startResume(ctx, c)
	defer func() { endSpan(span, err) }()
	if err := settledError(c, Answer{}); err != nil {
		return nil, err
	}
	e := t.engine(c.Agent)
	expired, err := e.ledger.ExpireBecause(ctx, c, reason, platform.Now(ctx))
	if errors.Is(err, ledger.ErrChanged) {
		now, rerr := e.ledger.Get(ctx, c.UserID, c.SessionID, c.ID)
		if rerr != nil {
			return nil, rerr
		}
		return nil, settledError(now, Answer{})
	}
	if err != nil {
		return nil, err
	}
	return e.resumeStep(ctx, expired, c.ClientID, e.opts.ResumeWait)
}

// LeaseReport says what ReleaseLease found and did.
type LeaseReport struct {
	// Held: the chat's session had a lease not released (its holder, its
	// fence and its term as stored), which ReleaseLease released.
	Held    bool
	Holder  string
	Fence   int64
	Expires time.Time
	// Live: the lease's term had not run out when it was released.
	Live bool
}

// ReleaseLease releases the lease on a chat's session for an operator,
// whatever its state: it takes the lease over (a new fence) and releases
// it at once, through the lease's own code. A holder that is alive after
// all loses: its next renewal, read under the lease or append fails with
// sessionstore.ErrLeaseLost, writing nothing. A session whose lease is
// released already is left as it is (Held false, nothing written).
func (t *Team) ReleaseLease(ctx context.Context, user, chatID, operator string) (*LeaseReport, error) {
	if err := validIDs("user id", user, "chat id", chatID); err != nil {
		return nil, err
	}
	chat, err := t.sessions.GetChat(ctx, t.app, user, chatID)
	if err != nil {
		return nil, err
	}
	sess, err := t.sessions.Read(ctx, sessionstore.ReadRequest{App: t.app, User: user, SessionID: chat.SessionID, Recent: 1})
	if err != nil {
		return nil, err
	}
	holder, fence, expires := sess.StoredLease()
	report := &LeaseReport{Holder: holder, Fence: fence, Expires: expires, Live: expires.After(platform.Now(ctx))}
	if holder == "" {
		return report, nil
	}
	t.memory.forget(user, chatID)
	lease, err := t.sessions.AcquireLease(ctx, sessionstore.LeaseRequest{App: t.app, User: user, SessionID: chat.SessionID,
		Holder: holderID(ctx, OperatorPrefix+operator), TTL: t.opts.LeaseTTL, TakeOver: func(string) bool { return true }})
	if err != nil {
		return nil, err
	}
	if err := t.sessions.ReleaseLease(ctx, lease); err != nil {
		return nil, err
	}
	report.Held = true
	return report, nil
}
