package sessionstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/adk/v2/platform"
)

// ErrBusy is returned by AcquireLease while another holder's lease on the
// session is live. errors.As with *BusyError gives how long to wait.
var ErrBusy = errors.New("session busy")

// ErrLeaseLost is returned by a lease's renewal (KeepLease), and by Get and AppendEvent under a
// lease (ReadRequest.Lease), once another holder has taken the session over.
// It wraps ErrConflict: nothing was written.
var ErrLeaseLost = fmt.Errorf("%w: lease lost", ErrConflict)

// BusyError reports a live lease held by someone else.
type BusyError struct {
	SessionID  string
	RetryAfter time.Duration // until the current lease expires
	// Holder is the current lease's holder, when the refusal read it.
	Holder string
}

func (e *BusyError) Error() string {
	return fmt.Sprintf("session %q busy: retry after %s", e.SessionID, e.RetryAfter.Round(time.Second))
}

func (e *BusyError) Is(target error) bool { return target == ErrBusy }

// Lease is the right to run one invocation on a session. It lives in the
// session document and is short: its holder renews it (KeepLease) while it
// works, so a holder that dies frees the session within one lease term.
//
// The fence: the holder remembers the session document's update time as of
// its own last write (acquisition, renewal or append), and every write it
// makes is conditional on that time. Any write by anyone else — a takeover
// above all — changes it, so a stalled holder's next renewal or append
// fails with ErrLeaseLost and writes nothing. A Get made under the lease
// (ReadRequest.Lease) checks the stored fence too, so a holder that stalled before
// reading the session cannot read its successor's state and write after it.
type Lease struct {
	App, User, SessionID string
	Holder               string
	// Fence increases by one with every acquisition of the session.
	Fence int64

	// live: the holder is a live segment; the session document's
	// liveUntil follows the lease's expiry (see SessionsLive).
	live bool

	mu       sync.Mutex
	expires  time.Time
	version  time.Time // the session document's update time after our last write
	revision int64     // the session's revision after our last write
	lostOnce sync.Once
	lost     chan struct{}
}

// expiry is when the lease runs out unless renewed.
func (l *Lease) expiry() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.expires
}

// Lost is closed once the lease is known to be lost (taken over, the
// session deleted, or not renewed in time).
func (l *Lease) Lost() <-chan struct{} { return l.lost }

func (l *Lease) markLost() { l.lostOnce.Do(func() { close(l.lost) }) }

type leaseDoc struct {
	Holder  string    `firestore:"holder"`
	Fence   int64     `firestore:"fence"`
	Expires time.Time `firestore:"expires"`
}

// LeaseRequest asks for the lease of the session App/User/SessionID, for
// Holder until TTL from now.
type LeaseRequest struct {
	App, User, SessionID string
	Holder               string
	TTL                  time.Duration
	// Live: the holder is a live segment (see SessionsLive).
	Live bool
	// TakeOver, when set, is asked about the holder of a live lease: true
	// takes the lease over all the same. The fence makes that holder's
	// later writes, renewals and reads under the lease fail with
	// ErrLeaseLost, so it is safe whether the holder is dead or not; who
	// may take over from whom is the caller's rule.
	TakeOver func(holder string) bool
}

