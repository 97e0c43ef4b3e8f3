package sessionstore

import (
	"context"
	"fmt"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/adk/v2/platform"
	"google.golang.org/adk/v2/session"
)

// A request that runs an agent reads what it needs once and takes the
// session's lease with its first write: the read and the lease are then
// one round trip each, and the handle read is the one the runner uses.
// The lease-taking append is conditional on the session document's update
// time as read, so its success proves that nothing changed in between and
// that the handle's history is current; its failure writes nothing and
// reads as busy.

// pendingLease is a lease that a handle's next append takes.
type pendingLease struct {
	lease *Lease
	doc   leaseDoc
	ttl   time.Duration
	// create, for a session not stored yet, is what the append creates.
	create *pendingCreate
	// updates are made in the same commit.
	updates []SideUpdate
}

// SideUpdate is an update of a document beside a session that the
// lease-taking append makes in its commit (see TakeLeaseOnAppend).
type SideUpdate struct {
	Ref     *firestore.DocumentRef
	Updates []firestore.Update
	Pre     firestore.Precondition
}

// pendingCreate is a session (and its chat) that the first append stores.
type pendingCreate struct {
	state   []byte
	created time.Time
	chat    *Chat
}

// GetChatSession reads a chat and the session sid in one round trip, and
// the session's sealed chunks in a second when it has any. shared adds the
// app and user state documents to the first round trip (as Get; without
// it, as GetSessionScoped). The chat wraps ErrNotFound when it does not
// exist; the session is nil when it does not exist or is not the chat's
// active one (sid was a guess).
//
// The documents also name are read in the same round trip; their
// snapshots are returned in that order.
func (s *Service) GetChatSession(ctx context.Context, app, user, chatID, sid string, shared bool, also ...*firestore.DocumentRef) (_ *Chat, _ session.Session, _ []*firestore.DocumentSnapshot, err error) {
	ctx, span := startSpan(ctx, "baton.session.get", sid)
	defer func() { endSpan(span, err) }()
	refs := []*firestore.DocumentRef{s.chatRef(app, user, chatID), s.sessionDoc(app, user, sid)}
	if shared {
		refs = append(refs, s.appDoc(app), s.userDoc(app, user))
	}
	n := len(refs)
	snaps, err := s.client.GetAll(ctx, append(refs, also...))
	if err != nil {
		return nil, nil, nil, fmt.Errorf("read chat %q: %w", chatID, FirestoreError(err))
	}
	if !snaps[0].Exists() {
		return nil, nil, nil, fmt.Errorf("%w: chat %q", ErrNotFound, chatID)
	}
	chat, err := chatFrom(snaps[0])
	if err != nil {
		return nil, nil, nil, err
	}
	if chat.SessionID != sid || !snaps[1].Exists() {
		return chat, nil, snaps[n:], nil
	}
	sess, err := s.sessionFrom(ctx, &session.GetRequest{AppName: app, UserID: user, SessionID: sid}, snaps[1:n], nil)
	if err != nil {
		return nil, nil, nil, err
	}
	return chat, sess, snaps[n:], nil
}

// TakeLeaseOnAppend makes the next append through sess (read with Get or
// GetChatSession, not under a lease) take the session's lease for holder,
// in the same commit, and fence every later append. It fails with a
// *BusyError when the session, as read, had a live lease. The append fails
// with a *BusyError, writing nothing, when the session changed since it was
// read. Until that append, the lease is not held and not renewed. The
// append also makes updates, in the same commit; a precondition of one
// that fails makes it fail the same way.
func (s *Service) TakeLeaseOnAppend(ctx context.Context, sess session.Session, holder string, ttl time.Duration, updates ...SideUpdate) (*Lease, error) {
	ss, ok := sess.(*storedSession)
	if !ok || !ss.tailKnown || ss.lease != nil {
		return nil, fmt.Errorf("take lease on %q: the session must be read with Get and not under a lease", sess.ID())
	}
	ss.appendMu.Lock()
	defer ss.appendMu.Unlock()
	ss.mu.Lock()
	defer ss.mu.Unlock()
	now := platform.Now(ctx)
	if cur := ss.stored; cur.Holder != "" && cur.Expires.After(now) {
		return nil, &BusyError{SessionID: ss.id, RetryAfter: cur.Expires.Sub(now)}
	}
	l := &Lease{
		App: ss.app, User: ss.user, SessionID: ss.id, Holder: holder, Fence: ss.stored.Fence + 1,
		version: ss.version, revision: ss.revision, lost: make(chan struct{}),
	}
	ss.take = &pendingLease{lease: l, doc: leaseDoc{Holder: holder, Fence: l.Fence}, ttl: ttl, updates: updates}
	return l, nil
}

// MayHaveSideDocs reports whether an append through sess's session created
// documents beside it (AppendEventWith) that their owner has not since
// declared closed (ClearSideDocsOnAppend). It errs only toward true.
func MayHaveSideDocs(sess session.Session) bool {
	ss, ok := sess.(*storedSession)
	if !ok {
		return true
	}
	ss.mu.RLock()
	defer ss.mu.RUnlock()
	return ss.sideDocs
}

// ClearSideDocsOnAppend makes the next append through sess, unless it
// creates documents itself, record that none of the documents created
// beside the session is open any more. Call it, under the session's lease,
// only once that is so.
func ClearSideDocsOnAppend(sess session.Session) {
	if ss, ok := sess.(*storedSession); ok {
		ss.mu.Lock()
		ss.clearSideDocs = true
		ss.mu.Unlock()
	}
}

// CreateOnAppend returns a handle on a new session that the first append
// through it stores, holding the lease for holder, together with chat (if
// not nil): one commit makes the chat, the session, its lease and its
// first event, or nothing. That append fails with a *BusyError, writing
// nothing, when the session or the chat exists by then. temp: keys of the
// initial state are dropped, and app: and user: keys are not read; until
// that append, nothing is stored.
func (s *Service) CreateOnAppend(ctx context.Context, req *session.CreateRequest, chat *Chat, holder string, ttl time.Duration) (session.Session, *Lease, error) {
	n, err := newSession(ctx, req)
	if err != nil {
		return nil, nil, err
	}
	if len(n.appDelta) > 0 || len(n.userDelta) > 0 {
		return nil, nil, fmt.Errorf("create session %q on append: app: and user: state need Create", n.id)
	}
	if chat != nil {
		if err := validateKey(chat.App, chat.UserID, chat.ID); err != nil {
			return nil, nil, err
		}
	}
	l := &Lease{App: req.AppName, User: req.UserID, SessionID: n.id, Holder: holder, Fence: 1, lost: make(chan struct{})}
	ss := &storedSession{
		app: req.AppName, user: req.UserID, id: n.id,
		state: n.state, events: []*session.Event{}, stateSize: len(n.stateBytes), tailKnown: true,
		take: &pendingLease{lease: l, doc: leaseDoc{Holder: holder, Fence: 1}, ttl: ttl,
			create: &pendingCreate{state: n.stateBytes, created: platform.Now(ctx), chat: chat}},
	}
	return ss, l, nil
}
