package sessionstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/adk/platform"
	"google.golang.org/adk/session"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// ErrBusy is returned by AcquireLease while another holder's lease on the
// session is live. errors.As with *BusyError gives how long to wait.
var ErrBusy = errors.New("session busy")

// BusyError reports a live lease held by someone else.
type BusyError struct {
	SessionID  string
	RetryAfter time.Duration // until the current lease expires
}

func (e *BusyError) Error() string {
	return fmt.Sprintf("session %q busy: retry after %s", e.SessionID, e.RetryAfter.Round(time.Second))
}

func (e *BusyError) Is(target error) bool { return target == ErrBusy }

// Lease is the right to run one invocation on a session. It lives in the
// session document, so taking it changes that document's revision stamp:
// every session handle read before the lease was taken (in particular the
// handle of a stalled previous holder) fails its next AppendEvent with
// ErrConflict. That is the fence.
type Lease struct {
	App, User, SessionID string
	Holder               string
	// Fence increases by one with every acquisition of the session.
	Fence   int64
	Expires time.Time
}

type leaseDoc struct {
	Holder  string    `firestore:"holder"`
	Fence   int64     `firestore:"fence"`
	Expires time.Time `firestore:"expires"`
}

// AcquireLease takes the session's lease for holder until now+ttl. It fails
// with a *BusyError (errors.Is ErrBusy) while another lease is live, and
// wraps session.ErrNotFound when the session does not exist. An expired
// lease is taken over.
func (s *Service) AcquireLease(ctx context.Context, app, user, id, holder string, ttl time.Duration) (*Lease, error) {
	if err := validateKey(app, user, id); err != nil {
		return nil, err
	}
	ref := s.sessionDoc(app, user, id)
	for attempt := 0; ; attempt++ {
		snap, err := ref.Get(ctx)
		if status.Code(err) == codes.NotFound {
			return nil, fmt.Errorf("%w: %q", session.ErrNotFound, id)
		}
		if err != nil {
			return nil, fmt.Errorf("acquire lease on %q: %w", id, translate(err))
		}
		var doc sessionDoc
		if err := snap.DataTo(&doc); err != nil {
			return nil, fmt.Errorf("decode session %q: %w", id, err)
		}
		cur := doc.Lease
		now := platform.Now(ctx)
		if cur.Holder != "" && cur.Expires.After(now) {
			return nil, &BusyError{SessionID: id, RetryAfter: cur.Expires.Sub(now)}
		}
		next := leaseDoc{Holder: holder, Fence: cur.Fence + 1, Expires: now.Add(ttl)}
		_, err = ref.Update(ctx, []firestore.Update{{Path: "lease", Value: next}}, firestore.LastUpdateTime(snap.UpdateTime))
		if err == nil {
			return &Lease{App: app, User: user, SessionID: id, Holder: holder, Fence: next.Fence, Expires: next.Expires}, nil
		}
		if status.Code(err) != codes.FailedPrecondition || attempt == 4 {
			if status.Code(err) == codes.FailedPrecondition {
				return nil, &BusyError{SessionID: id, RetryAfter: time.Second}
			}
			return nil, fmt.Errorf("acquire lease on %q: %w", id, translate(err))
		}
		// Someone wrote the session between our read and our write: look again.
	}
}

// ReleaseLease gives the lease back if it is still the one held. Releasing
// a lease that was taken over, or a session that was deleted, is not an
// error: there is nothing left to release.
func (s *Service) ReleaseLease(ctx context.Context, l *Lease) error {
	ref := s.sessionDoc(l.App, l.User, l.SessionID)
	for attempt := 0; ; attempt++ {
		snap, err := ref.Get(ctx)
		if status.Code(err) == codes.NotFound {
			return nil
		}
		if err != nil {
			return fmt.Errorf("release lease on %q: %w", l.SessionID, translate(err))
		}
		var doc sessionDoc
		if err := snap.DataTo(&doc); err != nil {
			return fmt.Errorf("decode session %q: %w", l.SessionID, err)
		}
		if doc.Lease.Fence != l.Fence {
			return nil
		}
		_, err = ref.Update(ctx, []firestore.Update{
			{Path: "lease.holder", Value: ""},
			{Path: "lease.expires", Value: time.Time{}},
		}, firestore.LastUpdateTime(snap.UpdateTime))
		if err == nil {
			return nil
		}
		if status.Code(err) != codes.FailedPrecondition || attempt == 4 {
			return fmt.Errorf("release lease on %q: %w", l.SessionID, translate(err))
		}
	}
}
