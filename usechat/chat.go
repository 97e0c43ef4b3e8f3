package usechat

// Chat: the AI SDK's useChat talks to Baton through DefaultChatTransport
// with nothing but its api URL (…/Chat), headers and body set.
//
//	POST /Chat                   {id, messages, trigger, messageId?, deviceId?, agent?}
//	                             (regenerate and edit: chatrewind.go)
//	GET  /Chat/{chatId}/stream   resume: the running turn, replayed from Firestore; 204 when none
//	GET  /Chat/{chatId}          the conversation as UI messages, for a page that loads
//	DELETE /Chat/{chatId}/stream stop: the running turn, on whatever instance (stop.go)
//	GET  /Chat/{chatId}/live     a live conversation, over a WebSocket (live.go)
//	GET  /Chat/{chatId}/files/…  a file of the conversation, by the signed URL the above gives (files.go)
//
// Of messages, only what is new is taken: the last message when it is a
// user message the chat has not taken yet, or the answers (tool outputs,
// approval responses) its last assistant message carries for calls that
// are pending in the ledger. Everything else is ignored: the server's
// transcript is the truth.

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"google.golang.org/genai"

	"github.com/baton-run/baton/a2ui"
	"github.com/baton-run/baton/errclass"
	"github.com/baton-run/baton/sessionstore"
	"github.com/baton-run/baton/toolcallback"
	"github.com/baton-run/baton/uistream"
)

// deviceHeader names the device (tab) sending a Chat request, as an
// alternative to the body's deviceId; a GET has no body.
const deviceHeader = "X-Baton-Device"

// uiMessage is the part of an AI SDK UIMessage Chat reads (see
// takeMessage): unknown fields are ignored, the fields read are checked
// exactly.
type uiMessage struct {
	ID    string   `json:"id"`
	Role  string   `json:"role"`
	Parts []uiPart `json:"parts"`
}

type uiPart struct {
	Type             string          `json:"type"`
	Text             string          `json:"text,omitempty"`
	MediaType        string          `json:"mediaType,omitempty"`
	URL              string          `json:"url,omitempty"`
	Filename         string          `json:"filename,omitempty"`
	ToolCallID       string          `json:"toolCallId,omitempty"`
	State            string          `json:"state,omitempty"`
	Input            json.RawMessage `json:"input,omitempty"`
	Output           json.RawMessage `json:"output,omitempty"`
	ErrorText        string          `json:"errorText,omitempty"`
	ProviderExecuted bool            `json:"providerExecuted,omitempty"`
	Approval         *uiApproval     `json:"approval,omitempty"`
	Data             json.RawMessage `json:"data,omitempty"`
}

type uiApproval struct {
	ID       string `json:"id"`
	Approved *bool  `json:"approved,omitempty"`
	Reason   string `json:"reason,omitempty"`
}

// chatDevice is the device (tab) a request comes from: the body's
// deviceId or the X-Baton-Device header; both, when given, must agree.
func chatDevice(r *http.Request, fromBody string) (string, error) {
	h := r.Header.Get(deviceHeader)
	if fromBody != "" && h != "" && fromBody != h {
		return "", fmt.Errorf("%w: deviceId and %s differ", errBadRequest, deviceHeader)
	}
	d := fromBody
	if d == "" {
		d = h
	}
	if d == "" {
		return "", fmt.Errorf("%w: send the device id as deviceId in the body or in %s", errBadRequest, deviceHeader)
	}
	return d, nil // Team checks it
}

func (s *Server) chatPost(w http.ResponseWriter, r *http.Request, log *slog.Logger) error {
	c, err := s.ident(r)
	if err != nil {
		return err
	}
	req, err := s.readChatBody(w, r)
	if err != nil {
		return err
	}
	device, err := chatDevice(r, req.DeviceID)
	if err != nil {
		return err
	}
	x := &exchange{w: w, r: r, log: log, caller: c, device: device}
	switch req.Trigger {
	case "submit-message":
	case "regenerate-message":
		return s.chatRegenerate(x, req)
	default:
		return fmt.Errorf("%w: trigger must be submit-message or regenerate-message", errBadRequest)
	}
	if req.Messages == 0 {
		return fmt.Errorf("%w: messages is empty", errBadRequest)
	}
	last, err := s.takeMessage(req)
	if err != nil {
		return err
	}
	switch last.Role {
	case "user":
		if req.MessageID != "" {
			return s.chatEdit(x, req, last)
		}
		return s.chatMessage(x, req.ID, req.Agent, last)
	case "assistant":
		return s.chatAnswers(x, req.ID, last)
	}
	return fmt.Errorf("%w: the last message must be a user message or the assistant message holding answers", errBadRequest)
}

