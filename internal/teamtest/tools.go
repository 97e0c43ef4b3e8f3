package teamtest

import (
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/functiontool"

	"github.com/baton-run/baton/toolcallback"
	"github.com/baton-run/baton/userinput"
)

// BGMArgs are change_bgm's arguments.
type BGMArgs struct {
	Track int `json:"track"`
}

// TableArgs are book_table's arguments. The name is optional, so a call
// with only the number of people is a valid booking too.
type TableArgs struct {
	People int    `json:"people"`
	Name   string `json:"name,omitempty"`
}

// CRMArgs are ask_crm's arguments.
type CRMArgs struct {
	Query string `json:"query"`
}

// WeatherArgs are get_weather's arguments.
type WeatherArgs struct {
	City string `json:"city"`
}

// InputState is the state clear_notes's question carries, as an MCP
// server's multi-round-trip request does; an answer must bring it back.
const InputState = "state-only-the-server-knows"

// Tools are the demo's tools as the tests declare them, once: the names,
// kinds and arguments of local/agent's, with answers a test can predict
// and counts of what ran. Each world declares its own, so its counts are
// its own.
type Tools struct {
	// BGM is change_bgm(track): a browser tool that only the client that
	// started the turn may answer.
	BGM tool.Tool
	// Location is get_location(): a browser tool any of the user's
	// clients may answer, within a minute.
	Location tool.Tool
	// CRM is ask_crm(query): an external tool, answered by another system
	// holding the call's token.
	CRM tool.Tool
	// Book is book_table(people, name): it runs once a person approves
	// (and may edit) the call, and answers {"booked": true, "people": n}.
	Book tool.Tool
	// Weather is get_weather(city): a server tool that answers
	// {"forecast": "sunny in <city>"} at once.
	Weather tool.Tool
	// ClearNotes is clear_notes(): it asks the user first (a question of
	// userinput, as the demo's notes server asks), then forgets the notes
	// if they said yes.
	ClearNotes tool.Tool
	// Surface is show_surface: the model draws A2UI surfaces with it.
	Surface tool.Tool

	Booked   atomic.Int32 // runs of book_table
	BookArgs atomic.Value // the TableArgs book_table last ran with
	Cleared  atomic.Int32 // clear_notes calls that ended with the user's yes
}

// NewTools declares the demo's tools for a test.
func NewTools(t testing.TB) *Tools {
	t.Helper()
	ts := &Tools{}
	must := func(tl tool.Tool, err error) tool.Tool {
		t.Helper()
		if err != nil {
			t.Fatalf("declaring a demo tool: %v", err)
		}
		return tl
	}
	ts.BGM = must(toolcallback.Browser[BGMArgs](toolcallback.BrowserConfig{Name: "change_bgm", Description: "switch the page's music track"}))
	ts.Location = must(toolcallback.Browser[struct{}](toolcallback.BrowserConfig{Name: "get_location", Description: "the browser's location", AnyDevice: true, Timeout: time.Minute}))
	ts.CRM = must(toolcallback.External[CRMArgs](toolcallback.ExternalConfig{Name: "ask_crm", Description: "ask the CRM"}))
	ts.Book = must(toolcallback.Approval(toolcallback.ApprovalConfig[TableArgs]{Name: "book_table", Description: "book a table"}, ts.book))
	ts.Weather = must(functiontool.New(functiontool.Config{Name: "get_weather", Description: "weather"}, weather))
	ts.ClearNotes = must(functiontool.New(functiontool.Config{Name: "clear_notes", Description: "forgets the notes, after asking"}, ts.clearNotes))
	ts.Surface = must(toolcallback.Surface(toolcallback.SurfaceConfig{}))
	return ts
}

// All is every tool, in the order the default agent declares them.
func (ts *Tools) All() []tool.Tool {
	return []tool.Tool{ts.BGM, ts.Location, ts.CRM, ts.Book, ts.Weather, ts.ClearNotes, ts.Surface}
}

func (ts *Tools) book(_ agent.Context, a TableArgs) (map[string]any, error) {
	ts.Booked.Add(1)
	ts.BookArgs.Store(a)
	return map[string]any{"booked": true, "people": a.People}, nil
}

func weather(_ agent.Context, c WeatherArgs) (map[string]any, error) {
	return map[string]any{"forecast": "sunny in " + c.City}, nil
}

// clearNotes asks before it acts, as an MCP server's multi-round-trip
// request does (docs/mcp-input.md): the first run asks, the run with the
// answer acts on it.
func (ts *Tools) clearNotes(ctx agent.Context, _ struct{}) (map[string]any, error) {
	reply, err := userinput.ReplyOf(ctx)
	if err != nil {
		return nil, err
	}
	if reply == nil {
		return map[string]any{"status": "asking"}, userinput.Ask(ctx, userinput.Request{
			Server: "notes", Tool: "clear_notes", Message: "Forget the notes?", Round: 1, State: InputState,
			Requests: map[string]any{"confirm": map[string]any{"method": "elicitation/create", "params": map[string]any{
				"mode": "form", "message": "Forget the notes?",
				"requestedSchema": map[string]any{"type": "object", "properties": map[string]any{"confirm": map[string]any{"type": "boolean"}}},
			}}},
		})
	}
	if reply.State != InputState {
		return nil, toolcallback.ErrInvalidAnswer
	}
	r := reply.Responses["confirm"]
	if r.Action != userinput.Accept || r.Content["confirm"] != true {
		return map[string]any{"cleared": false, "action": r.Action}, nil
	}
	ts.Cleared.Add(1)
	return map[string]any{"cleared": true}, nil
}
