package toolcallback

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"cloud.google.com/go/firestore"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/adk/v2/platform"
	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/tool/toolconfirmation"
	"google.golang.org/genai"

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
		doc, snap, err := t.ledger.tokenCall(ctx, &r)
		if err != nil {
			return nil, err
		}
		return t.engine(doc.Agent).resume(ctx, r, doc, snap)
	}
	if err := validIDs("user id", r.UserID, "chat id", r.ChatID, "client id", r.ClientID, "call id", r.CallID); err != nil {
		return nil, err
	}
	t.memory.forget(r.UserID, r.ChatID) // the resume writes the session
	// One round trip reads the chat, the session it is believed to point
	// at (see activeSessions) and the call in that session.
	guess := t.memory.guess(r.UserID, r.ChatID)
	st, err := t.sessions.ReadChat(ctx, sessionstore.ChatRead{App: t.app, User: r.UserID, ChatID: r.ChatID, SessionID: guess,
		Shared: !t.opts.SessionStateOnly, Also: []*firestore.DocumentRef{t.ledger.ref(r.UserID, guess, r.CallID)}})
	if err != nil {
		return nil, err
	}
	if st.Chat == nil {
		return nil, fmt.Errorf("%w: chat %q", sessionstore.ErrNotFound, r.ChatID)
	}
	t.memory.points(r.UserID, r.ChatID, st.Chat.SessionID)
	if st.Session != nil && st.Also[0].Exists() {
		doc, snap, err := decodeCall(st.Also[0])
		if err != nil {
			return nil, err
		}
		if res, err := t.engine(doc.Agent).fastResume(ctx, r, found{doc, snap, st.Session, t.memory.keeper(st.Chat)}); res != nil || err != nil {
			return res, err
		}
		return t.engine(doc.Agent).resume(ctx, r, doc, snap)
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
		doc, snap, err := t.ledger.read(ctx, t.ledger.ref(r.UserID, sid, r.CallID))
		if errors.Is(err, ErrCallNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		return t.engine(doc.Agent).resume(ctx, r, doc, snap)
	}
	return nil, fmt.Errorf("%w: %q", ErrCallNotFound, r.CallID)
}

// resume records an answer to the call doc (read as snap) and, when it
// completes its model step, resumes the agent once with the answers of every
// call of that step. The caller has checked r's ids or its token.
//
// The answer is accepted once: the first writer wins, and a later answer
// gets an *AlreadyResolvedError carrying the recorded outcome, without
// running anything again.
func (e *engine) resume(ctx context.Context, r ResumeRequest, doc *callDoc, snap *firestore.DocumentSnapshot) (*ResumeOutcome, error) {
	answer, err := e.acceptable(ctx, r, doc)
	if err != nil {
		return nil, err
	}
	ref := snap.Ref
	now := platform.Now(ctx)
	sweepAt := now.Add(e.opts.AnswerGrace)
	actx, span := tracer.Start(ctx, "baton.ledger.answer", trace.WithAttributes(attribute.String("baton.call.id", r.CallID)))
	_, err = ref.Update(actx, answerUpdates(r, answer, now, sweepAt), firestore.LastUpdateTime(snap.UpdateTime))
	endSpan(span, err)
	err = sessionstore.FirestoreError(err)
	if errors.Is(err, sessionstore.ErrConflict) {
		// Another answer (or the sweeper) got there first.
		doc, _, rerr := e.ledger.read(ctx, ref)
		if rerr != nil {
			return nil, rerr
		}
		if serr := e.settledError(doc, answer); serr != nil {
			return nil, serr
		}
		return nil, fmt.Errorf("record answer to %q: %w", r.CallID, err)
	}
	if err != nil {
		return nil, fmt.Errorf("record answer to %q: %w", r.CallID, err)
	}
	doc.Status, doc.Answer, doc.ResolvedBy, doc.Resolved, doc.SweepAt = string(StatusResolved), answer, r.ClientID, now, &sweepAt

	client := r.ClientID
	if client == "" {
		client = doc.Client
	}
	return e.resumeStep(ctx, doc, client, e.opts.ResumeWait)
}

// acceptable checks an answer r to the call doc, as read, and returns it
// as the JSON to record.
func (e *engine) acceptable(ctx context.Context, r ResumeRequest, doc *callDoc) ([]byte, error) {
	answer, err := json.Marshal(r.Answer)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidAnswer, err)
	}
	if len(answer) > e.opts.MaxAnswerBytes {
		return nil, fmt.Errorf("%w: %d bytes, limit %d", ErrAnswerTooLarge, len(answer), e.opts.MaxAnswerBytes)
	}
	check := checkAnswer(Kind(doc.Kind), r.Answer)
	switch Kind(doc.Kind) {
	case KindInput:
		check = checkInputAnswer(doc, r.Answer)
	case KindSurface:
		if c, err := doc.call(); err != nil {
			check = err
		} else {
			check = checkSurfaceAnswer(c, r.Answer)
		}
	}
	if check != nil {
		return nil, check
	}
	if r.Token == "" && !doc.AnyDevice && r.ClientID != doc.Client {
		return nil, fmt.Errorf("%w: call %q", ErrWrongClient, r.CallID)
	}
	if err := e.settledError(doc, answer); err != nil {
		return nil, err
	}
	if now := platform.Now(ctx); !now.Before(doc.Expires) {
		return nil, fmt.Errorf("%w: call %q expired at %s", ErrExpired, doc.ID, doc.Expires.Format(time.RFC3339))
	}
	return answer, nil
}

