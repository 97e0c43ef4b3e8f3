package functions

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"google.golang.org/adk/v2/platform"
	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/tool/toolconfirmation"
	"google.golang.org/genai"

	"github.com/baton-run/baton/sessionstore"
	"github.com/baton-run/baton/toolcallback"
	"github.com/baton-run/baton/uistream"
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
	s.respond(w, r, log, inv, "", map[string]any{"agent": report})
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
	s.respond(w, r, log, res.Invocation, res.Turn, nil)
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

// historyItem is one thing a chat page shows, in order: a user message, a
// piece of an assistant message (text, or a tool call), or an agent switch.
type historyItem struct {
	// Role is "user", "assistant", or "switch" (the chat moved from agent
	// From to agent To, reported with the message that asked for it).
	Role string `json:"role"`
	// MessageID, on assistant items, names the assistant message they
	// belong to: the messageId of the start chunk of the turn's stream and
	// of every resume that continued it.
	MessageID string `json:"messageId,omitempty"`
	Text      string `json:"text,omitempty"`
	// A tool call: the arguments it ran with (an approver's edit
	// included), then its output or error once it has one, and a person's
	// decision ("approved" or "rejected") on a call that needed approval.
	// A call made before an agent switch is shown the same way.
	ToolCallID string `json:"toolCallId,omitempty"`
	// ApprovalID, on a call that needed approval, is the id of ADK's
	// confirmation request: the approvalId its stream sent.
	ApprovalID string         `json:"approvalId,omitempty"`
	ToolName   string         `json:"toolName,omitempty"`
	Input      map[string]any `json:"input,omitempty"`
	Output     any            `json:"output,omitempty"`
	ErrorText  string         `json:"errorText,omitempty"`
	Approval   string         `json:"approval,omitempty"`
	From       string         `json:"from,omitempty"`
	To         string         `json:"to,omitempty"`
	Time       time.Time      `json:"time"`
}

const maxHistory = 100

