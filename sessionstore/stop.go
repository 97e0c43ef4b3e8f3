package sessionstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/adk/v2/platform"
)

// A stop request asks the invocation that holds a session's lease, on
// whatever instance, to stop. It is a document of its own beside the
// session,
//
//	{session document}/stops/{fence}
//
// named after the fence of the lease it stops, so a request made for one
// invocation never stops the next (the next acquisition has another
// fence) and a holder listens to a document that does not exist until
// someone asks. It is not written into the session document: every write
// there changes the update time on which the holder's own writes are
// conditioned, so a request there would fence the holder out before it
// could store what it had generated. A request stays until the session's
// tree is deleted with its chat; nothing reads it again.
const stopsCollection = "stops"

type stopDoc struct {
	Fence     int64     `firestore:"fence"`
	Requested time.Time `firestore:"requested"`
}

func (s *Service) stopRef(app, user, id string, fence int64) *firestore.DocumentRef {
	return s.sessionRef(app, user, id).Collection(stopsCollection).Doc(strconv.FormatInt(fence, 10))
}

// LiveLease returns the fence of the lease on the session as it was read,
// and whether that lease was live (held and not expired) at the context's
// time. A handle not stored yet has no live lease.
func (ss *Session) LiveLease(ctx context.Context) (fence int64, live bool) {
	ss.mu.RLock()
	defer ss.mu.RUnlock()
	cur := ss.stored
	return cur.Fence, cur.Holder != "" && cur.Expires.After(platform.Now(ctx))
}

// LiveHolder is the holder of the lease on the session as it was read,
// when that lease was live at the context's time; "" otherwise.
func (ss *Session) LiveHolder(ctx context.Context) string {
	ss.mu.RLock()
	defer ss.mu.RUnlock()
	if cur := ss.stored; cur.Expires.After(platform.Now(ctx)) {
		return cur.Holder
	}
	return ""
}

// RequestStop asks the invocation holding the lease fence of session id to
// stop: one write, which the holder's AwaitStop receives. Asking twice is
// harmless.
func (s *Service) RequestStop(ctx context.Context, app, user, id string, fence int64) (err error) {
	ctx, span := startSpan(ctx, "baton.stop.request", id)
	defer func() { endSpan(span, err) }()
	if err := validateKey(app, user, id); err != nil {
		return err
	}
	_, err = s.stopRef(app, user, id, fence).Set(ctx, stopDoc{Fence: fence, Requested: platform.Now(ctx)})
	if err = FirestoreError(err); err != nil {
		return fmt.Errorf("request stop of %q: %w", id, err)
	}
	return nil
}

// AwaitStop returns nil once a stop is requested for the lease l (at once
// if it was requested already), or the context's error when ctx ends
// first. It listens to the request's document: one listen stream, and a
// read when the request arrives.
func (s *Service) AwaitStop(ctx context.Context, l *Lease) error {
	it := s.stopRef(l.App, l.User, l.SessionID, l.Fence).Snapshots(ctx)
	defer it.Stop()
	for {
		snap, err := it.Next()
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			err = FirestoreError(err)
			if errors.Is(err, context.Canceled) {
				return err
			}
			return fmt.Errorf("await stop of %q: %w", l.SessionID, err)
		}
		if snap.Exists() {
			return nil
		}
	}
}

// StoredLease is the lease on the session as it was read: its holder
// ("" when released or never taken), its fence (the number of
// acquisitions) and when it runs out unless renewed (zero once
// released), whether or not that time has passed.
func (ss *Session) StoredLease() (holder string, fence int64, expires time.Time) {
	ss.mu.RLock()
	defer ss.mu.RUnlock()
	return ss.stored.Holder, ss.stored.Fence, ss.stored.Expires
}

// StopRequest is a stop asked of the invocation that held a session's
// lease with Fence, at Requested.
type StopRequest struct {
	Fence     int64
	Requested time.Time
}

// Stops returns the stop requests made for a session, oldest first (a
// chat's timeline): one query of the session's stops collection.
func (s *Service) Stops(ctx context.Context, app, user, id string) ([]StopRequest, error) {
	if err := validateKey(app, user, id); err != nil {
		return nil, err
	}
	snaps, err := s.sessionRef(app, user, id).Collection(stopsCollection).OrderBy("requested", firestore.Asc).Documents(ctx).GetAll()
	if err != nil {
		return nil, fmt.Errorf("read stops of %q: %w", id, FirestoreError(err))
	}
	out := make([]StopRequest, 0, len(snaps))
	for _, snap := range snaps {
		var d stopDoc
		if err := snap.DataTo(&d); err != nil {
			return nil, fmt.Errorf("decode stop of %q: %w", id, err)
		}
		out = append(out, StopRequest{Fence: d.Fence, Requested: d.Requested})
	}
	return out, nil
}
