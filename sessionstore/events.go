package sessionstore

import (
	"bytes"
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

// readEvents returns the events passing the filters: the tail, which came
// with the session document, and the sealed chunks that can hold such
// events, read in one round trip. Filters apply as in ADK's in-memory
// service: the most recent n first, then the time bound. The events rewind
// marks took back are returned apart (see rewind.go).
func (s *Service) readEvents(ctx context.Context, ref *firestore.DocumentRef, doc *sessionDoc, recent int, after time.Time) (kept, rewound []*session.Event, err error) {
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
			return nil, nil, fmt.Errorf("read events of %q: %w", doc.ID, FirestoreError(err))
		}
		for i, snap := range snaps {
			if !snap.Exists() {
				return nil, nil, fmt.Errorf("event chunk %d of session %q is missing", chunks[i].N, doc.ID)
			}
			var cd chunkDoc
			if err := snap.DataTo(&cd); err != nil {
				return nil, nil, fmt.Errorf("decode event chunk %d of %q: %w", chunks[i].N, doc.ID, err)
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
			return nil, nil, fmt.Errorf("session %q revision %d: %w", doc.ID, el.Revision, err)
		}
		events = append(events, e)
	}
	kept, rewound = splitRewound(events)
	return kept, rewound, nil
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
	ss, err := Of(sess)
	if err != nil {
		return fmt.Errorf("append event: %w", err)
	}
	return s.AppendEventWith(ctx, ss, event, AppendOptions{})
}

// AppendOptions is what the commit that stores an event does besides.
type AppendOptions struct {
	// Create are documents created in the same commit (the pending-call
	// ledger's records of the calls the event pauses): the event and every
	// document are stored, or none of them. A document that already exists
	// fails the append with ErrConflict.
	Create []Write
	// DocsClosed records, when Create is empty, that none of the documents
	// earlier appends created beside the session is open any more (see
	// MayHaveOpenDocs). Set it under the session's lease, once that is so.
	DocsClosed bool
	// Claim takes the session's lease in the same commit (see ClaimLease
	// and ClaimNewSession). The append then fails with a *BusyError,
	// writing nothing, when the session changed since it was read.
	Claim *LeaseClaim
	// TurnLog, when not nil, replaces the session's log of recent turn
	// times (see TurnLog).
	TurnLog []time.Time
	// Tokens counts, in the session document, the model tokens the
	// event's response reported (see SessionTokens).
	Tokens TokenUse
	// Writes are writes of documents beside the session made in the same
	// commit (a user's turn and token counts, the ledger records a rewind
	// closes). A precondition of one that fails fails the append, writing
	// nothing: with a claim, as busy; without, with ErrConflict (the lease,
	// if any, kept).
	Writes []Write

	rewind *rewindPlan // set by RewindSession
	// Committed, when set, is called once the commit is made, with its
	// time: Firestore gives every write of a commit that time as its
	// update time, so it is also the version of each document in Writes.
	Committed func(commitTime time.Time)

	// staged: the event was staged (StageEvent), and is visible already.
	staged bool
	// release frees the lease the handle holds in the same commit (see
	// ReleaseSession).
	release bool
}

// AppendEventWith is AppendEvent that does what opts asks in the same
// commit. It plans the commit from the handle (planAppend), makes it
// (commitAppend) and applies the outcome to the handle (applyAppend): a
// failed commit leaves the handle as it was.
//
// Under a lease (a handle read under it, ReadRequest.Lease), the append is fenced by the
// lease rather than by the handle: it fails with ErrConflict if another
// handle of the same holder appended since this one was read, and with
// ErrLeaseLost once the session was taken over.
func (s *Service) AppendEventWith(ctx context.Context, sess *Session, event *session.Event, opts AppendOptions) (err error) {
	ss, err := appendable(sess, event)
	if ss == nil || err != nil {
		return err
	}
	ss.appendMu.Lock()
	defer ss.appendMu.Unlock()
	if err := s.flushLocked(ctx, ss, nil, nil); err != nil {
		return err
	}
	return s.appendLocked(ctx, ss, event, opts)
}