// chatMessage runs a turn on the user's new message. A message the chat
// took already (the same message id, sent again) is answered with the
// stream of the turn it started.
func (s *Server) chatMessage(x *exchange, chatID, agentName string, m *uiMessage) error {
	actions, err := m.cardActions()
	if err != nil {
		return err
	}
	content, err := s.newContent(m, x.caller.User, chatID, len(actions) > 0)
	if err != nil {
		return err
	}
	inv, report, err := s.team.Turn(x.r.Context(), toolcallback.TurnRequest{
		UserID: x.caller.User, ChatID: chatID, ClientID: x.device, Agent: agentName, Content: content, MessageID: m.ID, Limits: x.caller.Limits,
		Actions: actions,
	})
	if errors.Is(err, toolcallback.ErrMessageTaken) {
		return s.chatReplay(x, chatID)
	}
	if err != nil {
		return err
	}
	s.respond(x.w, x.r, x.log, inv, reply{data: map[string]any{"agent": report}, page: true, device: x.device, files: s.fileLinks(x.r, x.caller.User)})
	return nil
}

// newContent is the new user message m to user's chat chatID as a turn
// takes it: its id checked, its files within the limit and storable, or
// files of the chat sent back by URL (sentBackFiles). With actions (the
// message also sends actions on cards) it may have no other part.
func (s *Server) newContent(m *uiMessage, user, chatID string, actions bool) (*genai.Content, error) {
	// The message id is stored, not used as a path; it is bounded like one.
	if err := sessionstore.ValidateID("message id", m.ID); err != nil {
		return nil, err
	}
	content, err := m.content(s.maxFile(), actions)
	if err != nil {
		return nil, err
	}
	if content, err = s.sentBackFiles(user, chatID, content); err != nil {
		return nil, err
	}
	return content, s.checkFiles(content)
}

// actionPartType is the type of a user message's part that sends an
// action on an A2UI card: {"type": "data-a2ui-action", "data": {"version",
// "action": {...}}} (docs/a2ui.md).
const actionPartType = "data-" + uistream.SurfaceActionPartName

// cardActions takes the actions on cards m sends out of its parts, each
// decoded as the client sent it; the turn checks them against the chat's
// surfaces (toolcallback.TurnRequest.Actions) and the model reads them
// after the message's text and files.
func (m *uiMessage) cardActions() ([]a2ui.Action, error) {
	var actions []a2ui.Action
	rest := m.Parts[:0]
	for i, p := range m.Parts {
		if p.Type != actionPartType {
			rest = append(rest, p)
			continue
		}
		a, err := a2ui.DecodeAction(p.Data)
		if err != nil {
			return nil, fmt.Errorf("parts[%d]: %w", i, err)
		}
		actions = append(actions, a)
	}
	m.Parts = rest
	return actions, nil
}

// content is the user message as ADK takes it: text parts, and file parts
// given as data URLs; empty only when actions says the message sends
// actions on cards too.
func (m *uiMessage) content(maxFile int64, actions bool) (*genai.Content, error) {
	c := &genai.Content{Role: genai.RoleUser}
	for i, p := range m.Parts {
		switch p.Type {
		case "text":
			if p.Text != "" {
				c.Parts = append(c.Parts, genai.NewPartFromText(p.Text))
			}
		case "file":
			if !strings.HasPrefix(p.URL, "data:") {
				// A file by URL: newContent takes only a file URL of the chat.
				c.Parts = append(c.Parts, &genai.Part{FileData: &genai.FileData{FileURI: p.URL, MIMEType: p.MediaType, DisplayName: p.Filename}})
				continue
			}
			meta, data, ok := strings.Cut(strings.TrimPrefix(p.URL, "data:"), ",")
			mediaType, isBase64 := strings.CutSuffix(meta, ";base64")
			if !ok || !isBase64 {
				return nil, fmt.Errorf("%w: parts[%d]: a file must be a base64 data URL", errBadRequest, i)
			}
			b, err := base64.StdEncoding.DecodeString(data)
			if err != nil {
				return nil, fmt.Errorf("%w: parts[%d]: %v", errBadRequest, i, err)
			}
			if int64(len(b)) > maxFile {
				return nil, &errclass.LimitError{What: fmt.Sprintf("the file of parts[%d]", i), Limit: maxFile, Env: "BATON_MAX_FILE_BYTES"}
			}
			if p.MediaType != "" {
				mediaType = p.MediaType
			}
			c.Parts = append(c.Parts, &genai.Part{InlineData: &genai.Blob{Data: b, MIMEType: mediaType, DisplayName: p.Filename}})
		case actionPartType:
			return nil, fmt.Errorf("%w: parts[%d]: an action on a surface is sent in a new message, not an edit", errBadRequest, i)
		}
	}
	if len(c.Parts) == 0 && !actions {
		return nil, fmt.Errorf("%w: the user message has no text or file part", errBadRequest)
	}
	return c, nil
}

