package toolcallback

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/platform"
	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/tool/toolconfirmation"
	"google.golang.org/genai"

	"github.com/baton-run/baton/transcript"
	"github.com/baton-run/baton/userinput"
)

// CancelInput is the answer that cancels every request of the input call
// c, for a caller that gives up on it.
func CancelInput(c *Call) Answer { return Answer{Output: userinput.CancelAll(c.Input)} }

// checkInputAnswer checks an answer to an input call.
func checkInputAnswer(doc *callDoc, a Answer) error {
	if a.Approved != nil || a.Payload != nil || a.Error != "" || a.Output == nil {
		return fmt.Errorf("%w: an input call takes an output {\"responses\": {...}}", ErrInvalidAnswer)
	}
	var req userinput.Request
	if err := json.Unmarshal(doc.Input, &req); err != nil {
		return fmt.Errorf("decode input request of %q: %w", doc.ID, err)
	}
	if _, err := userinput.Check(&req, a.Output); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidAnswer, err)
	}
	return nil
}

// RequestInput pauses the calling tool until a person answers req: the
// tool then runs again, and InputReplyOf returns the answer. The tool
// should return right after it (its response is replaced by the one it
// returns when it runs again).
//
// A tool that needs a person's input mid-call (an MCP server's
// multi-round-trip input requests) pauses this way, as an approval does: it asks
// through ADK's tool confirmation, with an userinput.Request as the payload, so
// ADK stores the request as an adk_request_confirmation call, the ledger
// records it in the same commit (KindInput), and the answer re-runs the
// tool, which reads it with InputReplyOf and calls again. Each round is one
// confirmation call and one ledger record; the model's call stays the same.
//
// The request state travels from the tool to the ledger only: it is taken
// out of the stored event before the event is stored or streamed, kept in
// the record (never in Call, so Pending does not show it), and handed back
// to the tool with the answer. An answer carries responses, nothing else.
func RequestInput(ctx agent.Context, req userinput.Request) error {
	if len(req.Requests) == 0 {
		return errors.New("input request without requests")
	}
	payload := map[string]any{userinput.PayloadKey: req}
	if ctx.ToolConfirmation() != nil {
		// A tool run again with an answer runs from ADK's confirmation
		// processor, which (ADK v2.2.0) neither turns a new request into a
		// confirmation call nor stops: the model would be called at once
		// (and a tool context cannot end the invocation). The invocation's
		// session service stores the confirmation call ADK does not
		// (followUp), and the engine stops the runner after it.
		payload[inputAgainKey] = true
	}
	return ctx.RequestConfirmation(req.Message, payload)
}

// inputAgainKey marks the payload of a request made by a tool run again
// with an answer: no confirmation call of ADK's follows it.
const inputAgainKey = "batonInputAgain"

// InputReplyOf returns the answer a person gave to the tool's latest
// RequestInput, or nil when the tool runs for the model's call itself.
func InputReplyOf(ctx agent.Context) (*userinput.Reply, error) {
	tc := ctx.ToolConfirmation()
	if tc == nil {
		return nil, nil
	}
	var p struct {
		Reply *userinput.Reply `json:"batonInput"`
	}
	if b, err := json.Marshal(tc.Payload); err != nil || json.Unmarshal(b, &p) != nil || p.Reply == nil {
		return nil, errors.New("the confirmation of this call is not an answer to an input request")
	}
	return p.Reply, nil
}

// confirmationOf reads the tool confirmation among a confirmation call's
// arguments, whether ADK's value or its JSON.
func confirmationOf(args map[string]any) (toolconfirmation.ToolConfirmation, bool) {
	var tc toolconfirmation.ToolConfirmation
	raw, err := json.Marshal(args["toolConfirmation"])
	if err != nil || json.Unmarshal(raw, &tc) != nil {
		return tc, false
	}
	return tc, true
}

// takeInputState removes the request state from the input request that a
// confirmation call's arguments carry, and returns the request and the
// state: the event is stored and streamed without it.
func takeInputState(args map[string]any, tc toolconfirmation.ToolConfirmation, req *userinput.Request) (userinput.Request, string) {
	shown := *req
	shown.State = ""
	args["toolConfirmation"] = toolconfirmation.ToolConfirmation{Hint: tc.Hint, Payload: map[string]any{userinput.PayloadKey: shown}}
	return shown, req.State
}

// inputReplyPayload is the confirmation payload a re-run tool reads with
// InputReplyOf: the recorded answer and the state kept in the ledger.
func inputReplyPayload(c *callDoc, a Answer) map[string]any {
	responses, _ := userinput.Responses(a.Output["responses"]) // checked when recorded
	var req userinput.Request
	_ = json.Unmarshal(c.Input, &req)
	return map[string]any{userinput.PayloadKey: userinput.Reply{Round: req.Round, Responses: responses, State: c.InputState}}
}

// hideInputStates takes the request states out of the input requests ev's
// actions carry (the function response of a tool that asked), before ev is
// stored, and returns the requests that no confirmation call of ADK's will
// follow (inputAgainKey), with their states, by the model's call id.
func hideInputStates(ev *session.Event) map[string]toolconfirmation.ToolConfirmation {
	var again map[string]toolconfirmation.ToolConfirmation
	for id, tc := range ev.Actions.RequestedToolConfirmations {
		req, ok := userinput.Of(tc.Payload)
		if !ok {
			continue
		}
		if m, _ := tc.Payload.(map[string]any); m[inputAgainKey] == true {
			if again == nil {
				again = map[string]toolconfirmation.ToolConfirmation{}
			}
			again[id] = toolconfirmation.ToolConfirmation{Hint: tc.Hint, Payload: map[string]any{userinput.PayloadKey: *req}}
		}
		shown := *req
		shown.State = ""
		ev.Actions.RequestedToolConfirmations[id] = toolconfirmation.ToolConfirmation{Hint: tc.Hint, Payload: map[string]any{userinput.PayloadKey: shown}}
	}
	return again
}

// inputConfirmationEvent is the confirmation call ADK would have stored
// after ev for the requests again (by the model's call id, found in
// prior): what generateRequestConfirmationEvent builds on a first run.
func inputConfirmationEvent(ctx context.Context, prior session.Events, ev *session.Event, again map[string]toolconfirmation.ToolConfirmation) *session.Event {
	var parts []*genai.Part
	var ids []string
	for _, id := range slices.Sorted(maps.Keys(again)) {
		var orig *genai.FunctionCall
		for i := prior.Len() - 1; i >= 0 && orig == nil; i-- {
			for _, p := range transcript.Parts(prior.At(i)) {
				if fc := p.FunctionCall; fc != nil && fc.ID == id && fc.Name != toolconfirmation.FunctionCallName {
					orig = fc
				}
			}
		}
		if orig == nil {
			continue // not this session's call: nothing to ask about
		}
		fc := &genai.FunctionCall{ID: "adk-" + platform.NewUUID(ctx), Name: toolconfirmation.FunctionCallName,
			Args: map[string]any{"originalFunctionCall": orig, "toolConfirmation": again[id]}}
		parts = append(parts, &genai.Part{FunctionCall: fc})
		ids = append(ids, fc.ID)
	}
	if len(parts) == 0 {
		return nil
	}
	out := session.NewEvent(ctx, ev.InvocationID)
	out.Author, out.Branch = ev.Author, ev.Branch
	out.Content = &genai.Content{Role: genai.RoleModel, Parts: parts}
	out.LongRunningToolIDs = ids
	return out
}
