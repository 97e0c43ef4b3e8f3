package a2aserver

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"google.golang.org/adk/v2/server/adka2a/v2"
	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/tool/toolconfirmation"
	"google.golang.org/genai"

	"github.com/baton-run/baton/a2ui"
	"github.com/baton-run/baton/errclass"
	"github.com/baton-run/baton/limits"
	"github.com/baton-run/baton/toolcallback"
	"github.com/baton-run/baton/userinput"
)

// executor runs Baton's team for a2a-go's request handler: a task is one
// turn of a chat (the context), paused calls are its input-required
// state, and answers go through the team's ledger.
type executor struct {
	team  *toolcallback.Team
	store *TaskStore
	log   *slog.Logger
	// stale: a task left working for longer has lost its execution (the
	// instance died), and the next message on it takes it over.
	stale time.Duration
}

var _ a2asrv.AgentExecutor = (*executor)(nil)

// clientOf is the Baton client id of a task: the calls a task's turn
// pauses on belong to it, so only messages on that task answer them.
func clientOf(id a2a.TaskID) string { return "a2a~" + string(id) }

// run is one execution: a message on a task, and how its events go out.
type run struct {
	x      *executor
	ec     *a2asrv.ExecutorContext
	user   string
	limits limits.Limits // of the turns the caller starts
	yield  func(a2a.Event, error) bool
	// rich: the client renders A2UI, so surfaces go out as DataParts
	// rather than text.
	rich bool
}

func (r *run) client() string { return clientOf(r.ec.TaskID) }

// Execute runs a message: a new task starts a turn in the chat; a message
// on an input-required task answers its calls (or, without answers, starts
// the chat's next turn on the same task).
func (x *executor) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		if ec.User == nil || !ec.User.Authenticated {
			yield(nil, a2a.ErrUnauthenticated)
			return
		}
		r := &run{x: x, ec: ec, user: ec.User.Name, limits: callerLimits(ec.User), yield: yield, rich: wantsA2UI(ec)}
		m, err := splitMessage(ec.Message)
		if err != nil {
			yield(nil, rpcError(err)) // checked by the request interceptor already
			return
		}
		if ec.StoredTask == nil {
			r.start(ctx, m)
			return
		}
		r.follow(ctx, m)
	}
}

// start runs the first turn of a task. Errors before the turn runs (a busy
// chat, pending calls under the reject policy) come back to the caller
// before the task exists, so nothing about it is stored.
func (r *run) start(ctx context.Context, m message) {
	req := r.turn(m)
	req.MessageID = r.ec.Message.ID
	inv, _, err := r.x.team.Turn(ctx, req)
	switch {
	case errors.Is(err, toolcallback.ErrMessageTaken):
		// The same message, sent again at the same time, took the turn.
		r.yield(nil, fmt.Errorf("%w: %w", errDuplicateMessage, err))
		return
	case err != nil:
		r.yield(nil, r.x.refused(ctx, err))
		return
	}
	if !r.yield(a2a.NewSubmittedTask(r.ec, r.ec.Message), nil) {
		return
	}
	if !r.yield(a2a.NewStatusUpdateEvent(r.ec, a2a.TaskStateWorking, nil), nil) {
		return
	}
	r.stream(ctx, inv, nil)
}

// follow runs a message on an existing task: one the task held already
// was sent again, and runs nothing.
func (r *run) follow(ctx context.Context, m message) {
	if !r.x.store.takeAccepted(r.ec.Message) {
		r.refuseDuplicate()
		return
	}
	if r.ec.StoredTask.Status.State != a2a.TaskStateInputRequired {
		r.awaitOwner(ctx)
		return
	}
	if !r.claim(ctx) {
		return
	}
	m, err := r.takeActions(ctx, m)
	if err != nil {
		r.settle(ctx, []string{problem(err)})
		return
	}
	answers := m.answers
	if len(answers) == 0 {
		inv, _, err := r.x.team.Turn(ctx, r.turn(m))
		if err != nil {
			r.settle(ctx, []string{problem(err)})
			return
		}
		r.stream(ctx, inv, nil)
		return
	}
	inv, problems, ok := r.answerCalls(ctx, answers)
	if !ok {
		return
	}
	if inv == nil {
		r.settle(ctx, problems)
		return
	}
	r.stream(ctx, inv, problems)
}

