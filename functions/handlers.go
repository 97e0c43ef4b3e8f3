package functions

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"google.golang.org/adk/v2/platform"
	"google.golang.org/adk/v2/session"
	"google.golang.org/genai"

	"github.com/baton-run/baton/sessionstore"
	"github.com/baton-run/baton/toolcallback"
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
	user, err := s.ident.userID(r.Context(), r)
	if err != nil {
		return err
	}
	var req turnRequest
	if err := s.decodeJSON(w, r, &req); err != nil {
		return err
	}
	if err := requireIDs("sessionId", req.SessionID, "clientId", req.ClientID); err != nil {
		return err
	}
	msg, err := req.content()
	if err != nil {
		return err
	}
	inv, report, err := s.team.Turn(r.Context(), toolcallback.ChatTurn{
		UserID: user, ChatID: req.SessionID, ClientID: req.ClientID, Agent: req.Agent, Content: msg,
	})
	if err != nil {
		return err
	}
	s.respond(w, r, log, inv, map[string]any{"agent": report})
	return nil
}

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
	result := toolcallback.Result{
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
		if err := requireIDs("sessionId", req.SessionID, "toolCallId", req.ToolCallID, "clientId", req.ClientID); err != nil {
			return err
		}
		result.UserID, result.SessionID, result.CallID, result.ClientID = user, req.SessionID, req.ToolCallID, req.ClientID
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
	s.respond(w, r, log, res.Invocation, nil)
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
	if c.Answer != nil {
		v.Answer = c.Answer
	}
	return v
}

// pendingResponse lets a reloaded tab continue: the calls it may answer
// and the recent conversation.
type pendingResponse struct {
	Agent   string        `json:"agent"`  // the chat's active agent
	Agents  []string      `json:"agents"` // the agents it may switch to
	Calls   []callView    `json:"calls"`
	History []historyItem `json:"history"`
}

type historyItem struct {
	Role     string    `json:"role"` // "user" or "assistant"
	Text     string    `json:"text,omitempty"`
	ToolName string    `json:"toolName,omitempty"` // a tool call the assistant made
	Time     time.Time `json:"time"`
}

const maxHistory = 100

