package toolcallback

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/platform"
	"google.golang.org/adk/v2/session"
	"google.golang.org/genai"

	"github.com/baton-run/baton/ledger"
	"github.com/baton-run/baton/userinput"
)

// ErrNotInInvocation: AskInCall was called outside an invocation of a
// Team.
var ErrNotInInvocation = errors.New("no invocation to ask in")

// questionAsker is what AskInCall needs of the invocation its tool runs
// in: push shows the question to the invocation's readers (a turn's
// stream, a live segment's client).
type questionAsker struct {
	e      *engine
	client string
	chat   string
	push   func(*session.Event)
}

// AskInCall asks a person req while the calling tool (named tool, the name
// the model called) keeps running, and returns the answer, or ErrExpired
// once ctx is done or wait has passed; the question is then closed and a
// late answer refused. Callers bound wait below their own deadline, to
// leave time to tell the server.
//
// A tool that must have a person's answer before it returns (an MCP server
// of 2025-11-25 sends elicitation/create on the call it is serving and
// waits on that connection) cannot pause: AskInCall keeps the turn open
// instead. It is the one place where an instance waits for a person,
// bounded by the caller's deadline.
//
// The question gets a ledger record of kind KindInput, marked in-call
// (Call.InCall), so that an answer is accepted exactly once, from the
// device that started the turn, on any instance (Team.Resume records it
// and resumes nothing); the asking instance watches the record. The record
// is written resumed, with no sweep time: no resume, repair, cancellation
// or Sweep ever delivers it to the agent, since the tool returns the answer
// itself. The form is streamed to the turn's readers as a browser call of
// userinput.ToolName, and once the question is closed its outcome as that
// call's response (InCallQuestionEvent); neither is stored, since the
// tool's own response follows. Pending lists the question while the turn
// runs, and InCallQuestions follows it, so that a reloaded page, and the
// tabs following the turn from any instance, show it and may answer it.
func AskInCall(ctx agent.Context, tool string, req userinput.Request, wait time.Duration) (*userinput.Reply, error) {
	tools := pausingToolsFrom(ctx)
	if tools == nil || tools.asker == nil {
		return nil, ErrNotInInvocation
	}
	qa := tools.asker
	shown := req
	shown.State = ""
	now := platform.Now(ctx)
	id := "live-" + platform.NewUUID(ctx) // the id's prefix is kept as earlier versions made it
	asked := &Call{
		ID: id, App: qa.e.app, Agent: qa.e.agent, UserID: ctx.UserID(), SessionID: ctx.SessionID(), Chat: qa.chat,
		Invocation: ctx.InvocationID(), ClientID: qa.client, Tool: tool, Kind: KindInput, Step: id,
		OriginalID: ctx.FunctionCallID(), Input: &shown, InCall: true, Status: StatusPending,
		Created: now, Expires: now.Add(wait), Resumed: true,
	}
	if err := qa.e.ledger.Ask(ctx, asked); err != nil {
		return nil, err
	}
	qa.push(InCallQuestionEvent(ctx, asked))
	waitCtx, cancel := context.WithDeadline(ctx, asked.Expires)
	defer cancel()
	closed, err := qa.e.ledger.Await(waitCtx, asked)
	if closed == nil {
		closed, err = qa.e.closeQuestion(context.WithoutCancel(ctx), asked, err)
	}
	if closed != nil {
		qa.push(InCallQuestionEvent(ctx, closed)) // the turn's readers see the question closed
	}
	if err != nil {
		return nil, err
	}
	if closed.Status != StatusResolved || closed.Answer == nil {
		return nil, fmt.Errorf("%w: call %q is %s", ErrExpired, closed.ID, closed.Status)
	}
	responses, err := userinput.Responses(closed.Answer.Output["responses"])
	if err != nil {
		return nil, err
	}
	return &userinput.Reply{Round: req.Round, Responses: responses}, nil
}

// InCallQuestionEvent is how a turn's readers see c, an in-call question
// (c.InCall, AskInCall): while it is pending, the form, a long-running call of
// userinput.ToolName whose input is the question with "live": true; once it is
// closed, the person's response to that call, which the uistream encoder
// sends as the call's output: the answer's output, or an error saying that
// nobody answered in time or that the question was cancelled.
func InCallQuestionEvent(ctx context.Context, c *Call) *session.Event {
	if c.Status != StatusPending {
		return questionOutcome(ctx, c)
	}
	args := map[string]any{"requests": map[string]any{}, "round": 0}
	if c.Input != nil {
		b, _ := json.Marshal(c.Input) // a userinput.Request always encodes
		_ = json.Unmarshal(b, &args)
	}
	args["live"] = true
	ev := session.NewEvent(ctx, c.Invocation)
	ev.Author = c.Agent
	ev.Content = &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{{FunctionCall: &genai.FunctionCall{ID: c.ID, Name: userinput.ToolName, Args: args}}}}
	ev.LongRunningToolIDs = []string{c.ID}
	return ev
}

// questionOutcome is the person's response to c, a closed in-call
// question, as InCallQuestionEvent says.
func questionOutcome(ctx context.Context, c *Call) *session.Event {
	var response map[string]any
	switch a := c.Answer; {
	case c.Status == StatusResolved && a != nil && a.Error != "":
		response = map[string]any{"error": a.Error}
	case c.Status == StatusResolved && a != nil:
		response = a.Output
	case c.Status == StatusCancelled:
		response = map[string]any{"error": "the question was cancelled"}
	default:
		response = map[string]any{"error": "nobody answered in time: the question was closed"}
	}
	ev := session.NewEvent(ctx, c.Invocation)
	ev.Author = "user"
	ev.Content = &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{{FunctionResponse: &genai.FunctionResponse{ID: c.ID, Name: userinput.ToolName, Response: response}}}}
	return ev
}

// closeQuestion expires an in-call question nobody answered in time
// (first writer wins: an answer that got there first is returned
// instead, and a close by someone else as it is now recorded). cause is
// why the wait ended.
func (e *engine) closeQuestion(ctx context.Context, c *Call, cause error) (*Call, error) {
	for {
		closed, err := e.ledger.Expire(ctx, c, platform.Now(ctx))
		if err == nil {
			return closed, fmt.Errorf("%w: no answer to %q in time (%v)", ErrExpired, c.ID, cause)
		}
		if !errors.Is(err, ledger.ErrChanged) {
			return nil, fmt.Errorf("expire in-call question: %w", err)
		}
		if c, err = e.ledger.Get(ctx, c.UserID, c.SessionID, c.ID); err != nil {
			return nil, err
		}
		if c.Status == StatusResolved {
			return c, nil
		}
		if c.Status != StatusPending {
			return c, fmt.Errorf("%w: call %q is %s", ErrExpired, c.ID, c.Status)
		}
	}
}
