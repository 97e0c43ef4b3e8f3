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
)

// inputPayloadKey marks a confirmation payload as an input request. The
// uistream encoder recognises the same key (uistream.InputPayloadKey).
const inputPayloadKey = "batonInput"

// InputToolName is the name under which an input call is shown to those
// who answer it (a page's form, an A2A caller's function call), with the
// InputRequest as its arguments (uistream.InputToolName is the same).
const InputToolName = "baton_input"

// Actions a person takes on an input request, as MCP names them.
const (
	InputAccept  = "accept"
	InputDecline = "decline"
	InputCancel  = "cancel"
)

// InputRequest is what a paused tool asks a person for.
type InputRequest struct {
	Server string `json:"server,omitempty"` // the MCP server asking
	Tool   string `json:"tool,omitempty"`   // the tool, as the server names it
	// Message is a short text for the person (the first request's message).
	Message string `json:"message,omitempty"`
	// Requests are the server's requests by its ids, as it sent them: an
	// elicitation form is {"method": "elicitation/create", "params":
	// {"mode": "form", "message", "requestedSchema"}}.
	Requests map[string]any `json:"requests"`
	// Round counts the input rounds of this call, from 1.
	Round int `json:"round"`
	// State is the server's opaque request state. Baton keeps it in the
	// ledger record and gives it back with the answer; Call.Input never
	// holds it.
	State string `json:"state,omitempty"`
}

// InputResponse is a person's answer to one input request.
type InputResponse struct {
	Action  string         `json:"action"`            // InputAccept, InputDecline or InputCancel
	Content map[string]any `json:"content,omitempty"` // the form's values, with InputAccept only
}

// InputReply is what a re-run tool receives: the answers to its round's
// requests and the state the server gave with them.
type InputReply struct {
	Round     int                      `json:"round"`
	Responses map[string]InputResponse `json:"responses"`
	State     string                   `json:"state,omitempty"`
}

