package usechat

// Regenerate and edit on Chat (toolcallback.Team.Rewind does the work):
//
//	POST /Chat {trigger: "regenerate-message", messageId?}   regenerate
//	POST /Chat {trigger: "submit-message", messageId, messages: [..., edited]}   edit
//
// useChat's regenerate() names the assistant message to replace in
// messageId (none: the last one) and cuts its own list before it, so the
// body's last message is the user message before it; Chat reads neither
// from the body but the ids. sendMessage({text, messageId}) replaces the
// user message messageId and what follows it: the body's last message is
// the edited message, under the same id. Both bodies may hold the whole
// conversation (the stock transport) or the newest message only (the
// demo page): Chat reads the ids and the last message, never the history.

import (
	"errors"
	"fmt"

	"github.com/baton-run/baton/sessionstore"
	"github.com/baton-run/baton/toolcallback"
)

// chatRegenerate takes back the assistant message the request names (or
// the one after its last message, a user message; or the chat's last),
// and streams a new answer to the user message before it. The same
// request again streams the answer it made.
func (s *Server) chatRegenerate(x *exchange, req *postBody) error {
	target := req.MessageID
	if target == "" && req.Messages > 0 {
		last, err := s.takeMessage(req)
		if err != nil {
			return err
		}
		target = last.ID
	}
	if target != "" {
		if err := sessionstore.ValidateID("message id", target); err != nil {
			return err
		}
	}
	inv, err := s.team.Rewind(x.r.Context(), toolcallback.RewindRequest{UserID: x.caller.User, ChatID: req.ID, ClientID: x.device, Message: target, Limits: x.caller.Limits})
	return s.chatRewound(x, req.ID, inv, err)
}

// chatEdit replaces the user message m (named by the body's messageId)
// and everything after it with m as now sent, and streams the answer.
func (s *Server) chatEdit(x *exchange, req *postBody, m *uiMessage) error {
	if m.ID != req.MessageID {
		return fmt.Errorf("%w: an edit's last message is the edited message, with messageId as its id", errBadRequest)
	}
	content, err := s.newContent(m, x.caller.User, req.ID, false)
	if err != nil {
		return err
	}
	inv, err := s.team.Rewind(x.r.Context(), toolcallback.RewindRequest{UserID: x.caller.User, ChatID: req.ID, ClientID: x.device, Message: m.ID, Content: content, Limits: x.caller.Limits})
	return s.chatRewound(x, req.ID, inv, err)
}

// chatRewound answers a rewind: its turn's stream, or the chat's latest
// turn when the same request was served before.
func (s *Server) chatRewound(x *exchange, chatID string, inv *toolcallback.Invocation, err error) error {
	if errors.Is(err, toolcallback.ErrMessageTaken) {
		return s.chatReplay(x, chatID)
	}
	if err != nil {
		return err
	}
	s.respond(x.w, x.r, x.log, inv, reply{page: true, device: x.device, files: s.fileLinks(x.r, x.caller.User)})
	return nil
}
