package functions

// Stop: the running turn of a chat ends when its user asks, whichever
// instance runs it (toolcallback.Team.Stop).
//
//	DELETE /Chat/{chatId}/stream   (useChat's page: the resume URL, deleted)
//	DELETE /Turn/{sessionId}       (Turn's clients)
//
// 204 when nothing was running or paused in the chat (nothing written);
// otherwise 200 with a stopReply. The request waits up to stopWait for a
// running turn to end, so that the next message does not meet 409 busy.

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// stopWait bounds how long a stop request waits for the stopped turn to
// end (its holder notices within about a second, then stores what it
// leaves).
const stopWait = 5 * time.Second

// stopReply is what a stop found.
type stopReply struct {
	// Running: a turn was running and was asked to stop; Ended: it has
	// ended (false: it was still ending after stopWait).
	Running bool `json:"running"`
	Ended   bool `json:"ended"`
	// Cancelled are the calls of a paused turn that the stop cancelled.
	Cancelled []string `json:"cancelled"`
}

// stop stops what runs in the user's chat chatID.
func (s *Server) stop(w http.ResponseWriter, r *http.Request, chatID string) error {
	user, err := s.ident.userID(r.Context(), r)
	if err != nil {
		return err
	}
	report, err := s.team.Stop(r.Context(), user, chatID, stopWait)
	if err != nil {
		return err
	}
	if !report.Running && len(report.Cancelled) == 0 {
		w.WriteHeader(http.StatusNoContent)
		return nil
	}
	out := stopReply{Running: report.Running, Ended: report.Ended, Cancelled: report.Cancelled}
	if out.Cancelled == nil {
		out.Cancelled = []string{}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// turnStop is DELETE /Turn/{sessionId}: Turn's clients name the chat by
// its session id.
func (s *Server) turnStop(w http.ResponseWriter, r *http.Request) error {
	p := r.URL.EscapedPath()
	if i := strings.Index(p, "/"+NameTurn); i >= 0 {
		p = p[i+len(NameTurn)+1:]
	}
	seg := strings.Trim(p, "/")
	id, err := url.PathUnescape(seg)
	if err != nil || id == "" || strings.Contains(seg, "/") {
		return fmt.Errorf("%w: DELETE /Turn/{sessionId}", errBadRequest)
	}
	return s.stop(w, r, id) // Team checks the id
}
