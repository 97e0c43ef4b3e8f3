package toolcallback

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/adk/v2/platform"
	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/tool/toolconfirmation"
	"google.golang.org/genai"

	"github.com/baton-run/baton/ledger"
	"github.com/baton-run/baton/sessionstore"
	"github.com/baton-run/baton/transcript"
)

// ResumeRequest is an answer to one paused call, identified either by the
// user, chat and call ids (with the answering client) or by a call token.
type ResumeRequest struct {
	UserID   string
	ChatID   string
	CallID   string
	ClientID string
	// Token, when set, identifies and authorises the call instead of the
	// ids above (see Team.Token). No client check applies.
	Token  string
	Answer Answer
}

// ResumeOutcome is what an accepted answer led to.
type ResumeOutcome struct {
	Call *Call // the call as now recorded
	// Waiting lists calls of the same model step still without an answer;
	// the agent resumes once they have one.
	Waiting []string
	// Deferred is true when the step is complete but the session stayed
	// busy: the answer is recorded and Sweep (or the next turn) will
	// deliver it.
	Deferred bool
	// Invocation is the resumed agent, nil when nothing was resumed.
	Invocation *Invocation
	// Turn is the invocation id of the turn the resumed agent continues
	// (see StartsTurn), set with Invocation.
	Turn string
}

// Resume answers a call of a chat, r.ChatID; with a token, the token
// names the call's session instead. An answer to a call of an agent the
// chat has left finds the call cancelled.
func (t *Team) Resume(ctx context.Context, r ResumeRequest) (*ResumeOutcome, error) {
	if r.Token != "" {
		// The token is verified here, once, and the record it names read
		// once.
		c, err := t.ledger.ByToken(ctx, r.Token)
		if err != nil {
			return nil, err
		}
		r.UserID, r.CallID = c.UserID, c.ID
		return t.engine(c.Agent).resume(ctx, r, c)
	}
	if err := validIDs("user id", r.UserID, "chat id", r.ChatID, "client id", r.ClientID, "call id", r.CallID); err != nil {
		return nil, err
	}
	t.memory.forget(r.UserID, r.ChatID) // the resume writes the session
	// One round trip reads the chat, the session it is believed to point
	// at (see activeSessions) and the call in that session.
	guess := t.memory.guess(r.UserID, r.ChatID)
	st, err := t.sessions.ReadChat(ctx, sessionstore.ChatRead{App: t.app, User: r.UserID, ChatID: r.ChatID, SessionID: guess,
		Shared: !t.opts.SessionStateOnly, Also: []sessionstore.DocName{t.ledger.Doc(r.UserID, guess, r.CallID)}})
	if err != nil {
		return nil, err
	}
	if st.Chat == nil {
		return nil, fmt.Errorf("%w: chat %q", sessionstore.ErrNotFound, r.ChatID)
	}
	t.memory.points(r.UserID, r.ChatID, st.Chat.SessionID)
	if st.Session != nil && st.Also[0].Exists() {
		c, err := ledger.Found(st.Also[0])
		if err != nil {
			return nil, err
		}
		if res, err := t.engine(c.Agent).fastResume(ctx, r, found{c, st.Session, t.memory.keeper(st.Chat)}); res != nil || err != nil {
			return res, err
		}
		return t.engine(c.Agent).resume(ctx, r, c)
	}
	return t.resumeFound(ctx, r, st.Chat)
}