// appendLocked plans, makes and applies the commit of one append (its span
// is baton.session.append, staged or not); the caller holds ss.appendMu.
func (s *Service) appendLocked(ctx context.Context, ss *Session, event *session.Event, opts AppendOptions) (err error) {
	ctx, span := startSpan(ctx, "baton.session.append", ss.id,
		attribute.String("baton.event.author", event.Author), attribute.Int("baton.ledger.records", len(opts.Create)))
	defer func() { endSpan(span, err) }()
	if c := opts.Claim; c != nil {
		span.SetAttributes(attribute.Bool("baton.lease.take", true), attribute.Bool("baton.session.create", c.create != nil))
	}
	if l := ss.lease; l != nil {
		l.mu.Lock()
		defer l.mu.Unlock()
	}
	plan, err := s.planAppend(ctx, ss, event, opts)
	if err != nil {
		return err
	}
	results, err := s.commitAppend(ctx, ss, plan)
	if err != nil {
		return err
	}
	ss.applyAppend(plan, results)
	if opts.Committed != nil {
		opts.Committed(results[plan.sessionWrite].UpdateTime)
	}
	return nil
}

// appendable returns the handle an append goes through, or nil when there
// is nothing to store (a partial event).
func appendable(ss *Session, event *session.Event) (*Session, error) {
	switch {
	case ss == nil:
		return nil, errors.New("append event: session is nil")
	case event == nil:
		return nil, errors.New("append event: event is nil")
	case event.Partial:
		return nil, nil
	}
	if !ss.tailKnown {
		return nil, fmt.Errorf("append event: session %q came from List; read it with Get first", ss.id)
	}
	return ss, nil
}

// appendPlan is one append's commit and what the handle becomes once it
// lands.
type appendPlan struct {
	batch *firestore.WriteBatch
	// sessionWrite and chatWrite index the session's and a created chat's
	// writes in the batch (chatWrite is -1 when no chat is created).
	sessionWrite, chatWrite int

	event     *session.Event // as stored: no temp: keys in its state delta
	delta     map[string]any // the event's whole state delta, for the handle
	revision  int64
	chunks    []chunkMeta
	tail      []chunkElement
	stateSize int
	docsOpen  bool
	claim     *LeaseClaim
	leaseDoc  leaseDoc    // the lease the claim stores
	rewind    *rewindPlan // what a rewind mark takes back
	besides   int         // how many documents beside the session it updates
	turnLog   []time.Time // nil: unchanged
	tokens    *tokenCount // nil: unchanged
	staged    bool        // the event is staged: visible already
	release   bool        // the commit frees the lease
}

// appendBase is what an append reads of the handle.
type appendBase struct {
	revision  int64
	version   time.Time // the update time the commit is conditioned on
	chunks    []chunkMeta
	tail      []chunkElement
	stateSize int
	state     []byte // the new session-scoped state, nil when unchanged
	docsOpen  bool
	tokens    tokenCount
}

// base reads, under the handle's lock, what an append of an event with
// session-scoped state changes sessDelta starts from, and checks the
// lease's fence when there is one and no claim.
func (ss *Session) base(sessDelta map[string]any, claim *LeaseClaim) (appendBase, error) {
	ss.mu.RLock()
	b := appendBase{
		revision: ss.revision + 1, version: ss.version, chunks: slices.Clone(ss.chunks), tail: slices.Clone(ss.tail),
		stateSize: ss.stateSize, docsOpen: ss.docsOpen, tokens: ss.tokens,
	}
	var err error
	if len(sessDelta) > 0 {
		state := sessionScoped(ss.state)
		maps.Copy(state, sessDelta)
		b.state, err = encodeState(state)
		b.stateSize = len(b.state)
	}
	ss.mu.RUnlock()
	if err != nil {
		return b, err
	}
	if claim != nil {
		if l := claim.lease; l.App != ss.app || l.User != ss.user || l.SessionID != ss.id || ss.lease != nil {
			return b, fmt.Errorf("append event: the lease claim is not for session %q as read", ss.id)
		}
		return b, nil
	}
	if l := ss.lease; l != nil {
		if l.revision != b.revision-1 {
			return b, fmt.Errorf("%w: session %q: handle read before the lease holder's last append", ErrConflict, ss.id)
		}
		b.version = l.version
	}
	return b, nil
}

