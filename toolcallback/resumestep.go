package toolcallback

import (
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/adk/v2/platform"
	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/tool/toolconfirmation"
	"google.golang.org/genai"

	"github.com/baton-run/baton/ledger"
	"github.com/baton-run/baton/sessionstore"
	"github.com/baton-run/baton/transcript"
)

// carryOutResume takes the answer as p says; it returns p's refusal as it
// is. A commit of resumeAtOnce that finds the record or the session
// changed since they were read wrote nothing: the answer is then taken
// the long way, which finds them as they are.
func (e *engine) carryOutResume(ctx context.Context, p resumePlan) (*ResumeOutcome, error) {
	switch p.way {
	case resumeRefuse:
		return nil, p.err
	case resumeAtOnce:
		res, err := e.resumeAtOnce(ctx, p)
		if !errors.Is(err, sessionstore.ErrBusy) {
			return res, err
		}
	}
	return e.recordAnswer(ctx, p)
}

// resumeAtOnce carries out a plan of resumeAtOnce: one commit records the
// answer, takes the session's lease and delivers the step's answers to
// the agent, so the model is called after three round trips (the read, the
// ledger query, that commit). The commit is conditional on the record and
// the session being as read: a second answer, or a delivery by another
// request, makes it fail with sessionstore.ErrBusy, writing nothing.
//
// The session the invocation leaves is kept as the chat's warm copy, as a
// turn's is, so the turn after the answer reads nothing.
func (e *engine) resumeAtOnce(ctx context.Context, p resumePlan) (*ResumeOutcome, error) {
	claim, err := e.sessions.ClaimLease(ctx, p.sess, holderID(ctx, p.client), e.opts.LeaseTTL, p.write...)
	if err != nil {
		return nil, err
	}
	c := p.answered
	msg := &genai.Content{Role: genai.RoleUser, Parts: responseParts(p.todo, true)}
	inv, err := e.start(ctx, invocationRun{user: c.UserID, session: c.SessionID, chat: c.Chat, client: p.client, msg: msg, handle: p.sess, claim: claim,
		resumed: p.resumed, closesDocs: p.closesDocs, keep: p.keep})
	if err != nil {
		return nil, err
	}
	return &ResumeOutcome{Call: c, Invocation: inv, Turn: p.turn}, nil
}

// recordAnswer records p's answer to p.call, as read, and, when it
// completes its model step, resumes the agent once with the answers of
// every call of that step.
//
// The answer is accepted once: the first writer wins, and a later answer
// gets an *AlreadyResolvedError carrying the recorded outcome, without
// running anything again.
func (e *engine) recordAnswer(ctx context.Context, p resumePlan) (*ResumeOutcome, error) {
	c := p.call
	answered, err := e.ledger.Answer(ctx, c, p.answer, p.by, platform.Now(ctx))
	if errors.Is(err, ledger.ErrChanged) {
		// Another answer (or the sweeper) got there first.
		now, rerr := e.ledger.Get(ctx, c.UserID, c.SessionID, c.ID)
		if rerr != nil {
			return nil, rerr
		}
		if serr := settledError(now, p.answer); serr != nil {
			return nil, serr
		}
	}
	if err != nil {
		return nil, err
	}
	return e.resumeStep(ctx, answered, p.client, e.opts.ResumeWait)
}

