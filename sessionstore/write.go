package sessionstore

import (
	"context"
	"fmt"
	"slices"
	"time"

	"cloud.google.com/go/firestore"
)

// DocName names a document that another part keeps beside the sessions
// (a call's ledger record under its session, a user's limit counts, an
// A2A task under its chat), so that deleting the session, the chat or the
// user finds it. The part that owns the document builds it from a name the
// Service gives (SessionDoc, ChatDoc, UserDoc) and Child, and hands the
// Service writes of it (Write) for the commits the Service assembles; it
// reads its own documents itself, on the same database (Service.Client).
type DocName struct{ path string }

// Child is the document id in collection under n.
func (n DocName) Child(collection, id string) DocName {
	return DocName{path: n.path + "/" + collection + "/" + id}
}

// Path is n's path in the database ("baton/app/users/u/..."), for the
// owner's own reads.
func (n DocName) Path() string { return n.path }

// ID is n's last segment, the document's id.
func (n DocName) ID() string {
	for i := len(n.path) - 1; i >= 0; i-- {
		if n.path[i] == '/' {
			return n.path[i+1:]
		}
	}
	return n.path
}

// SessionDoc names the document that stores a session: parts that keep
// records per session (the ledger) nest them under it.
func (s *Service) SessionDoc(app, user, id string) DocName {
	return DocName{path: s.sessionRef(app, user, id).Path[len(s.dbPrefix()):]}
}

// ChatDoc names a chat's document, under which other parts keep what
// belongs to the chat (the A2A task store): DeleteChat deletes it all.
func (s *Service) ChatDoc(app, user, id string) DocName {
	return DocName{path: s.chatRef(app, user, id).Path[len(s.dbPrefix()):]}
}

// AppDoc names an app's state document, under which the deployment's
// counts across users live (package limits, LimitsCollection).
func (s *Service) AppDoc(app string) DocName {
	return DocName{path: s.appRef(app).Path[len(s.dbPrefix()):]}
}

// UserDoc names a user's state document, under which the turn limits keep
// their counts (LimitsCollection).
func (s *Service) UserDoc(app, user string) DocName {
	return DocName{path: s.userRef(app, user).Path[len(s.dbPrefix()):]}
}

// dbPrefix is what precedes a document's path in its full name.
func (s *Service) dbPrefix() string {
	full := s.client.Collection(s.root).Path
	return full[:len(full)-len(s.root)]
}

// Client is the database the service stores in, for the parts that keep
// documents of their own beside its sessions (the ledger, the A2A task
// store) and read them themselves.
func (s *Service) Client() *firestore.Client { return s.client }

// Open opens the Firestore database of project (database "" is the
// default one) and returns the Service storing sessions there; Close
// closes the database.
func Open(ctx context.Context, project, database string, opts *Options) (*Service, error) {
	if database == "" {
		database = firestore.DefaultDatabaseID
	}
	client, err := firestore.NewClientWithDatabase(ctx, project, database)
	if err != nil {
		return nil, fmt.Errorf("open firestore: %w", err)
	}
	return New(client, opts), nil
}

// Close closes the database the service stores in.
func (s *Service) Close() error { return s.client.Close() }

// writeOp is what a Write does.
type writeOp int

const (
	opCreate writeOp = iota
	opUpdate
	opMerge
	opDelete
)

// Write is a write of a document beside a session that a commit the
// Service assembles makes (AppendOptions.Writes and Create, ClaimLease),
// built by the document's owner: all of the commit is stored, or none.
type Write struct {
	doc     DocName
	op      writeOp
	data    any
	updates []firestore.Update
	since   time.Time
}

// Create is a write that creates doc with data; a document that exists
// already fails the commit.
func Create(doc DocName, data any) Write { return Write{doc: doc, op: opCreate, data: data} }

// Update is a write that updates fields of doc, which must exist; with a
// non-zero since, only if doc was last updated then (first writer wins:
// else the commit fails with ErrConflict, or as busy when it claims a
// lease).
func Update(doc DocName, since time.Time, updates ...firestore.Update) Write {
	return Write{doc: doc, op: opUpdate, updates: updates, since: since}
}

// Merge is a write that sets fields of doc, creating it if need be.
func Merge(doc DocName, fields map[string]any) Write {
	return Write{doc: doc, op: opMerge, data: fields}
}

// Delete is a write that deletes doc, whether or not it exists.
func Delete(doc DocName) Write { return Write{doc: doc, op: opDelete} }

// coalesced folds the unconditional updates of one document in writes
// into the first of them: several owners may each update a chat's listing
// in one commit (the ledger for each record it creates, a turn for its
// activity), and a commit writes a document once.
func coalesced(writes []Write) []Write {
	out := make([]Write, 0, len(writes))
	at := map[string]int{}
	for _, w := range writes {
		if w.op != opUpdate || !w.since.IsZero() {
			out = append(out, w)
			continue
		}
		if i, ok := at[w.doc.path]; ok {
			merged := out[i]
			merged.updates = append(slices.Clone(merged.updates), w.updates...)
			out[i] = merged
			continue
		}
		at[w.doc.path] = len(out)
		out = append(out, w)
	}
	return out
}

// addAll adds writes to batch, coalesced.
func (s *Service) addAll(batch *firestore.WriteBatch, writes []Write) {
	for _, w := range coalesced(writes) {
		s.addTo(batch, w)
	}
}

// addTo adds w to batch.
func (s *Service) addTo(batch *firestore.WriteBatch, w Write) {
	ref := s.client.Doc(w.doc.path)
	switch w.op {
	case opCreate:
		batch.Create(ref, w.data)
	case opDelete:
		batch.Delete(ref)
	case opMerge:
		batch.Set(ref, w.data, firestore.MergeAll)
	default:
		if w.since.IsZero() {
			batch.Update(ref, w.updates)
		} else {
			batch.Update(ref, w.updates, firestore.LastUpdateTime(w.since))
		}
	}
}

// Commit makes writes in one commit of their own, with no event (a
// ledger's marks, a test's counts), and returns its time; a write whose
// condition fails makes it fail with ErrConflict, writing nothing.
func (s *Service) Commit(ctx context.Context, writes ...Write) (time.Time, error) {
	if len(writes) == 0 {
		return time.Time{}, nil
	}
	batch := s.client.Batch()
	s.addAll(batch, writes)
	res, err := batch.Commit(ctx)
	if err != nil {
		return time.Time{}, FirestoreError(err)
	}
	return res[0].UpdateTime, nil
}
