package ledger

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"cloud.google.com/go/firestore"
	"github.com/baton-run/baton/calltoken"
)

// Remote is what a remote agent's call (KindRemote) records of the task
// it started on the remote, besides the call's status and its work (the
// queue's sends, Work): the remote task, the last state of it applied to
// the call and the remote's time of that state, how many messages were
// sent on it, the question open on it and the last one whose answer went
// back, and whether the task's cancel was sent. Each change is a
// first-writer-wins update, so that notifications that come at least
// once and out of order change the record once.
type Remote struct {
	// TaskID and ContextID name the remote task; "" until the first
	// message was sent (or a notification named it first).
	TaskID, ContextID string
	// State is the remote task's last state applied (A2A's names:
	// "working", "input-required", "completed"...), at StateAt, the
	// remote's own timestamp of it (zero when the remote gives none).
	State   string
	StateAt time.Time
	// Sent counts the messages sent on the task: the call's, then one per
	// answered question.
	Sent int
	// Question is the id of the question the task asked last (an in-call
	// KindInput record), "" when none; Replied is the last question whose
	// answer was sent to the task.
	Question, Replied string
	// TokenID names the push token given to the remote (a hash of it: the
	// token itself is never stored).
	TokenID string
	// PollEvery is how often the sweeper reads the task (tasks/get) while
	// the call is pending; zero: only notifications are awaited, with a
	// read at the call's expiry.
	PollEvery time.Duration
	// CancelSent: the task's cancel went to the remote (a closed call's).
	CancelSent bool
}

// CancelDue reports whether c is a remote call closed by Baton (cancelled
// or expired, not answered) whose task is known and whose cancel was not
// sent: the task still runs on the remote until its cancel goes. The
// write that closes such a call marks its work "to be enqueued" again,
// this time for the cancel (the queue's step "cancel"), and keeps it
// before the sweeper until the cancel is sent: a closer that dies before
// queueing the cancel leaves it to the sweeper, as a lost send is.
func (c *Call) CancelDue() bool {
	return c.Status != StatusPending && c.Status != StatusResolved && cancelable(c)
}

// cancelable reports whether c is a remote call whose task is known and
// was not cancelled: the closing of c must see its cancel sent.
func cancelable(c *Call) bool {
	return c.Kind == KindRemote && c.Remote != nil && c.Remote.TaskID != "" && !c.Remote.CancelSent
}

// cancelUpdates are the updates that the write closing c, a pending call
// as read, at now adds for its remote task's cancel (none when c has no
// task to cancel): its work to be enqueued again (the cancel's task), and
// the sweeper's look after the grace, which creates that task if the
// closer did not.
func (l *Ledger) cancelUpdates(c *Call, now time.Time) []firestore.Update {
	if !cancelable(c) {
		return nil
	}
	return []firestore.Update{{Path: fieldWorkEnqueued, Value: time.Time{}},
		{Path: fieldSweepAt, Value: now.Add(l.opts.EnqueueGrace)}}
}

// closedWork is c's work as the write closing it leaves it (cancelUpdates).
func closedWork(c *Call) *Call {
	if !cancelable(c) {
		return c
	}
	return withWork(c, func(w *Work) { w.Enqueued = time.Time{} })
}

// The fields of a record's remote task, under fieldRemote.
const (
	fieldRemote           = "remote"
	fieldRemoteTask       = "remote.task"
	fieldRemoteContext    = "remote.context"
	fieldRemoteState      = "remote.state"
	fieldRemoteStateAt    = "remote.stateAt"
	fieldRemoteSent       = "remote.sent"
	fieldRemoteQuestion   = "remote.question"
	fieldRemoteReplied    = "remote.replied"
	fieldRemoteCancelSent = "remote.cancelSent"
)

// remoteRecord is Remote's stored form.
type remoteRecord struct {
	Task       string        `firestore:"task"`
	Context    string        `firestore:"context"`
	State      string        `firestore:"state"`
	StateAt    time.Time     `firestore:"stateAt"`
	Sent       int           `firestore:"sent"`
	Question   string        `firestore:"question"`
	Replied    string        `firestore:"replied"`
	TokenID    string        `firestore:"tokenId"`
	PollEvery  time.Duration `firestore:"pollEvery"`
	CancelSent bool          `firestore:"cancelSent"`
}

