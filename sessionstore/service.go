package sessionstore

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"cloud.google.com/go/firestore"
	"go.opentelemetry.io/otel/attribute"
	"google.golang.org/adk/v2/platform"
	"google.golang.org/adk/v2/session"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Sentinel errors. Callers test for them with errors.Is.
var (
	// ErrNotFound is returned by Get, AppendEvent, AcquireLease and GetChat
	// when the session or chat does not exist, or belongs to another user.
	// (ADK v1 declared ErrNotFound for this; ADK v2 has no such
	// sentinel, so the store declares its own.)
	ErrNotFound = errors.New("session not found")
	// ErrConflict is returned by AppendEvent when the session changed in
	// storage since the handle was read or last written (another handle
	// appended, or a lease was taken). Nothing was written; reload the
	// session with Get to continue.
	ErrConflict = errors.New("session changed concurrently")
	// ErrTooLarge is returned when an event or a state would not fit in a
	// Firestore document. Nothing was written.
	ErrTooLarge = errors.New("too large for a Firestore document")
	// ErrInvalidID is returned when an app name, user id or session id
	// cannot name a document. Nothing was written.
	ErrInvalidID = errors.New("invalid id")
	// ErrAlreadyExists is returned by Create when the user already has a
	// session with the requested id.
	ErrAlreadyExists = errors.New("session already exists")
	// ErrUnavailable is returned when Firestore could not be reached or
	// did not answer in time. The request may be retried.
	ErrUnavailable = errors.New("firestore unavailable")
)

// DefaultRoot is the top-level collection used when Options.Root is empty.
const DefaultRoot = "baton"

// Options configures a Service. The zero value (or nil) uses the defaults.
type Options struct {
	// Root is the top-level collection under which everything is stored,
	// so that two deployments can share one database. Default "baton".
	Root string
}

// Service is a Firestore implementation of session.Service.
type Service struct {
	client *firestore.Client
	root   string
}

var _ session.Service = (*Service)(nil)

// New returns a Service storing sessions with client.
func New(client *firestore.Client, opts *Options) *Service {
	root := DefaultRoot
	if opts != nil && opts.Root != "" {
		root = opts.Root
	}
	return &Service{client: client, root: root}
}

// Root returns the top-level collection this service stores under.
func (s *Service) Root() string { return s.root }

func (s *Service) appDoc(app string) *firestore.DocumentRef {
	return s.client.Collection(s.root).Doc(app)
}

func (s *Service) userDoc(app, user string) *firestore.DocumentRef {
	return s.appDoc(app).Collection("users").Doc(user)
}

func (s *Service) sessionDoc(app, user, id string) *firestore.DocumentRef {
	return s.userDoc(app, user).Collection("sessions").Doc(id)
}

// SessionRef returns the document that stores a session. Packages that keep
// per-session records (the pending-call ledger) nest them under it so that
// deleting a session's tree finds them.
func (s *Service) SessionRef(app, user, id string) *firestore.DocumentRef {
	return s.sessionDoc(app, user, id)
}

func chunkDocRef(sess *firestore.DocumentRef, n int64) *firestore.DocumentRef {
	return sess.Collection("events").Doc(fmt.Sprintf("%06d", n))
}

func (s *Service) scope(app string) string { return s.root + "/" + app }

func validateKey(app, user, id string) error {
	if err := validateID("app name", app); err != nil {
		return err
	}
	if err := validateID("user id", user); err != nil {
		return err
	}
	return validateID("session id", id)
}

// Create creates a session. A session id chosen by the caller must not be
// in use by the same user. temp: keys of the initial state are dropped.
func (s *Service) Create(ctx context.Context, req *session.CreateRequest) (_ *session.CreateResponse, err error) {
	ctx, span := startSpan(ctx, "baton.session.create", req.SessionID)
	defer func() { endSpan(span, err) }()
	n, err := newSession(ctx, req)
	if err != nil {
		return nil, err
	}
	id, appDelta, userDelta, sessState, stateBytes := n.id, n.appDelta, n.userDelta, n.state, n.stateBytes
	now := platform.Now(ctx)
	ref := s.sessionDoc(req.AppName, req.UserID, id)
	batch := s.client.Batch()
	batch.Create(ref, sessionDoc{
		App: req.AppName, User: req.UserID, ID: id, Scope: s.scope(req.AppName),
		State: stateBytes, Created: now, Updated: now, Chunks: []chunkMeta{}, Tail: []chunkElement{},
	})
	if err := s.addStateMerges(batch, req.AppName, req.UserID, appDelta, userDelta); err != nil {
		return nil, err
	}
	results, err := batch.Commit(ctx)
	if err != nil {
		if status.Code(err) == codes.AlreadyExists {
			return nil, fmt.Errorf("%w: %q", ErrAlreadyExists, id)
		}
		return nil, fmt.Errorf("create session %q: %w", id, translate(err))
	}
	app, user, err := s.readScopedState(ctx, req.AppName, req.UserID)
	if err != nil {
		return nil, err
	}
	return &session.CreateResponse{Session: &storedSession{
		app: req.AppName, user: req.UserID, id: id,
		state:     mergeState(app, user, sessState),
		events:    []*session.Event{},
		updated:   now,
		version:   results[0].UpdateTime,
		stateSize: len(stateBytes),
		tailKnown: true,
	}}, nil
}

