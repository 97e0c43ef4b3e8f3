package functions

// Pending: GET /Pending, what a reloaded tab needs to continue: the calls
// it may answer and the recent conversation (usechat.History).

import (
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"strconv"

	"github.com/baton-run/baton/toolcallback"
	"github.com/baton-run/baton/usechat"
)

// pendingResponse lets a reloaded tab continue: the calls it may answer
// and the recent conversation.
type pendingResponse struct {
	Agent   string                `json:"agent"`  // the chat's active agent
	Agents  []string              `json:"agents"` // the agents it may switch to
	Calls   []callView            `json:"calls"`
	History []usechat.HistoryItem `json:"history"`
}

// maxHistory bounds the history a request may ask for, in events.
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
	state, err := s.team.Pending(r.Context(), toolcallback.PendingRequest{UserID: user, ChatID: sid, ClientID: client, History: math.MaxInt})
	if err != nil {
		return err
	}
	resp := pendingResponse{Agent: state.Agent, Agents: s.team.Agents(), Calls: []callView{}, History: usechat.History(state.History, limit)}
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
