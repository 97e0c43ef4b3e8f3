package sessionstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"strings"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/adk/v2/platform"
	"google.golang.org/adk/v2/session"
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
	// ErrSharedStateChanged is returned by SharedStateCurrent when the
	// app: or user: state a handle holds is no longer what is stored.
	ErrSharedStateChanged = fmt.Errorf("%w: app or user state", ErrConflict)
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

func (s *Service) appRef(app string) *firestore.DocumentRef {
	return s.client.Collection(s.root).Doc(app)
}

func (s *Service) userRef(app, user string) *firestore.DocumentRef {
	return s.appRef(app).Collection("users").Doc(user)
}

func (s *Service) sessionRef(app, user, id string) *firestore.DocumentRef {
	return s.userRef(app, user).Collection("sessions").Doc(id)
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
	ref := s.sessionRef(req.AppName, req.UserID, id)
	batch := s.client.Batch()
	batch.Create(ref, sessionDoc{
		App: req.AppName, User: req.UserID, ID: id, Scope: s.scope(req.AppName),
		State: stateBytes, Created: now, Updated: now, Chunks: []chunkMeta{}, Tail: []chunkElement{}, DocsClosed: true,
	})
	if err := s.addStateMerges(batch, req.AppName, req.UserID, appDelta, userDelta); err != nil {
		return nil, err
	}
	results, err := batch.Commit(ctx)
	switch err = FirestoreError(err); {
	case errors.Is(err, ErrAlreadyExists):
		return nil, fmt.Errorf("%w: %q", ErrAlreadyExists, id)
	case err != nil:
		return nil, fmt.Errorf("create session %q: %w", id, err)
	}
	app, user, err := s.readScopedState(ctx, req.AppName, req.UserID)
	if err != nil {
		return nil, err
	}
	return &session.CreateResponse{Session: &Session{
		app: req.AppName, user: req.UserID, id: id,
		state:     mergeState(app, user, sessState),
		events:    []*session.Event{},
		updated:   now,
		version:   results[0].UpdateTime,
		stateSize: len(stateBytes),
		tailKnown: true, complete: true,
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
	}{{s.appRef(app), appDelta}, {s.userRef(app, user), userDelta}} {
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
	snaps, err := s.client.GetAll(ctx, []*firestore.DocumentRef{s.appRef(app), s.userRef(app, user)})
	if err != nil {
		return nil, nil, fmt.Errorf("read app and user state: %w", FirestoreError(err))
	}
	if appState, err = decodeStateSnapshot(snaps[0]); err != nil {
		return nil, nil, err
	}
	if userState, err = decodeStateSnapshot(snaps[1]); err != nil {
		return nil, nil, err
	}
	return appState, userState, nil
}

// SharedStateCurrent reads the app and user state documents (one round
// trip, two lookups) and returns nil when sess's app: and user: keys, as
// they are when it is called, are what they hold: a handle kept since an
// earlier request may hold shared state another session has changed since
// (ErrSharedStateChanged).
func (s *Service) SharedStateCurrent(ctx context.Context, sess *Session) error {
	held, err := decodedShared(sess) // before the read: a run may change sess meanwhile
	if err != nil {
		return err
	}
	app, user, err := s.readScopedState(ctx, sess.app, sess.user)
	if err != nil {
		return err
	}
	if !reflect.DeepEqual(held, mergeState(app, user, nil)) {
		return fmt.Errorf("%w: session %q", ErrSharedStateChanged, sess.id)
	}
	return nil
}

// decodedShared returns sess's app: and user: keys as they read back from
// the store (JSON numbers as float64), to compare with a read.
func decodedShared(sess *Session) (map[string]any, error) {
	sess.mu.RLock()
	app, user, _ := splitState(sess.state)
	sess.mu.RUnlock()
	out := mergeState(app, user, nil)
	for k, v := range out {
		b, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("encode state key %q: %w", k, err)
		}
		var back any
		if err := json.Unmarshal(b, &back); err != nil {
			return nil, fmt.Errorf("decode state key %q: %w", k, err)
		}
		out[k] = back
	}
	return out, nil
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
	sess, err := s.Read(ctx, ReadRequest{App: req.AppName, User: req.UserID, SessionID: req.SessionID,
		Recent: req.NumRecentEvents, After: req.After, Shared: true})
	if err != nil {
		return nil, err
	}
	return &session.GetResponse{Session: sess}, nil
}

// ReadRequest names a session to read and what to read with it.
type ReadRequest struct {
	App, User, SessionID string
	// Recent, when above 0, reads only the latest events, as many; After
	// only the events after that time (see session.GetRequest).
	Recent int
	After  time.Time
	// Shared adds the app: and user: state to the handle's (as Get);
	// without it the handle holds the session's own keys only, and the app
	// and user state documents are not looked up (two lookups fewer, which
	// Firestore bills as reads even when the documents do not exist): for
	// callers that read a session's events or its own state, or append to
	// it, without running an agent on it. An append through such a handle
	// stores app: and user: changes as usual, since those are merged key
	// by key without reading.
	Shared bool
	// Lease, when set, is a lease on the session the caller holds: the read
	// fails once it is lost, and the handle's appends are fenced by it.
	Lease *Lease
}

// Read reads a session as req asks, in one round trip for its documents
// and a second for its sealed chunks when the events asked for need them.
func (s *Service) Read(ctx context.Context, req ReadRequest) (_ *Session, err error) {
	ctx, span := startSpan(ctx, "baton.session.get", req.SessionID)
	defer func() { endSpan(span, err) }()
	if err := validateKey(req.App, req.User, req.SessionID); err != nil {
		return nil, err
	}
	if l := req.Lease; l != nil && (l.App != req.App || l.User != req.User || l.SessionID != req.SessionID) {
		return nil, fmt.Errorf("read session %q under the lease of session %q", req.SessionID, l.SessionID)
	}
	refs := []*firestore.DocumentRef{s.sessionRef(req.App, req.User, req.SessionID)}
	if req.Shared {
		refs = append(refs, s.appRef(req.App), s.userRef(req.App, req.User))
	}
	snaps, err := s.client.GetAll(ctx, refs)
	if err != nil {
		return nil, fmt.Errorf("get session %q: %w", req.SessionID, FirestoreError(err))
	}
	doc, err := sessionDocOf(snaps[0], req.SessionID)
	if err != nil {
		return nil, err
	}
	if req.Lease != nil {
		// A read under a lease fails once the lease has moved on.
		if err := req.Lease.checkHeld(doc, snaps[0].UpdateTime); err != nil {
			return nil, err
		}
	}
	return s.sessionFrom(ctx, req, doc, snaps)
}

// sessionDocOf decodes the session document id, as snap read it.
func sessionDocOf(snap *firestore.DocumentSnapshot, id string) (*sessionDoc, error) {
	if !snap.Exists() {
		return nil, fmt.Errorf("%w: %q", ErrNotFound, id)
	}
	var doc sessionDoc
	if err := snap.DataTo(&doc); err != nil {
		return nil, fmt.Errorf("decode session %q: %w", id, err)
	}
	return &doc, nil
}

// sessionFrom builds a handle from the session document (doc, decoded
// from snaps[0]) and, when snaps holds three, the app and user state
// documents', reading the sealed chunks req needs; the handle holds
// req.Lease, whose fence the caller checked.
func (s *Service) sessionFrom(ctx context.Context, req ReadRequest, doc *sessionDoc, snaps []*firestore.DocumentSnapshot) (*Session, error) {
	lease := req.Lease
	appState, userState := map[string]any{}, map[string]any{}
	var err error
	if len(snaps) == 3 {
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
	events, rewound, err := s.readEvents(ctx, snaps[0].Ref, doc, req.Recent, req.After)
	if err != nil {
		return nil, err
	}
	return &Session{
		app: req.App, user: req.User, id: req.SessionID,
		state:     mergeState(appState, userState, sessState),
		events:    events,
		rewound:   rewound,
		complete:  req.Recent <= 0 && req.After.IsZero(),
		updated:   doc.Updated,
		revision:  doc.Revision,
		version:   snaps[0].UpdateTime,
		chunks:    doc.Chunks,
		tail:      doc.Tail,
		stateSize: len(doc.State),
		tailKnown: true,
		lease:     lease,
		stored:    doc.Lease,
		docsOpen:  !doc.DocsClosed,
		turnLog:   doc.TurnLog,
		tokens:    tokenCount{day: doc.TokensDay, n: doc.TokensUsed},
		liveUntil: doc.LiveUntil,
	}, nil
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
		q = s.userRef(req.AppName, req.UserID).Collection("sessions").Query
	}
	// The tail can be most of a megabyte; a listing does not need it.
	q = q.Select("app", "user", "id", "scope", "state", "created", "updated", "revision", "chunks")
	snaps, err := q.Documents(ctx).GetAll()
	if err != nil {
		return nil, fmt.Errorf("list sessions: %w", FirestoreError(err))
	}
	docs := make([]sessionDoc, len(snaps))
	refs := []*firestore.DocumentRef{s.appRef(req.AppName)}
	users := map[string]int{}
	for i, snap := range snaps {
		if err := snap.DataTo(&docs[i]); err != nil {
			return nil, fmt.Errorf("decode %s: %w", snap.Ref.Path, err)
		}
		if _, ok := users[docs[i].User]; !ok {
			users[docs[i].User] = len(refs)
			refs = append(refs, s.userRef(req.AppName, docs[i].User))
		}
	}
	stateSnaps, err := s.client.GetAll(ctx, refs)
	if err != nil {
		return nil, fmt.Errorf("list sessions: read state: %w", FirestoreError(err))
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
		out = append(out, &Session{
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
	ref := s.sessionRef(req.AppName, req.UserID, req.SessionID)
	// An append between the read and the delete changes the chunk list;
	// the precondition catches it and the delete starts over.
	err := s.readModifyWrite(ctx, ref, func(doc *sessionDoc, batch *firestore.WriteBatch, pre firestore.Precondition) error {
		for _, c := range doc.Chunks {
			batch.Delete(chunkDocRef(ref, c.N))
		}
		batch.Delete(ref, pre)
		s.carryTokens(ctx, batch, req.AppName, req.UserID, doc)
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
		switch err = FirestoreError(err); {
		case errors.Is(err, ErrNotFound):
			return fmt.Errorf("%w: %q", ErrNotFound, ref.ID)
		case err != nil:
			return err
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
		if err = FirestoreError(err); !errors.Is(err, ErrConflict) {
			return err
		}
	}
	return fmt.Errorf("%w: session %q kept changing", ErrConflict, ref.ID)
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