// resumeFound answers a call the read did not find with the chat: one of
// its active session's, or, answered late, one of a session the chat
// retired (where it was cancelled).
func (t *Team) resumeFound(ctx context.Context, r ResumeRequest, chat *sessionstore.Chat) (*ResumeOutcome, error) {
	sids := []string{chat.SessionID}
	for _, sid := range slices.Backward(chat.Retired) {
		sids = append(sids, sid)
	}
	for _, sid := range sids {
		c, err := t.ledger.Get(ctx, r.UserID, sid, r.CallID)
		if errors.Is(err, ErrCallNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		return t.engine(c.Agent).resume(ctx, r, c)
	}
	return nil, fmt.Errorf("%w: %q", ErrCallNotFound, r.CallID)
}

// resume records an answer to the call c, as read, and, when it
// completes its model step, resumes the agent once with the answers of every
// call of that step. The caller has checked r's ids or its token.
//
// The answer is accepted once: the first writer wins, and a later answer
// gets an *AlreadyResolvedError carrying the recorded outcome, without
// running anything again.
func (e *engine) resume(ctx context.Context, r ResumeRequest, c *Call) (*ResumeOutcome, error) {
	by := r.ClientID
	if err := e.acceptable(ctx, c, r.Answer, by, r.Token != ""); err != nil {
		return nil, err
	}
	answered, err := e.ledger.Answer(ctx, c, r.Answer, by, platform.Now(ctx))
	if errors.Is(err, ledger.ErrChanged) {
		// Another answer (or the sweeper) got there first.
		now, rerr := e.ledger.Get(ctx, c.UserID, c.SessionID, c.ID)
		if rerr != nil {
			return nil, rerr
		}
		if serr := settledError(now, r.Answer); serr != nil {
			return nil, serr
		}
	}
	if err != nil {
		return nil, err
	}
	if by == "" {
		by = c.ClientID
	}
	return e.resumeStep(ctx, answered, by, e.opts.ResumeWait)
}

// acceptable checks answer a, from client by (or a token's holder), to
// the call c, as read.
func (e *engine) acceptable(ctx context.Context, c *Call, a Answer, by string, token bool) error {
	answer, err := json.Marshal(a)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidAnswer, err)
	}
	if len(answer) > e.opts.MaxAnswerBytes {
		return fmt.Errorf("%w: %d bytes, limit %d", ErrAnswerTooLarge, len(answer), e.opts.MaxAnswerBytes)
	}
	if err := CheckAnswer(c, a); err != nil {
		return err
	}
	if !token && !c.AnyDevice && by != c.ClientID {
		return fmt.Errorf("%w: call %q", ErrWrongClient, c.ID)
	}
	if err := settledError(c, a); err != nil {
		return err
	}
	if now := platform.Now(ctx); !now.Before(c.Expires) {
		return fmt.Errorf("%w: call %q expired at %s", ErrExpired, c.ID, c.Expires.Format(time.RFC3339))
	}
	return nil
}

// settledError is the error for answer a to a call that is no longer
// pending, or nil if it is.
func settledError(c *Call, a Answer) error {
	switch c.Status {
	case StatusPending:
		return nil
	case StatusResolved:
		return &AlreadyResolvedError{Call: c, Same: c.SameAnswer(a)}
	default:
		return fmt.Errorf("%w: call %q is %s", ErrExpired, c.ID, c.Status)
	}
}

func checkAnswer(kind Kind, a Answer) error {
	if kind == KindApproval {
		if a.Approved == nil || a.Output != nil || a.Error != "" {
			return fmt.Errorf("%w: an approval needs a decision (approved true or false) and nothing else", ErrInvalidAnswer)
		}
		return nil
	}
	if a.Approved != nil || a.Payload != nil {
		return fmt.Errorf("%w: a %s call takes an output or an error, not an approval", ErrInvalidAnswer, kind)
	}
	if (a.Output == nil) == (a.Error == "") {
		return fmt.Errorf("%w: set exactly one of output and error", ErrInvalidAnswer)
	}
	return nil
}

// resumeStep resumes the agent with the answers of doc's model step when
// every call of the step has one and the agent does not have them yet.
func (e *engine) resumeStep(ctx context.Context, doc *Call, client string, wait time.Duration) (_ *ResumeOutcome, err error) {
	ctx, span := tracer.Start(ctx, "baton.resume", trace.WithAttributes(
		attribute.String("baton.session.id", doc.SessionID), attribute.String("baton.step", doc.Step)))
	defer func() { endSpan(span, err) }()
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
	res.Invocation, err = e.start(ctx, invocationRun{user: doc.UserID, session: doc.SessionID, client: client, msg: msg, held: h,
		resumed: open, closesDocs: len(unresumed) == len(open)})
	return res, err
}

// undelivered returns the calls that no user event of sess answers yet.
func undelivered(sess *sessionstore.Session, calls []*Call) []*Call {
	answered := map[string]bool{}
	for ev := range sess.Events().All() {
		if ev.Author != "user" || ev.Content == nil {
			continue
		}
		for _, p := range ev.Content.Parts {
			if p.FunctionResponse != nil {
				answered[p.FunctionResponse.ID] = true
			}
		}
	}
	var out []*Call
	for _, c := range calls {
		if !answered[c.ID] && !answered[c.OriginalID] {
			out = append(out, c)
		}
	}
	return out
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

// splitConfirmations separates the approvals of calls from the other
// answers.
func splitConfirmations(calls []*Call) (answers, approvals []*Call) {
	for _, c := range calls {
		if confirms(c) {
			approvals = append(approvals, c)
		} else {
			answers = append(answers, c)
		}
	}
	return answers, approvals
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
			fr.Response = a.Output
		default:
			fr.ID = c.OriginalID
			fr.Response = map[string]any{"error": settledReason(c)}
		}
		parts = append(parts, &genai.Part{FunctionResponse: fr})
	}
	return parts
}

func settledReason(c *Call) string {
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