// answerCalls gives the task's calls their answers, through the ledger,
// and shows each form an answer submitted as it was submitted. It returns
// the resumed agent (nil: none resumed), why answers were not taken, and
// false when the caller has left.
func (r *run) answerCalls(ctx context.Context, answers []answer) (*toolcallback.Invocation, []string, bool) {
	var inv *toolcallback.Invocation
	var problems []string
	for _, a := range answers {
		res, err := r.x.team.Resume(ctx, toolcallback.ResumeRequest{UserID: r.user, ChatID: r.ec.ContextID, CallID: a.id, ClientID: r.client(), Answer: a.answer})
		var already *toolcallback.AlreadyResolvedError
		switch {
		case errors.As(err, &already) && already.Same:
			// A retry: the answer is recorded and nothing runs again.
		case err != nil:
			problems = append(problems, fmt.Sprintf("call %s: %s", a.id, problem(err)))
			continue
		case res.Invocation != nil:
			inv = res.Invocation
		case res.Deferred:
			problems = append(problems, fmt.Sprintf("call %s: answer recorded; the chat is busy and the agent resumes when it is free", a.id))
		}
		if a.form == nil {
			continue
		}
		for _, ev := range submittedEvents(r.ec, a.form, a.action, r.rich) {
			if !r.yield(ev, nil) {
				return nil, nil, false
			}
		}
	}
	return inv, problems, true
}

// claim moves the task from input-required to working and waits until the
// task store has taken that write. Of executions started on the same
// version of the task (duplicate answers on several instances), exactly
// one gets here; the store refuses the others' write, a2a-go ends them,
// and they answer nothing.
func (r *run) claim(ctx context.Context) bool {
	ev := a2a.NewStatusUpdateEvent(r.ec, a2a.TaskStateWorking, nil)
	done := r.x.store.watchCommit(ev)
	defer r.x.store.forgetCommit(ev)
	if !r.yield(ev, nil) {
		return false
	}
	select {
	case err := <-done:
		return err == nil
	case <-ctx.Done():
		return false
	}
}

