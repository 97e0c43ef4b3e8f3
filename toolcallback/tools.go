package toolcallback

import (
	"time"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/functiontool"
	"google.golang.org/genai"

	"github.com/baton-run/baton/a2ui"
	"github.com/baton-run/baton/approval"
	"github.com/baton-run/baton/ledger"
)

// Kind says who answers a paused call (see package ledger).
type Kind = ledger.Kind

const (
	// KindBrowser calls are run by the user's browser.
	KindBrowser = ledger.KindBrowser
	// KindApproval calls are ADK tool confirmations a person answers.
	KindApproval = ledger.KindApproval
	// KindExternal calls are answered by another system holding a call token.
	KindExternal = ledger.KindExternal
	// KindInput calls are a tool's questions to a person (userinput.Ask), a
	// form the device that started the turn fills in.
	KindInput = ledger.KindInput
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
	// attempts bounds a background call's attempts (BackgroundConfig).
	attempts int
	// poll is how often the sweeper reads a remote call's task
	// (RemoteConfig.PollEvery).
	poll time.Duration
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

// Run pauses the invocation on the call, or, when the call was refused as
// its event was stored (a background call over the user's bound), returns
// why, and the agent goes on.
func (p *pausing) Run(ctx agent.Context, args any) (map[string]any, error) {
	if tools := pausingToolsFrom(ctx); tools != nil {
		if reason, refused := tools.refusal(ctx.FunctionCallID()); refused {
			return map[string]any{"error": reason}, nil
		}
	}
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
// approves the call (approval.Config).
type ApprovalConfig[Args any] = approval.Config[Args]

// Approval declares an ordinary Go tool gated by ADK's tool confirmation,
// whose approver may edit its arguments (approval.New).
func Approval[Args, Result any](cfg ApprovalConfig[Args], handler func(agent.Context, Args) (Result, error)) (tool.Tool, error) {
	return approval.New(cfg, handler)
}
