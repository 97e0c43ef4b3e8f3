package functions

import (
	"cmp"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"google.golang.org/adk/v2/session"

	"github.com/baton-run/baton/toolcallback"
)

// chatView is GET /Chat/{chatId}: the conversation as AI SDK UIMessages,
// which a page passes to useChat as its initial messages.
type chatView struct {
	Agent    string          `json:"agent"`  // the chat's active agent
	Agents   []string        `json:"agents"` // the agents it may switch to
	Messages []uiMessageView `json:"messages"`
}

type uiMessageView struct {
	ID    string           `json:"id"`
	Role  string           `json:"role"`
	Parts []map[string]any `json:"parts"`
}

func (s *Server) chatMessages(w http.ResponseWriter, r *http.Request, chatID string) error {
	user, err := s.ident.userID(r.Context(), r)
	if err != nil {
		return err
	}
	limit := 50
	if h := r.URL.Query().Get("history"); h != "" {
		n, err := strconv.Atoi(h)
		if err != nil || n < 1 || n > maxHistory {
			return fmt.Errorf("%w: history must be 1 to %d", errBadRequest, maxHistory)
		}
		limit = n
	}
	state, err := s.team.Pending(r.Context(), user, chatID, "", historyContext)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, chatView{Agent: state.Agent, Agents: s.team.Agents(), Messages: uiMessages(state.History, limit, state.Calls)})
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
		if toolcallback.StartsTurn(ev) {
			id, _ := ev.Actions.StateDelta[toolcallback.MessageKey].(string)
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
	var switched []map[string]any // data-agent parts for the next assistant message
	for _, item := range history(events, shown) {
		switch {
		case item.Role == "user":
			out = append(out, uiMessageView{ID: userIDs[item.Time], Role: "user", Parts: []map[string]any{{"type": "text", "text": item.Text}}})
			continue
		case item.Role == "switch" && item.MessageID == "":
			switched = append(switched, map[string]any{"type": "data-agent", "data": map[string]any{"switched": true, "from": item.From, "to": item.To}})
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
			m.Parts = append(m.Parts, map[string]any{"type": "data-agent", "data": map[string]any{"switched": true, "from": item.From, "to": item.To}})
		}
		if item.Text != "" {
			m.Parts = append(m.Parts, map[string]any{"type": "text", "text": item.Text, "state": "done"})
		}
		if item.ToolCallID != "" {
			m.Parts = append(m.Parts, toolPart(item, calls[item.ToolCallID]))
		}
	}
	if len(switched) > 0 {
		out = append(out, uiMessageView{ID: "switch-" + strconv.Itoa(len(out)), Role: "assistant", Parts: switched})
	}
	return out
}

// toolPart is a tool call as a UIMessage part; open is its ledger record
// while it waits for an answer.
func toolPart(item historyItem, open *toolcallback.Call) map[string]any {
	p := map[string]any{"type": "tool-" + item.ToolName, "toolCallId": item.ToolCallID, "input": item.Input, "providerExecuted": true}
	if item.Input == nil {
		p["input"] = map[string]any{}
	}
	switch {
	case item.ErrorText != "":
		p["state"], p["errorText"] = "output-error", item.ErrorText
	case item.Output != nil:
		p["state"], p["output"] = "output-available", item.Output
	case open != nil && open.Kind == toolcallback.KindApproval:
		p["state"], p["approval"] = "approval-requested", map[string]any{"id": open.ID}
		p["callProviderMetadata"] = map[string]any{"baton": map[string]any{"deviceId": open.ClientID}}
	case open != nil && open.Kind == toolcallback.KindBrowser:
		p["state"], p["providerExecuted"] = "input-available", false
		p["callProviderMetadata"] = map[string]any{"baton": map[string]any{"deviceId": open.ClientID}}
	default:
		p["state"] = "input-available"
	}
	if item.Approval != "" {
		p["approval"] = map[string]any{"id": cmp.Or(item.ApprovalID, item.ToolCallID), "approved": item.Approval == "approved"}
	}
	return p
}
