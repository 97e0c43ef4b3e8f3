package mcpregistry

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/toolutils"
	"google.golang.org/genai"
)

// toolset is one server's tools for an agent, through the registry: the
// chat's connection and the tool list cached on it, not a listing per
// model request as ADK's mcptoolset does.
type toolset struct {
	r      *Registry
	server string
}

var _ tool.Toolset = (*toolset)(nil)

func (s *toolset) Name() string { return s.server }

// Tools lists the server's tools under the server's name. A server that
// cannot be reached contributes no tools, and the model answers without
// them: failing here would fail the whole turn.
func (s *toolset) Tools(ctx agent.ReadonlyContext) ([]tool.Tool, error) {
	c, err := s.r.conn(ctx, chatOfContext(ctx), s.server)
	var list []*mcp.Tool
	if err == nil {
		list, err = c.toolList(ctx)
	}
	if err != nil {
		s.r.opts.Logger.Warn("MCP tools unavailable", "server", s.server, "session", ctx.SessionID(), "error", err)
		return nil, nil
	}
	tools := make([]tool.Tool, 0, len(list))
	for _, t := range list {
		decl := &genai.FunctionDeclaration{Name: s.server + "_" + t.Name, Description: t.Description}
		if t.InputSchema != nil { // a nil *Schema in the interface would be sent as null
			decl.ParametersJsonSchema = t.InputSchema
		}
		tools = append(tools, &mcpTool{set: s, name: t.Name, decl: decl})
	}
	return tools, nil
}

// mcpTool is one tool of a server, called on the chat's session.
type mcpTool struct {
	set  *toolset
	name string // the server's name for it
	decl *genai.FunctionDeclaration
}

func (t *mcpTool) Name() string                            { return t.decl.Name }
func (t *mcpTool) Description() string                     { return t.decl.Description }
func (t *mcpTool) IsLongRunning() bool                     { return false }
func (t *mcpTool) Declaration() *genai.FunctionDeclaration { return t.decl }

// ProcessRequest declares the tool to the model.
func (t *mcpTool) ProcessRequest(_ agent.Context, req *model.LLMRequest) error {
	return toolutils.PackTool(req, t)
}

// Run calls the tool. Every failure is returned as an error, which ADK
// gives the model as the call's error response: the transcript stays
// valid. A call whose connection broke drops the connection, so the next
// use opens a new one; it is not retried, since it may have taken effect.
func (t *mcpTool) Run(ctx agent.Context, args any) (map[string]any, error) {
	r, k := t.set.r, key{chat: chatOfContext(ctx), server: t.set.server}
	c, err := r.conn(ctx, k.chat, k.server)
	if err == nil {
		err = r.record(ctx, k.chat, c)
	}
	if err != nil {
		return nil, fmt.Errorf("MCP server %s unavailable: %w", k.server, err)
	}
	params, round, err := callParams(ctx, t.name, args)
	if err != nil {
		return nil, err
	}
	callCtx, cancel := context.WithTimeout(ctx, r.opts.CallTimeout)
	defer cancel()
	live, done := c.asking(ctx, t.decl.Name, callCtx)
	res, err := c.cs.CallTool(callCtx, params)
	done()
	if errors.Is(err, mcp.ErrConnectionClosed) || errors.Is(err, mcp.ErrSessionMissing) {
		c.markBroken()
		r.discard(k, c)
	}
	if err != nil {
		return nil, fmt.Errorf("%s on MCP server %s: %w", t.name, k.server, err)
	}
	if res.NeedsInput() {
		return askInput(ctx, k.server, t.name, res, round+1)
	}
	if res.IsError {
		return nil, fmt.Errorf("%s failed: %s", t.name, text(res))
	}
	return withNote(output(res), live.note()), nil
}

func output(res *mcp.CallToolResult) map[string]any {
	if m, ok := res.StructuredContent.(map[string]any); ok {
		return m
	}
	if res.StructuredContent != nil {
		return map[string]any{"output": res.StructuredContent}
	}
	return map[string]any{"output": text(res)}
}

// withNote adds Baton's note for the model to a tool's output.
func withNote(out map[string]any, note string) map[string]any {
	if note != "" {
		out["baton_note"] = note
	}
	return out
}

func text(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}
