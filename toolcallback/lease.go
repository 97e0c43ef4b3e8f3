package toolcallback

import (
	"context"
	"errors"
	"strings"
	"time"

	"google.golang.org/adk/v2/platform"

	"github.com/baton-run/baton/sessionstore"
)

// heldLease is a session lease this instance holds (or claimed, until the
// claiming append lands) and keeps renewed until it releases it.
type heldLease struct {
	lease *sessionstore.Lease
	stop  func() // stops renewing; nil until the lease is held
}

// keep starts renewing the lease, which is now held.
func (e *engine) keep(ctx context.Context, h *heldLease) {
	h.stop = e.sessions.KeepLease(ctx, h.lease, e.opts.LeaseTTL)
}

// Holder is who holds a chat's lease: the client (device) a turn, a
// resume or a live segment serves, whether it is a live segment, and an id
// of its own for each acquisition. The lease stores it as a string
// (String; the form "live:<device>/<id>" is what leases already stored
// hold), read back by parseHolder; nothing outside this file reads that
// form.
type Holder struct {
	Client string
	Live   bool
	ID     string
}

// livePrefix starts the stored form of a live segment's holder.
const livePrefix = "live:"

// newHolder is a holder for client with a fresh id.
func newHolder(ctx context.Context, client string, live bool) Holder {
	return Holder{Client: client, Live: live, ID: platform.NewUUID(ctx)}
}

// holderID is the stored form of a new non-live holder for client.
func holderID(ctx context.Context, client string) string {
	return newHolder(ctx, client, false).String()
}

// String is the holder as the lease stores it.
func (h Holder) String() string {
	s := h.Client + "/" + h.ID
	if h.Live {
		s = livePrefix + s
	}
	return s
}

// parseHolder reads a holder a lease stored (a BusyError's Holder, say).
func parseHolder(s string) Holder {
	h := Holder{}
	s, h.Live = strings.CutPrefix(s, livePrefix)
	i := strings.LastIndex(s, "/")
	if i < 0 {
		h.Client = s
		return h
	}
	h.Client, h.ID = s[:i], s[i+1:]
	return h
}

// YieldsTo reports whether h gives the chat up to a new holder next: a
// live segment yields to a live segment of the same device (a tab that
// lost its socket, or whose instance died, and comes back), which takes
// the lease over at once rather than waiting for it to run out.
func (h Holder) YieldsTo(next Holder) bool {
	return h.Live && next.Live && h.Client != "" && h.Client == next.Client
}

// acquire takes the session's lease for client, waiting up to wait while
// it is busy, and keeps it renewed.
func (e *engine) acquire(ctx context.Context, user, sid, client string, wait time.Duration) (*heldLease, error) {
	return e.acquireAs(ctx, user, sid, newHolder(ctx, client, false), wait)
}

// acquireAs is acquire for the holder who: a live segment takes the lease
// over from one that yields to it (Holder.YieldsTo).
func (e *engine) acquireAs(ctx context.Context, user, sid string, who Holder, wait time.Duration) (*heldLease, error) {
	req := sessionstore.LeaseRequest{App: e.app, User: user, SessionID: sid, Holder: who.String(), TTL: e.opts.LeaseTTL, Live: who.Live}
	if who.Live {
		req.TakeOver = func(holder string) bool { return parseHolder(holder).YieldsTo(who) }
	}
	deadline := time.Now().Add(wait)
	delay := 50 * time.Millisecond
	for {
		lease, err := e.sessions.AcquireLease(ctx, req)
		if err == nil {
			h := &heldLease{lease: lease}
			e.keep(ctx, h)
			return h, nil
		}
		left := time.Until(deadline)
		// A live segment holds the chat until its user ends it, and
		// delivers the answers it is given itself: not worth waiting for.
		if !errors.Is(err, sessionstore.ErrBusy) || left <= 0 || IsLive(err) {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(min(delay, left)): // the last try is at the deadline
		}
		delay = min(delay*2, 500*time.Millisecond)
	}
}

func (e *engine) release(ctx context.Context, h *heldLease) {
	if h.stop == nil {
		return // never held: nothing was written
	}
	h.stop()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := e.sessions.ReleaseLease(ctx, h.lease); err != nil {
		e.opts.Logger.Warn("release lease", "session", h.lease.SessionID, "error", err)
	}
}
