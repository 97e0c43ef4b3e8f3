package sessionstore

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"cloud.google.com/go/firestore"
	"go.opentelemetry.io/otel/attribute"
	"google.golang.org/adk/v2/platform"
	"google.golang.org/adk/v2/session"
)

// Chunked event storage: how a session's events are read back from its tail
// and sealed chunks, and how an append joins the tail, sealing it into a
// chunk document when the session document would outgrow Firestore's limit
// (see doc.go for the layout).

// readEvents returns the events passing the filters: the tail, which came
// with the session document, and the sealed chunks that can hold such
// events, read in one round trip. Filters apply as in ADK's in-memory
// service: the most recent n first, then the time bound.
func (s *Service) readEvents(ctx context.Context, ref *firestore.DocumentRef, doc *sessionDoc, recent int, after time.Time) ([]*session.Event, error) {
	chunks := doc.Chunks
	if recent > 0 {
		n := int64(len(doc.Tail))
		i := len(chunks)
		for i > 0 && n < int64(recent) {
			i--
			n += chunks[i].Count
		}
		chunks = chunks[i:]
	}
	if !after.IsZero() {
		chunks = slices.DeleteFunc(slices.Clone(chunks), func(c chunkMeta) bool { return c.Last.Before(after) })
	}
	var elements []chunkElement
	if len(chunks) > 0 {
		refs := make([]*firestore.DocumentRef, len(chunks))
		for i, c := range chunks {
			refs[i] = chunkDocRef(ref, c.N)
		}
		snaps, err := s.client.GetAll(ctx, refs)
		if err != nil {
			return nil, fmt.Errorf("read events of %q: %w", doc.ID, FirestoreError(err))
		}
		for i, snap := range snaps {
			if !snap.Exists() {
				return nil, fmt.Errorf("event chunk %d of session %q is missing", chunks[i].N, doc.ID)
			}
			var cd chunkDoc
			if err := snap.DataTo(&cd); err != nil {
				return nil, fmt.Errorf("decode event chunk %d of %q: %w", chunks[i].N, doc.ID, err)
			}
			elements = append(elements, cd.Events...)
		}
	}
	elements = append(elements, doc.Tail...)
	if recent > 0 && len(elements) > recent {
		elements = elements[len(elements)-recent:]
	}
	if !after.IsZero() {
		i, _ := slices.BinarySearchFunc(elements, after, func(e chunkElement, t time.Time) int {
			if e.Time.Before(t) {
				return -1
			}
			return 1
		})
		elements = elements[i:]
	}
	events := make([]*session.Event, 0, len(elements))
	for _, el := range elements {
		e, err := decodeEvent(el.Event)
		if err != nil {
			return nil, fmt.Errorf("session %q revision %d: %w", doc.ID, el.Revision, err)
		}
		events = append(events, e)
	}
	return events, nil
}

// AppendEvent stores event and applies it to sess, in one round trip. It
// fails with ErrConflict, leaving sess unchanged, when the stored session
// moved on since sess was read or last written. Partial events are ignored.
//
// The event joins the tail in the session document (one write). When the
// tail is full it is first sealed into a chunk document of its own (one
// more write). App and user state documents are written only when the event
// changes them. That is at most 3 writes, except for an event that changes
// both app: and user: state at the moment the tail is sealed: 4.
func (s *Service) AppendEvent(ctx context.Context, sess session.Session, event *session.Event) error {
	return s.AppendEventWith(ctx, sess, event, nil)
}

// SideDoc is a document AppendEventWith creates in the commit that stores
// an event.
type SideDoc struct {
	Ref  *firestore.DocumentRef
	Data any
}