// awaitOwner handles a message on a task another execution is working on:
// it waits until that execution has moved the task on, then hands a2a-go a
// status the store refuses (its version is gone), so a2a-go answers with
// the task as it now is. A task left working longer than stale has lost
// its execution; this one takes it over and reports what the ledger holds.
func (r *run) awaitOwner(ctx context.Context) {
	for {
		stored, err := r.x.store.Get(ctx, r.ec.TaskID)
		if err != nil {
			r.yield(nil, err)
			return
		}
		st := stored.Task.Status
		if st.State != a2a.TaskStateWorking && st.State != a2a.TaskStateSubmitted {
			r.yield(a2a.NewStatusUpdateEvent(r.ec, st.State, st.Message), nil)
			return
		}
		if st.Timestamp != nil && time.Since(*st.Timestamp) > r.x.stale {
			if r.claim(ctx) {
				r.settle(ctx, []string{"the server stopped while working on this task"})
			}
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// stream reports a running invocation: the model's text as artifact
// updates, then the state the ledger leaves the task in.
func (r *run) stream(ctx context.Context, inv *toolcallback.Invocation, problems []string) {
	var artifact a2a.ArtifactID
	for ev, err := range inv.Events() {
		if err != nil {
			r.x.log.ErrorContext(ctx, "a2a invocation", "task", r.ec.TaskID, "error", err)
			r.yield(a2a.NewStatusUpdateEvent(r.ec, a2a.TaskStateFailed, agentText(r.ec, "internal error")), nil)
			return
		}
		if !r.emit(ev, &artifact) {
			return
		}
	}
	r.settle(ctx, problems)
}

// emit sends what a stored or running event of the agent says: its
// thoughts as a working status, its surfaces, its text as the task's
// artifact (created by the first text, *artifact). It reports false when
// the caller has left.
func (r *run) emit(ev *session.Event, artifact *a2a.ArtifactID) bool {
	if ev.Partial || ev.Content == nil || ev.Author == "user" {
		return true
	}
	var parts []*a2a.Part
	for _, p := range ev.Content.Parts {
		if p.Text != "" && !p.Thought {
			parts = append(parts, a2a.NewTextPart(p.Text))
		}
	}
	if thought := thoughtMessage(r.ec, ev.Content); thought != nil {
		if !r.yield(a2a.NewStatusUpdateEvent(r.ec, a2a.TaskStateWorking, thought), nil) {
			return false
		}
	}
	for _, out := range surfaceEvents(r.ec, ev, r.rich) {
		if !r.yield(out, nil) {
			return false
		}
	}
	if len(parts) == 0 {
		return true
	}
	var out *a2a.TaskArtifactUpdateEvent
	if *artifact == "" {
		out = a2a.NewArtifactEvent(r.ec, parts...)
		*artifact = out.Artifact.ID
	} else {
		out = a2a.NewArtifactUpdateEvent(r.ec, *artifact, parts...)
	}
	return r.yield(out, nil)
}

// settle ends the execution in the state the ledger says: input-required
// with the task's pending calls, else completed (or failed when answers
// were refused and nothing is left to answer). A task whose only pending
// calls are background work stays working: its progress goes out as it is
// stored, and the agent the work's result resumes is followed to its
// answer (followWork) before the task settles.
func (r *run) settle(ctx context.Context, problems []string) {
	var calls []*toolcallback.Call
	for {
		pending, err := r.x.pending(ctx, r.user, r.ec.ContextID, r.client())
		if err != nil {
			r.x.log.ErrorContext(ctx, "a2a pending calls", "task", r.ec.TaskID, "error", err)
			r.yield(a2a.NewStatusUpdateEvent(r.ec, a2a.TaskStateFailed, agentText(r.ec, "internal error")), nil)
			return
		}
		work, others := splitBackground(pending)
		if calls = others; len(others) > 0 || len(work) == 0 {
			break // a background call waiting beside others is not the caller's to answer
		}
		if !r.followWork(ctx, work) {
			return
		}
	}
	if len(calls) == 0 {
		state, msg := a2a.TaskStateCompleted, (*a2a.Message)(nil)
		if len(problems) > 0 {
			state, msg = a2a.TaskStateFailed, agentText(r.ec, strings.Join(problems, "\n"))
		}
		r.yield(a2a.NewStatusUpdateEvent(r.ec, state, msg), nil)
		return
	}
	parts := make([]*a2a.Part, 0, len(calls)+len(problems))
	for _, c := range calls {
		p, err := callPart(c)
		if err != nil {
			r.yield(nil, err)
			return
		}
		parts = append(parts, p)
	}
	for _, p := range problems {
		t := a2a.NewTextPart(p)
		t.SetMeta("validation_error", true)
		parts = append(parts, t)
	}
	r.yield(a2a.NewStatusUpdateEvent(r.ec, a2a.TaskStateInputRequired, a2a.NewMessageForTask(a2a.MessageRoleAgent, r.ec, parts...)), nil)
}

// Cancel cancels a task. The calls it is waiting for are answered with an
// error (an approval with a rejection), so the chat's transcript stays
// valid; the agent then runs once more in the chat, reported to no task. A
// task being worked on is marked canceled; its execution stops reporting
// at its next write, and the model step under way finishes in the chat.
func (x *executor) Cancel(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		if ec.User == nil || !ec.User.Authenticated {
			yield(nil, a2a.ErrUnauthenticated)
			return
		}
		user, client := ec.User.Name, clientOf(ec.TaskID)
		if ec.StoredTask != nil && ec.StoredTask.Status.State == a2a.TaskStateInputRequired {
			calls, err := x.pending(ctx, user, ec.ContextID, client)
			if err != nil {
				yield(nil, err)
				return
			}
			for _, c := range calls {
				a := toolcallback.Answer{Error: "cancelled: the A2A caller canceled the task"}
				switch c.Kind {
				case toolcallback.KindApproval:
					no := false
					a = toolcallback.Answer{Approved: &no}
				case toolcallback.KindInput:
					a = toolcallback.CancelInput(c)
				}
				_, err := x.team.Resume(ctx, toolcallback.ResumeRequest{UserID: user, ChatID: ec.ContextID, CallID: c.ID, ClientID: client, Answer: a})
				if err != nil && !errors.Is(err, toolcallback.ErrAlreadyResolved) && !errors.Is(err, toolcallback.ErrExpired) {
					x.log.WarnContext(ctx, "a2a cancel: answer call", "task", ec.TaskID, "call", c.ID, "error", err)
				}
			}
		}
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCanceled, agentText(ec, "canceled by the caller")), nil)
	}
}

// pending lists the pending calls of a task's turns.
func (x *executor) pending(ctx context.Context, user, chat, client string) ([]*toolcallback.Call, error) {
	state, err := x.team.Pending(ctx, toolcallback.PendingRequest{UserID: user, ChatID: chat, ClientID: client, History: 0})
	if err != nil {
		return nil, err
	}
	own := state.Calls[:0]
	for _, c := range state.Calls {
		if c.ClientID == client {
			own = append(own, c)
		}
	}
	return own, nil
}