// newSessionParts is what Create and CreateWithEvents derive from a request.
type newSessionParts struct {
	id                         string
	appDelta, userDelta, state map[string]any
	stateBytes                 []byte
}

// newSession validates a create request, names the session and splits its
// initial state by scope (temp: dropped).
func newSession(ctx context.Context, req *session.CreateRequest) (*newSessionParts, error) {
	n := &newSessionParts{id: req.SessionID}
	if n.id == "" {
		n.id = platform.NewUUID(ctx)
	}
	if err := validateKey(req.AppName, req.UserID, n.id); err != nil {
		return nil, err
	}
	n.appDelta, n.userDelta, n.state = splitState(req.State)
	var err error
	if n.stateBytes, err = encodeState(n.state); err != nil {
		return nil, err
	}
	return n, nil
}

// addStateMerges adds to batch the per-key merges of app and user state.
func (s *Service) addStateMerges(batch *firestore.WriteBatch, app, user string, appDelta, userDelta map[string]any) error {
	for _, d := range []struct {
		ref   *firestore.DocumentRef
		delta map[string]any
	}{{s.appDoc(app), appDelta}, {s.userDoc(app, user), userDelta}} {
		if len(d.delta) == 0 {
			continue
		}
		values, err := encodeStateValues(d.delta)
		if err != nil {
			return err
		}
		paths := make([]firestore.FieldPath, 0, len(values))
		fields := make(map[string]any, len(values))
		for k, b := range values {
			paths = append(paths, firestore.FieldPath{"state", k})
			fields[k] = b
		}
		batch.Set(d.ref, map[string]any{"state": fields}, firestore.Merge(paths...))
	}
	return nil
}

// readScopedState reads the app and user state in one round trip.
func (s *Service) readScopedState(ctx context.Context, app, user string) (appState, userState map[string]any, err error) {
	snaps, err := s.client.GetAll(ctx, []*firestore.DocumentRef{s.appDoc(app), s.userDoc(app, user)})
	if err != nil {
		return nil, nil, fmt.Errorf("read app and user state: %w", translate(err))
	}
	if appState, err = decodeStateSnapshot(snaps[0]); err != nil {
		return nil, nil, err
	}
	if userState, err = decodeStateSnapshot(snaps[1]); err != nil {
		return nil, nil, err
	}
	return appState, userState, nil
}

func decodeStateSnapshot(snap *firestore.DocumentSnapshot) (map[string]any, error) {
	if !snap.Exists() {
		return map[string]any{}, nil
	}
	var d stateDoc
	if err := snap.DataTo(&d); err != nil {
		return nil, fmt.Errorf("decode %s: %w", snap.Ref.Path, err)
	}
	return decodeStateValues(d.State)
}

func mergeState(app, user, sess map[string]any) map[string]any {
	out := make(map[string]any, len(app)+len(user)+len(sess))
	maps.Copy(out, sess)
	maps.Copy(out, app)
	maps.Copy(out, user)
	return out
}

// Get returns a session with its events, oldest first. It reads the session,
// app and user documents in one round trip and the event chunks the request
// needs in a second.
func (s *Service) Get(ctx context.Context, req *session.GetRequest) (*session.GetResponse, error) {
	return s.get(ctx, req, true)
}

// GetSessionScoped is Get without app: and user: state: the handle's state
// holds the session's own keys, and the app and user state documents are
// not looked up (two lookups fewer, which Firestore bills as reads even
// when the documents do not exist). It serves callers that read a
// session's events or its own state, or append to it, without running an
// agent on it: an append through the handle stores app: and user: changes
// as usual, since those are merged key by key without reading.
func (s *Service) GetSessionScoped(ctx context.Context, req *session.GetRequest) (*session.GetResponse, error) {
	return s.get(ctx, req, false)
}