// AcquireLease takes the session's lease as req asks. It fails with a
// *BusyError (errors.Is ErrBusy) while another lease is live, and wraps
// ErrNotFound when the session does not exist. An expired lease is taken
// over.
func (s *Service) AcquireLease(ctx context.Context, req LeaseRequest) (_ *Lease, err error) {
	app, user, id, holder, ttl := req.App, req.User, req.SessionID, req.Holder, req.TTL
	ctx, span := startSpan(ctx, "baton.lease.acquire", id)
	defer func() { endSpan(span, err) }()
	if err := validateKey(app, user, id); err != nil {
		return nil, err
	}
	ref := s.sessionRef(app, user, id)
	var lease *Lease
	var took string // why the lease read was taken over ("" when it was free)
	err = s.readModifyWrite(ctx, ref, func(doc *sessionDoc, batch *firestore.WriteBatch, pre firestore.Precondition) error {
		now := platform.Now(ctx)
		if cur := doc.Lease; cur.Holder != "" && cur.Expires.After(now) && (req.TakeOver == nil || !req.TakeOver(cur.Holder)) {
			return &BusyError{SessionID: id, RetryAfter: cur.Expires.Sub(now), Holder: cur.Holder}
		}
		switch cur := doc.Lease; {
		case cur.Holder == "":
			took = ""
		case cur.Expires.After(now):
			took = "taken"
		default:
			took = "expired"
		}
		next := leaseDoc{Holder: holder, Fence: doc.Lease.Fence + 1, Expires: now.Add(ttl)}
		updates := []firestore.Update{{Path: "lease", Value: next}}
		if req.Live {
			updates = append(updates, firestore.Update{Path: liveUntilField, Value: next.Expires})
		}
		batch.Update(ref, updates, pre)
		lease = &Lease{
			App: app, User: user, SessionID: id, Holder: holder, Fence: next.Fence, live: req.Live,
			expires: next.Expires, revision: doc.Revision, lost: make(chan struct{}),
		}
		return nil
	}, func(results []*firestore.WriteResult) { lease.version = results[0].UpdateTime })
	if err != nil && lease != nil && ctx.Err() == nil && (mayHaveLanded(err) || errors.Is(err, ErrBusy)) {
		// A commit was sent, and may be stored all the same (see
		// mayHaveLanded): then the lease read as busy is this one.
		if version, ok := s.leaseStored(ctx, lease, lease.expires); ok {
			lease.version, err = version, nil
		}
	}
	switch {
	case errors.Is(err, ErrConflict):
		// Others keep writing the session: as good as busy.
		return nil, &BusyError{SessionID: id, RetryAfter: time.Second}
	case err != nil:
		return nil, fmt.Errorf("acquire lease on %q: %w", id, err)
	}
	if took != "" {
		countTakeover(ctx, took)
	}
	return lease, nil
}

// renewLease extends l to now+ttl (KeepLease's renewals). It fails with
// ErrLeaseLost when another holder took the session over or the session
// is gone.
func (s *Service) renewLease(ctx context.Context, l *Lease, ttl time.Duration) (err error) {
	ctx, span := startSpan(ctx, "baton.lease.renew", l.SessionID)
	defer func() { endSpan(span, err) }()
	l.mu.Lock()
	defer l.mu.Unlock()
	expires := platform.Now(ctx).Add(ttl)
	updates := []firestore.Update{{Path: "lease.expires", Value: expires}}
	if l.live {
		updates = append(updates, firestore.Update{Path: liveUntilField, Value: expires})
	}
	res, uerr := s.sessionRef(l.App, l.User, l.SessionID).Update(ctx, updates, firestore.LastUpdateTime(l.version))
	uerr = FirestoreError(uerr)
	if uerr != nil && ctx.Err() == nil && mayHaveLanded(uerr) {
		// The renewal may be stored all the same (see mayHaveLanded).
		if version, ok := s.leaseStored(ctx, l, expires); ok {
			res, uerr = &firestore.WriteResult{UpdateTime: version}, nil
		}
	}
	switch {
	case uerr == nil:
		l.version, l.expires = res.UpdateTime, expires
		return nil
	case errors.Is(uerr, ErrConflict), errors.Is(uerr, ErrNotFound):
		l.markLost()
		return fmt.Errorf("renew lease on %q: %w", l.SessionID, ErrLeaseLost)
	}
	return fmt.Errorf("renew lease on %q: %w", l.SessionID, uerr)
}

// sessionHead is what of a session document tells whether a write of
// this process was stored after all (see mayHaveLanded): its revision,
// its lease and its tail.
type sessionHead struct {
	Revision int64          `firestore:"revision"`
	Lease    leaseDoc       `firestore:"lease"`
	Tail     []chunkElement `firestore:"tail"`
}

