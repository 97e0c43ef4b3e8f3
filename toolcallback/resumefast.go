package toolcallback

import (
	"context"
	"errors"

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
	call *Call
	sess *sessionstore.Session
	keep func(*sessionstore.Session)
}

// fastResume answers the call f.call (read with the session f.sess in the
// same round trip) when the answer completes its model step, in one
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
	doc, sess := f.call, f.sess
	if err := e.acceptable(ctx, doc, r.Answer, r.ClientID, false); err != nil {
		return nil, err
	}
	ctx, span := tracer.Start(ctx, "baton.resume", trace.WithAttributes(
		attribute.String("baton.session.id", doc.SessionID), attribute.String("baton.step", doc.Step)))
	defer span.End()
	unresumed, err := e.ledger.Unresumed(ctx, doc.UserID, doc.SessionID)
	if err != nil {
		return nil, err
	}
	write, answered, err := e.ledger.AnswerWrite(doc, r.Answer, r.ClientID, platform.Now(ctx))
	if err != nil {
		return nil, err
	}
	open := []*Call{answered}
	for _, d := range unresumed {
		switch {
		case d.Step != doc.Step || d.ID == doc.ID:
		case d.Status == StatusPending:
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
		client = doc.ClientID
	}
	claim, err := e.sessions.ClaimLease(ctx, sess, holderID(ctx, client), e.opts.LeaseTTL, write)
	if err != nil {
		return nil, nil //nolint:nilerr // busy as read: the long path waits for the lease
	}
	msg := &genai.Content{Role: genai.RoleUser, Parts: responseParts(todo, true)}
	inv, err := e.start(ctx, invocationRun{user: doc.UserID, session: doc.SessionID, client: client, msg: msg, handle: sess, claim: claim,
		resumed: open, closesDocs: len(unresumed) == len(open), keep: f.keep})
	if errors.Is(err, sessionstore.ErrBusy) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &ResumeOutcome{Call: answered, Invocation: inv, Turn: transcript.TurnOf(sess.Events(), doc.Step, doc.Invocation)}, nil
}