func (s *Service) get(ctx context.Context, req *session.GetRequest, shared bool) (_ *session.GetResponse, err error) {
	ctx, span := startSpan(ctx, "baton.session.get", req.SessionID)
	defer func() { endSpan(span, err) }()
	if err := validateKey(req.AppName, req.UserID, req.SessionID); err != nil {
		return nil, err
	}
	ref := s.sessionDoc(req.AppName, req.UserID, req.SessionID)
	refs := []*firestore.DocumentRef{ref}
	if shared {
		refs = append(refs, s.appDoc(req.AppName), s.userDoc(req.AppName, req.UserID))
	}
	snaps, err := s.client.GetAll(ctx, refs)
	if err != nil {
		return nil, fmt.Errorf("get session %q: %w", req.SessionID, translate(err))
	}
	if !snaps[0].Exists() {
		return nil, fmt.Errorf("%w: %q", ErrNotFound, req.SessionID)
	}
	var doc sessionDoc
	if err := snaps[0].DataTo(&doc); err != nil {
		return nil, fmt.Errorf("decode session %q: %w", req.SessionID, err)
	}
	lease := leaseFor(ctx, req.AppName, req.UserID, req.SessionID)
	if lease != nil {
		if err := lease.checkHeld(&doc, snaps[0].UpdateTime); err != nil {
			return nil, err
		}
	}
	appState, userState := map[string]any{}, map[string]any{}
	if shared {
		if appState, err = decodeStateSnapshot(snaps[1]); err != nil {
			return nil, err
		}
		if userState, err = decodeStateSnapshot(snaps[2]); err != nil {
			return nil, err
		}
	}
	sessState, err := decodeState(doc.State)
	if err != nil {
		return nil, err
	}
	events, err := s.readEvents(ctx, ref, &doc, req.NumRecentEvents, req.After)
	if err != nil {
		return nil, err
	}
	return &session.GetResponse{Session: &storedSession{
		app: req.AppName, user: req.UserID, id: req.SessionID,
		state:     mergeState(appState, userState, sessState),
		events:    events,
		updated:   doc.Updated,
		revision:  doc.Revision,
		version:   snaps[0].UpdateTime,
		chunks:    doc.Chunks,
		tail:      doc.Tail,
		stateSize: len(doc.State),
		tailKnown: true,
		lease:     lease,
	}}, nil
}

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
			return nil, fmt.Errorf("read events of %q: %w", doc.ID, translate(err))
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

// List returns the sessions of a user, or of every user of the app when
// req.UserID is empty, with merged state and no events.
func (s *Service) List(ctx context.Context, req *session.ListRequest) (*session.ListResponse, error) {
	if err := validateID("app name", req.AppName); err != nil {
		return nil, err
	}
	var q firestore.Query
	if req.UserID == "" {
		q = s.client.CollectionGroup("sessions").Where("scope", "==", s.scope(req.AppName))
	} else {
		if err := validateID("user id", req.UserID); err != nil {
			return nil, err
		}
		q = s.userDoc(req.AppName, req.UserID).Collection("sessions").Query
	}
	// The tail can be most of a megabyte; a listing does not need it.
	q = q.Select("app", "user", "id", "scope", "state", "created", "updated", "revision", "chunks")
	snaps, err := q.Documents(ctx).GetAll()
	if err != nil {
		return nil, fmt.Errorf("list sessions: %w", translate(err))
	}
	docs := make([]sessionDoc, len(snaps))
	refs := []*firestore.DocumentRef{s.appDoc(req.AppName)}
	users := map[string]int{}
	for i, snap := range snaps {
		if err := snap.DataTo(&docs[i]); err != nil {
			return nil, fmt.Errorf("decode %s: %w", snap.Ref.Path, err)
		}
		if _, ok := users[docs[i].User]; !ok {
			users[docs[i].User] = len(refs)
			refs = append(refs, s.userDoc(req.AppName, docs[i].User))
		}
	}
	stateSnaps, err := s.client.GetAll(ctx, refs)
	if err != nil {
		return nil, fmt.Errorf("list sessions: read state: %w", translate(err))
	}
	states := make([]map[string]any, len(stateSnaps))
	for i, snap := range stateSnaps {
		if states[i], err = decodeStateSnapshot(snap); err != nil {
			return nil, err
		}
	}
	out := make([]session.Session, 0, len(docs))
	for i, d := range docs {
		sessState, err := decodeState(d.State)
		if err != nil {
			return nil, err
		}
		out = append(out, &storedSession{
			app: d.App, user: d.User, id: d.ID,
			state:     mergeState(states[0], states[users[d.User]], sessState),
			events:    []*session.Event{},
			updated:   d.Updated,
			revision:  d.Revision,
			version:   snaps[i].UpdateTime,
			chunks:    d.Chunks,
			stateSize: len(d.State),
		})
	}
	return &session.ListResponse{Sessions: out}, nil
}

