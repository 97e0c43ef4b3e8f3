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
	"google.golang.org/adk/v2/session"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/baton-run/baton/sessionstore"
)

// callsCollection is the ledger's collection, nested under each session's
// document so that a session's records live and die with it. Sweep queries
// it as a collection group.
const callsCollection = "calls"

func (e *Engine) callRef(user, sid, callID string) *firestore.DocumentRef {
	return e.sessions.SessionRef(e.app, user, sid).Collection(callsCollection).Doc(callID)
}

func (e *Engine) callsOf(user, sid string) *firestore.CollectionRef {
	return e.sessions.SessionRef(e.app, user, sid).Collection(callsCollection)
}

// newCallDoc builds the ledger record of a detected call paused by an
// invocation that client started.
func (e *Engine) newCallDoc(user, sid string, d detected, client string) (*callDoc, error) {
	args, err := json.Marshal(d.args)
	if err != nil {
		return nil, fmt.Errorf("encode arguments of %q: %w", d.id, err)
	}
	timeout := d.spec.Timeout
	if timeout <= 0 {
		timeout = e.opts.CallTimeout
	}
	anyDevice := d.spec.AnyDevice || (d.spec.Kind == KindApproval && e.opts.ApprovalsAnyDevice)
	expires := d.created.Add(timeout)
	return &callDoc{
		ID: d.id, App: e.app, Scope: e.scope(), Agent: e.agent, User: user, Session: sid, Invocation: d.invocation, Client: client,
		Tool: d.tool, Args: args, Kind: string(d.spec.Kind), Step: d.step, OriginalID: d.originalID,
		AnyDevice: anyDevice, Hint: d.hint, Status: string(StatusPending),
		Created: d.created, Expires: expires, SweepAt: &expires, GCAt: expires.Add(e.opts.Retention),
	}, nil
}

// recentWindow is how many of a session's latest events the engine reads to
// repair what a dead invocation left and to check what a resume already
// delivered. Every turn repairs, so such a state is always among the events
// appended since the last turn; reading only those keeps a long history
// from being read twice per turn (ADK's runner reads it all anyway).
const recentWindow = 500

// loadSession reads a session with its whole history.
func (e *Engine) loadSession(ctx context.Context, user, sid string) (session.Session, error) {
	return e.getSession(ctx, user, sid, 0)
}

// loadRecent reads a session with its latest recentWindow events.
func (e *Engine) loadRecent(ctx context.Context, user, sid string) (session.Session, error) {
	return e.getSession(ctx, user, sid, recentWindow)
}

func (e *Engine) getSession(ctx context.Context, user, sid string, recent int) (session.Session, error) {
	// The ledger reads events and appends; app: and user: state are for
	// the runner, which reads them itself.
	got, err := e.sessions.GetSessionScoped(ctx, &session.GetRequest{AppName: e.app, UserID: user, SessionID: sid, NumRecentEvents: recent})
	if errors.Is(err, sessionstore.ErrNotFound) {
		return nil, fmt.Errorf("%w: session %q", ErrNotFound, sid)
	}
	if err != nil {
		return nil, err
	}
	return got.Session, nil
}

// queryCalls returns the calls matching q, in creation order, with their
// snapshots.
func queryCalls(ctx context.Context, q firestore.Query) (_ []*callDoc, _ []*firestore.DocumentSnapshot, err error) {
	ctx, span := tracer.Start(ctx, "baton.ledger.query")
	defer func() { endSpan(span, err) }()
	snaps, err := q.Documents(ctx).GetAll()
	if err != nil {
		return nil, nil, fmt.Errorf("query ledger: %w", translate(err))
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
func (e *Engine) markResumed(ctx context.Context, docs []*callDoc) (err error) {
	if len(docs) == 0 {
		return nil
	}
	ctx, span := tracer.Start(ctx, "baton.ledger.mark_resumed", trace.WithAttributes(attribute.Int("baton.ledger.records", len(docs))))
	defer func() { endSpan(span, err) }()
	batch := e.client.Batch()
	for _, d := range docs {
		batch.Update(e.callRef(d.User, d.Session, d.ID), []firestore.Update{
			{Path: "resumed", Value: true},
			{Path: "sweepAt", Value: firestore.Delete},
		})
	}
	_, err = batch.Commit(ctx)
	return translate(err)
}

// translate maps the gRPC codes callers act on to sentinels.
func translate(err error) error {
	switch status.Code(err) {
	case codes.OK:
		return err
	case codes.Unavailable, codes.DeadlineExceeded, codes.ResourceExhausted:
		return fmt.Errorf("%w: %w", sessionstore.ErrUnavailable, err)
	}
	return err
}

func isAlreadyExists(err error) bool {
	return errors.Is(err, sessionstore.ErrAlreadyExists) || status.Code(err) == codes.AlreadyExists
}