// RequestInput pauses the calling tool until a person answers req: the
// tool then runs again, and InputReplyOf returns the answer. The tool
// should return right after it (its response is replaced by the one it
// returns when it runs again).
//
// A tool that needs a person's input mid-call (an MCP server's
// multi-round-trip input requests) pauses this way, as an approval does: it asks
// through ADK's tool confirmation, with an InputRequest as the payload, so
// ADK stores the request as an adk_request_confirmation call, the ledger
// records it in the same commit (KindInput), and the answer re-runs the
// tool, which reads it with InputReplyOf and calls again. Each round is one
// confirmation call and one ledger record; the model's call stays the same.
//
// The request state travels from the tool to the ledger only: it is taken
// out of the stored event before the event is stored or streamed, kept in
// the record (never in Call, so Pending does not show it), and handed back
// to the tool with the answer. An answer carries responses, nothing else.
func RequestInput(ctx agent.Context, req InputRequest) error {
	if len(req.Requests) == 0 {
		return errors.New("input request without requests")
	}
	payload := map[string]any{inputPayloadKey: req}
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
func InputReplyOf(ctx agent.Context) (*InputReply, error) {
	tc := ctx.ToolConfirmation()
	if tc == nil {
		return nil, nil
	}
	var p struct {
		Reply *InputReply `json:"batonInput"`
	}
	if b, err := json.Marshal(tc.Payload); err != nil || json.Unmarshal(b, &p) != nil || p.Reply == nil {
		return nil, errors.New("the confirmation of this call is not an answer to an input request")
	}
	return p.Reply, nil
}

// CancelInput is the answer that cancels every request of the input call
// c, for a caller that gives up on it.
func CancelInput(c *Call) Answer {
	responses := map[string]any{}
	if c.Input != nil {
		for id := range c.Input.Requests {
			responses[id] = map[string]any{"action": InputCancel}
		}
	}
	return Answer{Output: map[string]any{"responses": responses}}
}

// inputOf reads an input request from a confirmation's payload.
func inputOf(payload any) (*InputRequest, bool) {
	m, ok := payload.(map[string]any)
	if !ok || m[inputPayloadKey] == nil {
		return nil, false
	}
	var p struct {
		Req *InputRequest `json:"batonInput"`
	}
	if b, err := json.Marshal(m); err != nil || json.Unmarshal(b, &p) != nil || p.Req == nil {
		return nil, false
	}
	return p.Req, true
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
func takeInputState(args map[string]any, tc toolconfirmation.ToolConfirmation, req *InputRequest) (InputRequest, string) {
	shown := *req
	shown.State = ""
	args["toolConfirmation"] = toolconfirmation.ToolConfirmation{Hint: tc.Hint, Payload: map[string]any{inputPayloadKey: shown}}
	return shown, req.State
}

// checkInputAnswer checks an answer to an input call: an output
// {"responses": {id: {"action", "content"}}} answering each of the call's
// requests and nothing else.
func checkInputAnswer(doc *callDoc, a Answer) error {
	if a.Approved != nil || a.Payload != nil || a.Error != "" || a.Output == nil {
		return fmt.Errorf("%w: an input call takes an output {\"responses\": {...}}", ErrInvalidAnswer)
	}
	if len(a.Output) != 1 || a.Output["responses"] == nil {
		return fmt.Errorf("%w: an input answer holds \"responses\" and nothing else", ErrInvalidAnswer)
	}
	var req InputRequest
	if err := json.Unmarshal(doc.Input, &req); err != nil {
		return fmt.Errorf("decode input request of %q: %w", doc.ID, err)
	}
	responses, err := inputResponses(a.Output["responses"])
	if err != nil {
		return err
	}
	want, got := slices.Sorted(maps.Keys(req.Requests)), slices.Sorted(maps.Keys(responses))
	if !slices.Equal(want, got) {
		return fmt.Errorf("%w: answer requests %v, got %v", ErrInvalidAnswer, want, got)
	}
	return nil
}

// inputResponses decodes and checks the responses of an input answer.
func inputResponses(v any) (map[string]InputResponse, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidAnswer, err)
	}
	var fields map[string]map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return nil, fmt.Errorf("%w: responses: %w", ErrInvalidAnswer, err)
	}
	out := map[string]InputResponse{}
	for id, f := range fields {
		for k := range f {
			if k != "action" && k != "content" {
				return nil, fmt.Errorf("%w: response %q: unknown field %q", ErrInvalidAnswer, id, k)
			}
		}
		var r InputResponse
		b, _ := json.Marshal(f)
		if err := json.Unmarshal(b, &r); err != nil {
			return nil, fmt.Errorf("%w: response %q: %w", ErrInvalidAnswer, id, err)
		}
		switch {
		case r.Action != InputAccept && r.Action != InputDecline && r.Action != InputCancel:
			return nil, fmt.Errorf("%w: response %q: action %q, want accept, decline or cancel", ErrInvalidAnswer, id, r.Action)
		case r.Action != InputAccept && r.Content != nil:
			return nil, fmt.Errorf("%w: response %q: content goes with accept only", ErrInvalidAnswer, id)
		}
		out[id] = r
	}
	return out, nil
}

// inputReplyPayload is the confirmation payload a re-run tool reads with
// InputReplyOf: the recorded answer and the state kept in the ledger.
func inputReplyPayload(c *callDoc, a Answer) map[string]any {
	responses, _ := inputResponses(a.Output["responses"]) // checked when recorded
	var req InputRequest
	_ = json.Unmarshal(c.Input, &req)
	return map[string]any{inputPayloadKey: InputReply{Round: req.Round, Responses: responses, State: c.InputState}}
}

// hideInputStates takes the request states out of the input requests ev's
// actions carry (the function response of a tool that asked), before ev is
// stored, and returns the requests that no confirmation call of ADK's will
// follow (inputAgainKey), with their states, by the model's call id.
func hideInputStates(ev *session.Event) map[string]toolconfirmation.ToolConfirmation {
	var again map[string]toolconfirmation.ToolConfirmation
	for id, tc := range ev.Actions.RequestedToolConfirmations {
		req, ok := inputOf(tc.Payload)
		if !ok {
			continue
		}
		if m, _ := tc.Payload.(map[string]any); m[inputAgainKey] == true {
			if again == nil {
				again = map[string]toolconfirmation.ToolConfirmation{}
			}
			again[id] = toolconfirmation.ToolConfirmation{Hint: tc.Hint, Payload: map[string]any{inputPayloadKey: *req}}
		}
		shown := *req
		shown.State = ""
		ev.Actions.RequestedToolConfirmations[id] = toolconfirmation.ToolConfirmation{Hint: tc.Hint, Payload: map[string]any{inputPayloadKey: shown}}
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
			for _, p := range partsOf(prior.At(i)) {
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

func partsOf(ev *session.Event) []*genai.Part {
	if ev == nil || ev.Content == nil {
		return nil
	}
	return ev.Content.Parts
}