// Delete removes a session and all its event chunks in one atomic write.
// Deleting a missing session is not an error.
func (s *Service) Delete(ctx context.Context, req *session.DeleteRequest) error {
	if err := validateKey(req.AppName, req.UserID, req.SessionID); err != nil {
		return err
	}
	ref := s.sessionDoc(req.AppName, req.UserID, req.SessionID)
	// An append between the read and the delete changes the chunk list;
	// the precondition catches it and the delete starts over.
	err := s.readModifyWrite(ctx, ref, func(doc *sessionDoc, batch *firestore.WriteBatch, pre firestore.Precondition) error {
		for _, c := range doc.Chunks {
			batch.Delete(chunkDocRef(ref, c.N))
		}
		batch.Delete(ref, pre)
		return nil
	}, nil)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("delete session %q: %w", req.SessionID, err)
	}
	return nil
}

// errNoWrite, returned by a readModifyWrite change, ends it without writing.
var errNoWrite = errors.New("nothing to write")

// readModifyWrite reads a session document and lets change add writes to a
// batch, the session document's own guarded by pre (its update time as
// read); it commits them (committed, if set, sees the results), and starts over when the document changed in
// between, a few times before giving up with ErrConflict. A missing session
// wraps ErrNotFound; an error from change is returned as is.
func (s *Service) readModifyWrite(ctx context.Context, ref *firestore.DocumentRef, change func(doc *sessionDoc, batch *firestore.WriteBatch, pre firestore.Precondition) error, committed func([]*firestore.WriteResult)) error {
	for attempt := 0; attempt < 5; attempt++ {
		snap, err := ref.Get(ctx)
		if status.Code(err) == codes.NotFound {
			return fmt.Errorf("%w: %q", ErrNotFound, ref.ID)
		}
		if err != nil {
			return translate(err)
		}
		var doc sessionDoc
		if err := snap.DataTo(&doc); err != nil {
			return fmt.Errorf("decode session %q: %w", ref.ID, err)
		}
		batch := s.client.Batch()
		if err := change(&doc, batch, firestore.LastUpdateTime(snap.UpdateTime)); errors.Is(err, errNoWrite) {
			return nil
		} else if err != nil {
			return err
		}
		results, err := batch.Commit(ctx)
		if err == nil && committed != nil {
			committed(results)
		}
		if status.Code(err) != codes.FailedPrecondition {
			return translate(err)
		}
	}
	return fmt.Errorf("%w: session %q kept changing", ErrConflict, ref.ID)
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
	if l := ss.lease; l != nil {
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
	batch.Update(ref, updates, firestore.LastUpdateTime(version))
	if err := s.addStateMerges(batch, ss.app, ss.user, appDelta, userDelta); err != nil {
		return err
	}
	for _, d := range docs {
		batch.Create(d.Ref, d.Data)
	}
	results, err := batch.Commit(ctx)
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
	switch status.Code(err) {
	case codes.FailedPrecondition, codes.NotFound, codes.AlreadyExists:
		if _, getErr := ref.Get(ctx); status.Code(getErr) == codes.NotFound {
			return fmt.Errorf("%w: %q", ErrNotFound, id)
		}
		if lease != nil && status.Code(err) == codes.FailedPrecondition {
			lease.markLost()
			return fmt.Errorf("session %q: %w", id, ErrLeaseLost)
		}
		return fmt.Errorf("%w: session %q: %w", ErrConflict, id, err)
	}
	return fmt.Errorf("append event to %q: %w", id, translate(err))
}

// sessionScoped returns the session-scoped keys of a merged state.
func sessionScoped(state map[string]any) map[string]any {
	out := make(map[string]any, len(state))
	for k, v := range state {
		if strings.HasPrefix(k, session.KeyPrefixApp) || strings.HasPrefix(k, session.KeyPrefixUser) || isTemp(k) {
			continue
		}
		out[k] = v
	}
	return out
}

// translate maps the gRPC codes callers act on to this package's sentinels.
func translate(err error) error {
	switch status.Code(err) {
	case codes.Unavailable, codes.DeadlineExceeded, codes.ResourceExhausted:
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	case codes.InvalidArgument:
		if strings.Contains(status.Convert(err).Message(), "exceeds the maximum allowed size") {
			return fmt.Errorf("%w: %w", ErrTooLarge, err)
		}
	}
	return err
}