func (s *Server) pending(w http.ResponseWriter, r *http.Request, _ *slog.Logger) error {
	user, err := s.ident.userID(r.Context(), r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	sid, client := q.Get("sessionId"), q.Get("clientId")
	if err := requireIDs("sessionId", sid, "clientId", client); err != nil {
		return err
	}
	limit := 30
	if h := q.Get("history"); h != "" {
		n, err := strconv.Atoi(h)
		if err != nil || n < 0 || n > maxHistory {
			return fmt.Errorf("%w: history must be 0 to %d", errBadRequest, maxHistory)
		}
		limit = n
	}
	chat, err := s.team.Chat(r.Context(), user, sid)
	if err != nil {
		return err
	}
	calls, err := s.team.Pending(r.Context(), user, sid, client)
	if err != nil {
		return err
	}
	resp := pendingResponse{Agent: chat.Agent, Agents: s.team.Agents(), Calls: []callView{}, History: []historyItem{}}
	for _, c := range calls {
		token := ""
		if c.Kind == toolcallback.KindExternal && len(s.cfg.TokenKey) > 0 {
			token, _ = s.team.Token(c)
		}
		resp.Calls = append(resp.Calls, newCallView(c, token))
	}
	if limit > 0 {
		got, err := s.sessions.GetSessionScoped(r.Context(), &session.GetRequest{AppName: s.cfg.AppName, UserID: user, SessionID: chat.SessionID, NumRecentEvents: limit})
		if err != nil {
			return err
		}
		resp.History = history(got.Session.Events())
	}
	writeJSON(w, http.StatusOK, resp)
	return nil
}

// history turns stored events into what a chat page shows.
func history(events session.Events) []historyItem {
	out := []historyItem{}
	for ev := range events.All() {
		if ev.Content == nil {
			continue
		}
		role := "assistant"
		if ev.Author == "user" {
			role = "user"
		}
		for _, p := range ev.Content.Parts {
			switch {
			case p.Text != "" && !p.Thought:
				out = append(out, historyItem{Role: role, Text: p.Text, Time: ev.Timestamp})
			case p.FunctionCall != nil && role == "assistant" && p.FunctionCall.Name != "adk_request_confirmation":
				out = append(out, historyItem{Role: role, ToolName: p.FunctionCall.Name, Time: ev.Timestamp})
			}
		}
	}
	return out
}

// requireIDs validates ids given as name, value pairs, in order.
func requireIDs(pairs ...string) error {
	for i := 0; i+1 < len(pairs); i += 2 {
		if err := sessionstore.ValidateID(pairs[i], pairs[i+1]); err != nil {
			return fmt.Errorf("%w: %w", errBadRequest, err)
		}
	}
	return nil
}

// respond sends an invocation to the client: a UI message stream, or one
// JSON document when the client accepts only JSON. It returns when the
// invocation has ended, even if the client went away, so the instance
// keeps the request (and its CPU) until the agent is done.
func (s *Server) respond(w http.ResponseWriter, r *http.Request, log *slog.Logger, inv *toolcallback.Invocation, data map[string]any) {
	messageID := "msg-" + platform.NewUUID(r.Context())
	if wantsJSON(r) {
		buf := &bufferedResponse{header: http.Header{}}
		s.stream(buf, log, inv, messageID, data, 0)
		chunks, err := parseChunks(buf.body.Bytes())
		if err != nil {
			log.Error("re-read turn", "error", err)
		}
		writeJSON(w, http.StatusOK, turnJSON{MessageID: messageID, Chunks: chunks})
		return
	}
	s.stream(w, log, inv, messageID, data, s.cfg.KeepAlive)
}

type turnJSON struct {
	MessageID string            `json:"messageId"`
	Chunks    []json.RawMessage `json:"chunks"` // the same chunks the stream would carry
}

// stream writes the invocation's events as they arrive, with a keep-alive
// comment every keepAlive while the model is slow.
func (s *Server) stream(w http.ResponseWriter, log *slog.Logger, inv *toolcallback.Invocation, messageID string, data map[string]any, keepAlive time.Duration) {
	sw := NewStreamWriter(w, messageID)
	_ = sw.Start()
	for name, d := range data {
		_ = sw.Data(name, d)
	}
	if keepAlive > 0 {
		stop := make(chan struct{})
		defer close(stop)
		go func() {
			t := time.NewTicker(keepAlive)
			defer t.Stop()
			for {
				select {
				case <-stop:
					return
				case <-t.C:
					_ = sw.KeepAlive()
				}
			}
		}()
	}
	for ev, err := range inv.Events() {
		if err != nil {
			log.Error("invocation failed", "error", err.Error())
			_ = sw.Error("the agent failed; please try again")
			continue
		}
		// Write errors mean the client left; the invocation goes on.
		_ = sw.Event(ev, func(c *genai.FunctionCall) CallKind {
			if slices.Contains(ev.LongRunningToolIDs, c.ID) {
				return CallBrowser
			}
			return CallServer
		})
		if ev.ErrorCode != "" && !ev.Partial {
			log.Warn("model error", "code", ev.ErrorCode, "message", ev.ErrorMessage)
			_ = sw.Error("the model could not answer: " + ev.ErrorCode)
		}
	}
	_ = sw.Finish()
}

func wantsJSON(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		mt, _, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		switch mt {
		case "text/event-stream":
			return false
		case "application/json":
			return true
		}
	}
	return false
}

// bufferedResponse collects a stream for the JSON form of a turn.
type bufferedResponse struct {
	header http.Header
	body   bytes.Buffer
}

func (b *bufferedResponse) Header() http.Header         { return b.header }
func (b *bufferedResponse) Write(p []byte) (int, error) { return b.body.Write(p) }
func (b *bufferedResponse) WriteHeader(int)             {}
func (b *bufferedResponse) Flush()                      {}

// parseChunks reads the data lines of a UI message stream back.
func parseChunks(stream []byte) ([]json.RawMessage, error) {
	chunks := []json.RawMessage{}
	sc := bufio.NewScanner(bytes.NewReader(stream))
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		chunks = append(chunks, json.RawMessage(data))
	}
	return chunks, sc.Err()
}
