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
	Token string
	// Operator, when set, names the operator who answers for the user
	// (the console): no client check applies, ClientID is not needed, and
	// the record says who answered ("operator:" and the name). Everything
	// else is a client's answer: first writer wins, the same resume.
	Operator string
	Answer   Answer
}

// OperatorPrefix begins the answering client recorded for an operator's
// answer (ResumeRequest.Operator).
const OperatorPrefix = "operator:"

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
//
// How an answer is taken is decided once: Resume finds the call (findCall)
// and, when the read found it with its session, the records of its model
// step (lookStep); planResume decides from that alone (refuse with which
// error, take it in one commit, or record it and resume under the lease);
// carryOutResume does what the plan says.
func (t *Team) Resume(ctx context.Context, r ResumeRequest) (_ *ResumeOutcome, err error) {
	v, err := t.findCall(ctx, r)
	if err != nil {
		return nil, err
	}
	ctx, span := startResume(ctx, v.call)
	defer func() {
		endSpan(span, err)
		if errors.As(err, new(*AlreadyResolvedError)) {
			instruments().duplicates.Add(ctx, 1, kindAttr(v.call.Kind))
		}
	}()
	e := t.engine(v.call.Agent)
	if v.step, err = e.lookStep(ctx, v); err != nil {
		return nil, err
	}
	p := e.planResume(ctx, r, v)
	out, err := e.carryOutResume(ctx, p)
	if err == nil && isRemoteQuestion(out.Call) {
		e.remoteAnswered(ctx, out.Call)
	}
	return out, err
}

// startResume starts the span of resuming c's model step.
func startResume(ctx context.Context, c *Call) (context.Context, trace.Span) {
	return tracer.Start(ctx, "baton.resume", trace.WithAttributes(
		attribute.String("baton.session.id", c.SessionID), attribute.String("baton.step", c.Step)))
}

// resumeView is what a resume knows of its call before it decides.
type resumeView struct {
	call  *Call // as read
	token bool  // the call was named by a token
	// sess is the chat's active session, read with the call in one round
	// trip; nil when the call was found otherwise. keep keeps the session
	// an invocation leaves as the chat's warm copy.
	sess *sessionstore.Session
	keep func(*sessionstore.Session)
	// step is the session's records not yet resumed (the call's model
	// step among them), read when the answer may be taken in one commit.
	step []*Call
}

// findCall reads the call r answers: by its token; else with the chat,
// the session it is believed to point at (see activeSessions) and the
// call in that session, in one round trip, and, when the call is not
// there, in the chat's sessions one by one (resumeFound).
func (t *Team) findCall(ctx context.Context, r ResumeRequest) (resumeView, error) {
	if r.Token != "" {
		// The token is verified here, once, and the record it names read
		// once.
		c, err := t.ledger.ByToken(ctx, r.Token)
		if errors.Is(err, ErrCallNotFound) {
			err = t.goneWithChat(ctx, err)
		}
		return resumeView{call: c, token: true}, err
	}
	if err := validIDs("user id", r.UserID, "chat id", r.ChatID, "call id", r.CallID); err != nil {
		return resumeView{}, err
	}
	if r.Operator == "" {
		if err := validIDs("client id", r.ClientID); err != nil {
			return resumeView{}, err
		}
	}
	t.memory.forget(r.UserID, r.ChatID) // the resume writes the session
	guess := t.memory.guess(r.UserID, r.ChatID)
	st, err := t.sessions.ReadChat(ctx, sessionstore.ChatRead{App: t.app, User: r.UserID, ChatID: r.ChatID, SessionID: guess,
		Shared: !t.opts.SessionStateOnly, Also: []sessionstore.DocName{t.ledger.Doc(r.UserID, guess, r.CallID)}})
	if err != nil {
		return resumeView{}, err
	}
	if st.Chat == nil {
		return resumeView{}, fmt.Errorf("%w: chat %q", sessionstore.ErrNotFound, r.ChatID)
	}
	if st.Chat.Deleted != nil {
		// A late answer to a deleted chat's call.
		return resumeView{}, fmt.Errorf("%w: %q", ErrChatDeleted, r.ChatID)
	}
	t.memory.points(r.UserID, r.ChatID, st.Chat.SessionID)
	if st.Session == nil || !st.Also[0].Exists() {
		c, err := t.resumeFound(ctx, r.UserID, r.CallID, st.Chat)
		return resumeView{call: c}, err
	}
	c, err := ledger.Found(st.Also[0])
	return resumeView{call: c, sess: st.Session, keep: t.memory.keeper(st.Chat)}, err
}

// goneWithChat is err, a token's call not found, or ErrChatDeleted when
// the call's chat was deleted with it.
func (t *Team) goneWithChat(ctx context.Context, err error) error {
	var te *ledger.TokenCallError
	if !errors.As(err, &te) {
		return err
	}
	chatID, ok := sessionstore.ChatOfSession(te.Session)
	if !ok {
		return err
	}
	if chat, cerr := t.sessions.GetChat(ctx, t.app, te.User, chatID); cerr == nil && chat.Deleted != nil {
		return fmt.Errorf("%w: %q", ErrChatDeleted, chatID)
	}
	return err
}

