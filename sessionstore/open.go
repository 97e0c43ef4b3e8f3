package sessionstore

import (
	"context"
	"fmt"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/adk/v2/platform"
	"google.golang.org/adk/v2/session"
)

// LeaseClaim is a session's lease that the commit storing an event takes
// (AppendOptions.Claim): made by ClaimLease for a session read with Get, or
// by ClaimNewSession for a session (and chat) not stored yet, which that
// commit creates. Until that commit, the lease is not held.
type LeaseClaim struct {
	lease *Lease
	ttl   time.Duration
	// create, for a session not stored yet, is what the commit creates.
	create *newSessionDoc
	// updates are made in the same commit.
	updates []Write
}

// Lease is the lease the claim takes; it is held once the claiming append
// succeeded.
func (c *LeaseClaim) Lease() *Lease { return c.lease }

// newSessionDoc is a session (and its chat) that a claiming append stores.
type newSessionDoc struct {
	state   []byte
	created time.Time
	chat    *Chat
}

// ChatRead names a chat to read, the session it is believed to point at
// and other documents to read in the same round trip.
type ChatRead struct {
	App, User, ChatID string
	// SessionID is the session the chat is believed to point at (a guess
	// the chat document then checks).
	SessionID string
	// Shared adds the app: and user: state to the session's (see
	// ReadRequest).
	Shared bool
	// Also names documents read in the same round trip, whose owners
	// decode them (ChatState.Also).
	Also []DocName
}

// ChatState is what ReadChat found.
type ChatState struct {
	Chat *Chat // nil: the chat does not exist
	// Session is the chat's active session; nil when it does not exist or
	// is not the one the read guessed.
	Session *Session
	Also    []StoredDoc // ChatRead.Also's, in order
}

// StoredDoc is a document of another owner as a read made on its behalf
// found it (ChatRead.Also, ReadDocs): whether it exists, when it was last
// written (the version an Update of it is conditioned on) and its fields,
// which the owner decodes.
type StoredDoc struct {
	name DocName
	snap *firestore.DocumentSnapshot
}

// Name is the document read.
func (d StoredDoc) Name() DocName { return d.name }

// Exists reports whether the document existed when it was read.
func (d StoredDoc) Exists() bool { return d.snap != nil && d.snap.Exists() }

// UpdateTime is when the document was last written; zero when it did not
// exist.
func (d StoredDoc) UpdateTime() time.Time {
	if !d.Exists() {
		return time.Time{}
	}
	return d.snap.UpdateTime
}

// DataTo decodes the document's fields into v, as the Firestore client's
// DataTo does (firestore struct tags).
func (d StoredDoc) DataTo(v any) error {
	if !d.Exists() {
		return fmt.Errorf("%w: %q", ErrNotFound, d.name.path)
	}
	return d.snap.DataTo(v)
}

// ReadDocs reads documents of other owners (DocName) in one round trip,
// in the order named; a document that does not exist is no error (see
// StoredDoc.Exists).
func (s *Service) ReadDocs(ctx context.Context, names ...DocName) ([]StoredDoc, error) {
	refs := make([]*firestore.DocumentRef, len(names))
	for i, n := range names {
		refs[i] = s.client.Doc(n.path)
	}
	snaps, err := s.client.GetAll(ctx, refs)
	if err != nil {
		return nil, fmt.Errorf("read %d documents: %w", len(names), FirestoreError(err))
	}
	docs := make([]StoredDoc, len(names))
	for i, n := range names {
		docs[i] = StoredDoc{name: n, snap: snaps[i]}
	}
	return docs, nil
}

