// Package notes is the local runner's own MCP server: notes kept per MCP
// session, over Streamable HTTP. Every result names the session (its first
// eight characters), so the demo shows that a chat keeps one MCP session
// across agent switches and across instances.
package notes

import (
	"context"
	"errors"
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
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
}
