package toolcallback

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/platform"
	"google.golang.org/adk/v2/session"
	"google.golang.org/genai"

	"github.com/baton-run/baton/sessionstore"
	"github.com/baton-run/baton/userinput"
)

// ErrNoLiveInput: AskLive was called outside an invocation of a Team.
var ErrNoLiveInput = errors.New("no invocation to ask in")

// liveAsker is what AskLive needs of the invocation its tool runs in:
// push shows the question to the invocation's readers (a turn's stream, a
// live segment's client).
type liveAsker struct {
	e      *engine
	client string
	push   func(*session.Event)
}

// AskLive asks a person req while the calling tool (named tool, the name
// the model called) keeps running, and returns the answer, or ErrExpired
// once ctx is done or wait has passed; the question is then closed and a
// late answer refused. Callers bound wait below their own deadline, to
// leave time to tell the server.
//
// A tool that must have a person's answer before it returns (an MCP server
// of 2025-11-25 sends elicitation/create on the live call and waits on that
// connection) cannot pause: AskLive keeps the turn open instead. It is the
// one place where an instance waits for a person, bounded by the caller's
// deadline.
//
// The question gets a ledger record of kind KindInput, marked live, so that
// an answer is accepted exactly once, from the device that started the
// turn, on any instance (Team.Resume records it and resumes nothing); the
// asking instance watches the record. The record is written resumed, with
// no sweep time: no resume, repair, cancellation or Sweep ever delivers it
// to the agent, since the tool returns the answer itself. The form is
// streamed to the turn's readers as a browser call of userinput.ToolName (not
// stored: the tool's response follows in the same stream). Pending does
// not list it: a reloaded page does not see the question again.
func AskLive(ctx agent.Context, tool string, req userinput.Request, wait time.Duration) (*userinput.Reply, error) {
	tools := pausingToolsFrom(ctx)
	if tools == nil || tools.live == nil {
		return nil, ErrNoLiveInput
	}
	la := tools.live
	shown := req
	shown.State = ""
	input, err := json.Marshal(shown)
	if err != nil {
		return nil, fmt.Errorf("encode input request: %w", err)
	}
	now := platform.Now(ctx)
	id := "live-" + platform.NewUUID(ctx)
	doc := &callDoc{
		ID: id, App: la.e.app, Scope: la.e.ledger.scope(la.e.agent), Agent: la.e.agent, User: ctx.UserID(), Session: ctx.SessionID(),
		Invocation: ctx.InvocationID(), Client: la.client, Tool: tool, Kind: string(KindInput), Step: id,
		OriginalID: ctx.FunctionCallID(), Input: input, Live: true, Status: string(StatusPending),
		Created: now, Expires: now.Add(wait), GCAt: now.Add(wait + la.e.opts.Retention), Resumed: true,
	}
	ref := la.e.ledger.ref(doc.User, doc.Session, id)
	if _, err := ref.Create(ctx, doc); err != nil {
		return nil, fmt.Errorf("record live input request: %w", sessionstore.FirestoreError(err))
	}
	la.push(liveFormEvent(ctx, id, input))
	waitCtx, cancel := context.WithDeadline(ctx, doc.Expires)
	defer cancel()
	answered, err := la.e.watchCall(waitCtx, ref)
	if answered == nil {
		answered, err = la.e.closeLive(context.WithoutCancel(ctx), ref, err)
	}
	if err != nil {
		return nil, err
	}
	var a Answer
	if err := json.Unmarshal(answered.Answer, &a); err != nil {
		return nil, fmt.Errorf("decode answer to %q: %w", id, err)
	}
	responses, err := userinput.Responses(a.Output["responses"])
	if err != nil {
		return nil, err
	}
	return &userinput.Reply{Round: req.Round, Responses: responses}, nil
}

// liveFormEvent shows the question as a browser call of userinput.ToolName.
func liveFormEvent(ctx agent.Context, id string, input []byte) *session.Event {
	var args map[string]any
	_ = json.Unmarshal(input, &args) // encoded just before
	args["live"] = true
	ev := session.NewEvent(ctx, ctx.InvocationID())
	ev.Author = ctx.AgentName()
	ev.Content = &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{{FunctionCall: &genai.FunctionCall{ID: id, Name: userinput.ToolName, Args: args}}}}
	ev.LongRunningToolIDs = []string{id}
	return ev
}

// watchCall waits for the record at ref to be answered, and returns it
// then; nil once ctx is done.
func (e *engine) watchCall(ctx context.Context, ref *firestore.DocumentRef) (*callDoc, error) {
	it := ref.Snapshots(ctx)
	defer it.Stop()
	for {
		snap, err := it.Next()
		if err != nil {
			return nil, err
		}
		doc, _, err := decodeCall(snap)
		if err != nil {
			return nil, err
		}
		if Status(doc.Status) == StatusResolved {
			return doc, nil
		}
		if Status(doc.Status) != StatusPending {
			return nil, fmt.Errorf("%w: call %q is %s", ErrExpired, doc.ID, doc.Status)
		}
	}
}

// closeLive expires a live question nobody answered in time (first writer
// wins: an answer that got there first is returned instead). cause is why
// the watch ended.
func (e *engine) closeLive(ctx context.Context, ref *firestore.DocumentRef, cause error) (*callDoc, error) {
	doc, snap, err := e.ledger.read(ctx, ref)
	if err != nil {
		return nil, err
	}
	if Status(doc.Status) == StatusResolved {
		return doc, nil
	}
	if Status(doc.Status) == StatusPending {
		_, err = ref.Update(ctx, []firestore.Update{
			{Path: "status", Value: string(StatusExpired)},
			{Path: "resolved", Value: platform.Now(ctx)},
		}, firestore.LastUpdateTime(snap.UpdateTime))
		if errors.Is(sessionstore.FirestoreError(err), sessionstore.ErrConflict) {
			return e.closeLive(ctx, ref, cause)
		}
		if err != nil {
			return nil, fmt.Errorf("expire live input request: %w", sessionstore.FirestoreError(err))
		}
	}
	return nil, fmt.Errorf("%w: no answer to %q in time (%v)", ErrExpired, doc.ID, cause)
}
