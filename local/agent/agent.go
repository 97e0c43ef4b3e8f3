package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/model/gemini"
	"google.golang.org/adk/v2/tool"

	"github.com/baton-run/baton/mcpregistry"
	"github.com/baton-run/baton/toolcallback"
)

// GeminiModel is the Gemini model the demo uses when credentials exist:
// Gemini 3.8 Flash, stable, the same id on the Gemini API and Vertex AI
// (docs/configuration.md says when and where that was checked, and how to
// change it).
const GeminiModel = "gemini-3.8-flash"

const (
	conciergeInstruction = `You are the concierge of Baton's demo. Use the tools: get_weather, calculate
and get_current_time run on the server; get_location asks the user's browser where they are;
book_table books a restaurant table once a person approves; show_surface shows the user a form (A2UI) and,
with wait, returns what they did with it; notes_add_note and notes_list_notes
keep notes for the conversation, and notes_clear_notes forgets them after asking the user, when the
notes server is connected; ask_events delegates to the events agent, which may ask the user a question
before it answers; ask_peer, when present, delegates to the concierge of another Baton runner. Earlier turns may hold records like
"[dj called change_bgm(track=2): ...]" of what another agent did. Answer briefly.`
	djInstruction = `You are the DJ of Baton's demo. change_bgm switches the music playing in the
user's page (tracks 1 to 3); get_location tells where the user is, to pick music for the place;
prepare_playlist prepares a playlist for a mood, in the background (it takes a few seconds per
song: tell the user it is under way, and present the playlist when its result comes);
notes_add_note and notes_list_notes keep the conversation's notes, shared with the concierge.
Earlier turns may hold records of what another agent did. Answer briefly.`
)

// Model returns Gemini when the standard environment configures it
// (GOOGLE_API_KEY, or GOOGLE_GENAI_USE_VERTEXAI with a project and
// location), and otherwise the offline model. On Cloud Run (K_SERVICE set)
// a missing configuration is an error, never a silent fallback.
func Model(ctx context.Context) (model.LLM, error) {
	if os.Getenv("GOOGLE_API_KEY") != "" || os.Getenv("GEMINI_API_KEY") != "" || os.Getenv("GOOGLE_GENAI_USE_VERTEXAI") != "" {
		m, err := gemini.NewModel(ctx, GeminiModel, nil)
		if err != nil {
			return nil, fmt.Errorf("gemini: %w", err)
		}
		return m, nil
	}
	if os.Getenv("K_SERVICE") != "" {
		return nil, errors.New("no model configured: set GOOGLE_API_KEY, or GOOGLE_GENAI_USE_VERTEXAI=true with GOOGLE_CLOUD_PROJECT and GOOGLE_CLOUD_LOCATION")
	}
	return Offline{PieceDelay: 60 * time.Millisecond}, nil
}

// New returns the concierge, the team's default agent, on the model Model
// picks. Its signature is functions.AgentFunc.
func New(ctx context.Context) (agent.Agent, error) {
	m, err := Model(ctx)
	if err != nil {
		return nil, err
	}
	return Concierge(m)
}

// Team returns the demo's agents on the model Model picks: the concierge
// (the default) and the DJ. Its signature is functions.TeamFunc.
func Team(ctx context.Context) ([]toolcallback.Member, error) {
	m, err := Model(ctx)
	if err != nil {
		return nil, err
	}
	return TeamWithModel(m)
}

// TeamWithModel returns the demo's agents on m, without MCP servers.
func TeamWithModel(m model.LLM) ([]toolcallback.Member, error) {
	return TeamWithMCP(m, nil)
}

// NotesServer is the name under which the agents use the local runner's
// notes MCP server (local/notes); its tools appear as notes_add_note and
// notes_list_notes.
const NotesServer = "notes"

