package functions

// ToolResult: POST /ToolResult, the answer to a paused call, by its ids
// or its call token; the answer that completes its model step streams
// the resumed agent (usechat.Server.Respond).

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/baton-run/baton/toolcallback"
	"github.com/baton-run/baton/usechat"
	"github.com/baton-run/baton/userinput"
)

// toolResultRequest is the body of a ToolResult: the ids of the call (or a
// call token instead) and exactly one of output, error and approved.
type toolResultRequest struct {
	SessionID  string         `json:"sessionId,omitempty"`
	ToolCallID string         `json:"toolCallId,omitempty"`
	ClientID   string         `json:"clientId,omitempty"`
	Token      string         `json:"token,omitempty"`
	Output     map[string]any `json:"output,omitempty"`
	Error      string         `json:"error,omitempty"`
	Approved   *bool          `json:"approved,omitempty"`
	Payload    any            `json:"payload,omitempty"`
}

func (s *Server) toolResult(w http.ResponseWriter, r *http.Request, log *slog.Logger) error {
	var req toolResultRequest
	if err := s.decodeJSON(w, r, &req); err != nil {
		return err
	}
	result := toolcallback.ResumeRequest{
		Answer: toolcallback.Answer{Output: req.Output, Error: req.Error, Approved: req.Approved, Payload: req.Payload},
	}
	if req.Token != "" {
		// The token alone authorises the answer (an external system or an
		// approval link has no user session).
		if req.SessionID != "" || req.ToolCallID != "" {
			return fmt.Errorf("%w: send either a token or sessionId and toolCallId, not both", errBadRequest)
		}
		result.Token, result.ClientID = req.Token, req.ClientID
	} else {
		user, err := s.ident.userID(r.Context(), r)
		if err != nil {
			return err
		}
		result.UserID, result.ChatID, result.CallID, result.ClientID = user, req.SessionID, req.ToolCallID, req.ClientID
	}
	res, err := s.team.Resume(r.Context(), result)
	var resolved *toolcallback.AlreadyResolvedError
	if errors.As(err, &resolved) && resolved.Same {
		// A retry of the recorded answer: report the outcome, run nothing.
		writeJSON(w, http.StatusOK, toolResultResponse{Status: "already_resolved", Call: newCallView(resolved.Call, "")})
		return nil
	}
	if err != nil {
		return err
	}
	if res.Invocation == nil {
		writeJSON(w, http.StatusAccepted, toolResultResponse{
			Status: "recorded", Call: newCallView(res.Call, ""), Waiting: res.Waiting, Deferred: res.Deferred,
		})
		return nil
	}
	s.usechat.Respond(w, r, log, res.Invocation, usechat.Reply{Turn: res.Turn})
	return nil
}

type toolResultResponse struct {
	Status string   `json:"status"` // "recorded" or "already_resolved"
	Call   callView `json:"call"`
	// Waiting lists other calls of the same model step still unanswered;
	// the agent resumes when they have answers.
	Waiting []string `json:"waiting,omitempty"`
	// Deferred: the session was busy; the answer is kept and delivered by
	// the sweeper or the next message.
	Deferred bool `json:"deferred,omitempty"`
}

// callView is a paused call as clients see it.
type callView struct {
	// ToolCallID is the model's call id; ApprovalID, for approvals, is the
	// id an approval answer must carry (as toolCallId in ToolResult).
	ToolCallID string         `json:"toolCallId"`
	ApprovalID string         `json:"approvalId,omitempty"`
	ToolName   string         `json:"toolName"`
	Input      map[string]any `json:"input"`
	Kind       string         `json:"kind"`
	Status     string         `json:"status"`
	Hint       string         `json:"hint,omitempty"`
	Answer     any            `json:"answer,omitempty"`
	ExpiresAt  time.Time      `json:"expiresAt"`
	Token      string         `json:"token,omitempty"`
}

func newCallView(c *toolcallback.Call, token string) callView {
	v := callView{
		ToolCallID: c.OriginalID, ToolName: c.Tool, Input: c.Args, Kind: string(c.Kind),
		Status: string(c.Status), Hint: c.Hint, ExpiresAt: c.Expires, Token: token,
	}
	if v.Input == nil {
		v.Input = map[string]any{}
	}
	if c.Kind == toolcallback.KindApproval {
		v.ApprovalID = c.ID
	}
	if c.Kind == toolcallback.KindInput && c.Input != nil {
		// A question is shown as the stream shows it: a call of the input
		// tool, answered with {"responses": ...} under its own id.
		v.ToolCallID, v.ToolName = c.ID, userinput.ToolName
		v.Input = c.Input.Shown()
		if c.InCall {
			v.Input["live"] = true // an in-call question: answered with ToolResult (the wire name stays "live")
		}
	}
	if c.Answer != nil {
		v.Answer = c.Answer
	}
	return v
}
