package live

import (
	"errors"
	"slices"
	"time"

	"google.golang.org/adk/v2/platform"
	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/toolconfirmation"
	"google.golang.org/genai"

	"github.com/baton-run/baton/geminilive"
	"github.com/baton-run/baton/sessionstore"
	"github.com/baton-run/baton/toolcallback"
)

// called takes the model's calls of one step: the model's words so far and
// the calls are stored as its event, in the commit that records those that
// pause (browser and external tools); the client is shown those once
// stored. Tools that run here start at once, off the loops; a long-running
// tool waits for the commit, which tells whether it pauses.
func (c *Conversation) called(calls []*genai.FunctionCall) {
	c.mu.Lock()
	for _, fc := range calls {
		c.waiting[fc.ID], c.held[fc.ID] = true, true
	}
	c.flushUser()
	c.flushModel(calls, false)
	c.unlock()
	for _, fc := range calls {
		if !c.longRunning(fc.Name) {
			c.runTool(fc, nil)
		}
	}
}

// longRunning reports whether the agent's tool name is long-running: it
// may pause (toolcallback's browser and external tools are).
func (c *Conversation) longRunning(name string) bool {
	t, ok := c.agent.Request.Tools[name].(tool.Tool)
	return ok && t.IsLongRunning()
}

// paused shows the client the calls of a stored event that paused, and
// runs its long-running calls that did not.
func (c *Conversation) paused(calls []*genai.FunctionCall, paused []*toolcallback.Call) {
	for _, p := range paused {
		c.send(toolCall(p))
	}
	c.followWork(paused)
	for _, fc := range calls {
		pausedFC := slices.ContainsFunc(paused, func(p *toolcallback.Call) bool { return p.OriginalID == fc.ID })
		if !pausedFC && c.longRunning(fc.Name) {
			c.runTool(fc, nil)
		}
	}
}

// runTool runs the agent's tool for fc on a goroutine of its own, with a
// person's confirmation when it has one, and finishes the call.
func (c *Conversation) runTool(fc *genai.FunctionCall, confirmation *toolconfirmation.ToolConfirmation) {
	c.tools.Add(1)
	go func() {
		defer c.tools.Done()
		resp, actions, err := c.agent.Run(c.seg.Context(c.ctx), fc, confirmation)
		if err != nil {
			resp, actions = &genai.FunctionResponse{ID: fc.ID, Name: fc.Name, Response: map[string]any{"error": err.Error()}}, nil
		}
		c.finish(fc, resp, actions)
	}()
}

// finish takes a tool's outcome: a confirmation request is stored as ADK
// stores one (the tool's response, then the request, which pauses); a
// response goes to the model, then to the store; nil (a long-running tool
// that answers later) does nothing.
func (c *Conversation) finish(fc *genai.FunctionCall, resp *genai.FunctionResponse, actions *session.EventActions) {
	if resp == nil {
		return
	}
	ev := c.responseEvent(c.seg.Agent.Name(), resp)
	if actions != nil {
		asks := actions.RequestedToolConfirmations
		actions.RequestedToolConfirmations = nil // the request's event carries it
		ev.Actions = *actions
		if tc, ok := asks[fc.ID]; ok {
			c.store.add(job{ev: ev})
			c.store.add(job{ev: c.confirmationEvent(fc, tc), after: func(p []*toolcallback.Call) { c.paused(nil, p) }})
			return
		}
	}
	c.deliverStored(resp, job{ev: ev})
}

// deliverStored gives the model resp, then stores j (which holds it): j
// is queued first, so that it keeps its place among the events (the
// model's answer to resp comes after it), and written once resp reached
// the model, or never if it could not (the next holder delivers it). The
// client then learns the outcome.
func (c *Conversation) deliverStored(resp *genai.FunctionResponse, j job) {
	j.delivered = make(chan bool, 1)
	j.after = func([]*toolcallback.Call) { c.send(toolResult(resp)) }
	c.store.add(j)
	j.delivered <- c.deliver(resp)
}