// readHead reads the head of a session and the document's update time;
// false when it cannot (the session is gone, or the read failed).
func (s *Service) readHead(ctx context.Context, app, user, id string) (*sessionHead, time.Time, bool) {
	snap, err := s.sessionRef(app, user, id).Get(ctx)
	if err != nil || !snap.Exists() {
		return nil, time.Time{}, false
	}
	var h sessionHead
	if snap.DataTo(&h) != nil {
		return nil, time.Time{}, false
	}
	return &h, snap.UpdateTime, true
}

// leaseStored reports whether the session document holds l renewed until
// expires, by l's own last write and no other since (its revision is the
// one l knows), and returns the document's update time.
func (s *Service) leaseStored(ctx context.Context, l *Lease, expires time.Time) (time.Time, bool) {
	h, updated, ok := s.readHead(ctx, l.App, l.User, l.SessionID)
	if !ok || h.Revision != l.revision || h.Lease.Holder != l.Holder || h.Lease.Fence != l.Fence ||
		!h.Lease.Expires.Equal(expires.Truncate(time.Microsecond)) { // Firestore keeps microseconds
		return time.Time{}, false
	}
	return updated, true
}

// KeepLease renews l every ttl/3 in the background until stop is called.
// When the lease is lost, or cannot be renewed before it runs out (Firestore
// unreachable), l.Lost() is closed and renewing stops: the holder must stop
// writing, and its writes would fail anyway.
//
// stop waits for a renewal in flight to finish rather than cancelling it:
// a cancelled commit may still be applied, and the holder's next write,
// conditional on the version it knows, would then find the session changed
// and read as a lost lease.
func (s *Service) KeepLease(ctx context.Context, l *Lease, ttl time.Duration) (stop func()) {
	ctx = context.WithoutCancel(ctx)
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(ttl / 3)
		defer tick.Stop()
		for {
			select {
			case <-quit:
				return
			case <-tick.C:
			}
			rctx, cancel := context.WithTimeout(ctx, ttl) // past the term, a renewal is moot
			err := s.renewLease(rctx, l, ttl)
			cancel()
			if errors.Is(err, ErrLeaseLost) {
				return
			}
			if err != nil && !platform.Now(ctx).Before(l.expiry()) {
				l.markLost()
				return
			}
		}
	}()
	var once sync.Once
	return func() { once.Do(func() { close(quit); <-done }) }
}

// ReleaseLease gives the lease back if it is still the one held. Releasing
// a lease that was taken over, or a session that was deleted, is not an
// error: there is nothing left to release.
func (s *Service) ReleaseLease(ctx context.Context, l *Lease) (err error) {
	ctx, span := startSpan(ctx, "baton.lease.release", l.SessionID)
	defer func() { endSpan(span, err) }()
	ref := s.sessionRef(l.App, l.User, l.SessionID)
	free := releaseUpdates()
	l.mu.Lock()
	_, err = ref.Update(ctx, free, firestore.LastUpdateTime(l.version))
	l.mu.Unlock()
	switch err = FirestoreError(err); {
	case err == nil, errors.Is(err, ErrNotFound):
		return nil
	case !errors.Is(err, ErrConflict):
		return fmt.Errorf("release lease on %q: %w", l.SessionID, err)
	}
	// Someone else wrote the session since our last write: release only if
	// the lease is still ours.
	err = s.readModifyWrite(ctx, ref, func(doc *sessionDoc, batch *firestore.WriteBatch, pre firestore.Precondition) error {
		if doc.Lease.Fence != l.Fence {
			return errNoWrite
		}
		batch.Update(ref, free, pre)
		return nil
	}, nil)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return fmt.Errorf("release lease on %q: %w", l.SessionID, err)
	}
	return nil
}

// checkHeld verifies, in a Get under l, that the stored session is still
// l's: same fence, and no write since l's own last one.
func (l *Lease) checkHeld(doc *sessionDoc, version time.Time) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if doc.Lease.Fence != l.Fence || doc.Lease.Holder != l.Holder || !version.Equal(l.version) {
		l.markLost()
		return fmt.Errorf("session %q: %w", l.SessionID, ErrLeaseLost)
	}
	return nil
}