// ReadChat reads a chat and the session req guesses in one round trip,
// and the session's sealed chunks in a second when it has any, with the
// documents req.Also names. A chat that does not exist is no error: its
// ChatState has no Chat.
func (s *Service) ReadChat(ctx context.Context, req ChatRead) (_ *ChatState, err error) {
	ctx, span := startSpan(ctx, "baton.session.get", req.SessionID)
	defer func() { endSpan(span, err) }()
	refs := []*firestore.DocumentRef{s.chatRef(req.App, req.User, req.ChatID), s.sessionRef(req.App, req.User, req.SessionID)}
	if req.Shared {
		refs = append(refs, s.appRef(req.App), s.userRef(req.App, req.User))
	}
	n := len(refs)
	for _, name := range req.Also {
		refs = append(refs, s.client.Doc(name.path))
	}
	snaps, err := s.client.GetAll(ctx, refs)
	if err != nil {
		return nil, fmt.Errorf("read chat %q: %w", req.ChatID, FirestoreError(err))
	}
	out := &ChatState{Also: make([]StoredDoc, len(req.Also))}
	for i, name := range req.Also {
		out.Also[i] = StoredDoc{name: name, snap: snaps[n+i]}
	}
	if !snaps[0].Exists() {
		return out, nil
	}
	if out.Chat, err = chatFrom(snaps[0]); err != nil {
		return nil, err
	}
	if out.Chat.SessionID != req.SessionID || !snaps[1].Exists() {
		return out, nil
	}
	doc, err := sessionDocOf(snaps[1], req.SessionID)
	if err != nil {
		return nil, err
	}
	out.Session, err = s.sessionFrom(ctx, ReadRequest{App: req.App, User: req.User, SessionID: req.SessionID, Shared: req.Shared}, doc, snaps[1:n])
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ClaimLease returns a claim on the lease of sess (read with Get or
// ReadChat, not under a lease) for holder, which the next append
// through sess with AppendOptions.Claim takes in its commit, fencing every
// later append. It fails with a *BusyError when the session, as read, had
// a live lease; that append fails with a *BusyError, writing nothing, when
// the session changed since it was read. The append also makes updates, in
// the same commit; a precondition of one that fails makes it fail the same
// way.
func (s *Service) ClaimLease(ctx context.Context, ss *Session, holder string, ttl time.Duration, updates ...Write) (*LeaseClaim, error) {
	if !ss.tailKnown || ss.lease != nil {
		return nil, fmt.Errorf("claim lease on %q: the session must be read with Get and not under a lease", ss.id)
	}
	ss.mu.RLock()
	defer ss.mu.RUnlock()
	if ss.broken != nil || len(ss.staged) > 0 {
		return nil, fmt.Errorf("claim lease on %q: the handle has events not stored", ss.id)
	}
	now := platform.Now(ctx)
	if cur := ss.stored; cur.Holder != "" && cur.Expires.After(now) {
		return nil, &BusyError{SessionID: ss.id, RetryAfter: cur.Expires.Sub(now), Holder: cur.Holder}
	}
	l := &Lease{
		App: ss.app, User: ss.user, SessionID: ss.id, Holder: holder, Fence: ss.stored.Fence + 1,
		version: ss.version, revision: ss.revision, lost: make(chan struct{}),
	}
	return &LeaseClaim{lease: l, ttl: ttl, updates: updates}, nil
}

// MayHaveOpenDocs reports whether an append to the session created
// documents beside it (AppendOptions.Create) that their owner has not since
// declared closed (AppendOptions.DocsClosed). It errs only toward true.
func (ss *Session) MayHaveOpenDocs() bool {
	ss.mu.RLock()
	defer ss.mu.RUnlock()
	return ss.docsOpen
}

// ClaimNewSession returns a handle on a new session, not stored yet, and a
// claim on its lease for holder: the first append through the handle with
// that claim stores, in one commit, chat (if not nil), the session, its
// lease and its first event, or nothing. That append fails with a
// *BusyError, writing nothing, when the session or the chat exists by
// then. temp: keys of the initial state are dropped, and app: and user:
// keys are not read.
func (s *Service) ClaimNewSession(ctx context.Context, req *session.CreateRequest, chat *Chat, holder string, ttl time.Duration) (*Session, *LeaseClaim, error) {
	n, err := newSession(ctx, req)
	if err != nil {
		return nil, nil, err
	}
	if len(n.appDelta) > 0 || len(n.userDelta) > 0 {
		return nil, nil, fmt.Errorf("claim new session %q: app: and user: state need Create", n.id)
	}
	if chat != nil {
		if err := validateKey(chat.App, chat.UserID, chat.ID); err != nil {
			return nil, nil, err
		}
	}
	l := &Lease{App: req.AppName, User: req.UserID, SessionID: n.id, Holder: holder, Fence: 1, lost: make(chan struct{})}
	ss := &Session{
		app: req.AppName, user: req.UserID, id: n.id,
		state: n.state, events: []*session.Event{}, stateSize: len(n.stateBytes), tailKnown: true, complete: true,
	}
	claim := &LeaseClaim{lease: l, ttl: ttl, create: &newSessionDoc{state: n.stateBytes, created: platform.Now(ctx), chat: chat}}
	return ss, claim, nil
}
