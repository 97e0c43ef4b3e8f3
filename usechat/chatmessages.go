package usechat

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"google.golang.org/adk/v2/session"

	"github.com/baton-run/baton/toolcallback"
	"github.com/baton-run/baton/transcript"
	"github.com/baton-run/baton/uistream"
	"github.com/baton-run/baton/userinput"
)

// chatView is GET /Chat/{chatId}: a page of the conversation as AI SDK
// UIMessages, which a page passes to useChat as its initial messages.
type chatView struct {
	Agent    string          `json:"agent"`  // the chat's active agent
	Agents   []string        `json:"agents"` // the agents it may switch to
	Messages []uiMessageView `json:"messages"`
	// Earlier says the chat has messages before the first of Messages:
	// ask for them with before set to its id.
	Earlier bool `json:"earlier"`
}

type uiMessageView struct {
	ID    string       `json:"id"`
	Role  string       `json:"role"`
	Parts []uiPartView `json:"parts"`
	// Metadata is the message's metadata as its stream set it:
	// {"stopped": true} on the answer of a turn the user stopped.
	Metadata map[string]any `json:"metadata,omitempty"`
}

// uiPartView is a part of a UIMessage as useChat holds it: a textPart, a
// toolPart or an agentPart. Type is the part's type in the AI SDK.
type uiPartView interface{ partType() string }

// textPart is a text part, or (Type "reasoning") an assistant's thought
// summary; an assistant's is in state "done".
type textPart struct {
	Type  string `json:"type"` // "text"
	Text  string `json:"text"`
	State string `json:"state,omitempty"`
}

// agentPart is a data-agent part: the chat moved from one agent to
// another, as the turn's stream reported it.
type agentPart struct {
	Type string      `json:"type"` // "data-agent"
	Data agentSwitch `json:"data"`
}

type agentSwitch struct {
	Switched bool   `json:"switched"`
	From     string `json:"from"`
	To       string `json:"to"`
}

// toolPart is a tool call: States input-available (open),
// approval-requested (an open approval), output-available (preliminary:
// a running background call's progress) and output-error. Every call but
// an open browser call is provider-executed, so useChat never runs it.
type toolPart struct {
	Type                 string         `json:"type"` // "tool-" + the tool's name
	ToolCallID           string         `json:"toolCallId"`
	State                string         `json:"state"`
	Input                map[string]any `json:"input"`
	Output               any            `json:"output,omitempty"`
	ErrorText            string         `json:"errorText,omitempty"`
	ProviderExecuted     bool           `json:"providerExecuted"`
	Preliminary          bool           `json:"preliminary,omitempty"` // Output is a running background call's latest progress
	Approval             *approvalView  `json:"approval,omitempty"`
	CallProviderMetadata *callMetadata  `json:"callProviderMetadata,omitempty"`
}

// approvalView is a tool part's approval: its id is the approvalId the
// stream asked it with; Approved is the decision, once made.
type approvalView struct {
	ID       string `json:"id"`
	Approved *bool  `json:"approved,omitempty"`
}

// callMetadata names the device that may answer an open call.
type callMetadata struct {
	Baton struct {
		DeviceID string `json:"deviceId"`
	} `json:"baton"`
}

// surfacePart is a data-a2ui part: an A2UI surface as it last was, in
// the message that showed it first (docs/a2ui.md).
type surfacePart struct {
	Type string               `json:"type"` // "data-a2ui"
	ID   string               `json:"id"`   // the surface id
	Data uistream.SurfaceData `json:"data"`
}

// actionPart is a data-a2ui-action part: the A2UI action a user message
// sent, {"version", "action"}.
type actionPart struct {
	Type string          `json:"type"` // "data-a2ui-action"
	Data json.RawMessage `json:"data"` // as the client sent it
}

func (p surfacePart) partType() string { return p.Type }
func (p actionPart) partType() string  { return p.Type }
func (p textPart) partType() string    { return p.Type }
func (p agentPart) partType() string   { return p.Type }
func (p toolPart) partType() string    { return p.Type }

func newAgentPart(item HistoryItem) agentPart {
	return agentPart{Type: "data-agent", Data: agentSwitch{Switched: true, From: item.From, To: item.To}}
}

func (s *Server) chatMessages(w http.ResponseWriter, r *http.Request, chatID string) error {
	user, err := s.userID(r)
	if err != nil {
		return err
	}
	q, err := readPageQuery(r.URL.Query())
	if err != nil {
		return err
	}
	state, err := s.team.Pending(r.Context(), toolcallback.PendingRequest{UserID: user, ChatID: chatID, History: historyContext})
	if err != nil {
		return err
	}
	p, ok := q.page(state)
	if !ok {
		// The recent events do not hold the page: read them all.
		if state, err = s.team.Pending(r.Context(), toolcallback.PendingRequest{UserID: user, ChatID: chatID, History: wholeHistory}); err != nil {
			return err
		}
		p, _ = q.page(state)
	}
	if p.missing {
		return fmt.Errorf("%w: before %q", toolcallback.ErrMessageNotFound, q.before)
	}
	s.signFileParts(r, user, p.messages)
	if err := s.withRatings(r, user, chatID, p.messages); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, chatView{Agent: state.Agent, Agents: s.team.Agents(), Messages: p.messages, Earlier: p.earlier})
	return nil
}