// resumeFound finds a call the read did not find with the chat: one of
// its active session's, or, answered late, one of a session the chat
// retired (where it was cancelled).
func (t *Team) resumeFound(ctx context.Context, user, id string, chat *sessionstore.Chat) (*Call, error) {
	sids := []string{chat.SessionID}
	for _, sid := range slices.Backward(chat.Retired) {
		sids = append(sids, sid)
	}
	for _, sid := range sids {
		c, err := t.ledger.Get(ctx, user, sid, id)
		if errors.Is(err, ErrCallNotFound) {
			continue
		}
		return c, err
	}
	return nil, fmt.Errorf("%w: %q", ErrCallNotFound, id)
}

// lookStep reads the records of v's session not yet resumed, when the
// answer may be taken in one commit: the call is pending and was read
// with its session. Nil otherwise: the long way reads them after
// recording the answer.
func (e *engine) lookStep(ctx context.Context, v resumeView) ([]*Call, error) {
	if v.sess == nil || v.call.Status != StatusPending {
		return nil, nil
	}
	return e.ledger.Unresumed(ctx, v.call.UserID, v.call.SessionID)
}

// resumeWay is how an answer is taken.
type resumeWay int

const (
	// resumeRefuse writes nothing: err says why.
	resumeRefuse resumeWay = iota
	// resumeAtOnce records the answer, takes the session's lease and
	// delivers the step's answers in one commit, conditional on the record
	// and the session being as read (resumeAtOnce).
	resumeAtOnce
	// resumeRecord records the answer first (the first writer wins) and,
	// when it completes its model step, delivers the step's answers under
	// the session's lease (recordAnswer).
	resumeRecord
)

// resumePlan is how one answer is taken, as planResume decided it.
type resumePlan struct {
	way resumeWay
	err error // resumeRefuse
	// call is the call answered, as read; answer the answer, by the
	// answering client ("" for a token's holder).
	call   *Call
	answer Answer
	by     string
	// client is the client the resumed invocation serves: the answering
	// one, else the one that started the turn.
	client string
	// For resumeAtOnce: the session as read (with keep, as in
	// resumeView); the write that records the answer and the call as it
	// records it (answered); the step's calls whose answers the run
	// delivers (resumed, answered first) and, of those, the ones the
	// session does not have yet (todo); closesDocs: resumed are all the
	// session's open records; turn is the turn the step belongs to.
	sess       *sessionstore.Session
	keep       func(*sessionstore.Session)
	write      []sessionstore.Write
	answered   *Call
	resumed    []*Call
	todo       []*Call
	closesDocs bool
	turn       string
}

// planResume decides how r's answer to the call v found is taken. It
// reads and writes nothing.
func (e *engine) planResume(ctx context.Context, r ResumeRequest, v resumeView) resumePlan {
	by := r.ClientID
	if r.Operator != "" {
		by = OperatorPrefix + r.Operator
	}
	if err := e.acceptable(ctx, v.call, r.Answer, by, v.token || r.Operator != ""); err != nil {
		return resumePlan{way: resumeRefuse, err: err}
	}
	p := resumePlan{way: resumeRecord, call: v.call, answer: r.Answer, by: by, client: r.ClientID}
	if p.client == "" {
		p.client = v.call.ClientID
	}
	if v.step == nil || v.call.InCall {
		// Not read with its session (a token's, a late answer's), or
		// settled; or an in-call question, which nothing delivers to the
		// agent: its answer is only recorded.
		return p
	}
	write, answered, err := e.ledger.AnswerWrite(v.call, r.Answer, by, platform.Now(ctx))
	if err != nil {
		return resumePlan{way: resumeRefuse, err: err}
	}
	resumed := []*Call{answered}
	for _, d := range v.step {
		switch {
		case d.Step != v.call.Step || d.ID == v.call.ID:
		case d.Status == StatusPending:
			// The answer that completes the step resumes it; which one
			// that is, only the long way's record-then-look order tells.
			return p
		default:
			resumed = append(resumed, d)
		}
	}
	if _, busy := v.sess.LiveLease(ctx); busy || transcript.NeedsRepair(v.sess.Events(), knownCalls(v.step)) {
		return p // the long way waits for the lease, and repairs under it
	}
	todo := undelivered(v.sess, resumed)
	if answers, approvals := splitConfirmations(todo); len(todo) == 0 || len(answers) > 0 && len(approvals) > 0 {
		return p
	}
	p.way, p.sess, p.keep, p.write, p.answered = resumeAtOnce, v.sess, v.keep, write, answered
	p.resumed, p.todo, p.closesDocs = resumed, todo, len(v.step) == len(resumed)
	p.turn = transcript.TurnOf(v.sess.Events(), v.call.Step, v.call.Invocation)
	return p
}

// acceptable checks answer a, from client by (or, anyClient, a token's
// holder or an operator), to the call c, as read.
func (e *engine) acceptable(ctx context.Context, c *Call, a Answer, by string, anyClient bool) error {
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
	if !anyClient && !c.AnyDevice && by != c.ClientID {
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
	if kind == KindBackground {
		return fmt.Errorf("%w: a background call is answered by its work only", ErrWrongClient)
	}
	if kind == KindRemote {
		return fmt.Errorf("%w: a remote agent's call is answered by its remote only", ErrWrongClient)
	}
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
