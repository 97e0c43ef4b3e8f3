package sessionstore

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/adk/v2/platform"
	"google.golang.org/adk/v2/session"
)

// Change is what one write to a session brought, as Watch reports it.
type Change struct {
	// Events are the events appended since the previous Change; the first
	// Change holds the session's most recent events, rewound ones left out.
	// A later Change may hold a rewind mark (RewindMarkOf): the events it
	// rewinds, reported before, are no longer the conversation.
	Events []*session.Event
	// Busy says whether an invocation holds the session's lease, until
	// LeaseExpires: a holder that died frees it then without a write.
	Busy         bool
	LeaseExpires time.Time
	// Live says the lease's holder is a live segment (the session's
	// liveUntil lies ahead), not a turn.
	Live bool
	// State is the session-scoped state after the write.
	State map[string]any
}

// Watch follows a session as it is written to, from any instance: it
// yields a Change for the session as it stands (its recent most recent
// events), then one for every write that appends events or takes or frees
// the lease, until ctx ends or the caller stops. A session that does not
// exist yields ErrNotFound.
//
// It listens to the session document, which every append rewrites (the
// tail lives there), so each write arrives without polling (Firestore
// bills a listener one read per change it delivers); a tail sealed between
// two writes is read from its chunk document.
func (s *Service) Watch(ctx context.Context, app, user, id string, recent int) iter.Seq2[*Change, error] {
	return func(yield func(*Change, error) bool) {
		if err := validateKey(app, user, id); err != nil {
			yield(nil, err)
			return
		}
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		ref := s.sessionRef(app, user, id)
		it := ref.Snapshots(ctx)
		defer it.Stop()
		first := true
		var revision int64 // of the last event reported
		var known int      // sealed chunks already read
		for {
			snap, err := it.Next()
			if err != nil {
				err = FirestoreError(err)
				if ctx.Err() != nil || errors.Is(err, context.Canceled) {
					return
				}
				yield(nil, fmt.Errorf("watch session %q: %w", id, err))
				return
			}
			if !snap.Exists() {
				yield(nil, fmt.Errorf("%w: %q", ErrNotFound, id))
				return
			}
			var doc sessionDoc
			if err := snap.DataTo(&doc); err != nil {
				yield(nil, fmt.Errorf("decode session %q: %w", id, err))
				return
			}
			now := platform.Now(ctx)
			change := &Change{Busy: doc.Lease.Holder != "" && doc.Lease.Expires.After(now), LeaseExpires: doc.Lease.Expires}
			change.Live = change.Busy && doc.LiveUntil.After(now)
			if change.State, err = decodeState(doc.State); err != nil {
				yield(nil, err)
				return
			}
			switch {
			case first:
				first = false
				if change.Events, _, err = s.readEvents(ctx, ref, &doc, recent, time.Time{}); err != nil {
					yield(nil, err)
					return
				}
			case doc.Revision != revision:
				elements, err := s.sealedSince(ctx, ref, &doc, known, revision)
				if err != nil {
					yield(nil, err)
					return
				}
				for _, el := range doc.Tail {
					if el.Revision > revision {
						elements = append(elements, el)
					}
				}
				for _, el := range elements {
					ev, err := decodeEvent(el.Event)
					if err != nil {
						yield(nil, fmt.Errorf("session %q revision %d: %w", id, el.Revision, err))
						return
					}
					change.Events = append(change.Events, ev)
				}
			}
			revision, known = doc.Revision, len(doc.Chunks)
			if !yield(change, nil) {
				return
			}
		}
	}
}

// sealedSince reads the events after revision that were sealed into chunks
// since the watcher last saw the session (it had read known chunks).
func (s *Service) sealedSince(ctx context.Context, ref *firestore.DocumentRef, doc *sessionDoc, known int, revision int64) ([]chunkElement, error) {
	if len(doc.Chunks) <= known {
		return nil, nil
	}
	refs := make([]*firestore.DocumentRef, 0, len(doc.Chunks)-known)
	for _, c := range doc.Chunks[known:] {
		refs = append(refs, chunkDocRef(ref, c.N))
	}
	snaps, err := s.client.GetAll(ctx, refs)
	if err != nil {
		return nil, fmt.Errorf("read events of %q: %w", doc.ID, FirestoreError(err))
	}
	var out []chunkElement
	for _, snap := range snaps {
		if !snap.Exists() {
			return nil, errors.New("an event chunk of session " + doc.ID + " is missing")
		}
		var cd chunkDoc
		if err := snap.DataTo(&cd); err != nil {
			return nil, fmt.Errorf("decode event chunk of %q: %w", doc.ID, err)
		}
		for _, el := range cd.Events {
			if el.Revision > revision {
				out = append(out, el)
			}
		}
	}
	return out, nil
}
