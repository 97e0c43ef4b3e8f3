package geminilive

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/plugin"
	"google.golang.org/adk/v2/runner"
	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/toolconfirmation"
	"google.golang.org/genai"
)

// Agent is what a live session needs of an ADK agent, as ADK itself builds
// it for the agent's next model call: the request (instruction, the
// declarations of its tools and of its toolsets' tools, such as MCP
// servers', and the conversation) and the invocation its tools run in
// (session, artifacts, memory, as the runner wires them).
type Agent struct {
	Request    *model.LLMRequest
	Invocation agent.InvocationContext
}

// continueTurn opens the user turn ADK appends to contents that end with
// the model's (internal/llminternal/contents_processor.go).
const continueTurn = "Continue processing previous requests as instructed."

// Capture runs cfg's agent on the session up to its model call, with a
// plugin that stops there, and returns what ADK built. No model is called
// and nothing is stored. cfg's own plugins run first; the agent's
// before-model callbacks do not run.
func Capture(ctx context.Context, cfg runner.Config, userID, sessionID string) (*Agent, error) {
	captured := &Agent{}
	p, err := plugin.New(plugin.Config{
		Name: "geminilive-capture",
		BeforeRunCallback: func(ic agent.InvocationContext) (*genai.Content, error) {
			captured.Invocation = ic
			return nil, nil
		},
		BeforeModelCallback: func(_ agent.Context, req *model.LLMRequest) (*model.LLMResponse, error) {
			captured.Request = req
			return &model.LLMResponse{}, nil
		},
	})
	if err != nil {
		return nil, err
	}
	cfg.PluginConfig.Plugins = append(slices.Clone(cfg.PluginConfig.Plugins), p)
	r, err := runner.New(cfg)
	if err != nil {
		return nil, err
	}
	for _, err := range r.Run(ctx, userID, sessionID, nil, agent.RunConfig{}) {
		if err != nil {
			return nil, fmt.Errorf("capture: %w", err)
		}
	}
	if captured.Request == nil || captured.Invocation == nil {
		return nil, errors.New("capture: the agent made no model call")
	}
	return captured, nil
}

// ConnectConfig is base (modalities, voice, transcriptions) with the
// agent's system instruction and tool declarations.
func (a *Agent) ConnectConfig(base *genai.LiveConnectConfig) *genai.LiveConnectConfig {
	var cfg genai.LiveConnectConfig
	if base != nil {
		cfg = *base
	}
	if c := a.Request.Config; c != nil {
		cfg.SystemInstruction, cfg.Tools = c.SystemInstruction, c.Tools
	}
	return &cfg
}

// History is the conversation to seed a new model session with: the
// request's contents without ADK's continue turn, audio parts, and the
// calls named by pending (answered later as pairs).
func (a *Agent) History(pending ...string) []*genai.Content {
	var history []*genai.Content
	for i, c := range a.Request.Contents {
		last := i == len(a.Request.Contents)-1
		if last && c.Role == genai.RoleUser && len(c.Parts) == 1 && strings.HasPrefix(c.Parts[0].Text, continueTurn) {
			continue
		}
		var parts []*genai.Part
		for _, p := range c.Parts {
			audio := p.InlineData != nil && strings.HasPrefix(p.InlineData.MIMEType, "audio/")
			if audio || (p.FunctionCall != nil && slices.Contains(pending, p.FunctionCall.ID)) {
				continue
			}
			parts = append(parts, p)
		}
		if len(parts) > 0 {
			history = append(history, &genai.Content{Role: c.Role, Parts: parts})
		}
	}
	return history
}

// runnable is how ADK's flow runs a tool (internal/toolinternal
// FunctionTool); function tools and MCP tools have it.
type runnable interface {
	tool.Tool
	Run(ctx agent.Context, args any) (map[string]any, error)
}

// ErrNoTool: the model called a tool the agent does not have, or one that
// cannot run outside ADK's flow.
var ErrNoTool = errors.New("no such tool")

// Run runs the agent's tool for a call in ctx, as ADK's flow does, but on
// the caller's goroutine: a live session runs tools off its socket loops.
// confirmation is a person's answer to a tool that requires one (nil
// before it). It returns the response to Deliver, nil for a long-running
// tool that returned nothing (the response comes later), and the actions
// (state delta, confirmation requests) to store with it. Tool callbacks
// (before, after, on error) do not run.
func (a *Agent) Run(ctx context.Context, call *genai.FunctionCall, confirmation *toolconfirmation.ToolConfirmation) (*genai.FunctionResponse, *session.EventActions, error) {
	t, ok := a.Request.Tools[call.Name].(runnable)
	if !ok {
		return nil, nil, fmt.Errorf("%w: %q", ErrNoTool, call.Name)
	}
	actions := &session.EventActions{StateDelta: map[string]any{}}
	tc := agent.NewToolContext(a.Invocation.WithContext(ctx), call.ID, actions, confirmation)
	result, err := t.Run(tc, call.Args)
	if err != nil {
		result = map[string]any{"error": err.Error()}
	}
	if result == nil && t.IsLongRunning() {
		return nil, actions, nil
	}
	return &genai.FunctionResponse{ID: call.ID, Name: call.Name, Response: result}, actions, nil
}