// planAppend builds the commit that stores event on ss with what opts
// asks, without writing anything.
func (s *Service) planAppend(ctx context.Context, ss *Session, event *session.Event, opts AppendOptions) (*appendPlan, error) {
	stored := withoutTempDelta(event)
	encoded, err := encodeEvent(stored)
	if err != nil {
		return nil, err
	}
	appDelta, userDelta, sessDelta := splitState(event.Actions.StateDelta)
	b, err := ss.base(sessDelta, opts.Claim)
	if err != nil {
		return nil, err
	}
	if r := opts.rewind; r != nil {
		if b.state, err = encodeState(r.state); err != nil {
			return nil, err
		}
		b.stateSize = len(b.state)
	}
	p := &appendPlan{
		batch: s.client.Batch(), chatWrite: -1, event: stored, delta: event.Actions.StateDelta, revision: b.revision,
		chunks: b.chunks, tail: b.tail, stateSize: b.stateSize, docsOpen: b.docsOpen, claim: opts.Claim,
		rewind: opts.rewind, besides: len(opts.Writes), turnLog: opts.TurnLog, tokens: b.tokens.add(opts.Tokens),
		staged: opts.staged, release: opts.release,
	}
	if p.release && ss.lease == nil && opts.Claim == nil {
		return nil, fmt.Errorf("append event: session %q: no lease to release", ss.id)
	}
	switch {
	case len(opts.Create) > 0:
		p.docsOpen = true
	case opts.DocsClosed:
		p.docsOpen = false
	}
	ref := s.sessionRef(ss.app, ss.user, ss.id)
	element := chunkElement{Revision: b.revision, Time: event.Timestamp, Event: encoded}
	sealed, err := s.placeEvent(p, ref, ss, element)
	if err != nil {
		return nil, err
	}
	if c := opts.Claim; c != nil {
		p.leaseDoc = leaseDoc{Holder: c.lease.Holder, Fence: c.lease.Fence, Expires: platform.Now(ctx).Add(c.ttl)}
		if p.release {
			p.leaseDoc = leaseDoc{Fence: c.lease.Fence}
		}
	}
	if c := opts.Claim; c != nil && c.create != nil {
		s.planCreate(p, ref, ss, b.state, event.Timestamp)
	} else {
		p.batch.Update(ref, p.sessionUpdates(b, element, sealed, event.Timestamp), firestore.LastUpdateTime(b.version))
	}
	if err := s.addStateMerges(p.batch, ss.app, ss.user, appDelta, userDelta); err != nil {
		return nil, err
	}
	besides := slices.Concat(opts.Create, opts.Writes)
	if c := opts.Claim; c != nil {
		besides = append(besides, c.updates...)
	}
	s.addAll(p.batch, besides)
	return p, nil
}

// placeEvent adds element to the plan's tail, first sealing the tail into
// a chunk document (the batch's first write) when the session document
// would outgrow its budget. It reports whether it sealed.
func (s *Service) placeEvent(p *appendPlan, ref *firestore.DocumentRef, ss *Session, element chunkElement) (bool, error) {
	fixed := len(ss.app) + len(ss.user) + 2*len(ss.id) + len(s.root) + 256
	docSize := func() int {
		return fixed + p.stateSize + len(p.chunks)*chunkMetaBytes + elementsSize(p.tail) + element.size()
	}
	sealed := false
	if docSize() > docBudget && len(p.tail) > 0 {
		n := int64(0)
		if len(p.chunks) > 0 {
			n = p.chunks[len(p.chunks)-1].N + 1
		}
		p.batch.Create(chunkDocRef(ref, n), chunkDoc{Events: p.tail})
		p.chunks = append(p.chunks, sealChunk(n, p.tail))
		p.tail = nil
		p.sessionWrite = 1
		sealed = true
	}
	if size := docSize(); size > docBudget {
		return false, fmt.Errorf("%w: event %q needs %d bytes in the session document, limit %d", ErrTooLarge, p.event.ID, size, docBudget)
	}
	p.tail = append(p.tail, element)
	return sealed, nil
}

