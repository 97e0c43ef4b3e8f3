package toolcallback

import (
	"context"
	"sync"
	"time"

	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/tool/toolconfirmation"
	"google.golang.org/genai"

	"github.com/baton-run/baton/a2ui"
	"github.com/baton-run/baton/ledger"
	"github.com/baton-run/baton/sessionstore"
	"github.com/baton-run/baton/transcript"
	"github.com/baton-run/baton/userinput"
)

// pausingTools are the pausing tools one invocation's model requests
// offered, by name. The tools declare themselves when a model request is
// built (pausing.ProcessRequest), so they reach it through the context:
// the one thing of an invocation that travels there. The invocation's
// session service holds the same value and recognises their calls in the
// events it stores.
type pausingTools struct {
	mu    sync.Mutex
	specs map[string]pauseSpec
	asker *questionAsker // for tools that ask while they run (AskInCall)
	// surfaces are what the invocation's calls show (Surface, ShowSurface).
	surfaces a2ui.Calls
	// refused are calls not paused when their event was stored, by id,
	// with why (a background call over the user's bound): their tool
	// returns the reason instead of pausing.
	refused map[string]string
}

// refuse records that call id is not paused, for reason.
func (t *pausingTools) refuse(id, reason string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.refused == nil {
		t.refused = map[string]string{}
	}
	t.refused[id] = reason
}

// refusal is why call id was not paused, if it was refused.
func (t *pausingTools) refusal(id string) (string, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	reason, ok := t.refused[id]
	return reason, ok
}

type pausingToolsKey struct{}

func withPausingTools(ctx context.Context, tools *pausingTools) context.Context {
	return context.WithValue(ctx, pausingToolsKey{}, tools)
}

func pausingToolsFrom(ctx context.Context) *pausingTools {
	tools, _ := ctx.Value(pausingToolsKey{}).(*pausingTools)
	return tools
}

func (t *pausingTools) declare(name string, spec pauseSpec) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.specs == nil {
		t.specs = map[string]pauseSpec{}
	}
	t.specs[name] = spec
}

func (t *pausingTools) spec(name string) (pauseSpec, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	spec, ok := t.specs[name]
	return spec, ok
}

// pausedCall is a call that an event about to be stored pauses.
type pausedCall struct {
	id, tool, step, originalID, invocation, hint string
	args                                         map[string]any
	spec                                         pauseSpec
	input                                        *userinput.Request // KindInput: the request shown
	state                                        string             // KindInput: the server's request state
	surfaces                                     [][]a2ui.Message   // KindSurface: the surfaces shown
	created                                      time.Time
}

// pausedBy returns the calls that ev pauses: calls of the invocation's
// pausing tools (recognised by name, before the tool runs) and ADK's
// confirmation requests for approval tools. prior is the session's history
// before ev, where an approval's original call is found.
func pausedBy(tools *pausingTools, prior session.Events, ev *session.Event) []pausedCall {
	if ev == nil || ev.Partial || ev.Content == nil {
		return nil
	}
	var out []pausedCall
	for _, p := range ev.Content.Parts {
		fc := p.FunctionCall
		if fc == nil {
			continue
		}
		if fc.Name == toolconfirmation.FunctionCallName {
			if d, ok := approvalRequest(prior, ev, fc); ok {
				out = append(out, d)
			}
			continue
		}
		spec, ok := tools.spec(fc.Name)
		if !ok {
			continue
		}
		d := pausedCall{id: fc.ID, tool: fc.Name, step: ev.ID, originalID: fc.ID, invocation: ev.InvocationID,
			args: fc.Args, spec: spec, created: ev.Timestamp}
		if spec.decide != nil {
			shown, pause := spec.decide(prior, fc.ID, fc.Args)
			a2ui.Note(ev, shown)
			tools.surfaces.Decide(shown)
			if !pause {
				continue
			}
			d.surfaces = shown.Surfaces
		}
		out = append(out, d)
	}
	return out
}

