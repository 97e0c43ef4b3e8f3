package toolcallback

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/functiontool"
	"google.golang.org/genai"

	"github.com/baton-run/baton/a2ui"
	"github.com/baton-run/baton/transcript"
)

// Kind says who answers a paused call.
type Kind string

const (
	// KindBrowser calls are run by the user's browser.
	KindBrowser Kind = "browser"
	// KindApproval calls are ADK tool confirmations a person answers.
	KindApproval Kind = "approval"
	// KindExternal calls are answered by another system holding a call token.
	KindExternal Kind = "external"
	// KindInput calls are a tool's questions to a person (userinput.Ask), a
	// form the device that started the turn fills in.
	KindInput Kind = "input"
)

// pauseSpec is what the ledger needs to know of a pausing tool before it
// runs: who answers its calls, how long they wait, and whether any of the
// user's devices may answer.
type pauseSpec struct {
	Kind      Kind
	Timeout   time.Duration
	AnyDevice bool
	// decide, when set, decides per call (a surface's) what it shows and
	// whether it pauses, when the call is stored.
	decide func(prior session.Events, id string, args map[string]any) (a2ui.Shown, bool)
}

// BrowserConfig declares a tool that runs in the user's browser.
type BrowserConfig struct {
	Name        string
	Description string
	// Timeout after which an unanswered call expires. Zero uses the
	// engine's default.
	Timeout time.Duration
	// AnyDevice lets any of the user's clients answer. By default only the
	// client that started the turn may.
	AnyDevice bool
}

// Browser declares a tool the user's browser runs. The argument schema is
// inferred from Args. When the model calls it, the invocation pauses: the
// tool returns a placeholder and skips summarization, so the model is not
// called again until the browser's answer resumes the agent.
func Browser[Args any](cfg BrowserConfig) (tool.Tool, error) {
	return pausingTool[Args](cfg.Name, cfg.Description, pauseSpec{Kind: KindBrowser, Timeout: cfg.Timeout, AnyDevice: cfg.AnyDevice})
}

// ExternalConfig declares a tool whose result comes from another system.
type ExternalConfig struct {
	Name        string
	Description string
	// Timeout after which an unanswered call expires. Zero uses the
	// engine's default.
	Timeout time.Duration
}

// External declares a tool answered by another system, authorised by a
// call token bound to the single call (see Team.Token). It pauses the
// invocation like a browser tool.
func External[Args any](cfg ExternalConfig) (tool.Tool, error) {
	return pausingTool[Args](cfg.Name, cfg.Description, pauseSpec{Kind: KindExternal, Timeout: cfg.Timeout, AnyDevice: true})
}

func pausingTool[Args any](name, description string, spec pauseSpec) (tool.Tool, error) {
	inner, err := functiontool.New(functiontool.Config{Name: name, Description: description, IsLongRunning: true},
		func(ctx agent.Context, _ Args) (map[string]any, error) {
			// IsLongRunning alone does not pause: the flow would call the
			// model again with this placeholder. Skipping summarization
			// ends the invocation on this response.
			ctx.Actions().SkipSummarization = true
			return map[string]any{"status": "pending"}, nil
		})
	if err != nil {
		return nil, err
	}
	return &pausing{Tool: inner, spec: spec}, nil
}

// functionTool is the method set ADK's flow runs a function tool through.
type functionTool interface {
	tool.Tool
	Declaration() *genai.FunctionDeclaration
	Run(ctx agent.Context, args any) (map[string]any, error)
	ProcessRequest(ctx agent.Context, req *model.LLMRequest) error
}

// pausing is a function tool whose calls pause the invocation. When a
// model request is built it tells the invocation (through the context) that
// calls of its name pause, so that the event holding such a call is stored
// together with the call's ledger record, before the tool even runs.
type pausing struct {
	tool.Tool
	spec pauseSpec
}

func (p *pausing) inner() functionTool { return p.Tool.(functionTool) }

func (p *pausing) Declaration() *genai.FunctionDeclaration { return p.inner().Declaration() }

func (p *pausing) Run(ctx agent.Context, args any) (map[string]any, error) {
	return p.inner().Run(ctx, args)
}

func (p *pausing) ProcessRequest(ctx agent.Context, req *model.LLMRequest) error {
	if err := p.inner().ProcessRequest(ctx, req); err != nil {
		return err
	}
	req.Tools[p.Name()] = p // the flow runs what it finds here
	if tools := pausingToolsFrom(ctx); tools != nil {
		tools.declare(p.Name(), p.spec)
	}
	return nil
}

// ApprovalConfig declares a server tool that runs only after a person
// approves the call.
type ApprovalConfig[Args any] struct {
	Name        string
	Description string
	// Require decides per call whether approval is needed. Nil means every
	// call needs it.
	Require func(Args) bool
}

// Approval declares an ordinary Go tool gated by ADK's tool confirmation.
// The handler runs only after approval, exactly once. A rejection reaches
// the model as the tool's error.
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
func Approval[Args, Result any](cfg ApprovalConfig[Args], handler func(agent.Context, Args) (Result, error)) (tool.Tool, error) {
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

// applyPayload merges an approver's payload into args (see Approval).
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
