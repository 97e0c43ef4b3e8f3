package functions

// Turn: POST /Turn, one user message of a chat in Baton's own JSON; the
// response streams the turn (usechat.Server.Respond).

import (
	"encoding/base64"
	"fmt"
	"log/slog"
	"net/http"

	"google.golang.org/genai"

	"github.com/baton-run/baton/sessionstore"
	"github.com/baton-run/baton/toolcallback"
	"github.com/baton-run/baton/usechat"
)

// turnRequest is the body of a Turn.
type turnRequest struct {
	SessionID string `json:"sessionId"`
	ClientID  string `json:"clientId"`
	// Text or Parts: the user's message.
	Text  string     `json:"text,omitempty"`
	Parts []partJSON `json:"parts,omitempty"`
	// Agent optionally names the agent to talk to.
	Agent string `json:"agent,omitempty"`
	// Replace names a turn to take back, with everything after it: the
	// messageId a Turn response reported. With text or parts, they
	// replace its user message (an edit); without, its user message runs
	// again (a regenerate). See turnReplace.
	Replace string `json:"replace,omitempty"`
}

// partJSON is one part of a user message: text, or inline data.
type partJSON struct {
	Text       string    `json:"text,omitempty"`
	InlineData *blobJSON `json:"inlineData,omitempty"`
}

type blobJSON struct {
	MIMEType string `json:"mimeType"`
	Data     string `json:"data"` // base64
}

func (req *turnRequest) content() (*genai.Content, error) {
	if (req.Text == "") == (len(req.Parts) == 0) {
		return nil, fmt.Errorf("%w: send exactly one of text and parts", errBadRequest)
	}
	if req.Text != "" {
		return genai.NewContentFromText(req.Text, genai.RoleUser), nil
	}
	c := &genai.Content{Role: genai.RoleUser}
	for i, p := range req.Parts {
		switch {
		case p.Text != "" && p.InlineData == nil:
			c.Parts = append(c.Parts, genai.NewPartFromText(p.Text))
		case p.Text == "" && p.InlineData != nil:
			data, err := base64.StdEncoding.DecodeString(p.InlineData.Data)
			if err != nil || p.InlineData.MIMEType == "" {
				return nil, fmt.Errorf("%w: parts[%d].inlineData needs a mimeType and base64 data", errBadRequest, i)
			}
			c.Parts = append(c.Parts, genai.NewPartFromBytes(data, p.InlineData.MIMEType))
		default:
			return nil, fmt.Errorf("%w: parts[%d] needs exactly one of text and inlineData", errBadRequest, i)
		}
	}
	return c, nil
}

func (s *Server) turn(w http.ResponseWriter, r *http.Request, log *slog.Logger) error {
	if r.Method == http.MethodDelete {
		return s.turnStop(w, r)
	}
	c, err := s.ident.caller(r.Context(), r)
	if err != nil {
		return err
	}
	var req turnRequest
	if err := s.decodeJSON(w, r, &req); err != nil {
		return err
	}
	if req.Replace != "" {
		return s.turnReplace(w, r, log, c, &req)
	}
	msg, err := req.content()
	if err != nil {
		return err
	}
	if err := s.usechat.CheckFiles(msg); err != nil {
		return err
	}
	inv, report, err := s.team.Turn(r.Context(), toolcallback.TurnRequest{
		UserID: c.user, ChatID: req.SessionID, ClientID: req.ClientID, Agent: req.Agent, Content: msg, Limits: s.limitsOf(r.Context(), c),
	})
	if err != nil {
		return err
	}
	s.usechat.Respond(w, r, log, inv, usechat.Reply{Data: map[string]any{"agent": report}})
	return nil
}

// turnReplace is Turn's regenerate and edit: {sessionId, clientId,
// replace, text?|parts?}. A request served before is 409 already_taken
// (Turn has no stream to replay; the chat's history has the answer).
func (s *Server) turnReplace(w http.ResponseWriter, r *http.Request, log *slog.Logger, c caller, req *turnRequest) error {
	if req.Agent != "" {
		return fmt.Errorf("%w: replace keeps the chat's agent; send agent with a new message", errBadRequest)
	}
	if err := sessionstore.ValidateID("message id", req.Replace); err != nil {
		return err
	}
	rw := toolcallback.RewindRequest{UserID: c.user, ChatID: req.SessionID, ClientID: req.ClientID, Message: req.Replace, Limits: s.limitsOf(r.Context(), c)}
	if req.Text != "" || len(req.Parts) > 0 {
		content, err := req.content()
		if err != nil {
			return err
		}
		if err := s.usechat.CheckFiles(content); err != nil {
			return err
		}
		rw.Content = content
	}
	inv, err := s.team.Rewind(r.Context(), rw)
	if err != nil {
		return err
	}
	s.usechat.Respond(w, r, log, inv, usechat.Reply{})
	return nil
}