// answerUpdates records answer, given at now, in a ledger record; Sweep
// resumes its step after sweepAt unless the agent has it by then.
func answerUpdates(r ResumeRequest, answer []byte, now, sweepAt time.Time) []firestore.Update {
	return []firestore.Update{
		{Path: "status", Value: string(StatusResolved)},
		{Path: "answer", Value: answer},
		{Path: "resolvedBy", Value: r.ClientID},
		{Path: "resolved", Value: now},
		{Path: "sweepAt", Value: sweepAt},
	}
}

// settledError is the error for an answer to a call that is no longer
// pending, or nil if it is.
func (e *engine) settledError(doc *callDoc, answer []byte) error {
	switch Status(doc.Status) {
	case StatusPending:
		return nil
	case StatusResolved:
		c, err := doc.call()
		if err != nil {
			return err
		}
		return &AlreadyResolvedError{Call: c, Same: bytes.Equal(doc.Answer, answer)}
	default:
		return fmt.Errorf("%w: call %q is %s", ErrExpired, doc.ID, doc.Status)
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
func (e *engine) resumeStep(ctx context.Context, doc *callDoc, client string, wait time.Duration) (_ *ResumeOutcome, err error) {
	ctx, span := tracer.Start(ctx, "baton.resume", trace.WithAttributes(
		attribute.String("baton.session.id", doc.Session), attribute.String("baton.step", doc.Step)))
	defer func() { endSpan(span, err) }()
	c, err := doc.call()
	if err != nil {
		return nil, err
	}
	res := &ResumeOutcome{Call: c}
	unresumed, _, err := e.ledger.unresumed(ctx, doc.User, doc.Session)
	if err != nil {
		return nil, err
	}
	var open []*callDoc
	for _, d := range unresumed {
		switch {
		case d.Step != doc.Step:
		case Status(d.Status) == StatusPending:
			res.Waiting = append(res.Waiting, d.ID)
		default:
			open = append(open, d)
		}
	}
	if len(res.Waiting) > 0 || len(open) == 0 {
		return res, nil
	}
	h, err := e.acquire(ctx, doc.User, doc.Session, client, wait)
	if errors.Is(err, sessionstore.ErrBusy) {
		res.Deferred = true
		return res, nil
	}
	if errors.Is(err, sessionstore.ErrNotFound) {
		// The session is gone; nothing will ever take these answers.
		return res, e.ledger.markResumed(ctx, open)
	}
	if err != nil {
		return nil, err
	}
	sess, err := e.loadRecent(ctx, h.lease, doc.User, doc.Session)
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
		return res, e.ledger.markResumed(ctx, open)
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
	res.Invocation, err = e.start(ctx, invocationRun{user: doc.User, session: doc.Session, client: client, msg: msg, held: h,
		resumed: open, closesDocs: len(unresumed) == len(open)})
	return res, err
}

// undelivered returns the calls that no user event of sess answers yet.
func undelivered(sess *sessionstore.Session, calls []*callDoc) []*callDoc {
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
	var out []*callDoc
	for _, c := range calls {
		if !answered[c.ID] && !answered[c.OriginalID] {
			out = append(out, c)
		}
	}
	return out
}

// confirms reports whether c is answered by a tool confirmation: ADK runs
// its tool again from the latest user event.
func confirms(c *callDoc) bool {
	return Kind(c.Kind) == KindApproval || Kind(c.Kind) == KindInput
}

func answerNoun(c *callDoc) string {
	if Kind(c.Kind) == KindInput {
		return "answer"
	}
	return "approval"
}

// splitConfirmations separates the approvals of calls from the other
// answers.
func splitConfirmations(calls []*callDoc) (answers, approvals []*callDoc) {
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
func responseParts(calls []*callDoc, resuming bool) []*genai.Part {
	parts := make([]*genai.Part, 0, len(calls))
	for _, c := range calls {
		var a Answer
		if len(c.Answer) > 0 {
			_ = json.Unmarshal(c.Answer, &a) // written by Resume from a valid Answer
		}
		fr := &genai.FunctionResponse{ID: c.ID, Name: c.Tool}
		switch {
		case Status(c.Status) == StatusResolved && Kind(c.Kind) == KindInput && resuming:
			fr.Name = toolconfirmation.FunctionCallName
			fr.Response = map[string]any{"confirmed": true, "payload": inputReplyPayload(c, a)}
		case Status(c.Status) == StatusResolved && Kind(c.Kind) == KindApproval && resuming:
			fr.Name = toolconfirmation.FunctionCallName
			fr.Response = map[string]any{"confirmed": *a.Approved, "payload": a.Payload}
		case Status(c.Status) == StatusResolved && confirms(c):
			fr.ID = c.OriginalID
			fr.Response = map[string]any{"error": "not run: the user sent a new message before the " + answerNoun(c) + " was processed"}
		case Status(c.Status) == StatusResolved && a.Error != "":
			fr.Response = map[string]any{"error": a.Error}
		case Status(c.Status) == StatusResolved:
			fr.Response = a.Output
		default:
			fr.ID = c.OriginalID
			fr.Response = map[string]any{"error": settledReason(c)}
		}
		parts = append(parts, &genai.Part{FunctionResponse: fr})
	}
	return parts
}

func settledReason(c *callDoc) string {
	if Status(c.Status) == StatusExpired {
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