// chatAnswers records the answers the last assistant message carries:
// outputs of browser calls (tool parts in state output-available or
// output-error that the page ran) and approval responses. Each goes
// through the ledger, so one that is recorded already runs nothing again;
// the answer that completes its model step resumes the agent, whose
// stream is the response. When nothing resumes (a re-POST, or other calls
// of the step still open), the response is the turn as the transcript has
// it.
//
// When an answer is recorded but other calls of its step are still open
// (or the session is busy and the answer waits for delivery), the response
// continues the posted message with nothing: the page keeps what it shows.
// A POST that brings nothing new while calls are open is 409
// pending_calls, so a page that sends automatically stops there.
func (s *Server) chatAnswers(x *exchange, chatID string, m *uiMessage) error {
	var resumed *toolcallback.ResumeOutcome
	answers, recorded := 0, false
	for _, p := range m.Parts {
		res, err := s.chatAnswer(x, chatID, p)
		if errors.Is(err, errNoAnswer) {
			continue
		}
		answers++
		var resolved *toolcallback.AlreadyResolvedError
		if errors.As(err, &resolved) && resolved.Same {
			continue // recorded before: nothing runs again
		}
		if err != nil {
			if resumed != nil {
				x.log.WarnContext(x.r.Context(), "answer after a resume", "error", err.Error())
				continue
			}
			return err
		}
		if res.Invocation != nil {
			resumed = res
		} else {
			recorded = true
		}
	}
	if answers == 0 {
		return fmt.Errorf("%w: the last message is an assistant message with no tool output or approval response", errBadRequest)
	}
	if resumed == nil && recorded {
		_ = uistream.NewEncoder(uistream.NewSSE(x.w), m.ID).Finish()
		return nil
	}
	if resumed == nil {
		open, err := s.team.Pending(x.r.Context(), toolcallback.PendingRequest{UserID: x.caller.User, ChatID: chatID})
		if err != nil {
			return err
		}
		if len(open.Calls) > 0 {
			return &toolcallback.PendingCallsError{Calls: open.Calls}
		}
		return s.chatReplay(x, chatID)
	}
	s.respond(x.w, x.r, x.log, resumed.Invocation, reply{turn: resumed.Turn, page: true, device: x.device, files: s.fileLinks(x.r, x.caller.User)})
	return nil
}

// errNoAnswer: a part that answers nothing.
var errNoAnswer = errors.New("no answer")

// chatAnswer records the answer one part carries, if any.
func (s *Server) chatAnswer(x *exchange, chatID string, p uiPart) (*toolcallback.ResumeOutcome, error) {
	if !strings.HasPrefix(p.Type, "tool-") && p.Type != "dynamic-tool" {
		return nil, errNoAnswer
	}
	result := toolcallback.ResumeRequest{UserID: x.caller.User, ChatID: chatID, ClientID: x.device}
	switch {
	case p.State == "approval-responded" && p.Approval != nil && p.Approval.Approved != nil:
		result.CallID = p.Approval.ID
		result.Answer.Approved = p.Approval.Approved
		if *p.Approval.Approved && len(p.Input) > 0 {
			// The approver's edit: the tool part's input as the page
			// changed it, merged into the model's arguments.
			var payload any
			if err := json.Unmarshal(p.Input, &payload); err != nil {
				return nil, fmt.Errorf("%w: input of %q: %v", errBadRequest, p.ToolCallID, err)
			}
			result.Answer.Payload = payload
		}
	case p.ProviderExecuted:
		return nil, errNoAnswer
	case p.State == "output-available":
		var output map[string]any
		if err := json.Unmarshal(p.Output, &output); err != nil || output == nil {
			return nil, fmt.Errorf("%w: the output of %q must be a JSON object", errBadRequest, p.ToolCallID)
		}
		result.CallID, result.Answer.Output = p.ToolCallID, output
	case p.State == "output-error":
		errText := p.ErrorText
		if errText == "" {
			errText = "the tool failed"
		}
		result.CallID, result.Answer.Error = p.ToolCallID, errText
	default:
		return nil, errNoAnswer
	}
	if result.CallID == "" {
		return nil, fmt.Errorf("%w: a tool part without its call id", errBadRequest)
	}
	return s.team.Resume(x.r.Context(), result)
}
