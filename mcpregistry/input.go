package mcpregistry

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/adk/v2/agent"

	"github.com/baton-run/baton/userinput"
)

// A server that speaks 2026-07-28 asks for a person's input by answering
// tools/call with input requests and a request state (multi-round-trip
// requests). The call then pauses the turn through the ledger
// (userinput.Ask); the person's answer runs the tool again, on
// whichever instance receives it, and it calls the server again with the
// answers and the state. No connection waits in between.

// maxInputRounds bounds the rounds of input one call may ask for (go-sdk's
// own multi-round-trip loop stops at 10 too).
const maxInputRounds = 10

// errInput: the server's input requests cannot be put to a person.
var errInput = errors.New("MCP input request")

// callParams returns the tools/call of name with args: the model's call,
// or, when the tool runs again with a person's answer, the same call with
// the answers and the state of the round they answer.
func callParams(ctx agent.Context, name string, args any) (*mcp.CallToolParams, int, error) {
	params := &mcp.CallToolParams{Name: name, Arguments: args}
	reply, err := userinput.ReplyOf(ctx)
	if err != nil || reply == nil {
		return params, 0, err
	}
	params.InputResponses = mcp.InputResponseMap{}
	for id, r := range reply.Responses {
		params.InputResponses[id] = &mcp.ElicitResult{Action: r.Action, Content: r.Content}
	}
	params.RequestState = reply.State
	return params, reply.Round, nil
}

// askInput pauses the call on the server's input requests (round counts
// from 1). Only form elicitations can be put to a person; any other request
// fails the call, as does a server that keeps asking.
func askInput(ctx agent.Context, server, tool string, res *mcp.CallToolResult, round int) (map[string]any, error) {
	if len(res.InputRequests) == 0 {
		return nil, fmt.Errorf("%s on MCP server %s: the server is busy (input required with no request); try again later", tool, server)
	}
	if round > maxInputRounds {
		return nil, fmt.Errorf("%w: %s on MCP server %s asked for input more than %d times", errInput, tool, server, maxInputRounds)
	}
	var message string
	for _, id := range slices.Sorted(maps.Keys(res.InputRequests)) {
		p, ok := res.InputRequests[id].(*mcp.ElicitParams)
		if !ok || (p.Mode != "" && p.Mode != "form") || p.URL != "" {
			return nil, fmt.Errorf("%w: %s on MCP server %s asked for %T input, which Baton cannot put to a person (form elicitations only)", errInput, tool, server, res.InputRequests[id])
		}
		if message == "" {
			message = p.Message
		}
	}
	raw, err := json.Marshal(res.InputRequests)
	var requests map[string]any
	if err == nil {
		err = json.Unmarshal(raw, &requests)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %s on MCP server %s: %w", errInput, tool, server, err)
	}
	req := userinput.Request{Server: server, Tool: tool, Message: message, Requests: requests, Round: round, State: res.RequestState}
	if err := userinput.Ask(ctx, req); err != nil {
		return nil, err
	}
	// The model reads this only if the person never answers (the call is
	// then closed) or the process dies before the request is stored.
	return map[string]any{"status": "waiting for the user's answer to " + server + "'s question: " + message}, nil
}