// TeamWithMCP returns the demo's agents on m; with reg, both use the
// NotesServer through it, so a chat keeps one MCP session whichever agent
// it talks to. The concierge also delegates to the remote agents given
// (EventsTool).
func TeamWithMCP(m model.LLM, reg *mcpregistry.Registry, remote ...*toolcallback.RemoteTool) ([]toolcallback.Member, error) {
	playlist, err := PlaylistTool()
	if err != nil {
		return nil, err
	}
	var members []toolcallback.Member
	for _, build := range []struct {
		name       string
		new        func(model.LLM, ...tool.Toolset) (agent.Agent, error)
		background []*toolcallback.BackgroundTool
		remote     []*toolcallback.RemoteTool
	}{
		{"concierge", func(m model.LLM, sets ...tool.Toolset) (agent.Agent, error) { return concierge(m, remote, sets...) }, nil, remote},
		{"dj", func(m model.LLM, sets ...tool.Toolset) (agent.Agent, error) { return dj(m, playlist, sets...) }, []*toolcallback.BackgroundTool{playlist}, nil},
	} {
		var sets []tool.Toolset
		if reg != nil {
			if sets, err = reg.Toolsets(build.name, NotesServer); err != nil {
				return nil, err
			}
		}
		a, err := build.new(m, sets...)
		if err != nil {
			return nil, err
		}
		// The worker finds the DJ's background tool here, and the push
		// callback the concierge's remote agents, on any instance.
		members = append(members, toolcallback.Member{Agent: a, Background: build.background, Remote: build.remote})
	}
	return members, nil
}

// Suggestions are what the demo page offers to try with each agent, by
// the agent's name: only things that agent's own tools do.
func Suggestions() map[string][]string {
	return map[string][]string{
		"concierge": {"what's the weather in Tokyo?", "book a table for 4", "reserve a table with a form", "what is 12*7?", "what time is it in Paris?", "where am I?", "ask the events agent what is on tonight"},
		"dj":        {"change the music to track 2", "prepare a calm playlist of 10 songs", "play track 3", "where am I?", "play track 1 and tell me where I am"},
	}
}

// Concierge has the server tools, the location and the table booking, and
// the toolsets given.
func Concierge(m model.LLM, toolsets ...tool.Toolset) (agent.Agent, error) {
	return concierge(m, nil, toolsets...)
}

func concierge(m model.LLM, remote []*toolcallback.RemoteTool, toolsets ...tool.Toolset) (agent.Agent, error) {
	tools, err := Tools()
	if err != nil {
		return nil, err
	}
	own := pick(tools, "get_weather", "calculate", "get_current_time", "get_location", "book_table", "show_surface")
	for _, rt := range remote {
		own = append(own, rt)
	}
	// No spare capacity, as pick leaves none: ADK appends the toolsets'
	// tools to the agent's slice on each request, which would write into
	// a backing array that concurrent invocations share.
	own = slices.Clip(own)
	return llmagent.New(llmagent.Config{
		Name:        "concierge",
		Description: "Weather, time, arithmetic, your location and restaurant bookings",
		Model:       m,
		Instruction: conciergeInstruction,
		Tools:       own,
		Toolsets:    toolsets,
		// Set here: ADK v2.2.0's runner sets an unset root mode on every
		// run, a write that races between an instance's first concurrent
		// turns.
		Mode: llmagent.ModeChat,
	})
}

// DJ plays music in the user's page, prepares playlists in the
// background, and has the toolsets given. Its team member must list the
// playlist tool as background (TeamWithMCP does).
func DJ(m model.LLM, toolsets ...tool.Toolset) (agent.Agent, error) {
	playlist, err := PlaylistTool()
	if err != nil {
		return nil, err
	}
	return dj(m, playlist, toolsets...)
}

func dj(m model.LLM, playlist *toolcallback.BackgroundTool, toolsets ...tool.Toolset) (agent.Agent, error) {
	tools, err := Tools()
	if err != nil {
		return nil, err
	}
	return llmagent.New(llmagent.Config{
		Name:        "dj",
		Description: "Plays the background music and prepares playlists",
		Model:       m,
		Instruction: djInstruction,
		Tools:       append(pick(tools, "change_bgm", "get_location"), playlist),
		Toolsets:    toolsets,
		// Set here: ADK v2.2.0's runner sets an unset root mode on every
		// run, a write that races between an instance's first concurrent
		// turns.
		Mode: llmagent.ModeChat,
	})
}

func pick(tools []tool.Tool, names ...string) []tool.Tool {
	var out []tool.Tool
	for _, t := range tools {
		if slices.Contains(names, t.Name()) {
			out = append(out, t)
		}
	}
	// No spare capacity: ADK v2.2.0 appends each invocation's toolset tools
	// to the agent's Tools slice, so concurrent chats would write theirs
	// into one backing array and could run each other's MCP tools.
	return slices.Clip(out)
}
