package uistream

import (
	"encoding/json"

	"google.golang.org/genai"

	"github.com/baton-run/baton/userinput"
)

// A tool that asks a person for input mid-call (an MCP server's input
// requests, see userinput.Ask) pauses on ADK's confirmation
// request, whose payload holds {userinput.PayloadKey: request}. The stream
// shows it not as an approval but as a call of a browser tool named
// userinput.ToolName, with the confirmation call's id as its toolCallId and
// the request as its input:
//
//	{"server": "notes", "tool": "delete_note", "message": "Delete?", "round": 1,
//	 "requests": {"<id>": {"method": "elicitation/create",
//	   "params": {"mode": "form", "message": "...", "requestedSchema": {...}}}}}
//
// For a page it carries providerMetadata {"baton": {"deviceId"}} like any
// browser call, and the page answers it like one, with the tool's output:
//
//	{"responses": {"<id>": {"action": "accept", "content": {...}}}}
//
// (action "decline" or "cancel" without content). The original call stays
// open until the tool, run again with the answer, responds.
//
// An in-call question (toolcallback.AskInCall: the tool waits for the
// answer while the turn runs) is a long-running call of userinput.ToolName
// with "live": true in its input (the wire name earlier versions gave it), answered outside the
// stream (ToolResult); its outcome follows in the stream as a response
// named userinput.ToolName (the answer's output, or an error once it
// expired), sent as the call's output, provider-executed for a page.

// inputRequest returns the input request an adk_request_confirmation call
// carries, if it asks for input.
func inputRequest(call *genai.FunctionCall) (map[string]any, bool) {
	var args struct {
		Confirmation struct {
			Payload map[string]json.RawMessage `json:"payload"`
		} `json:"toolConfirmation"`
	}
	raw, err := json.Marshal(call.Args)
	if err != nil || json.Unmarshal(raw, &args) != nil {
		return nil, false
	}
	var input map[string]any
	if json.Unmarshal(args.Confirmation.Payload[userinput.PayloadKey], &input) != nil || input == nil {
		return nil, false
	}
	return input, true
}
