package ledger

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"cloud.google.com/go/firestore"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/baton-run/baton/sessionstore"
)

var (
	// ErrNotFound: no such call (Get, ByToken).
	ErrNotFound = errors.New("call not found")
	// ErrChanged: a first-writer-wins update lost; the record changed
	// since it was read (another answer, the sweeper, a stop). Read it
	// again to learn the winner's outcome.
	ErrChanged = errors.New("call changed since it was read")
)

// collection is the ledger's collection, nested under each session's
// document so that a session's records live and die with it. The sweeper
// queries it as a collection group.
const collection = "calls"

var tracer = otel.Tracer("github.com/baton-run/baton/ledger")

// Ledger is one app's paused-call records: their queries, their
// first-writer-wins updates and the writes they add to a session's
// commits. It holds no state between requests.
type Ledger struct {
	sessions *sessionstore.Service
	client   *firestore.Client
	app      string
	opts     Options
}

// Options are a Ledger's optional settings.
type Options struct {
	// Retention is how long a record is kept after it expires (its TTL);
	// default 7 days.
	Retention time.Duration
	// AnswerGrace is how long after an answer the sweeper leaves its step
	// to the answer's own resume; default 1 minute.
	AnswerGrace time.Duration
	// TokenKey signs call tokens; Token fails without one.
	TokenKey []byte
	// EnqueueGrace is how long after a background call's record is
	// written the sweeper waits for its task to be created before it
	// creates it itself; default 30 seconds.
	EnqueueGrace time.Duration
}

// New returns the ledger of app's sessions, which sessions stores.
func New(sessions *sessionstore.Service, app string, opts *Options) *Ledger {
	l := &Ledger{sessions: sessions, client: sessions.Client(), app: app}
	if opts != nil {
		l.opts = *opts
	}
	if l.opts.Retention <= 0 {
		l.opts.Retention = 7 * 24 * time.Hour
	}
	if l.opts.AnswerGrace <= 0 {
		l.opts.AnswerGrace = time.Minute
	}
	if l.opts.EnqueueGrace <= 0 {
		l.opts.EnqueueGrace = 30 * time.Second
	}
	return l
}

// App is the app whose sessions' calls the ledger records.
func (l *Ledger) App() string { return l.app }

// Doc names the record of call id in session sid of user, for a read
// beside the session (sessionstore.ChatRead.Also; decode it with Found).
func (l *Ledger) Doc(user, sid, id string) sessionstore.DocName {
	return l.sessions.SessionDoc(l.app, user, sid).Child(collection, id)
}

func (l *Ledger) ref(user, sid, id string) *firestore.DocumentRef {
	return l.client.Doc(l.Doc(user, sid, id).Path())
}

func (l *Ledger) calls(user, sid string) *firestore.CollectionRef {
	return l.client.Doc(l.sessions.SessionDoc(l.app, user, sid).Path()).Collection(collection)
}

// scope is the sweeper's filter of the calls agent's runner made: its app
// and agent, so that each agent resumes only its own calls.
func (l *Ledger) scope(agent string) string { return l.sessions.Root() + "/" + l.app + "/" + agent }

// Found decodes a record read beside a session (a StoredDoc of
// sessionstore.ChatRead.Also): ErrNotFound when it does not exist.
func Found(d sessionstore.StoredDoc) (*Call, error) {
	if !d.Exists() {
		return nil, fmt.Errorf("%w: %q", ErrNotFound, d.Name().ID())
	}
	return decodeData(d.Name().ID(), d.UpdateTime(), d.DataTo)
}

// Get reads the record of call id in session sid of user.
func (l *Ledger) Get(ctx context.Context, user, sid, id string) (_ *Call, err error) {
	ctx, span := tracer.Start(ctx, "baton.ledger.read", trace.WithAttributes(attribute.String("baton.call.id", id)))
	defer func() { endSpan(span, err) }()
	snap, err := l.ref(user, sid, id).Get(ctx)
	switch err = sessionstore.FirestoreError(err); {
	case errors.Is(err, sessionstore.ErrNotFound):
		return nil, fmt.Errorf("%w: %q", ErrNotFound, id)
	case err != nil:
		return nil, fmt.Errorf("read call %q: %w", id, err)
	}
	return decode(snap)
}

// Unresumed are the records of a session whose answers the agent may not
// have yet (pending, or settled and not delivered), oldest first.
func (l *Ledger) Unresumed(ctx context.Context, user, sid string) ([]*Call, error) {
	return query(ctx, l.calls(user, sid).Where(fieldResumed, "==", false))
}

// Pending are the records of a session still waiting for an answer,
// oldest first (expired ones the sweeper has not closed yet included).
func (l *Ledger) Pending(ctx context.Context, user, sid string) ([]*Call, error) {
	return query(ctx, l.calls(user, sid).Where(fieldStatus, "==", string(StatusPending)))
}

// Open are Unresumed's records and, with questions, the session's in-call
// questions still pending (written resumed: they are open only while the
// tool that asked them runs), in one query.
func (l *Ledger) Open(ctx context.Context, user, sid string, questions bool) ([]*Call, error) {
	if !questions {
		return l.Unresumed(ctx, user, sid)
	}
	return query(ctx, l.calls(user, sid).WhereEntity(firestore.OrFilter{Filters: []firestore.EntityFilter{
		firestore.PropertyFilter{Path: fieldResumed, Operator: "==", Value: false},
		openQuestion(),
	}}))
}

// openQuestion filters the in-call questions still pending.
func openQuestion() firestore.AndFilter {
	return firestore.AndFilter{Filters: []firestore.EntityFilter{
		firestore.PropertyFilter{Path: fieldInCall, Operator: "==", Value: true},
		firestore.PropertyFilter{Path: fieldStatus, Operator: "==", Value: string(StatusPending)},
	}}
}

// Due are up to limit records of agent's calls, over all sessions, that
// the sweeper must look at by now (expired while pending, or answered
// and not resumed after the grace), soonest first.
func (l *Ledger) Due(ctx context.Context, agent string, now time.Time, limit int) ([]*Call, error) {
	return query(ctx, l.client.CollectionGroup(collection).
		Where(fieldScope, "==", l.scope(agent)).
		Where(fieldSweepAt, "<=", now).
		OrderBy(fieldSweepAt, firestore.Asc).
		Limit(limit))
}

// query returns the calls matching q, in creation order.
func query(ctx context.Context, q firestore.Query) (_ []*Call, err error) {
	ctx, span := tracer.Start(ctx, "baton.ledger.query")
	defer func() { endSpan(span, err) }()
	snaps, err := q.Documents(ctx).GetAll()
	if err != nil {
		return nil, fmt.Errorf("query ledger: %w", sessionstore.FirestoreError(err))
	}
	calls := make([]*Call, len(snaps))
	for i, s := range snaps {
		if calls[i], err = decode(s); err != nil {
			return nil, err
		}
	}
	slices.SortStableFunc(calls, func(a, b *Call) int {
		if c := a.Created.Compare(b.Created); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return calls, nil
}

func endSpan(span trace.Span, err error) {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}