// sessionUpdates are the updates of an existing session document that
// store element.
func (p *appendPlan) sessionUpdates(b appendBase, element chunkElement, sealed bool, updated time.Time) []firestore.Update {
	updates := []firestore.Update{
		{Path: "revision", Value: p.revision},
		{Path: "updated", Value: updated},
	}
	if sealed {
		updates = append(updates, firestore.Update{Path: "chunks", Value: p.chunks}, firestore.Update{Path: "tail", Value: p.tail})
	} else {
		updates = append(updates, firestore.Update{Path: "tail", Value: firestore.ArrayUnion(element)})
	}
	if b.state != nil {
		updates = append(updates, firestore.Update{Path: "state", Value: b.state})
	}
	if p.docsOpen != b.docsOpen {
		updates = append(updates, firestore.Update{Path: "sideDocsClosed", Value: !p.docsOpen})
	}
	switch {
	case p.claim != nil:
		updates = append(updates, firestore.Update{Path: "lease", Value: p.leaseDoc})
		if p.claim.lease.live && !p.release {
			updates = append(updates, firestore.Update{Path: liveUntilField, Value: p.leaseDoc.Expires})
		}
	case p.release:
		updates = append(updates, releaseUpdates()...)
	}
	if p.turnLog != nil {
		updates = append(updates, firestore.Update{Path: "turnLog", Value: p.turnLog})
	}
	if t := p.tokens; t != nil {
		updates = append(updates, firestore.Update{Path: "tokensDay", Value: t.day}, firestore.Update{Path: "tokensUsed", Value: t.n})
	}
	return updates
}

// planCreate adds to the plan the creation of the session (and its chat)
// that the claim's first append stores (see ClaimNewSession).
func (s *Service) planCreate(p *appendPlan, ref *firestore.DocumentRef, ss *Session, state []byte, updated time.Time) {
	c := p.claim.create
	if state == nil {
		state = c.state
	}
	doc := sessionDoc{
		App: ss.app, User: ss.user, ID: ss.id, Scope: s.scope(ss.app), State: state,
		Created: c.created, Updated: updated, Revision: p.revision,
		Chunks: []chunkMeta{}, Tail: p.tail, Lease: p.leaseDoc, DocsClosed: !p.docsOpen, TurnLog: p.turnLog,
	}
	if t := p.tokens; t != nil {
		doc.TokensDay, doc.TokensUsed = t.day, t.n
	}
	if p.claim.lease.live && !p.release {
		doc.LiveUntil = p.leaseDoc.Expires
	}
	p.batch.Create(ref, doc)
	if chat := c.chat; chat != nil {
		p.batch.Create(s.chatRef(chat.App, chat.UserID, chat.ID), chat.doc(s.scope(chat.App)))
		p.chatWrite = p.sessionWrite + 1
		// The user has data: the sweeper checks that the user still exists
		// (account.go).
		s.accountMerge(p.batch, chat.App, chat.UserID, c.created)
	}
}

// commitAppend makes the plan's commit and says why it failed: a claim
// that lost a race reads as busy, anything else as appendError tells.
func (s *Service) commitAppend(ctx context.Context, ss *Session, p *appendPlan) ([]*firestore.WriteResult, error) {
	results, err := p.batch.Commit(ctx)
	if err == nil {
		return results, nil
	}
	err = FirestoreError(err)
	if ctx.Err() == nil && mayHaveLanded(err) {
		if results, ok := s.storedAnyway(ctx, ss, p); ok {
			return results, nil
		}
	}
	if p.claim != nil && (errors.Is(err, ErrConflict) || errors.Is(err, ErrAlreadyExists)) {
		// Someone wrote the session since it was read: as good as busy.
		return nil, &BusyError{SessionID: ss.id, RetryAfter: time.Second}
	}
	if p.besides > 0 && errors.Is(err, ErrConflict) && s.unchanged(ctx, ss) {
		// A document beside the session changed, not the session.
		return nil, fmt.Errorf("%w: a document beside session %q changed", ErrConflict, ss.id)
	}
	return nil, s.appendError(ctx, s.sessionRef(ss.app, ss.user, ss.id), ss.id, ss.lease, err)
}

