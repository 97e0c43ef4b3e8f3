package ledger

import (
	"context"
	"errors"
	"fmt"
	"time"

	"cloud.google.com/go/firestore"

	"github.com/baton-run/baton/sessionstore"
)

// The queries of this file look at records across an app's sessions, for
// the operator's console: one query per page, each on a composite index
// listed in Indexes. They never change a record.

// Filter narrows a query across sessions.
type Filter struct {
	// Agents are the agents whose calls are looked at (the team's, or
	// one): each agent's records have a scope of their own.
	Agents []string
	// User, when set, keeps one user's records.
	User string
	// Before, when set, keeps records whose time (created for Waiting,
	// sweepAt for Overdue) is at or before it: the age filter.
	Before time.Time
	// Cursor continues from the page that gave it ("" for the first).
	Cursor string
	// Limit bounds the page (1 to 200).
	Limit int
}

// Page is one page of records and the cursor of the next ("" at the end).
type Page struct {
	Calls []*Call
	Next  string
}

// Waiting pages through the pending records of kinds, across the app's
// sessions, oldest first: calls waiting for a person, a browser or
// another system (or, with the kinds of work, for that work).
func (l *Ledger) Waiting(ctx context.Context, kinds []Kind, f Filter) (*Page, error) {
	if len(kinds) == 0 {
		return &Page{}, nil
	}
	names := make([]string, len(kinds))
	for i, k := range kinds {
		names[i] = string(k)
	}
	q, err := l.across(f)
	if err != nil {
		return nil, err
	}
	q = q.Where(fieldStatus, "==", string(StatusPending)).Where(fieldKind, "in", names)
	return l.page(ctx, q, fieldCreated, f)
}

// Overdue pages through the records the sweeper should have looked at by
// f.Before (pending past their expiry, or answered and never delivered),
// oldest first: calls past their timeout that no sweep closed.
func (l *Ledger) Overdue(ctx context.Context, f Filter) (*Page, error) {
	if f.Before.IsZero() {
		return nil, errors.New("overdue records: no time given")
	}
	q, err := l.across(f)
	if err != nil {
		return nil, err
	}
	return l.page(ctx, q, fieldSweepAt, f)
}

// across is the collection-group query of f's agents and user.
func (l *Ledger) across(f Filter) (firestore.Query, error) {
	if len(f.Agents) == 0 || len(f.Agents) > 10 {
		return firestore.Query{}, fmt.Errorf("query records of %d agents: want 1 to 10", len(f.Agents))
	}
	scopes := make([]string, len(f.Agents))
	for i, a := range f.Agents {
		scopes[i] = l.scope(a)
	}
	q := l.client.CollectionGroup(collection).Where(fieldScope, "in", scopes)
	if f.User != "" {
		q = q.Where(fieldUser, "==", f.User)
	}
	return q, nil
}

// page runs q ordered by field, from f's cursor, bounded by f.Before.
func (l *Ledger) page(ctx context.Context, q firestore.Query, field string, f Filter) (*Page, error) {
	if f.Limit < 1 || f.Limit > 200 {
		return nil, fmt.Errorf("page of %d records: want 1 to 200", f.Limit)
	}
	if !f.Before.IsZero() {
		q = q.Where(field, "<=", f.Before)
	}
	q = q.OrderBy(field, firestore.Asc).OrderBy(firestore.DocumentID, firestore.Asc)
	q, err := sessionstore.StartAfter(l.client, q, f.Cursor, l.sessions.Root()+"/"+l.app+"/")
	if err != nil {
		return nil, err
	}
	snaps, err := q.Limit(f.Limit).Documents(ctx).GetAll()
	if err != nil {
		return nil, fmt.Errorf("query ledger: %w", sessionstore.FirestoreError(err))
	}
	p := &Page{Calls: make([]*Call, 0, len(snaps))}
	for _, s := range snaps {
		c, err := decode(s)
		if err != nil {
			return nil, err
		}
		p.Calls = append(p.Calls, c)
	}
	if len(snaps) == f.Limit {
		p.Next = sessionstore.CursorAfter(snaps[len(snaps)-1], field).String()
	}
	return p, nil
}

// OfSession returns every record of a session, settled ones included,
// oldest first (a chat's timeline).
func (l *Ledger) OfSession(ctx context.Context, user, sid string) ([]*Call, error) {
	return query(ctx, l.calls(user, sid).Query)
}