func (s *Server) pending(w http.ResponseWriter, r *http.Request, _ *slog.Logger) error {
	user, err := s.ident.userID(r.Context(), r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	sid, client := q.Get("sessionId"), q.Get("clientId")
	limit := 30
	if h := q.Get("history"); h != "" {
		n, err := strconv.Atoi(h)
		if err != nil || n < 0 || n > maxHistory {
			return fmt.Errorf("%w: history must be 0 to %d", errBadRequest, maxHistory)
		}
		limit = n
	}
	state, err := s.team.Pending(r.Context(), user, sid, client, historyContext)
	if err != nil {
		return err
	}
	resp := pendingResponse{Agent: state.Agent, Agents: s.team.Agents(), Calls: []callView{}, History: history(state.History, limit)}
	for _, c := range state.Calls {
		token := ""
		if c.Kind == toolcallback.KindExternal && len(s.cfg.TokenKey) > 0 {
			token, _ = s.team.Token(c)
		}
		resp.Calls = append(resp.Calls, newCallView(c, token))
	}
	writeJSON(w, http.StatusOK, resp)
	return nil
}

// historyContext is how many events a history is read with: every event
// Team.Pending reads. The events before the ones shown name the turn a
// window starts in and the approvals its calls were asked with.
const historyContext = math.MaxInt

// history turns the last shown of events into what a chat page shows, as
// the turns' streams showed it: the same message ids, tool call ids and
// approval ids. The events before them are read for those ids only.
func history(events session.Events, shown int) []historyItem {
	from := max(events.Len()-shown, 0)
	results := callResults(events)
	decisions := toolcallback.Decisions(events)
	approvals := approvalIDs(events)
	out := []historyItem{}
	var run *sessionstore.Switch // the switch that moved the events being read
	turn := ""
	i := -1
	for ev := range events.All() {
		i++
		if ev.Partial || ev.Content == nil {
			continue
		}
		if toolcallback.StartsTurn(ev) {
			turn = ev.InvocationID
		} else if turn == "" {
			turn = ev.InvocationID // a turn whose message is older than the events read
		}
		sw, records, moved := sessionstore.Migrated(ev)
		var ended *sessionstore.Switch
		if run != nil && (!moved || !sameSwitch(sw, *run)) {
			ended = run // the switch line goes where its turn showed it: after the user's message
		}
		run = nil
		if moved {
			run = &sw
		}
		if i < from {
			continue
		}
		if ended != nil && !toolcallback.StartsTurn(ev) {
			out = append(out, switchItem(*ended, turn))
		}
		out = append(out, eventItems(ev, turn, records, results, decisions, approvals)...)
		if ended != nil && toolcallback.StartsTurn(ev) {
			out = append(out, switchItem(*ended, turn))
		}
	}
	if run != nil && from < events.Len() {
		out = append(out, switchItem(*run, ""))
	}
	return out
}

// approvalIDs finds the confirmation request of each call that needed
// approval: its id, by the call's.
func approvalIDs(events session.Events) map[string]string {
	out := map[string]string{}
	for ev := range events.All() {
		if ev.Partial || ev.Content == nil {
			continue
		}
		for _, p := range ev.Content.Parts {
			if fc := p.FunctionCall; fc != nil && fc.Name == toolconfirmation.FunctionCallName {
				if orig, err := toolconfirmation.OriginalCallFrom(fc); err == nil && orig.ID != "" {
					out[orig.ID] = fc.ID
				}
			}
		}
	}
	return out
}

func sameSwitch(a, b sessionstore.Switch) bool {
	return a.From == b.From && a.To == b.To && a.At.Equal(b.At)
}

// switchItem is a switch shown in turn's message ("" when no turn has
// shown it yet).
func switchItem(sw sessionstore.Switch, turn string) historyItem {
	return historyItem{Role: "switch", MessageID: turn, From: sw.From, To: sw.To, Time: sw.At}
}

// eventItems are the items of one event: text parts, and tool calls,
// whether function calls or the records an agent switch made of them.
func eventItems(ev *session.Event, turn string, records []sessionstore.Record, results map[string]*genai.FunctionResponse, decisions map[string]toolcallback.Decision, approvals map[string]string) []historyItem {
	role := "assistant"
	if ev.Author == "user" {
		role, turn = "user", ""
	}
	recordAt := map[int]sessionstore.Record{}
	for _, r := range records {
		recordAt[r.Part] = r
	}
	var out []historyItem
	for i, p := range ev.Content.Parts {
		item := historyItem{Role: role, MessageID: turn, Time: ev.Timestamp}
		r, isRecord := recordAt[i]
		switch {
		case isRecord:
			item.ToolCallID, item.ToolName, item.Input = r.CallID, r.Tool, r.Args
			item.Output, item.ErrorText = callOutcome(r.Result)
			if r.Outcome != "" {
				item.ErrorText = r.Outcome
			}
			if r.Approved != nil {
				item.Approval = decisionText(*r.Approved)
			}
		case p.Text != "" && !p.Thought:
			item.Text = p.Text
		case p.FunctionCall != nil && role == "assistant" && p.FunctionCall.Name != toolconfirmation.FunctionCallName:
			fc := p.FunctionCall
			item.ToolCallID, item.ToolName, item.Input = fc.ID, fc.Name, fc.Args
			if d, ok := decisions[fc.ID]; ok {
				item.Input, item.Approval = d.Args, decisionText(d.Approved)
			}
			item.ApprovalID = approvals[fc.ID]
			if resp := results[fc.ID]; resp != nil {
				item.Output, item.ErrorText = callOutcome(resp.Response)
			}
		default:
			continue
		}
		out = append(out, item)
	}
	return out
}

// callResults finds the result of each function call in events: its last
// response that is not a placeholder (a paused call's, or a call waiting
// for approval).
func callResults(events session.Events) map[string]*genai.FunctionResponse {
	paused := map[string]bool{}
	out := map[string]*genai.FunctionResponse{}
	for ev := range events.All() {
		if ev.Partial || ev.Content == nil {
			continue
		}
		for _, id := range ev.LongRunningToolIDs {
			paused[id] = true
		}
		for _, p := range ev.Content.Parts {
			fr := p.FunctionResponse
			if fr == nil || fr.Name == toolconfirmation.FunctionCallName {
				continue
			}
			if _, confirming := ev.Actions.RequestedToolConfirmations[fr.ID]; confirming {
				continue
			}
			if paused[fr.ID] && ev.Author != "user" {
				continue // the placeholder; the answer comes from the user's side
			}
			out[fr.ID] = fr
		}
	}
	return out
}

// callOutcome splits a tool's response into the output or the error text
// a stream reports for it.
func callOutcome(resp map[string]any) (output any, errorText string) {
	if resp == nil {
		return nil, ""
	}
	if e, ok := resp["error"]; ok && e != nil && e != "" {
		return nil, uistream.ErrorText(e)
	}
	return resp, ""
}

func decisionText(approved bool) string {
	if approved {
		return "approved"
	}
	return "rejected"
}

// respond sends an invocation to the client: a UI message stream, or one
// JSON document of the same chunks when the client accepts only JSON. It
// returns when the invocation has ended, even if the client went away, so
// the instance keeps the request (and its CPU) until the agent is done.
//
// turn is the invocation id of the turn a resume continues (see
// toolcallback.StartsTurn), "" for a new turn. It is the id of the turn's
// assistant message: every stream of one turn, the first and each resume,
// starts with it, so the client continues one message, and any instance
// can tell it from the session.
func (s *Server) respond(w http.ResponseWriter, r *http.Request, log *slog.Logger, inv *toolcallback.Invocation, turn string, data map[string]any) {
	if wantsJSON(r) {
		var c uistream.Collector
		messageID := stream(r.Context(), uistream.NewEncoder(&c, ""), log, inv, turn, data)
		writeJSON(w, http.StatusOK, turnJSON{MessageID: messageID, Chunks: c.Chunks})
		return
	}
	sse := uistream.NewSSE(w)
	defer keepAlive(sse, s.cfg.KeepAlive)()
	stream(r.Context(), uistream.NewEncoder(sse, ""), log, inv, turn, data)
}

// keepAlive writes a keep-alive comment to sse every d (none when d is 0)
// until the returned function is called.
func keepAlive(sse *uistream.SSE, d time.Duration) (stop func()) {
	if d <= 0 {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(d)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				_ = sse.KeepAlive()
			}
		}
	}()
	return func() { close(done) }
}

