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
// streamed to the turn's readers as a browser call of userinput.ToolName,
// and once the question is closed its outcome as that call's response
// (LiveQuestionEvent); neither is stored, since the tool's own response
// follows. Pending lists the question while the turn runs, and
// LiveQuestions follows it, so that a reloaded page, and the tabs
// following the turn from any instance, show it and may answer it.
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
	asked, err := doc.call()
	if err != nil {
		return nil, err
	}
	la.push(LiveQuestionEvent(ctx, asked))
	waitCtx, cancel := context.WithDeadline(ctx, doc.Expires)
	defer cancel()
	answered, err := la.e.watchCall(waitCtx, ref)
	if answered == nil {
		answered, err = la.e.closeLive(context.WithoutCancel(ctx), ref, err)
	}
	// The turn's readers see the question closed.
	closed := answered
	if closed == nil && errors.Is(err, ErrExpired) {
		expired := *doc
		expired.Status = string(StatusExpired)
		closed = &expired
	}
	if closed != nil {
		if c, cerr := closed.call(); cerr == nil {
			la.push(LiveQuestionEvent(ctx, c))
		}
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

// LiveQuestionEvent is how a turn's readers see c, a question asked on a
// live call (c.Live): while it is pending, the form, a long-running call of
// userinput.ToolName whose input is the question with "live": true; once it is
// closed, the person's response to that call, which the uistream encoder
// sends as the call's output: the answer's output, or an error saying that
// nobody answered in time or that the question was cancelled.
func LiveQuestionEvent(ctx context.Context, c *Call) *session.Event {
	if c.Status != StatusPending {
		return liveOutcome(ctx, c)
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

// liveOutcome is the person's response to c, a closed live question, as
// LiveQuestionEvent says.
func liveOutcome(ctx context.Context, c *Call) *session.Event {
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

// openQuestions is the query of a session's live questions still pending.
func (e *engine) openQuestions(user, sid string) firestore.Query {
	return e.ledger.calls(user, sid).Where("live", "==", true).Where("status", "==", string(StatusPending))
}

// liveChange reads what a change of openQuestions' results says: a question
// asked (one already expired is left out: its asker died), or one of those
// shown closed, as now recorded; nil for anything else.
func (e *engine) liveChange(ctx context.Context, ch firestore.DocumentChange, shown map[string]bool) (*Call, error) {
	switch {
	case ch.Kind == firestore.DocumentAdded:
		doc, _, err := decodeCall(ch.Doc)
		if err != nil || !platform.Now(ctx).Before(doc.Expires) {
			return nil, err
		}
		shown[ch.Doc.Ref.ID] = true
		return doc.call()
	case ch.Kind == firestore.DocumentRemoved && shown[ch.Doc.Ref.ID]:
		delete(shown, ch.Doc.Ref.ID)
		doc, _, err := e.ledger.read(ctx, ch.Doc.Ref)
		if errors.Is(err, ErrCallNotFound) {
			return nil, nil // collected already: nothing to show
		}
		if err != nil {
			return nil, err
		}
		return doc.call()
	}
	return nil, nil
}
