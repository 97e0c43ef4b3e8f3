package mcpregistry

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/adk/v2/agent"

	"github.com/baton-run/baton/toolcallback"
	"github.com/baton-run/baton/userinput"
)

// A server that speaks 2025-11-25 asks for input with elicitation/create
// on the call's live stream and waits for the answer on the same
// connection. The connection lives on the instance that holds the call, so
// that instance keeps the turn open: toolcallback.AskInCall shows the form to
// the device that started the turn, records the answer in the ledger
// whichever instance receives it, and the waiting handler reads it from
// there. It waits what is left of CallTimeout less a fifth of it (at
// least answerMargin), which lets the server finish; then it declines, and
// the tool's result tells the model that the user did not answer in time.
//
// The request names no call, so the connection attributes it to the one
// call it is running; while it runs several (parallel calls of one model
// step to one server), it declines.

// answerMargin is the least time left to the server, after a question
// nobody answered, to finish the call with the decline.
const answerMargin = 2 * time.Second

// liveCall is a tools/call in flight on a connection.
type liveCall struct {
	ctx      agent.Context
	tool     string // the model's name for it
	deadline time.Time
	rounds   int

	mu      sync.Mutex
	expired string // set when a question went unanswered: what to tell the model
}

// liveCalls are a connection's calls in flight.
type liveCalls struct {
	mu    sync.Mutex
	calls map[*liveCall]bool
}

func (l *liveCalls) add(c *liveCall) func() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.calls == nil {
		l.calls = map[*liveCall]bool{}
	}
	l.calls[c] = true
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		delete(l.calls, c)
	}
}

// only returns the connection's one call in flight, or nil.
func (l *liveCalls) only() *liveCall {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.calls) != 1 {
		return nil
	}
	for c := range l.calls {
		return c
	}
	return nil
}

var decline = &mcp.ElicitResult{Action: userinput.Decline}

// elicit answers an elicitation/create of server's with a person's answer.
func (r *Registry) elicit(c *conn, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	call := c.live.only()
	p := req.Params
	if call == nil || p == nil || p.Mode == "url" || p.URL != "" {
		r.opts.Logger.Warn("MCP elicitation declined: no single call to ask for, or not a form", "server", c.server)
		return decline, nil
	}
	call.mu.Lock()
	call.rounds++
	round := call.rounds
	call.mu.Unlock()
	left := time.Until(call.deadline)
	wait := max(left-max(left/5, answerMargin), 0)
	in := userinput.Request{Server: c.server, Tool: call.tool, Message: p.Message, Round: round,
		Requests: map[string]any{"elicitation": map[string]any{"method": "elicitation/create", "params": p}}}
	reply, err := toolcallback.AskInCall(call.ctx, call.tool, in, wait)
	if errors.Is(err, toolcallback.ErrExpired) {
		call.mu.Lock()
		call.expired = fmt.Sprintf("the user did not answer %s's question (%q) within %s; Baton declined it", c.server, p.Message, wait.Round(time.Second))
		call.mu.Unlock()
		return decline, nil
	}
	if err != nil {
		return nil, err
	}
	a, ok := reply.Responses["elicitation"]
	if !ok {
		return decline, nil
	}
	return &mcp.ElicitResult{Action: a.Action, Content: a.Content}, nil
}

// asking registers a call in flight on c for elicit, until done.
func (c *conn) asking(ctx agent.Context, tool string, callCtx context.Context) (*liveCall, func()) {
	deadline, _ := callCtx.Deadline()
	call := &liveCall{ctx: ctx, tool: tool, deadline: deadline}
	return call, c.live.add(call)
}

// note is what to add to the call's result for the model, if anything.
func (l *liveCall) note() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.expired
}
