package toolcallback

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"cloud.google.com/go/firestore"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/baton-run/baton/sessionstore"
)

// callsCollection is the ledger's collection, nested under each session's
// document so that a session's records live and die with it. Sweep queries
// it as a collection group.
const callsCollection = "calls"

// ledger is a Team's pending-call ledger: the records of its sessions'
// paused calls (see the package doc), the queries over them, and the call
// tokens that name one record. It holds no state between requests.
type ledger struct {
	sessions *sessionstore.Service
	client   *firestore.Client
	app      string
	opts     *Options
}

func (l *ledger) ref(user, sid, callID string) *firestore.DocumentRef {
	return l.calls(user, sid).Doc(callID)
}

func (l *ledger) calls(user, sid string) *firestore.CollectionRef {
	return l.sessions.SessionRef(l.app, user, sid).Collection(callsCollection)
}

// unresumed queries the records of a session whose answers the agent may
// not have yet.
func (l *ledger) unresumed(ctx context.Context, user, sid string) ([]*callDoc, []*firestore.DocumentSnapshot, error) {
	return queryCalls(ctx, l.calls(user, sid).Where("resumed", "==", false))
}

// scope is the Sweep filter of the calls agent's runner made: its app and
// agent, so that each agent's engine resumes only its own calls.
func (l *ledger) scope(agent string) string { return l.sessions.Root() + "/" + l.app + "/" + agent }

// newRecord builds the ledger record of a call that agent's invocation,
// started by client, paused.
func (l *ledger) newRecord(user, sid, agent string, d pausedCall, client string) (*callDoc, error) {
	args, err := json.Marshal(d.args)
	if err != nil {
		return nil, fmt.Errorf("encode arguments of %q: %w", d.id, err)
	}
	timeout := d.spec.Timeout
	if timeout <= 0 {
		timeout = l.opts.CallTimeout
	}
	anyDevice := d.spec.AnyDevice || (d.spec.Kind == KindApproval && l.opts.ApprovalsAnyDevice)
	expires := d.created.Add(timeout)
	return &callDoc{
		ID: d.id, App: l.app, Scope: l.scope(agent), Agent: agent, User: user, Session: sid, Invocation: d.invocation, Client: client,
		Tool: d.tool, Args: args, Kind: string(d.spec.Kind), Step: d.step, OriginalID: d.originalID,
		AnyDevice: anyDevice, Hint: d.hint, Input: d.input, InputState: d.state, Surface: d.surface, Status: string(StatusPending),
		Created: d.created, Expires: expires, SweepAt: &expires, GCAt: expires.Add(l.opts.Retention),
	}, nil
}

// queryCalls returns the calls matching q, in creation order, with their
// snapshots.
func queryCalls(ctx context.Context, q firestore.Query) (_ []*callDoc, _ []*firestore.DocumentSnapshot, err error) {
	ctx, span := tracer.Start(ctx, "baton.ledger.query")
	defer func() { endSpan(span, err) }()
	snaps, err := q.Documents(ctx).GetAll()
	if err != nil {
		return nil, nil, fmt.Errorf("query ledger: %w", sessionstore.FirestoreError(err))
	}
	type row struct {
		doc  *callDoc
		snap *firestore.DocumentSnapshot
	}
	rows := make([]row, len(snaps))
	for i, s := range snaps {
		rows[i] = row{&callDoc{}, s}
		if err := s.DataTo(rows[i].doc); err != nil {
			return nil, nil, fmt.Errorf("decode %s: %w", s.Ref.Path, err)
		}
	}
	slices.SortStableFunc(rows, func(a, b row) int {
		if c := a.doc.Created.Compare(b.doc.Created); c != 0 {
			return c
		}
		return strings.Compare(a.doc.ID, b.doc.ID)
	})
	docs := make([]*callDoc, len(rows))
	for i, r := range rows {
		docs[i], snaps[i] = r.doc, r.snap
	}
	return docs, snaps, nil
}

// markResumed records that the agent has the answers of calls: Sweep
// stops looking at them.
func (l *ledger) markResumed(ctx context.Context, docs []*callDoc) (err error) {
	if len(docs) == 0 {
		return nil
	}
	ctx, span := tracer.Start(ctx, "baton.ledger.mark_resumed", trace.WithAttributes(attribute.Int("baton.ledger.records", len(docs))))
	defer func() { endSpan(span, err) }()
	batch := l.client.Batch()
	for _, d := range docs {
		batch.Update(l.ref(d.User, d.Session, d.ID), []firestore.Update{
			{Path: "resumed", Value: true},
			{Path: "sweepAt", Value: firestore.Delete},
		})
	}
	_, err = batch.Commit(ctx)
	return sessionstore.FirestoreError(err)
}

// read reads a ledger record.
func (l *ledger) read(ctx context.Context, ref *firestore.DocumentRef) (_ *callDoc, _ *firestore.DocumentSnapshot, err error) {
	ctx, span := tracer.Start(ctx, "baton.ledger.read", trace.WithAttributes(attribute.String("baton.call.id", ref.ID)))
	defer func() { endSpan(span, err) }()
	snap, err := ref.Get(ctx)
	switch err = sessionstore.FirestoreError(err); {
	case errors.Is(err, sessionstore.ErrNotFound):
		return nil, nil, fmt.Errorf("%w: %q", ErrCallNotFound, ref.ID)
	case err != nil:
		return nil, nil, fmt.Errorf("read call %q: %w", ref.ID, err)
	}
	return decodeCall(snap)
}

// decodeCall decodes a ledger record's snapshot.
func decodeCall(snap *firestore.DocumentSnapshot) (*callDoc, *firestore.DocumentSnapshot, error) {
	ref := snap.Ref
	if !snap.Exists() {
		return nil, nil, fmt.Errorf("%w: %q", ErrCallNotFound, ref.ID)
	}
	var doc callDoc
	if err := snap.DataTo(&doc); err != nil {
		return nil, nil, fmt.Errorf("decode call %q: %w", ref.ID, err)
	}
	return &doc, snap, nil
}
