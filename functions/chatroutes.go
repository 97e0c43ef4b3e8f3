package functions

// Chat's routes: the useChat adapter (package usechat) serves the AI SDK's
// requests; live mode (live.go) and stop (stop.go) are served here.

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"

	"github.com/baton-run/baton/usechat"
)

func (s *Server) chat(w http.ResponseWriter, r *http.Request, log *slog.Logger) error {
	chatID, rest, err := chatPath(r.URL)
	if err != nil {
		return err
	}
	switch {
	case r.Method == http.MethodPost && chatID == "":
		return s.usechat.Post(w, r, log)
	case r.Method == http.MethodGet && chatID == "":
		return s.usechat.List(w, r)
	case r.Method == http.MethodPatch && chatID != "" && rest == "":
		return s.usechat.Rename(w, r, chatID)
	case r.Method == http.MethodDelete && chatID != "" && rest == "":
		return s.usechat.Delete(w, r, chatID)
	case (r.Method == http.MethodPut || r.Method == http.MethodDelete) && chatID != "" && strings.HasPrefix(rest, "feedback/"):
		return s.rating(w, r, chatID, rest)
	case r.Method == http.MethodGet && chatID != "" && rest == "stream":
		return s.usechat.Resume(w, r, log, chatID)
	case r.Method == http.MethodGet && chatID != "" && rest == "live":
		return s.chatLive(w, r, log, chatID)
	case r.Method == http.MethodGet && chatID != "" && rest == "":
		return s.usechat.Messages(w, r, chatID)
	case r.Method == http.MethodDelete && chatID != "" && rest == "stream":
		return s.stop(w, r, chatID)
	case r.Method == http.MethodGet && chatID != "" && strings.HasPrefix(rest, "files/"):
		return s.usechat.File(w, r, chatID, rest)
	}
	return fmt.Errorf("%w: POST or GET /Chat, GET, PATCH or DELETE /Chat/{chatId}, GET or DELETE /Chat/{chatId}/stream, "+
		"GET /Chat/{chatId}/live, PUT or DELETE /Chat/{chatId}/feedback/{messageId}", errBadRequest)
}

// rating serves PUT and DELETE /Chat/{chatId}/feedback/{messageId}; rest
// is what follows the chat id.
func (s *Server) rating(w http.ResponseWriter, r *http.Request, chatID, rest string) error {
	seg := strings.TrimPrefix(rest, "feedback/")
	messageID, err := url.PathUnescape(seg)
	if err != nil || messageID == "" || strings.Contains(seg, "/") {
		return fmt.Errorf("%w: /Chat/{chatId}/feedback/{messageId}", errBadRequest)
	}
	if r.Method == http.MethodPut {
		return s.usechat.Rate(w, r, chatID, messageID)
	}
	return s.usechat.Unrate(w, r, chatID, messageID)
}

// chatPath splits what follows the function's name in the path: "" for
// POST /Chat, or a chat id and what follows it. The id is one path
// segment, URL-decoded, as DefaultChatTransport encodes it.
func chatPath(u *url.URL) (chatID, rest string, err error) {
	p := u.EscapedPath()
	if i := strings.Index(p, "/"+NameChat); i >= 0 {
		p = p[i+len(NameChat)+1:]
	}
	p = strings.Trim(p, "/")
	if p == "" {
		return "", "", nil
	}
	seg, rest, _ := strings.Cut(p, "/")
	id, err := url.PathUnescape(seg)
	if err != nil {
		return "", "", fmt.Errorf("%w: chat id: %v", errBadRequest, err)
	}
	return id, rest, nil // Team checks it
}

// chatCaller is the verified sender of a Chat request, for usechat.
func (s *Server) chatCaller(r *http.Request) (usechat.Caller, error) {
	c, err := s.ident.caller(r.Context(), r)
	return usechat.Caller{User: c.user, Limits: s.limitsOf(r.Context(), c)}, err
}