// mayHaveLanded reports whether a commit that failed with err may have
// been made all the same. The Firestore emulator fails a commit it made
// (Canceled, or Unknown) when a listener of the written document closes
// meanwhile; a reply lost on the way reads as unavailable; and a commit
// the client retried (it retries Unavailable) can find its own first
// attempt: a conflict, or for a create, the document existing.
func mayHaveLanded(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, ErrUnavailable) ||
		errors.Is(err, ErrConflict) || errors.Is(err, ErrAlreadyExists)
}

// storedAnyway reports whether the plan's commit, though it failed, was
// made, and returns the results it would have: the session document holds
// the plan's revision, as its last event the plan's, and the lease as the
// commit left it (a takeover since would fence this handle out). All the
// writes of one commit have its time.
func (s *Service) storedAnyway(ctx context.Context, ss *Session, p *appendPlan) ([]*firestore.WriteResult, bool) {
	h, updated, ok := s.readHead(ctx, ss.app, ss.user, ss.id)
	if !ok || h.Revision != p.revision || len(h.Tail) == 0 {
		return nil, false
	}
	holder, fence := p.leaseAfter(ss)
	got, want := h.Tail[len(h.Tail)-1], p.tail[len(p.tail)-1]
	if h.Lease.Holder != holder || h.Lease.Fence != fence || got.Revision != want.Revision || !bytes.Equal(got.Event, want.Event) {
		return nil, false
	}
	results := make([]*firestore.WriteResult, max(p.sessionWrite, p.chatWrite)+1)
	for i := range results {
		results[i] = &firestore.WriteResult{UpdateTime: updated}
	}
	return results, true
}

// leaseAfter is the holder and fence of the session's lease once the
// plan's commit is made (sessionUpdates writes a claim's lease, or the
// release, else leaves it as it was).
func (p *appendPlan) leaseAfter(ss *Session) (holder string, fence int64) {
	switch l := ss.lease; {
	case p.claim != nil:
		return p.leaseDoc.Holder, p.leaseDoc.Fence
	case l != nil && p.release:
		return "", l.Fence
	case l != nil:
		return l.Holder, l.Fence
	}
	return ss.stored.Holder, ss.stored.Fence
}

// applyAppend makes the handle what the plan's commit, now made, stored.
func (ss *Session) applyAppend(p *appendPlan, results []*firestore.WriteResult) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	maps.Copy(ss.state, p.delta) // temp: keys live on for the invocation
	if p.staged {
		ss.staged = ss.staged[1:]
	}
	ss.events = append(ss.events, p.event)
	ss.updated = p.event.Timestamp
	ss.revision = p.revision
	ss.version = results[p.sessionWrite].UpdateTime
	ss.chunks = p.chunks
	ss.tail = p.tail
	ss.stateSize = p.stateSize
	ss.docsOpen = p.docsOpen
	if p.rewind != nil {
		ss.applyRewind(p.rewind)
	}
	if p.turnLog != nil {
		ss.turnLog = p.turnLog
	}
	if p.tokens != nil {
		ss.tokens = *p.tokens
	}
	if c := p.claim; c != nil {
		if p.chatWrite >= 0 {
			c.create.chat.version, c.create.chat.read = results[p.chatWrite].UpdateTime, c.create.chat.pointer()
		}
		c.lease.expires = p.leaseDoc.Expires
		ss.lease = c.lease
	}
	if l := ss.lease; l != nil {
		l.version, l.revision = ss.version, ss.revision
	}
	if p.release {
		ss.released()
	}
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