// resumeStep resumes the agent with the answers of doc's model step when
// every call of the step has one and the agent does not have them yet.
// The caller has started the step's span (startResume).
func (e *engine) resumeStep(ctx context.Context, doc *Call, client string, wait time.Duration) (*ResumeOutcome, error) {
	res := &ResumeOutcome{Call: doc}
	unresumed, err := e.ledger.Unresumed(ctx, doc.UserID, doc.SessionID)
	if err != nil {
		return nil, err
	}
	var open []*Call
	for _, d := range unresumed {
		switch {
		case d.Step != doc.Step:
		case d.Status == StatusPending:
			res.Waiting = append(res.Waiting, d.ID)
		default:
			open = append(open, d)
		}
	}
	if len(res.Waiting) > 0 || len(open) == 0 {
		return res, nil
	}
	h, err := e.acquire(ctx, doc.UserID, doc.SessionID, client, wait)
	if errors.Is(err, sessionstore.ErrBusy) {
		res.Deferred = true
		return res, nil
	}
	if errors.Is(err, sessionstore.ErrNotFound) {
		// The session is gone; nothing will ever take these answers.
		return res, e.ledger.MarkResumed(ctx, open)
	}
	if err != nil {
		return nil, err
	}
	sess, err := e.loadRecent(ctx, h.lease, doc.UserID, doc.SessionID)
	if err == nil {
		err = e.repairTail(ctx, sess, nil, knownCalls(unresumed))
	}
	if err != nil {
		e.release(ctx, h)
		return nil, err
	}
	// Replaying answers would re-run the model, and replaying an approval
	// would re-run the tool: the session, read under the lease, says
	// which answers an earlier resume already delivered.
	todo := undelivered(sess, open)
	if len(todo) == 0 {
		e.release(ctx, h)
		return res, e.ledger.MarkResumed(ctx, open)
	}
	answers, approvals := splitConfirmations(todo)
	if len(answers) > 0 && len(approvals) > 0 {
		// ADK runs approved tools from the latest user event only, and
		// leaves that whole event out of what the model reads: other
		// answers of the step sent along would be lost (the model would
		// see their placeholders). They go first, in an event of their own.
		ev := session.NewEvent(ctx, "baton-answers-"+platform.NewUUID(ctx))
		ev.Author = "user"
		ev.Content = &genai.Content{Role: genai.RoleUser, Parts: responseParts(answers, true)}
		if err := e.sessions.AppendEvent(ctx, sess, ev); err != nil {
			e.release(ctx, h)
			return nil, fmt.Errorf("deliver answers of step %q: %w", doc.Step, err)
		}
		todo = approvals
	}
	msg := &genai.Content{Role: genai.RoleUser, Parts: responseParts(todo, true)}
	res.Turn = transcript.TurnOf(sess.Events(), doc.Step, doc.Invocation)
	res.Invocation, err = e.start(ctx, invocationRun{user: doc.UserID, session: doc.SessionID, chat: doc.Chat, client: client, msg: msg, held: h,
		resumed: open, closesDocs: len(unresumed) == len(open)})
	return res, err
}

// confirms reports whether c is answered by a tool confirmation: ADK runs
// its tool again from the latest user event.
func confirms(c *Call) bool {
	return c.Kind == KindApproval || c.Kind == KindInput
}

func answerNoun(c *Call) string {
	if c.Kind == KindInput {
		return "answer"
	}
	return "approval"
}

// responseParts turns settled calls into the function responses the agent
// receives. resuming is false when the user moved on: an approval that was
// granted but never delivered is then reported as not run, since ADK only
// runs confirmed tools from the latest user event.
func responseParts(calls []*Call, resuming bool) []*genai.Part {
	parts := make([]*genai.Part, 0, len(calls))
	for _, c := range calls {
		var a Answer
		if c.Answer != nil {
			a = *c.Answer
		}
		fr := &genai.FunctionResponse{ID: c.ID, Name: c.Tool}
		switch {
		case c.Status == StatusResolved && c.Kind == KindInput && resuming:
			fr.Name = toolconfirmation.FunctionCallName
			fr.Response = map[string]any{"confirmed": true, "payload": inputReplyPayload(c, a)}
		case c.Status == StatusResolved && c.Kind == KindApproval && resuming:
			fr.Name = toolconfirmation.FunctionCallName
			fr.Response = map[string]any{"confirmed": *a.Approved, "payload": a.Payload}
		case c.Status == StatusResolved && confirms(c):
			fr.ID = c.OriginalID
			fr.Response = map[string]any{"error": "not run: the user sent a new message before the " + answerNoun(c) + " was processed"}
		case c.Status == StatusResolved && a.Error != "":
			fr.Response = map[string]any{"error": a.Error}
		case c.Status == StatusResolved:
			fr.Response, fr.Parts = a.Output, responseFiles(a)
		default:
			fr.ID = c.OriginalID
			fr.Response = map[string]any{"error": settledReason(c)}
		}
		parts = append(parts, &genai.Part{FunctionResponse: fr})
	}
	return parts
}

func settledReason(c *Call) string {
	if c.Reason != "" {
		return c.Reason
	}
	if c.Status == StatusExpired {
		return fmt.Sprintf("no result within %s", durationText(c.Expires.Sub(c.Created)))
	}
	return "cancelled: the user sent a new message before this call was answered"
}

// durationText writes a duration the way a person would: "10m", "1h30m".
func durationText(d time.Duration) string {
	d = d.Round(time.Second)
	s := d.String()
	for _, suffix := range []string{"m0s", "h0m"} {
		if len(s) > len(suffix) && s[len(s)-len(suffix):] == suffix {
			s = s[:len(s)-len(suffix)+1]
		}
	}
	return s
}
