package toolcallback

import (
	"context"
	"errors"
	"time"

	"github.com/baton-run/baton/sessionstore"
	"google.golang.org/adk/v2/platform"
	"google.golang.org/adk/v2/session"
)

// hold is a session lease this instance holds and keeps renewed until it
// releases it.
type hold struct {
	lease *sessionstore.Lease
	stop  func() // stops renewing
}

// bind returns ctx under which session reads and appends act as the
// lease's holder (see sessionstore.WithLease).
func (h *hold) bind(ctx context.Context) context.Context { return sessionstore.WithLease(ctx, h.lease) }

// acquire takes the session's lease, waiting up to wait while it is busy,
// and keeps it renewed.
func (e *engine) acquire(ctx context.Context, user, sid, client string, wait time.Duration, create bool) (*hold, error) {
	holder := client + "/" + platform.NewUUID(ctx)
	deadline := time.Now().Add(wait)
	delay := 50 * time.Millisecond
	for {
		lease, err := e.sessions.AcquireLease(ctx, e.app, user, sid, holder, e.opts.LeaseTTL)
		if err == nil {
			return &hold{lease: lease, stop: e.sessions.KeepLease(ctx, lease, e.opts.LeaseTTL)}, nil
		}
		if errors.Is(err, sessionstore.ErrNotFound) && create {
			_, cerr := e.sessions.Create(ctx, &session.CreateRequest{AppName: e.app, UserID: user, SessionID: sid})
			if cerr != nil && !errors.Is(cerr, sessionstore.ErrAlreadyExists) {
				return nil, cerr
			}
			continue
		}
		left := time.Until(deadline)
		if !errors.Is(err, sessionstore.ErrBusy) || left <= 0 {
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

func (e *engine) release(ctx context.Context, h *hold) {
	h.stop()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := e.sessions.ReleaseLease(ctx, h.lease); err != nil {
		e.opts.Logger.Warn("release lease", "session", h.lease.SessionID, "error", err)
	}
}