func remoteRecordOf(r *Remote) *remoteRecord {
	return &remoteRecord{Task: r.TaskID, Context: r.ContextID, State: r.State, StateAt: r.StateAt, Sent: r.Sent,
		Question: r.Question, Replied: r.Replied, TokenID: r.TokenID, PollEvery: r.PollEvery, CancelSent: r.CancelSent}
}

func (r *remoteRecord) remote() *Remote {
	return &Remote{TaskID: r.Task, ContextID: r.Context, State: r.State, StateAt: r.StateAt, Sent: r.Sent,
		Question: r.Question, Replied: r.Replied, TokenID: r.TokenID, PollEvery: r.PollEvery, CancelSent: r.CancelSent}
}

// withRemote is a copy of c whose remote task is changed by f.
func withRemote(c *Call, f func(r *Remote)) *Call {
	out := *c
	r := Remote{}
	if c.Remote != nil {
		r = *c.Remote
	}
	f(&r)
	out.Remote = &r
	return &out
}

// nextSweep is when the sweeper next looks at c, a pending remote call
// whose task was sent, at now: its next poll, or its expiry.
func nextSweep(c *Call, now time.Time) time.Time {
	if c.Remote != nil && c.Remote.PollEvery > 0 {
		return minTime(now.Add(c.Remote.PollEvery), c.Expires)
	}
	return c.Expires
}

// RemoteSent records that message number sent (1 for the call's own) was
// sent to the remote task taskID (of context contextID) at now: the call's
// work is marked enqueued (the send is done), and the sweeper next looks
// at it at its next poll. First writer wins, as Answer.
func (l *Ledger) RemoteSent(ctx context.Context, c *Call, taskID, contextID string, sent int, now time.Time) (*Call, error) {
	out := withRemote(c, func(r *Remote) { r.TaskID, r.ContextID, r.Sent = taskID, contextID, sent })
	out = withWork(out, func(w *Work) {
		if w.Enqueued.IsZero() {
			w.Enqueued = now
		}
	})
	return l.change(ctx, c, out, "record remote send",
		firestore.Update{Path: fieldRemoteTask, Value: taskID},
		firestore.Update{Path: fieldRemoteContext, Value: contextID},
		firestore.Update{Path: fieldRemoteSent, Value: sent},
		firestore.Update{Path: fieldWorkEnqueued, Value: out.Work.Enqueued},
		firestore.Update{Path: fieldSweepAt, Value: nextSweep(c, now)})
}

// RemoteUpdate is a state of the remote task to apply to its call.
type RemoteUpdate struct {
	TaskID, ContextID string
	State             string
	At                time.Time
	// Progress, when set, is stored as the call's work's progress (a
	// working state's message).
	Progress json.RawMessage
	// Question, when set, is the question now open on the task; Replied,
	// when set, the question whose answer was sent (with Sent, the
	// messages sent so far).
	Question, Replied string
	Sent              int
}

// RemoteState applies u to c, a pending remote call as read, at now: the
// task's state and its time, its progress, its open question; the sweeper
// next looks at it at its next poll. First writer wins: ErrChanged when
// the record changed since c was read.
func (l *Ledger) RemoteState(ctx context.Context, c *Call, u RemoteUpdate, now time.Time) (*Call, error) {
	if c.Status != StatusPending {
		return nil, fmt.Errorf("%w: call %q is %s", ErrChanged, c.ID, c.Status)
	}
	out := withRemote(c, func(r *Remote) {
		r.State, r.StateAt = u.State, u.At
		if u.TaskID != "" {
			r.TaskID, r.ContextID = u.TaskID, u.ContextID
		}
		if u.Question != "" {
			r.Question = u.Question
		}
		if u.Replied != "" {
			r.Replied, r.Sent = u.Replied, u.Sent
		}
	})
	ups := []firestore.Update{
		{Path: fieldRemoteState, Value: u.State}, {Path: fieldRemoteStateAt, Value: u.At},
		{Path: fieldRemoteTask, Value: out.Remote.TaskID}, {Path: fieldRemoteContext, Value: out.Remote.ContextID},
		{Path: fieldRemoteQuestion, Value: out.Remote.Question}, {Path: fieldRemoteReplied, Value: out.Remote.Replied},
		{Path: fieldRemoteSent, Value: out.Remote.Sent},
	}
	if out.Remote.TaskID != "" {
		ups = append(ups, firestore.Update{Path: fieldSweepAt, Value: nextSweep(c, now)})
	}
	if u.Progress != nil {
		out = withWork(out, func(w *Work) { w.Progress, w.ProgressAt = u.Progress, now })
		ups = append(ups, firestore.Update{Path: fieldWorkProgress, Value: []byte(u.Progress)},
			firestore.Update{Path: fieldWorkProgressAt, Value: now})
	}
	return l.change(ctx, c, out, "apply remote state", ups...)
}

