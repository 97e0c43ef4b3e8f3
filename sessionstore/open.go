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
}

// GetChatSession reads a chat and the session sid in one round trip, and
// the session's sealed chunks in a second when it has any. shared adds the
// app and user state documents to the first round trip (as Get; without
// it, as GetSessionScoped). The chat wraps ErrNotFound when it does not
// exist; the session is nil when it does not exist or is not the chat's
// active one (sid was a guess).
func (s *Service) GetChatSession(ctx context.Context, app, user, chatID, sid string, shared bool) (_ *Chat, _ session.Session, err error) {
	ctx, span := startSpan(ctx, "baton.session.get", sid)
	defer func() { endSpan(span, err) }()
	refs := []*firestore.DocumentRef{s.chatRef(app, user, chatID), s.sessionDoc(app, user, sid)}
	if shared {
		refs = append(refs, s.appDoc(app), s.userDoc(app, user))
	}
	snaps, err := s.client.GetAll(ctx, refs)
	if err != nil {
		return nil, nil, fmt.Errorf("read chat %q: %w", chatID, Translate(err))
	}
	if !snaps[0].Exists() {
		return nil, nil, fmt.Errorf("%w: chat %q", ErrNotFound, chatID)
	}
	chat, err := chatFrom(snaps[0])
	if err != nil {
		return nil, nil, err
	}
	if chat.SessionID != sid || !snaps[1].Exists() {
		return chat, nil, nil
	}
	sess, err := s.sessionFrom(ctx, &session.GetRequest{AppName: app, UserID: user, SessionID: sid}, snaps[1:], nil)
	if err != nil {
		return nil, nil, err
	}
	return chat, sess, nil
}

// TakeLeaseOnAppend makes the next append through sess (read with Get or
// GetChatSession, not under a lease) take the session's lease for holder,
// in the same commit, and fence every later append. It fails with a
// *BusyError when the session, as read, had a live lease. The append fails
// with a *BusyError, writing nothing, when the session changed since it was
// read. Until that append, the lease is not held and not renewed.
func (s *Service) TakeLeaseOnAppend(ctx context.Context, sess session.Session, holder string, ttl time.Duration) (*Lease, error) {
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
	ss.take = &pendingLease{lease: l, doc: leaseDoc{Holder: holder, Fence: l.Fence}, ttl: ttl}
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
