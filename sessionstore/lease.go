package sessionstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/adk/v2/platform"
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
// wraps ErrNotFound when the session does not exist. An expired
// lease is taken over.
func (s *Service) AcquireLease(ctx context.Context, app, user, id, holder string, ttl time.Duration) (*Lease, error) {
	if err := validateKey(app, user, id); err != nil {
		return nil, err
	}
	ref := s.sessionDoc(app, user, id)
	var lease *Lease
	err := s.readModifyWrite(ctx, ref, func(doc *sessionDoc, batch *firestore.WriteBatch, pre firestore.Precondition) error {
		now := platform.Now(ctx)
		if cur := doc.Lease; cur.Holder != "" && cur.Expires.After(now) {
			return &BusyError{SessionID: id, RetryAfter: cur.Expires.Sub(now)}
		}
		next := leaseDoc{Holder: holder, Fence: doc.Lease.Fence + 1, Expires: now.Add(ttl)}
		batch.Update(ref, []firestore.Update{{Path: "lease", Value: next}}, pre)
		lease = &Lease{App: app, User: user, SessionID: id, Holder: holder, Fence: next.Fence, Expires: next.Expires}
		return nil
	})
	switch {
	case errors.Is(err, ErrConflict):
		// Others keep writing the session: as good as busy.
		return nil, &BusyError{SessionID: id, RetryAfter: time.Second}
	case err != nil:
		return nil, fmt.Errorf("acquire lease on %q: %w", id, err)
	}
	return lease, nil
}

// ReleaseLease gives the lease back if it is still the one held. Releasing
// a lease that was taken over, or a session that was deleted, is not an
// error: there is nothing left to release.
func (s *Service) ReleaseLease(ctx context.Context, l *Lease) error {
	ref := s.sessionDoc(l.App, l.User, l.SessionID)
	err := s.readModifyWrite(ctx, ref, func(doc *sessionDoc, batch *firestore.WriteBatch, pre firestore.Precondition) error {
		if doc.Lease.Fence != l.Fence {
			return errNoWrite
		}
		batch.Update(ref, []firestore.Update{
			{Path: "lease.holder", Value: ""},
			{Path: "lease.expires", Value: time.Time{}},
		}, pre)
		return nil
	})
	if err != nil && !errors.Is(err, ErrNotFound) {
		return fmt.Errorf("release lease on %q: %w", l.SessionID, err)
	}
	return nil
}
