package functions

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
)

// RemotePushPath is the path, under the A2A function, where remote agents
// send their push notifications (BATON_REMOTE_PUSH_URL ends with it).
const RemotePushPath = "/remote-push"

// maxPushBytes bounds a push notification's body: the notification only
// names its task, which is read from the remote.
const maxPushBytes = 1 << 20

// remotePushReply is the push callback's answer.
type remotePushReply struct {
	Outcome string `json:"outcome"`
}

// remotePush takes a remote agent's push notification: POST
// {A2A}/remote-push, with the token given for the call in the
// A2A-Notification-Token header. No user credentials: the token alone
// names and authorises one call (toolcallback.Team.Notify verifies it);
// a missing, forged or expired token, or another call's, is 401, a
// notification for another task 401 too, one for a closed call 410, and
// none of them writes anything. The request lasts as long as the agent
// the remote's result resumes.
func (s *Server) remotePush(w http.ResponseWriter, r *http.Request, log *slog.Logger) error {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxPushBytes))
	if err != nil {
		return fmt.Errorf("%w: %w", errBadRequest, err)
	}
	out, err := s.team.Notify(r.Context(), r.Header.Get("A2A-Notification-Token"), body)
	if err != nil {
		return err
	}
	if out.Invocation != nil {
		if err := out.Invocation.Wait(); err != nil {
			log.WarnContext(r.Context(), "agent resumed with a remote agent's result", "error", err)
		}
	}
	log.InfoContext(r.Context(), "remote push", "outcome", out.What)
	writeJSON(w, http.StatusOK, remotePushReply{Outcome: out.What})
	return nil
}