type turnJSON struct {
	MessageID string           `json:"messageId"`
	Chunks    []uistream.Chunk `json:"chunks"` // the same chunks the stream would carry
}

// stream encodes the invocation's events as they arrive and returns the
// message id its start chunk carried: turn, or for a new turn the
// invocation id its first event brings (the start chunk waits for it).
func stream(ctx context.Context, enc *uistream.Encoder, log *slog.Logger, inv *toolcallback.Invocation, turn string, data map[string]any) string {
	started := false
	start := func(ev *session.Event) {
		if started {
			return
		}
		started = true
		if turn == "" && ev != nil {
			turn = ev.InvocationID
		}
		if turn == "" {
			turn = "msg-" + platform.NewUUID(ctx) // the invocation failed before its first event
		}
		_ = enc.SetMessageID(turn)
		_ = enc.Start()
		for name, d := range data {
			_ = enc.Data(name, d)
		}
	}
	for ev, err := range inv.Events() {
		start(ev)
		if err != nil {
			log.Error("invocation failed", "error", err.Error())
			_ = enc.Error("the agent failed; please try again")
			continue
		}
		// Send errors mean the client left; the invocation goes on.
		_ = enc.Event(ev, func(c *genai.FunctionCall) uistream.CallKind {
			if slices.Contains(ev.LongRunningToolIDs, c.ID) {
				return uistream.CallBrowser
			}
			return uistream.CallServer
		})
		if ev.ErrorCode != "" && !ev.Partial {
			log.Warn("model error", "code", ev.ErrorCode, "message", ev.ErrorMessage)
			_ = enc.Error("the model could not answer: " + ev.ErrorCode)
		}
	}
	start(nil)
	_ = enc.Finish()
	return turn
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