// refused is a turn's refusal as the caller reads it (rpcError); a
// server's fault is logged.
func (x *executor) refused(ctx context.Context, err error) error {
	if errclass.Of(err).Fault() {
		x.log.ErrorContext(ctx, "a2a turn", "error", err)
	}
	return rpcError(err)
}

// problem says why an answer or message was not taken, in words for the
// caller: its class's message (errclass).
func problem(err error) string { return errclass.Of(err).Message }

// agentText is a message of the agent on task: like every message Baton
// sends, it names the task and its context (A2A asks a server's messages
// for both).
// thoughtMessage is the model's thought summary in c as A2A carries it: an
// agent message of a working status, whose text parts are marked as ADK's
// A2A conversion marks thoughts (metadata adk_thought: true), so that the
// task's artifact holds the answer alone; nil when c has none.
func thoughtMessage(task a2a.TaskInfoProvider, c *genai.Content) *a2a.Message {
	var parts []*a2a.Part
	for _, p := range c.Parts {
		if p.Text != "" && p.Thought {
			part := a2a.NewTextPart(p.Text)
			part.SetMeta(adka2a.ToA2AMetaKey("thought"), true)
			parts = append(parts, part)
		}
	}
	if len(parts) == 0 {
		return nil
	}
	return a2a.NewMessageForTask(a2a.MessageRoleAgent, task, parts...)
}

func agentText(task a2a.TaskInfoProvider, s string) *a2a.Message {
	return a2a.NewMessageForTask(a2a.MessageRoleAgent, task, a2a.NewTextPart(s))
}

// callPart is a pending call as ADK's A2A executor shows one: a data part
// holding the function call, marked long-running. An approval shows ADK's
// confirmation request, whose answer is {"confirmed": bool, "payload": ...}.
func callPart(c *toolcallback.Call) (*a2a.Part, error) {
	fc := &genai.FunctionCall{ID: c.ID, Name: c.Tool, Args: c.Args}
	switch {
	case c.Kind == toolcallback.KindApproval:
		fc = &genai.FunctionCall{ID: c.ID, Name: toolconfirmation.FunctionCallName, Args: map[string]any{
			"originalFunctionCall": map[string]any{"id": c.OriginalID, "name": c.Tool, "args": c.Args},
			"toolConfirmation":     map[string]any{"hint": c.Hint, "confirmed": false},
		}}
	case c.Kind == toolcallback.KindInput && c.Input != nil:
		// A tool's question: answered by a function response
		// {"responses": {id: {"action", "content"}}}, as a page answers it.
		fc = &genai.FunctionCall{ID: c.ID, Name: userinput.ToolName, Args: map[string]any{
			"server": c.Input.Server, "tool": c.Input.Tool, "message": c.Input.Message, "round": c.Input.Round, "requests": c.Input.Requests,
		}}
	}
	parts, err := adka2a.ToA2AParts([]*genai.Part{{FunctionCall: fc}}, []string{c.ID})
	if err != nil {
		return nil, err
	}
	parts[0].SetMeta("baton_kind", string(c.Kind))
	parts[0].SetMeta("baton_expires", c.Expires.UTC().Format(time.RFC3339))
	return parts[0], nil
}

// answer is a function response a message carries, or an action that
// answers the form call it waits on (form, action).
type answer struct {
	id     string
	answer toolcallback.Answer
	form   *toolcallback.Call
	action a2ui.Action
}

// message is what a client's message brings: what it says (text, files,
// actions on cards) or the answers to paused calls, and the A2UI actions
// it carries, which answer a call waiting on their surface or else are
// said.
type message struct {
	content *genai.Content
	answers []answer
	actions []a2ui.Action
}

// splitMessage converts a message's parts (ADK's A2A conversions, and
// A2UI DataParts) into the content of a turn, the answers to paused calls
// and the A2UI actions.
func splitMessage(msg *a2a.Message) (message, error) {
	var m message
	var rest []*a2a.Part
	for _, p := range msg.Parts {
		if !isA2UIPart(p) {
			rest = append(rest, p)
			continue
		}
		a, err := actionOf(p)
		if err != nil {
			return message{}, err
		}
		m.actions = append(m.actions, a)
	}
	parts, err := adka2a.ToGenAIParts(rest)
	if err != nil {
		return message{}, fmt.Errorf("%w: %w", errclass.ErrBadRequest, err)
	}
	var content []*genai.Part
	for _, p := range parts {
		fr := p.FunctionResponse
		if fr == nil {
			content = append(content, p)
			continue
		}
		if fr.ID == "" {
			return message{}, fmt.Errorf("%w: a function response needs the id of the call it answers", errclass.ErrBadRequest)
		}
		m.answers = append(m.answers, answer{id: fr.ID, answer: answerOf(fr)})
	}
	if len(m.answers) > 0 && (len(content) > 0 || len(m.actions) > 0) {
		return message{}, fmt.Errorf("%w: a message either answers calls or says something, not both", errclass.ErrBadRequest)
	}
	if len(content) == 0 && len(m.answers) == 0 && len(m.actions) == 0 {
		return message{}, fmt.Errorf("%w: the message has no parts the agent can read", errclass.ErrBadRequest)
	}
	if len(content) > 0 {
		m.content = &genai.Content{Role: genai.RoleUser, Parts: content}
	}
	return m, nil
}