// AppendEventWith is AppendEvent that also creates docs in the same commit:
// the event and every document are stored, or none of them. A document that
// already exists fails the append with ErrConflict.
//
// Under a lease (a handle read with WithLease), the append is fenced by the
// lease rather than by the handle: it fails with ErrConflict if another
// handle of the same holder appended since this one was read, and with
// ErrLeaseLost once the session was taken over.
func (s *Service) AppendEventWith(ctx context.Context, sess session.Session, event *session.Event, docs []SideDoc) (err error) {
	if sess == nil {
		return errors.New("append event: session is nil")
	}
	if event == nil {
		return errors.New("append event: event is nil")
	}
	if event.Partial {
		return nil
	}
	ss, ok := sess.(*storedSession)
	if !ok {
		return fmt.Errorf("append event: session %q of type %T was not read from this service", sess.ID(), sess)
	}
	if !ss.tailKnown {
		return fmt.Errorf("append event: session %q came from List; read it with Get first", ss.id)
	}
	// The documents created with the event are, on the engine's path, the
	// ledger records of the calls it pauses.
	ctx, span := startSpan(ctx, "baton.session.append", ss.id,
		attribute.String("baton.event.author", event.Author), attribute.Int("baton.ledger.records", len(docs)))
	defer func() { endSpan(span, err) }()
	ss.appendMu.Lock()
	defer ss.appendMu.Unlock()
	if l := ss.lease; l != nil {
		l.mu.Lock()
		defer l.mu.Unlock()
	}

	stored := withoutTempDelta(event)
	encoded, err := encodeEvent(stored)
	if err != nil {
		return err
	}
	appDelta, userDelta, sessDelta := splitState(event.Actions.StateDelta)

	ss.mu.RLock()
	revision := ss.revision + 1
	version := ss.version
	chunks := slices.Clone(ss.chunks)
	tail := slices.Clone(ss.tail)
	stateSize := ss.stateSize
	hadSideDocs, clearSideDocs := ss.sideDocs, ss.clearSideDocs
	var newState []byte
	if len(sessDelta) > 0 {
		state := sessionScoped(ss.state)
		maps.Copy(state, sessDelta)
		newState, err = encodeState(state)
	}
	ss.mu.RUnlock()
	if err != nil {
		return err
	}
	take := ss.take
	if take != nil {
		span.SetAttributes(attribute.Bool("baton.lease.take", true), attribute.Bool("baton.session.create", take.create != nil))
	}
	if l := ss.lease; l != nil && take == nil {
		if l.revision != revision-1 {
			return fmt.Errorf("%w: session %q: handle read before the lease holder's last append", ErrConflict, ss.id)
		}
		version = l.version
	}
	if newState != nil {
		stateSize = len(newState)
	}

	ref := s.sessionDoc(ss.app, ss.user, ss.id)
	element := chunkElement{Revision: revision, Time: event.Timestamp, Event: encoded}
	fixed := len(ss.app) + len(ss.user) + 2*len(ss.id) + len(s.root) + 256
	docSize := func() int {
		return fixed + stateSize + len(chunks)*chunkMetaBytes + elementsSize(tail) + element.size()
	}
	batch := s.client.Batch()
	sealed := false
	if docSize() > docBudget && len(tail) > 0 {
		n := int64(0)
		if len(chunks) > 0 {
			n = chunks[len(chunks)-1].N + 1
		}
		batch.Create(chunkDocRef(ref, n), chunkDoc{Events: tail})
		chunks = append(chunks, sealChunk(n, tail))
		tail = nil
		sealed = true
	}
	if size := docSize(); size > docBudget {
		return fmt.Errorf("%w: event %q needs %d bytes in the session document, limit %d", ErrTooLarge, event.ID, size, docBudget)
	}
	updates := []firestore.Update{
		{Path: "revision", Value: revision},
		{Path: "updated", Value: event.Timestamp},
	}
	if sealed {
		tail = []chunkElement{element}
		updates = append(updates, firestore.Update{Path: "chunks", Value: chunks}, firestore.Update{Path: "tail", Value: tail})
	} else {
		tail = append(tail, element)
		updates = append(updates, firestore.Update{Path: "tail", Value: firestore.ArrayUnion(element)})
	}
	if newState != nil {
		updates = append(updates, firestore.Update{Path: "state", Value: newState})
	}
	sideDocs := hadSideDocs
	switch {
	case len(docs) > 0:
		sideDocs = true
	case clearSideDocs:
		sideDocs = false
	}
	if sideDocs != hadSideDocs {
		updates = append(updates, firestore.Update{Path: "sideDocsClosed", Value: !sideDocs})
	}
	if take != nil {
		take.doc.Expires = platform.Now(ctx).Add(take.ttl)
		updates = append(updates, firestore.Update{Path: "lease", Value: take.doc})
	}
	if take != nil && take.create != nil {
		// The session is stored by this append (see CreateOnAppend).
		state := newState
		if state == nil {
			state = take.create.state
		}
		batch.Create(ref, sessionDoc{
			App: ss.app, User: ss.user, ID: ss.id, Scope: s.scope(ss.app), State: state,
			Created: take.create.created, Updated: event.Timestamp, Revision: revision,
			Chunks: []chunkMeta{}, Tail: tail, Lease: take.doc, SideDocsClosed: !sideDocs,
		})
		if c := take.create.chat; c != nil {
			batch.Create(s.chatRef(c.App, c.UserID, c.ID), c.doc(s.scope(c.App)))
		}
	} else {
		batch.Update(ref, updates, firestore.LastUpdateTime(version))
	}
	if err := s.addStateMerges(batch, ss.app, ss.user, appDelta, userDelta); err != nil {
		return err
	}
	for _, d := range docs {
		batch.Create(d.Ref, d.Data)
	}
	if take != nil {
		for _, u := range take.updates {
			batch.Update(u.Ref, u.Updates, u.Pre)
		}
	}
	results, err := batch.Commit(ctx)
	err = FirestoreError(err)
	if take != nil && (errors.Is(err, ErrConflict) || errors.Is(err, ErrAlreadyExists)) {
		// Someone wrote the session since it was read: as good as busy.
		return &BusyError{SessionID: ss.id, RetryAfter: time.Second}
	}
	if err != nil {
		return s.appendError(ctx, ref, ss.id, ss.lease, err)
	}
	sessionResult := results[0]
	if sealed {
		sessionResult = results[1]
	}

	ss.mu.Lock()
	defer ss.mu.Unlock()
	maps.Copy(ss.state, event.Actions.StateDelta) // temp: keys live on for the invocation
	ss.events = append(ss.events, stored)
	ss.updated = event.Timestamp
	ss.revision = revision
	ss.version = sessionResult.UpdateTime
	ss.chunks = chunks
	ss.tail = tail
	ss.stateSize = stateSize
	ss.sideDocs, ss.clearSideDocs = sideDocs, false
	if take != nil && take.create != nil && take.create.chat != nil {
		take.create.chat.version = results[1].UpdateTime
	}
	if take != nil {
		ss.take, ss.lease = nil, take.lease
		take.lease.expires = take.doc.Expires
	}
	if l := ss.lease; l != nil {
		l.version, l.revision = ss.version, revision
	}
	return nil
}

func sealChunk(n int64, tail []chunkElement) chunkMeta {
	m := chunkMeta{N: n, Count: int64(len(tail)), First: tail[0].Time, Last: tail[0].Time}
	for _, e := range tail[1:] {
		if e.Time.Before(m.First) {
			m.First = e.Time
		}
		if e.Time.After(m.Last) {
			m.Last = e.Time
		}
	}
	return m
}

// appendError tells a conflict from a deleted session and from a failure.
func (s *Service) appendError(ctx context.Context, ref *firestore.DocumentRef, id string, lease *Lease, err error) error {
	if !errors.Is(err, ErrConflict) && !errors.Is(err, ErrNotFound) && !errors.Is(err, ErrAlreadyExists) {
		return fmt.Errorf("append event to %q: %w", id, err)
	}
	if _, getErr := ref.Get(ctx); errors.Is(FirestoreError(getErr), ErrNotFound) {
		return fmt.Errorf("%w: %q", ErrNotFound, id)
	}
	if lease != nil && errors.Is(err, ErrConflict) {
		lease.markLost()
		return fmt.Errorf("session %q: %w", id, ErrLeaseLost)
	}
	return fmt.Errorf("%w: session %q: %v", ErrConflict, id, err)
}
