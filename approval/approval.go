package approval

import (
	"bytes"
	"encoding/json"
	"fmt"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/functiontool"

	"github.com/baton-run/baton/transcript"
)

// Config declares a server tool that runs only after a person approves
// the call.
type Config[Args any] struct {
	Name        string
	Description string
	// Require decides per call whether approval is needed. Nil means every
	// call needs it.
	Require func(Args) bool
}

// New declares an ordinary Go tool gated by ADK's tool confirmation. Run
// by a toolcallback.Team, the handler runs only after approval, exactly
// once. A rejection reaches the model as the tool's error.
//
// An approver may send a payload to edit the arguments (an amount, a party
// size). The payload is a JSON object merged into the model's arguments as a
// JSON Merge Patch (RFC 7396): each field replaces the argument of that
// name, an object merges into an object argument field by field, and null
// removes the argument, so the handler gets its zero value. Arguments the
// payload does not name keep the model's values: {"people": 6} over
// {"people": 4, "time": "19:00"} runs the tool with {"people": 6, "time":
// "19:00"}. A payload that is not an object, or an empty one, changes
// nothing.
func New[Args, Result any](cfg Config[Args], handler func(agent.Context, Args) (Result, error)) (tool.Tool, error) {
	fc := functiontool.Config{Name: cfg.Name, Description: cfg.Description, RequireConfirmation: cfg.Require == nil}
	if cfg.Require != nil {
		fc.RequireConfirmationProvider = cfg.Require
	}
	return functiontool.New(fc, func(ctx agent.Context, args Args) (Result, error) {
		if c := ctx.ToolConfirmation(); c != nil && c.Confirmed && c.Payload != nil {
			edited, err := applyPayload(args, c.Payload)
			if err != nil {
				var zero Result
				return zero, err
			}
			args = edited
		}
		return handler(ctx, args)
	})
}

// applyPayload merges an approver's payload into args (see New).
func applyPayload[Args any](args Args, payload any) (Args, error) {
	patch, ok := payload.(map[string]any)
	if !ok || len(patch) == 0 {
		return args, nil
	}
	b, err := json.Marshal(args)
	if err != nil {
		return args, fmt.Errorf("approval payload: %w", err)
	}
	var current map[string]any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber() // keep integers beyond 2^53 exact
	if err := dec.Decode(&current); err != nil {
		current = nil // Args is not an object: the payload alone decides
	}
	if b, err = json.Marshal(transcript.MergePayload(current, patch)); err != nil {
		return args, fmt.Errorf("approval payload: %w", err)
	}
	var edited Args
	if err := json.Unmarshal(b, &edited); err != nil {
		return args, fmt.Errorf("approval payload does not fit the tool's arguments: %w", err)
	}
	return edited, nil
}
