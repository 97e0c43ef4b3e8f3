// Package notes is the local runner's own MCP server: notes kept per MCP
// session, over Streamable HTTP. Every result names the session (its first
// eight characters), so the demo shows that a chat keeps one MCP session
// across agent switches and across instances.
package notes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// AddArgs are add_note's arguments.
type AddArgs struct {
	Text string `json:"text" jsonschema:"the note to keep"`
}

// Notes is what both tools answer: the session's notes so far.
type Notes struct {
	Session string   `json:"session" jsonschema:"the MCP session, shortened"`
	Notes   []string `json:"notes"`
}

// maxNotes bounds one session's notes; maxSessions the sessions kept (the
// oldest is forgotten first).
const (
	maxNotes    = 50
	maxSessions = 1000
)

type store struct {
	mu    sync.Mutex
	notes map[string][]string
	order []string
}

func (s *store) add(session, text string) Notes {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.notes[session]; !ok {
		s.order = append(s.order, session)
		if len(s.order) > maxSessions {
			delete(s.notes, s.order[0])
			s.order = s.order[1:]
		}
	}
	if text != "" && len(s.notes[session]) < maxNotes {
		s.notes[session] = append(s.notes[session], text)
	}
	return Notes{Session: short(session), Notes: append([]string{}, s.notes[session]...)}
}

func short(id string) string { return id[:min(len(id), 8)] }

// Handler serves the notes server over Streamable HTTP, keeping sessions
// (stateful).
func Handler() http.Handler {
	s := &store{notes: map[string][]string{}}
	srv := mcp.NewServer(&mcp.Implementation{Name: "baton-notes", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "add_note", Description: "Keep a note for this conversation."},
		func(_ context.Context, req *mcp.CallToolRequest, a AddArgs) (*mcp.CallToolResult, Notes, error) {
			text := strings.TrimSpace(a.Text)
			if text == "" {
				return nil, Notes{}, errors.New("the note is empty")
			}
			return nil, s.add(req.Session.ID(), text), nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "list_notes", Description: "The notes kept in this conversation."},
		func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, Notes, error) {
			return nil, s.add(req.Session.ID(), ""), nil
		})
	srv.AddTool(&mcp.Tool{Name: "clear_notes", Description: "Forget every note of this conversation (the user is asked first).",
		InputSchema: json.RawMessage(`{"type":"object"}`)}, s.clear)
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
}

// clear asks the user before it forgets the session's notes: it answers
// with an input request (a confirmation form), and forgets them when
// called again with the user's yes. Baton talks 2025-11-25 to this server
// (it keeps sessions), so go-sdk puts the question to the client as
// elicitation/create on the live call and calls this again with the
// answer; a client of 2026-07-28 would get the request and the state
// itself. The state names the session it was given for.
func (s *store) clear(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	session := req.Session.ID()
	count := len(s.add(session, "").Notes)
	if req.Params.RequestState == "" {
		if count == 0 {
			return result(Notes{Session: short(session), Notes: []string{}}, "no notes to forget")
		}
		return &mcp.CallToolResult{
			InputRequests: mcp.InputRequestMap{"confirm": &mcp.ElicitParams{
				Mode:    "form",
				Message: fmt.Sprintf("Forget all %d notes of this conversation?", count),
				RequestedSchema: map[string]any{"type": "object", "required": []string{"confirm"},
					"properties": map[string]any{"confirm": map[string]any{"type": "boolean", "title": "Yes, forget them"}}},
			}},
			RequestState: "clear:" + session,
		}, nil
	}
	if req.Params.RequestState != "clear:"+session {
		return nil, errors.New("this answer belongs to another conversation")
	}
	answer, _ := req.Params.InputResponses["confirm"].(*mcp.ElicitResult)
	if answer == nil || answer.Action != "accept" || answer.Content["confirm"] != true {
		action := "declined"
		if answer != nil && answer.Action == "cancel" {
			action = "cancelled"
		}
		return result(s.add(session, ""), "the user "+action+": nothing forgotten")
	}
	s.forget(session)
	return result(Notes{Session: short(session), Notes: []string{}}, "all notes forgotten")
}

func (s *store) forget(session string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.notes[session]; ok {
		s.notes[session] = nil
	}
}

// result is a tool result holding notes and what happened.
func result(n Notes, outcome string) (*mcp.CallToolResult, error) {
	out := map[string]any{"session": n.Session, "notes": n.Notes, "outcome": outcome}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, err
	}
	return &mcp.CallToolResult{StructuredContent: out, Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}, nil
}
