package userinput

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
)

// PayloadKey marks a tool confirmation's payload as an input request:
// {PayloadKey: Request}, or {PayloadKey: Reply} on the way back.
const PayloadKey = "batonInput"

// ToolName is the name under which an input call is shown to those who
// answer it, with the Request as its arguments.
const ToolName = "baton_input"

// Actions a person takes on an input request, as MCP names them.
const (
	Accept  = "accept"
	Decline = "decline"
	Cancel  = "cancel"
)

// ErrInvalid: an answer does not fit the request it answers.
var ErrInvalid = errors.New("invalid answer to an input request")

// Request is what a paused tool asks a person for.
type Request struct {
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
	// ledger record and gives it back with the answer; what a client is
	// shown never holds it.
	State string `json:"state,omitempty"`
}

// Shown is the request as whoever answers it sees it, the arguments of
// the call of ToolName that asks it: everything but State.
func (r *Request) Shown() map[string]any {
	return map[string]any{"server": r.Server, "tool": r.Tool, "message": r.Message, "round": r.Round, "requests": r.Requests}
}

// Response is a person's answer to one input request.
type Response struct {
	Action  string         `json:"action"`            // Accept, Decline or Cancel
	Content map[string]any `json:"content,omitempty"` // the form's values, with Accept only
}

// Reply is what a re-run tool receives: the answers to its round's
// requests and the state the server gave with them.
type Reply struct {
	Round     int                 `json:"round"`
	Responses map[string]Response `json:"responses"`
	State     string              `json:"state,omitempty"`
}

// Of reads a request from a tool confirmation's payload.
func Of(payload any) (*Request, bool) {
	m, ok := payload.(map[string]any)
	if !ok || m[PayloadKey] == nil {
		return nil, false
	}
	var p struct {
		Req *Request `json:"batonInput"`
	}
	if b, err := json.Marshal(m); err != nil || json.Unmarshal(b, &p) != nil || p.Req == nil {
		return nil, false
	}
	return p.Req, true
}

// CancelAll is the answer's output that cancels every request of req, for
// a caller that gives up on it.
func CancelAll(req *Request) map[string]any {
	responses := map[string]any{}
	if req != nil {
		for id := range req.Requests {
			responses[id] = map[string]any{"action": Cancel}
		}
	}
	return map[string]any{"responses": responses}
}

// Check checks an answer's output to req: {"responses": {id: {"action",
// "content"}}}, answering each of req's requests and nothing else, and
// returns the responses.
func Check(req *Request, output map[string]any) (map[string]Response, error) {
	if len(output) != 1 || output["responses"] == nil {
		return nil, fmt.Errorf("%w: an input answer holds \"responses\" and nothing else", ErrInvalid)
	}
	responses, err := Responses(output["responses"])
	if err != nil {
		return nil, err
	}
	want, got := slices.Sorted(maps.Keys(req.Requests)), slices.Sorted(maps.Keys(responses))
	if !slices.Equal(want, got) {
		return nil, fmt.Errorf("%w: answer requests %v, got %v", ErrInvalid, want, got)
	}
	return responses, nil
}

// Responses decodes and checks the responses of an answer.
func Responses(v any) (map[string]Response, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	var fields map[string]map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return nil, fmt.Errorf("%w: responses: %w", ErrInvalid, err)
	}
	out := map[string]Response{}
	for id, f := range fields {
		for k := range f {
			if k != "action" && k != "content" {
				return nil, fmt.Errorf("%w: response %q: unknown field %q", ErrInvalid, id, k)
			}
		}
		var r Response
		b, _ := json.Marshal(f)
		if err := json.Unmarshal(b, &r); err != nil {
			return nil, fmt.Errorf("%w: response %q: %w", ErrInvalid, id, err)
		}
		switch {
		case r.Action != Accept && r.Action != Decline && r.Action != Cancel:
			return nil, fmt.Errorf("%w: response %q: action %q, want accept, decline or cancel", ErrInvalid, id, r.Action)
		case r.Action != Accept && r.Content != nil:
			return nil, fmt.Errorf("%w: response %q: content goes with accept only", ErrInvalid, id)
		}
		out[id] = r
	}
	return out, nil
}