// Polled moves the sweeper's next look at c, a pending remote call just
// read from its remote, to its next poll after now. First writer wins.
func (l *Ledger) Polled(ctx context.Context, c *Call, now time.Time) (*Call, error) {
	return l.change(ctx, c, c, "record remote poll", firestore.Update{Path: fieldSweepAt, Value: nextSweep(c, now)})
}

// CancelSent records that the cancel of c's remote task was sent at now
// (its delivery also marks the cancel's task created); a record whose
// agent has the call's outcome leaves the sweeper then. It is
// conditional on the record being as read, as every change is.
func (l *Ledger) CancelSent(ctx context.Context, c *Call, now time.Time) (*Call, error) {
	out := withRemote(c, func(r *Remote) { r.CancelSent = true })
	out = withWork(out, func(w *Work) {
		if w.Enqueued.IsZero() {
			w.Enqueued = now
		}
	})
	ups := []firestore.Update{{Path: fieldRemoteCancelSent, Value: true}, {Path: fieldWorkEnqueued, Value: out.Work.Enqueued}}
	if c.Resumed {
		ups = append(ups, firestore.Update{Path: fieldSweepAt, Value: firestore.Delete})
	}
	return l.change(ctx, c, out, "record remote cancel", ups...)
}

// Swept takes c, a record whose agent has the call's outcome, off the
// sweeper: a closed remote call whose cancel the queue now carries (or
// was sent) is left there until then (CancelDue). First writer wins.
func (l *Ledger) Swept(ctx context.Context, c *Call) (*Call, error) {
	return l.change(ctx, c, c, "take off the sweeper", firestore.Update{Path: fieldSweepAt, Value: firestore.Delete})
}

// pushDomain separates push tokens from call tokens: a push token is
// signed with a key derived from TokenKey, so it never answers a call
// through the call token's door, nor a call token a push.
const pushDomain = "baton-push-token-v1"

func (l *Ledger) pushKey() []byte {
	if len(l.opts.TokenKey) == 0 {
		return nil
	}
	sum := sha256.Sum256(append([]byte(pushDomain+"."), l.opts.TokenKey...))
	return sum[:]
}

// PushToken returns the token a remote agent echoes with each push
// notification for c, a remote call: signed, bound to the call, its
// session (the chat's) and user and its arguments, expiring with the
// call; and its id (TokenID), a hash of it.
func (l *Ledger) PushToken(c *Call) (token, id string, err error) {
	args, err := json.Marshal(c.Args)
	if err != nil {
		return "", "", fmt.Errorf("encode arguments of %q: %w", c.ID, err)
	}
	if token, err = calltoken.Sign(l.pushKey(), calltoken.For(c.ID, c.SessionID, c.UserID, args, c.Expires)); err != nil {
		return "", "", err
	}
	return token, TokenID(token), nil
}

// TokenID is the id a record keeps of a push token.
func TokenID(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:8])
}

// ByPushToken verifies a push token (PushToken) and reads the remote call
// it names, which must still have the arguments and the token id the
// token binds: ErrInvalidToken otherwise.
func (l *Ledger) ByPushToken(ctx context.Context, token string) (*Call, error) {
	c, err := l.byToken(ctx, l.pushKey(), token)
	if err != nil {
		return nil, err
	}
	if c.Kind != KindRemote || c.Remote == nil || c.Remote.TokenID != TokenID(token) {
		return nil, fmt.Errorf("%w: not the token of this remote call", ErrInvalidToken)
	}
	return c, nil
}