// approvalRequest reads ADK's confirmation request fc: the call that needs
// approval, and the model step it belongs to.
func approvalRequest(prior session.Events, ev *session.Event, fc *genai.FunctionCall) (pausedCall, bool) {
	original, err := toolconfirmation.OriginalCallFrom(fc)
	if err != nil || original == nil {
		return pausedCall{}, false
	}
	step := ev.ID
	for i := prior.Len() - 1; i >= 0; i-- {
		if transcript.HoldsCall(prior.At(i), original.ID) {
			step = prior.At(i).ID
			break
		}
	}
	d := pausedCall{
		id: fc.ID, tool: original.Name, step: step, originalID: original.ID, invocation: ev.InvocationID,
		args: original.Args, spec: pauseSpec{Kind: KindApproval}, created: ev.Timestamp,
	}
	tc, ok := confirmationOf(fc.Args)
	if !ok {
		return d, true
	}
	d.hint = tc.Hint
	if req, ok := userinput.Of(tc.Payload); ok {
		// A tool asking for input: the request state leaves the event here,
		// before it is stored or streamed, for the ledger record only.
		shown, state := userinput.TakeState(fc.Args, tc, req)
		d.spec.Kind, d.input, d.state = KindInput, &shown, state
	}
	return d, true
}

// records are the ledger records of the calls ev pauses (pausedBy), as the
// calls they record, the writes that create them in the commit storing ev
// and the writes of that commit that count them in chat's listing; client
// started the invocation.
func (e *engine) records(ctx context.Context, sess *sessionstore.Session, ev *session.Event, tools *pausingTools, client, chat string) (creates, listing []sessionstore.Write, calls []*Call, err error) {
	paused, err := e.admitWork(ctx, sess.UserID(), pausedBy(tools, sess.Events(), ev), tools)
	if err != nil {
		return nil, nil, nil, err
	}
	for _, d := range paused {
		if err := sessionstore.ValidateID("call id", d.id); err != nil {
			return nil, nil, nil, err
		}
		if d.spec.Kind == KindBackground || d.spec.Kind == KindRemote {
			// Readers show it as server work under way (transcript).
			transcript.NoteBackground(ev, d.id)
		}
		c := e.newCall(sess.UserID(), sess.ID(), d, client)
		if c.Work != nil {
			c.Work.TokensPerDay = tokenBudget(ctx) // the turn's: the work's own model calls are held to it
		}
		c.Chat = chat
		w, l, err := e.ledger.Record(c)
		if err != nil {
			return nil, nil, nil, err
		}
		creates, listing, calls = append(creates, w), append(listing, l...), append(calls, c)
	}
	return creates, listing, calls, nil
}

// newCall is the pending call d, which the agent's invocation in session
// sid of user, started by client, paused: its timeout and who may answer
// it are the tool's, or the team's defaults.
func (e *engine) newCall(user, sid string, d pausedCall, client string) *Call {
	timeout := d.spec.Timeout
	if timeout <= 0 {
		timeout = e.opts.CallTimeout
	}
	c := &Call{
		ID: d.id, App: e.app, Agent: e.agent, UserID: user, SessionID: sid, Invocation: d.invocation, ClientID: client,
		Tool: d.tool, Args: d.args, Kind: d.spec.Kind, Step: d.step, OriginalID: d.originalID,
		AnyDevice: d.spec.AnyDevice || (d.spec.Kind == KindApproval && e.opts.ApprovalsAnyDevice),
		Hint:      d.hint, Input: d.input, Surfaces: d.surfaces, Status: StatusPending,
		Created: d.created, Expires: d.created.Add(timeout),
	}
	c.SetInputState(d.state)
	if d.spec.Kind == KindBackground || d.spec.Kind == KindRemote {
		c.Work = &ledger.Work{MaxAttempts: d.spec.attempts}
	}
	if d.spec.Kind == KindRemote {
		c.Remote = &ledger.Remote{PollEvery: d.spec.poll}
		if _, id, err := e.ledger.PushToken(c); err == nil {
			c.Remote.TokenID = id
		}
	}
	return c
}
