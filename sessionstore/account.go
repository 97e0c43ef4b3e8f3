package sessionstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"cloud.google.com/go/firestore"
)

// Accounts: which users have data. Everything Baton keeps for a user lives
// under the user's document, but Firestore lists no document that only
// has subcollections, so the commit that creates a user's chat (a new
// chat's first turn, ClaimNewSession) also merges the user's account
// document
//
//	{root}/{app}/accounts/{user}
//
// (one write in a commit made anyway). The sweeper walks these documents
// to ask the identity provider which users still exist (AccountsAfter and
// the cursor of AccountCursor), and an account's deletion marks its
// document first (MarkAccountDeleting: a deletion that dies is found by
// AccountsDeleting and finished) and deletes it last (DeleteUserData).

const (
	accountsCollection = "accounts"
	sweepsCollection   = "sweeps"
	fieldDeleting      = "deleting"
)

// accountDoc is the stored form of an account.
type accountDoc struct {
	User     string     `firestore:"user"`
	Active   time.Time  `firestore:"active"` // when a chat of the user was last created
	Deleting *time.Time `firestore:"deleting,omitempty"`
}

// Account is what Baton knows of a user's account as a whole.
type Account struct {
	User string
	// Exists: the user has data (an account document).
	Exists bool
	// Deleting, when set, is when the deletion of all of the user's data
	// began; it goes on until the account document is gone.
	Deleting *time.Time
}

func (s *Service) accountRef(app, user string) *firestore.DocumentRef {
	return s.appRef(app).Collection(accountsCollection).Doc(user)
}

// accountMerge is the write of a new chat's commit that notes its user
// has data.
func (s *Service) accountMerge(batch *firestore.WriteBatch, app, user string, now time.Time) {
	batch.Set(s.accountRef(app, user), map[string]any{"user": user, "active": now}, firestore.MergeAll)
}

// GetAccount reads user's account document.
func (s *Service) GetAccount(ctx context.Context, app, user string) (*Account, error) {
	if err := validateKey(app, user, "account"); err != nil {
		return nil, err
	}
	snap, err := s.accountRef(app, user).Get(ctx)
	switch err = FirestoreError(err); {
	case errors.Is(err, ErrNotFound):
		return &Account{User: user}, nil
	case err != nil:
		return nil, fmt.Errorf("read account: %w", err)
	}
	var d accountDoc
	if err := snap.DataTo(&d); err != nil {
		return nil, fmt.Errorf("decode account: %w", err)
	}
	return &Account{User: user, Exists: true, Deleting: d.Deleting}, nil
}

// MarkAccountDeleting notes, first, that the deletion of all of user's data
// began at now (unless an earlier one did), so that one that dies is
// found (AccountsDeleting) and finished.
func (s *Service) MarkAccountDeleting(ctx context.Context, app, user string, now time.Time) (*Account, error) {
	a, err := s.GetAccount(ctx, app, user)
	if err != nil || a.Deleting != nil {
		return a, err
	}
	if _, err := s.accountRef(app, user).Set(ctx, map[string]any{"user": user, fieldDeleting: now}, firestore.MergeAll); err != nil {
		return nil, fmt.Errorf("mark account deleting: %w", FirestoreError(err))
	}
	a.Exists, a.Deleting = true, &now
	return a, nil
}

// AccountsDeleting returns up to limit users whose deletion began before
// now and is not done, the oldest first.
func (s *Service) AccountsDeleting(ctx context.Context, app string, now time.Time, limit int) ([]string, error) {
	if err := validateID("app name", app); err != nil {
		return nil, err
	}
	snaps, err := s.appRef(app).Collection(accountsCollection).Where(fieldDeleting, "<=", now).
		OrderBy(fieldDeleting, firestore.Asc).Limit(limit).Documents(ctx).GetAll()
	if err != nil {
		return nil, fmt.Errorf("query accounts being deleted: %w", FirestoreError(err))
	}
	return idsOf(snaps), nil
}

// AccountsAfter returns up to limit users that have data, in the order of
// their ids, after the id after ("": from the first).
func (s *Service) AccountsAfter(ctx context.Context, app, after string, limit int) ([]string, error) {
	if err := validateID("app name", app); err != nil {
		return nil, err
	}
	col := s.appRef(app).Collection(accountsCollection)
	q := col.OrderBy(firestore.DocumentID, firestore.Asc).Select().Limit(limit)
	if after != "" {
		q = q.StartAfter(col.Doc(after))
	}
	snaps, err := q.Documents(ctx).GetAll()
	if err != nil {
		return nil, fmt.Errorf("list accounts: %w", FirestoreError(err))
	}
	return idsOf(snaps), nil
}

func idsOf(snaps []*firestore.DocumentSnapshot) []string {
	out := make([]string, len(snaps))
	for i, snap := range snaps {
		out[i] = snap.Ref.ID
	}
	return out
}

// AccountCursor is where the sweeper's walk over the accounts stands: the
// last user it checked ("" at the start of a pass) and when the current
// pass began.
type AccountCursor struct {
	After       string    `firestore:"after"`
	PassStarted time.Time `firestore:"passStarted"`
}

func (s *Service) cursorRef(app string) *firestore.DocumentRef {
	return s.appRef(app).Collection(sweepsCollection).Doc(accountsCollection)
}

// GetAccountCursor reads the sweeper's cursor over app's accounts (the
// zero cursor before the first pass).
func (s *Service) GetAccountCursor(ctx context.Context, app string) (AccountCursor, error) {
	var c AccountCursor
	if err := validateID("app name", app); err != nil {
		return c, err
	}
	snap, err := s.cursorRef(app).Get(ctx)
	switch err = FirestoreError(err); {
	case errors.Is(err, ErrNotFound):
		return c, nil
	case err != nil:
		return c, fmt.Errorf("read the accounts cursor: %w", err)
	}
	return c, snap.DataTo(&c)
}

// SetAccountCursor stores the sweeper's cursor over app's accounts.
func (s *Service) SetAccountCursor(ctx context.Context, app string, c AccountCursor) error {
	if _, err := s.cursorRef(app).Set(ctx, c); err != nil {
		return fmt.Errorf("store the accounts cursor: %w", FirestoreError(err))
	}
	return nil
}

// DeleteUserData deletes everything stored under user's document (what is
// left once each chat's deletion is done: the chats' tombstones, the
// turn limits' counts, any session no chat points at), the user's
// document (its user: state), and last the account document. It returns
// how many documents it deleted.
func (s *Service) DeleteUserData(ctx context.Context, app, user string) (int, error) {
	if err := validateKey(app, user, "account"); err != nil {
		return 0, err
	}
	ref := s.userRef(app, user)
	n, err := s.deleteTree(ctx, ref)
	if err != nil {
		return n, err
	}
	for _, doc := range []*firestore.DocumentRef{ref, s.accountRef(app, user)} {
		if _, err := doc.Delete(ctx); err != nil {
			return n, fmt.Errorf("delete %s: %w", doc.Path, FirestoreError(err))
		}
		n++
	}
	return n, nil
}
