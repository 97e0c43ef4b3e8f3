package userinput

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"slices"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/platform"
	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/tool/toolconfirmation"
	"google.golang.org/genai"
)

// Ask pauses the calling tool until a person answers req: the tool then
// runs again, and ReplyOf returns the answer. The tool should return right
// after it (its response is replaced by the one it returns when it runs
// again).
//
// A tool that needs a person's input mid-call (an MCP server's
// multi-round-trip input requests) pauses this way, as an approval does:
// it asks through ADK's tool confirmation, with req as the payload, so ADK
// stores the request as an adk_request_confirmation call, a Team's ledger
// records it in the same commit (toolcallback.KindInput), and the answer
// re-runs the tool, which reads it with ReplyOf and may ask again. Each
// round is one confirmation call and one ledger record; the model's call
// stays the same.
//
// The request state travels from the tool to the ledger only: it is taken
// out of the stored event before the event is stored or streamed
// (HideStates, TakeState), kept in the record (never shown to a client),
// and handed back to the tool with the answer. An answer carries
// responses, nothing else.
func Ask(ctx agent.Context, req Request) error {
	if len(req.Requests) == 0 {
		return errors.New("input request without requests")
	}
	payload := map[string]any{PayloadKey: req}
	if ctx.ToolConfirmation() != nil {
		// A tool run again with an answer runs from ADK's confirmation
		// processor, which (ADK v2.2.0) neither turns a new request into a
		// confirmation call nor stops: the model would be called at once
		// (and a tool context cannot end the invocation). The Team's
		// session service stores the confirmation call ADK does not
		// (ConfirmationEvent), and stops the runner after it.
		payload[againKey] = true
	}
	return ctx.RequestConfirmation(req.Message, payload)
}

// againKey marks the payload of a request made by a tool run again with
// an answer: no confirmation call of ADK's follows it.
const againKey = "batonInputAgain"

// ReplyOf returns the answer a person gave to the tool's latest Ask, or
// nil when the tool runs for the model's call itself.
func ReplyOf(ctx agent.Context) (*Reply, error) {
	tc := ctx.ToolConfirmation()
	if tc == nil {
		return nil, nil
	}
	var p struct {
		Reply *Reply `json:"batonInput"`
	}
	if b, err := json.Marshal(tc.Payload); err != nil || json.Unmarshal(b, &p) != nil || p.Reply == nil {
		return nil, errors.New("the confirmation of this call is not an answer to an input request")
	}
	return p.Reply, nil
}

// TakeState removes the request state from req, the input request that a
// confirmation call's arguments args carry with tc, and returns the
// request as shown and the state: the call is stored and streamed without
// it.
func TakeState(args map[string]any, tc toolconfirmation.ToolConfirmation, req *Request) (Request, string) {
	shown := *req
	shown.State = ""
	args["toolConfirmation"] = toolconfirmation.ToolConfirmation{Hint: tc.Hint, Payload: map[string]any{PayloadKey: shown}}
	return shown, req.State
}

// HideStates takes the request states out of the input requests ev's
// actions carry (the function response of a tool that asked), before ev
// is stored, and returns the requests that no confirmation call of ADK's
// will follow (a tool run again that asked again), with their states, by
// the model's call id: ConfirmationEvent makes their calls.
func HideStates(ev *session.Event) map[string]toolconfirmation.ToolConfirmation {
	var again map[string]toolconfirmation.ToolConfirmation
	for id, tc := range ev.Actions.RequestedToolConfirmations {
		req, ok := Of(tc.Payload)
		if !ok {
			continue
		}
		if m, _ := tc.Payload.(map[string]any); m[againKey] == true {
			if again == nil {
				again = map[string]toolconfirmation.ToolConfirmation{}
			}
			again[id] = toolconfirmation.ToolConfirmation{Hint: tc.Hint, Payload: map[string]any{PayloadKey: *req}}
		}
		shown := *req
		shown.State = ""
		ev.Actions.RequestedToolConfirmations[id] = toolconfirmation.ToolConfirmation{Hint: tc.Hint, Payload: map[string]any{PayloadKey: shown}}
	}
	return again
}

// ConfirmationEvent is the confirmation call ADK would have stored after
// ev for the requests again (HideStates; the model's calls are found in
// prior): what ADK's generateRequestConfirmationEvent builds on a first
// run. Nil when none of them is a call of prior's.
func ConfirmationEvent(ctx context.Context, prior session.Events, ev *session.Event, again map[string]toolconfirmation.ToolConfirmation) *session.Event {
	var parts []*genai.Part
	var ids []string
	for _, id := range slices.Sorted(maps.Keys(again)) {
		orig := modelCall(prior, id)
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

// modelCall finds the model's call id in events, latest first.
func modelCall(events session.Events, id string) *genai.FunctionCall {
	for i := events.Len() - 1; i >= 0; i-- {
		if c := events.At(i).Content; c != nil {
			for _, p := range c.Parts {
				if fc := p.FunctionCall; fc != nil && fc.ID == id && fc.Name != toolconfirmation.FunctionCallName {
					return fc
				}
			}
		}
	}
	return nil
}