// confirmationEvent is ADK's request for a person's confirmation of fc (an
// adk_request_confirmation call), which the ledger records as an approval,
// or as a question when tc's payload asks for input.
func (c *Conversation) confirmationEvent(fc *genai.FunctionCall, tc toolconfirmation.ToolConfirmation) *session.Event {
	c.mu.Lock()
	turn := c.turn.id
	c.mu.Unlock()
	ev := session.NewEvent(c.ctx, turn)
	ev.Author = c.seg.Agent.Name()
	id := "adk-" + platform.NewUUID(c.ctx)
	ev.Content = &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{{FunctionCall: &genai.FunctionCall{
		ID: id, Name: toolconfirmation.FunctionCallName, Args: map[string]any{"originalFunctionCall": fc, "toolConfirmation": tc},
	}}}}
	ev.LongRunningToolIDs = []string{id}
	return ev
}

// responseEvent is the event of a function response, by author.
func (c *Conversation) responseEvent(author string, resp *genai.FunctionResponse) *session.Event {
	c.mu.Lock()
	turn := c.turn.id
	c.mu.Unlock()
	ev := session.NewEvent(c.ctx, turn)
	ev.Author = author
	ev.Content = &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{{FunctionResponse: resp}}}
	return ev
}

// deliver gives the model resp, when it still waits for it; the call then
// waits no more. False when the model session is gone: the answer stays
// for the next holder to deliver.
func (c *Conversation) deliver(resp *genai.FunctionResponse) bool {
	r := *resp
	r.Scheduling = genai.FunctionResponseSchedulingWhenIdle
	err := c.model.Deliver(&r)
	if errors.Is(err, geminilive.ErrClosed) {
		return false
	}
	// ErrNotPending: the model withdrew the call (the user interrupted);
	// the response is stored all the same, so that no call is left open.
	c.mu.Lock()
	delete(c.waiting, resp.ID)
	delete(c.held, resp.ID)
	c.mu.Unlock()
	return true
}

// answers delivers the answers recorded for the segment's calls, on any
// instance, as they come (toolcallback.LiveSegment.Answers), each once: a
// listen stream that fails is opened again, and finds again the answers
// whose delivery is not stored yet.
func (c *Conversation) answers() {
	taken := map[string]bool{}
	for c.ctx.Err() == nil {
		for call, err := range c.seg.Answers(c.ctx) {
			if err != nil {
				c.r.opts.Logger.Warn("listen for answers", "chat", c.req.ChatID, "error", err)
				break
			}
			if !taken[call.ID] {
				taken[call.ID] = true
				c.answered(call)
			}
		}
		select {
		case <-c.ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

// answered delivers one recorded answer. A browser's (or another
// system's) goes to the model, then to the store with its record closed
// in the same commit. A person's decision is stored, its record closed,
// before the tool runs with it: the tool runs at most once, whatever dies
// when.
func (c *Conversation) answered(call *toolcallback.Call) {
	resp, err := c.seg.Response(call)
	if err != nil {
		c.end(EndClosed, err)
		return
	}
	ev := c.responseEvent("user", resp)
	opts := sessionstore.AppendOptions{Writes: c.seg.Delivered([]*toolcallback.Call{call})}
	if call.Kind == toolcallback.KindApproval || call.Kind == toolcallback.KindInput {
		fc := &genai.FunctionCall{ID: call.OriginalID, Name: call.Tool, Args: call.Args}
		tc := confirmationOf(resp)
		c.store.add(job{ev: ev, opts: opts, after: func([]*toolcallback.Call) {
			if call.Kind == toolcallback.KindInput {
				// The client knows a question by its own id (toolCall):
				// it is settled; the tool's result follows under the
				// model's call id, as an approval's does.
				c.send(toolResult(resp))
			}
			c.runTool(fc, &tc)
		}})
		return
	}
	c.deliverStored(resp, job{ev: ev, opts: opts})
}

// confirmationOf is the person's decision a confirmation's response
// carries.
func confirmationOf(resp *genai.FunctionResponse) toolconfirmation.ToolConfirmation {
	confirmed, _ := resp.Response["confirmed"].(bool)
	return toolconfirmation.ToolConfirmation{Confirmed: confirmed, Payload: resp.Response["payload"]}
}

// toolResult is the message of a call's outcome.
func toolResult(resp *genai.FunctionResponse) ToolResult {
	m := ToolResult{Type: "tool-result", ToolCallID: resp.ID}
	if e, ok := resp.Response["error"].(string); ok && len(resp.Response) == 1 {
		m.ErrorText = e
	} else {
		m.Output = resp.Response
	}
	return m
}