// checkAnswers refuses a message on task whose answers the task's calls
// cannot take (toolcallback.CheckAnswer: an action the form did not offer,
// an answer of the wrong shape). TaskStore asks it before it stores the
// message in the task (a2a-go adds a message to its task before the
// execution starts), so a refused message leaves the task as it was and
// its caller gets a JSON-RPC error, as bad input gets a 4xx and writes
// nothing on every transport. An answer to a call no longer pending is the
// execution's to report, in the task's state.
func (x *executor) checkAnswers(ctx context.Context, user string, task *a2a.Task, msg *a2a.Message) error {
	m, err := splitMessage(msg)
	if err != nil || len(m.answers)+len(m.actions) == 0 || task.Status.State != a2a.TaskStateInputRequired {
		return nil // the interceptor checked the message; only answers are checked here
	}
	calls, err := x.pending(ctx, user, task.ContextID, clientOf(task.ID))
	if err != nil {
		return err
	}
	for _, a := range m.answers {
		if i := slices.IndexFunc(calls, func(c *toolcallback.Call) bool { return c.ID == a.id }); i >= 0 {
			if err := toolcallback.CheckAnswer(calls[i], a.answer); err != nil {
				return fmt.Errorf("call %s: %w", a.id, err)
			}
		}
	}
	for _, a := range m.actions {
		c := waitingOn(calls, a.SurfaceID)
		if c == nil {
			continue // on a card: the turn checks it
		}
		ans, err := actionAnswer(a)
		if err == nil {
			err = toolcallback.CheckAnswer(c, ans)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// turn is the turn a message starts: what it says, and its actions on
// cards, which the turn checks against the chat's surfaces.
func (r *run) turn(m message) toolcallback.TurnRequest {
	return toolcallback.TurnRequest{UserID: r.user, ChatID: r.ec.ContextID, ClientID: r.client(), Content: m.content,
		Actions: m.actions, Limits: r.limits}
}

// takeActions sorts a message's A2UI actions on an input-required task:
// an action on a surface one of the task's calls waits on answers that
// call; any other is said, as an action on a card (the message's actions,
// as it returns it).
func (r *run) takeActions(ctx context.Context, m message) (message, error) {
	if len(m.actions) == 0 {
		return m, nil
	}
	calls, err := r.x.pending(ctx, r.user, r.ec.ContextID, r.client())
	if err != nil {
		return message{}, err
	}
	var cards []a2ui.Action
	for _, a := range m.actions {
		c := waitingOn(calls, a.SurfaceID)
		if c == nil {
			cards = append(cards, a)
			continue
		}
		ans, err := actionAnswer(a)
		if err != nil {
			return message{}, fmt.Errorf("%w: %w", toolcallback.ErrInvalidAnswer, err)
		}
		m.answers = append(m.answers, answer{id: c.ID, answer: ans, form: c, action: a})
	}
	if len(m.answers) > 0 && (len(cards) > 0 || m.content != nil) {
		return message{}, fmt.Errorf("%w: a message either answers calls or says something, not both", toolcallback.ErrInvalidAnswer)
	}
	m.actions = cards
	return m, nil
}

// answerOf reads a function response as a ledger answer: a confirmation's
// {"confirmed", "payload"}, a lone {"error": "..."}, or any other object as
// the tool's output.
func answerOf(fr *genai.FunctionResponse) toolcallback.Answer {
	if fr.Name == toolconfirmation.FunctionCallName {
		confirmed, _ := fr.Response["confirmed"].(bool)
		return toolcallback.Answer{Approved: &confirmed, Payload: fr.Response["payload"]}
	}
	if e, ok := fr.Response["error"].(string); ok && len(fr.Response) == 1 {
		return toolcallback.Answer{Error: e}
	}
	out := fr.Response
	if out == nil {
		out = map[string]any{}
	}
	return toolcallback.Answer{Output: out}
}
