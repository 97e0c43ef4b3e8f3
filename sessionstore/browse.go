package sessionstore

import (
	"context"
	"fmt"
	"time"

	"cloud.google.com/go/firestore"
)

// The queries of this file look at sessions and chats across an app, for
// the operator's console: one query per page, on the indexes listed in
// Indexes and FieldIndexes. They read no event and change nothing.

// LeaseState selects sessions by their lease.
type LeaseState int

const (
	// LeaseRunning: a lease whose term has not run out (an invocation or
	// a live segment holds the session).
	LeaseRunning LeaseState = iota
	// LeaseLive: a live segment holds the session (liveUntil ahead).
	LeaseLive
	// LeaseStuck: a lease past its term by SessionFilter.Before and never
	// released: its holder died, and nothing has taken the session since.
	LeaseStuck
)

// SessionFilter asks for a page of an app's sessions by lease.
type SessionFilter struct {
	App   string
	State LeaseState
	// Now is the time LeaseRunning and LeaseLive compare with; Before
	// bounds LeaseStuck's term.
	Now, Before time.Time
	// User, when set, keeps one user's sessions (a query of that user's
	// sessions, on automatic indexes).
	User   string
	Cursor string
	Limit  int // 1 to 200
}

// SessionRow is a session as the console lists it: no state, no event.
type SessionRow struct {
	App, User, ID string
	Holder        string // the lease's holder as stored ("" once released)
	Fence         int64
	Expires       time.Time // the lease's term
	LiveUntil     time.Time // zero unless a live segment holds it
	Created       time.Time
	Updated       time.Time // ADK's last update: the last event's time
}

// sessionRowDoc is what SessionsByLease reads of a session document.
type sessionRowDoc struct {
	App       string    `firestore:"app"`
	User      string    `firestore:"user"`
	ID        string    `firestore:"id"`
	Lease     leaseDoc  `firestore:"lease"`
	LiveUntil time.Time `firestore:"liveUntil"`
	Created   time.Time `firestore:"created"`
	Updated   time.Time `firestore:"updated"`
}

// leaseExpiresField is the lease's term in a session document.
const leaseExpiresField = "lease.expires"

// SessionsByLease returns a page of f.App's sessions in state f.State,
// soonest term first, and the cursor of the next page ("" at the end).
func (s *Service) SessionsByLease(ctx context.Context, f SessionFilter) ([]SessionRow, string, error) {
	if err := validateID("app name", f.App); err != nil {
		return nil, "", err
	}
	if f.Limit < 1 || f.Limit > 200 {
		return nil, "", fmt.Errorf("page of %d sessions: want 1 to 200", f.Limit)
	}
	var q firestore.Query
	if f.User != "" {
		if err := validateID("user id", f.User); err != nil {
			return nil, "", err
		}
		q = s.userRef(f.App, f.User).Collection("sessions").Query
	} else {
		q = s.client.CollectionGroup("sessions").Where("scope", "==", s.scope(f.App))
	}
	field := leaseExpiresField
	switch f.State {
	case LeaseRunning:
		q = q.Where(field, ">", f.Now)
	case LeaseLive:
		field = liveUntilField
		q = q.Where(field, ">", f.Now)
	case LeaseStuck:
		// A released lease's term is the zero time; a stuck one's is a
		// real time that passed.
		q = q.Where(field, ">", time.Time{}).Where(field, "<=", f.Before)
	default:
		return nil, "", fmt.Errorf("lease state %d", f.State)
	}
	q = q.OrderBy(field, firestore.Asc).OrderBy(firestore.DocumentID, firestore.Asc).
		Select("app", "user", "id", "lease", liveUntilField, "created", "updated")
	q, err := StartAfter(s.client, q, f.Cursor, s.scope(f.App)+"/")
	if err != nil {
		return nil, "", err
	}
	snaps, err := q.Limit(f.Limit).Documents(ctx).GetAll()
	if err != nil {
		return nil, "", fmt.Errorf("query sessions by lease: %w", FirestoreError(err))
	}
	rows := make([]SessionRow, 0, len(snaps))
	for _, snap := range snaps {
		var d sessionRowDoc
		if err := snap.DataTo(&d); err != nil {
			return nil, "", fmt.Errorf("decode %s: %w", snap.Ref.Path, err)
		}
		rows = append(rows, SessionRow{App: d.App, User: d.User, ID: d.ID, Holder: d.Lease.Holder, Fence: d.Lease.Fence,
			Expires: d.Lease.Expires, LiveUntil: d.LiveUntil, Created: d.Created, Updated: d.Updated})
	}
	return rows, nextCursor(snaps, f.Limit, field), nil
}

// nextCursor is the cursor after a page of limit documents ordered by
// field: "" when the page is not full.
func nextCursor(snaps []*firestore.DocumentSnapshot, limit int, field string) string {
	if len(snaps) < limit || len(snaps) == 0 {
		return ""
	}
	return CursorAfter(snaps[len(snaps)-1], field).String()
}

// ChatFilter asks for a page of an app's chats.
type ChatFilter struct {
	App string
	// User, when set, keeps one user's chats.
	User string
	// CleanupBefore, when set, keeps the chats whose cleanup was due by
	// then (a switch or a deletion that died halfway, leftovers the sweep
	// has not removed), oldest first; otherwise a user's chats are listed
	// by last activity, most recent first.
	CleanupBefore time.Time
	Cursor        string
	Limit         int // 1 to 200
}

// Chats returns a page of chats as f asks, and the cursor of the next
// page ("" at the end). Without CleanupBefore, f.User is required.
func (s *Service) Chats(ctx context.Context, f ChatFilter) ([]*Chat, string, error) {
	if err := validateID("app name", f.App); err != nil {
		return nil, "", err
	}
	if f.Limit < 1 || f.Limit > 200 {
		return nil, "", fmt.Errorf("page of %d chats: want 1 to 200", f.Limit)
	}
	var q firestore.Query
	if f.User != "" {
		if err := validateID("user id", f.User); err != nil {
			return nil, "", err
		}
		q = s.userRef(f.App, f.User).Collection("chats").Query
	} else if f.CleanupBefore.IsZero() {
		return nil, "", fmt.Errorf("%w: a user's chats need the user", ErrInvalidID)
	} else {
		q = s.client.CollectionGroup("chats").Where("scope", "==", s.scope(f.App))
	}
	field, dir := "lastActivity", firestore.Desc
	if !f.CleanupBefore.IsZero() {
		field, dir = "cleanupAt", firestore.Asc
		q = q.Where(field, "<=", f.CleanupBefore)
	}
	q = q.OrderBy(field, dir).OrderBy(firestore.DocumentID, dir)
	q, err := StartAfter(s.client, q, f.Cursor, s.scope(f.App)+"/")
	if err != nil {
		return nil, "", err
	}
	snaps, err := q.Limit(f.Limit).Documents(ctx).GetAll()
	if err != nil {
		return nil, "", fmt.Errorf("query chats: %w", FirestoreError(err))
	}
	out := make([]*Chat, 0, len(snaps))
	for _, snap := range snaps {
		c, err := chatFrom(snap)
		if err != nil {
			return nil, "", err
		}
		out = append(out, c)
	}
	return out, nextCursor(snaps, f.Limit, field), nil
}
