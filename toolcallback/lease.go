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

// holderID names a lease's holder: the client the request came from and a
// fresh id.
func holderID(ctx context.Context, client string) string { return client + "/" + platform.NewUUID(ctx) }

// acquire takes the session's lease, waiting up to wait while it is busy,
// and keeps it renewed.
func (e *engine) acquire(ctx context.Context, user, sid, client string, wait time.Duration) (*heldLease, error) {
	req := sessionstore.LeaseRequest{App: e.app, User: user, SessionID: sid, Holder: holderID(ctx, client), TTL: e.opts.LeaseTTL,
		Live: strings.HasPrefix(client, LiveHolderPrefix)}
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
