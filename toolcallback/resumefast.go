package toolcallback

import (
	"context"
	"errors"

	"cloud.google.com/go/firestore"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/adk/v2/platform"
	"google.golang.org/genai"

	"github.com/baton-run/baton/sessionstore"
	"github.com/baton-run/baton/transcript"
)

// found is a call as one read found it, with the chat's active session
// and what keeps that session as the chat's warm copy.
type found struct {
	doc  *callDoc
	snap *firestore.DocumentSnapshot
	sess *sessionstore.Session
	keep func(*sessionstore.Session)
}

// fastResume answers the call doc (read as snap, with the session sess in
// the same round trip) when the answer completes its model step, in one
// commit that records the answer, takes the session's lease and delivers
// the step's answers to the agent: the model is called after three round
// trips (the read, the ledger query, that commit). The commit is
// conditional on the record and the session being as read, so a second
// answer, or a delivery by another request, makes it fail and write
// nothing.
//
// It returns a nil Resumption and no error whenever the long path (resume)
// must decide instead: other calls of the step still wait, the session
// needs repair or is busy, answers and approvals are mixed, or the commit
// lost a race. The long path then finds things as they are.
//
// The session the invocation leaves is kept as the chat's warm copy, as a
// turn's is, so the turn after the answer reads nothing.
func (e *engine) fastResume(ctx context.Context, r ResumeRequest, f found) (*ResumeOutcome, error) {
	doc, snap, sess := f.doc, f.snap, f.sess
	answer, err := e.acceptable(ctx, r, doc)
	if err != nil {
		return nil, err
	}
	ctx, span := tracer.Start(ctx, "baton.resume", trace.WithAttributes(
		attribute.String("baton.session.id", doc.Session), attribute.String("baton.step", doc.Step)))
	defer span.End()
	unresumed, _, err := e.ledger.unresumed(ctx, doc.User, doc.Session)
	if err != nil {
		return nil, err
	}
	now := platform.Now(ctx)
	sweepAt := now.Add(e.opts.AnswerGrace)
	answered := *doc
	answered.Status, answered.Answer, answered.ResolvedBy, answered.Resolved, answered.SweepAt = string(StatusResolved), answer, r.ClientID, now, &sweepAt
	open := []*callDoc{&answered}
	for _, d := range unresumed {
		switch {
		case d.Step != doc.Step || d.ID == doc.ID:
		case Status(d.Status) == StatusPending:
			// The answer that completes the step resumes it; which one
			// that is, only the long path's record-then-look order tells.
			return nil, nil
		default:
			open = append(open, d)
		}
	}
	if transcript.NeedsRepair(sess.Events(), knownCalls(unresumed)) {
		return nil, nil
	}
	todo := undelivered(sess, open)
	if answers, approvals := splitConfirmations(todo); len(todo) == 0 || len(answers) > 0 && len(approvals) > 0 {
		return nil, nil
	}
	client := r.ClientID
	if client == "" {
		client = doc.Client
	}
	claim, err := e.sessions.ClaimLease(ctx, sess, holderID(ctx, client), e.opts.LeaseTTL, sessionstore.DocUpdate{
		Ref: snap.Ref, Updates: answerUpdates(r, answer, now, sweepAt), Pre: firestore.LastUpdateTime(snap.UpdateTime),
	})
	if err != nil {
		return nil, nil //nolint:nilerr // busy as read: the long path waits for the lease
	}
	msg := &genai.Content{Role: genai.RoleUser, Parts: responseParts(todo, true)}
	inv, err := e.start(ctx, invocationRun{user: doc.User, session: doc.Session, client: client, msg: msg, handle: sess, claim: claim,
		resumed: open, closesDocs: len(unresumed) == len(open), keep: f.keep})
	if errors.Is(err, sessionstore.ErrBusy) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	c, err := answered.call()
	if err != nil {
		return nil, err
	}
	return &ResumeOutcome{Call: c, Invocation: inv, Turn: transcript.TurnOf(sess.Events(), doc.Step, doc.Invocation)}, nil
}