// uiMessages turns the history a page shows (see history) into UIMessages:
// one per user message, with the id the client gave it when it has one,
// and one per turn's assistant message, with the id its streams carry.
// Tool parts are provider-executed except open browser calls; open calls
// name the device that may answer them, and an open approval asks for one.
func uiMessages(events session.Events, shown int, open []*toolcallback.Call) []uiMessageView {
	userIDs := map[time.Time]string{} // the client's message ids, by the user event's time
	for ev := range events.All() {
		if transcript.StartsTurn(ev) {
			id, _ := ev.Actions.StateDelta[transcript.MessageIDKey].(string)
			if id == "" {
				id = ev.ID
			}
			userIDs[ev.Timestamp] = id
		}
	}
	calls := map[string]*toolcallback.Call{}
	for _, c := range open {
		calls[c.OriginalID] = c
	}
	out := []uiMessageView{}
	var switched []uiPartView // data-agent parts for the next assistant message
	var switchedAt time.Time  // when the last of them happened
	var userAt time.Time      // the user message out ends with
	for _, item := range history(events, shown) {
		switch {
		case item.Role == "user":
			var part uiPartView = textPart{Type: "text", Text: item.Text}
			if item.File != nil {
				part = newFilePart(item.File)
			}
			if item.Action != nil {
				part = actionPart{Type: "data-" + uistream.SurfaceActionPartName, Data: item.Action}
			}
			// The parts of one user message are items of one event.
			if n := len(out); n > 0 && out[n-1].Role == "user" && userAt.Equal(item.Time) {
				out[n-1].Parts = append(out[n-1].Parts, part)
				continue
			}
			userAt = item.Time
			out = append(out, uiMessageView{ID: userIDs[item.Time], Role: "user", Parts: []uiPartView{part}})
			continue
		case item.Role == "switch" && item.MessageID == "":
			switched, switchedAt = append(switched, newAgentPart(item)), item.Time
			continue
		}
		n := len(out)
		if n == 0 || out[n-1].Role != "assistant" || out[n-1].ID != item.MessageID {
			out = append(out, uiMessageView{ID: item.MessageID, Role: "assistant"})
			n++
		}
		m := &out[n-1]
		m.Parts = append(m.Parts, switched...)
		switched = nil
		if item.Role == "switch" {
			m.Parts = append(m.Parts, newAgentPart(item))
		}
		if item.Reasoning != "" {
			m.Parts = append(m.Parts, textPart{Type: "reasoning", Text: item.Reasoning, State: "done"})
		}
		if item.Text != "" {
			m.Parts = append(m.Parts, textPart{Type: "text", Text: item.Text, State: "done"})
		}
		if item.Stopped {
			m.Metadata = stoppedMetadata
		}
		if item.File != nil {
			m.Parts = append(m.Parts, newFilePart(item.File))
		}
		if item.Surface != nil {
			m.Parts = append(m.Parts, surfacePart{Type: "data-" + uistream.SurfacePartName, ID: item.Surface.SurfaceID, Data: *item.Surface})
		}
		if item.ToolCallID != "" {
			m.Parts = append(m.Parts, newToolPart(item, calls[item.ToolCallID]))
			if open := calls[item.ToolCallID]; open != nil && open.Kind == toolcallback.KindInput {
				m.Parts = append(m.Parts, newInputPart(open))
			}
		}
	}
	if len(switched) > 0 {
		// Named after the switch, so that every read names it alike.
		out = append(out, uiMessageView{ID: "switch-" + strconv.FormatInt(switchedAt.UnixMilli(), 10), Role: "assistant", Parts: switched})
	}
	return out
}

// newToolPart is a tool call as a UIMessage part; open is its ledger
// record while it waits for an answer.
func newToolPart(item HistoryItem, open *toolcallback.Call) toolPart {
	p := toolPart{Type: "tool-" + item.ToolName, ToolCallID: item.ToolCallID, Input: item.Input, ProviderExecuted: true}
	if p.Input == nil {
		p.Input = map[string]any{}
	}
	switch {
	case item.ErrorText != "":
		p.State, p.ErrorText = "output-error", item.ErrorText
	case item.Output != nil:
		p.State, p.Output = "output-available", item.Output
	case open != nil && open.Kind == toolcallback.KindApproval:
		p.State, p.Approval = "approval-requested", &approvalView{ID: open.ID}
		p.CallProviderMetadata = deviceOf(open)
	case open != nil && (open.Kind == toolcallback.KindBrowser || open.Kind == toolcallback.KindSurface):
		p.State, p.ProviderExecuted = "input-available", false
		p.CallProviderMetadata = deviceOf(open)
	case open != nil && toolcallback.IsWork(open.Kind) && open.Work != nil && len(open.Work.Progress) > 0:
		// Running: its latest progress is its output until the result
		// replaces it, as the streams show it.
		p.State, p.Output, p.Preliminary = "output-available", open.Work.Progress, true
	default:
		p.State = "input-available"
	}
	if item.Approval != "" {
		approved := item.Approval == "approved"
		// Records of switches made before MovedCall kept the approval id
		// have none: the call id stands in.
		p.Approval = &approvalView{ID: cmp.Or(item.ApprovalID, item.ToolCallID), Approved: &approved}
	}
	return p
}

func deviceOf(open *toolcallback.Call) *callMetadata {
	m := &callMetadata{}
	m.Baton.DeviceID = open.ClientID
	return m
}

// newInputPart is the question a paused call asks (docs/mcp-input.md): a
// browser call of userinput.ToolName that the device that started
// the turn answers with its output, as the stream showed it.
func newInputPart(open *toolcallback.Call) toolPart {
	p := toolPart{Type: "tool-" + open.Tool, ToolCallID: open.OriginalID, State: "input-available", Input: open.Args,
		CallProviderMetadata: deviceOf(open)}
	if open.Input != nil {
		p.Type, p.ToolCallID, p.Input = "tool-"+userinput.ToolName, open.ID, open.Input.Shown()
		if open.InCall {
			p.Input["live"] = true // an in-call question: answered with ToolResult (the wire name stays "live")
		}
	}
	if p.Input == nil {
		p.Input = map[string]any{}
	}
	return p
}
