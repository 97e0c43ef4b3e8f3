package usechat

// Ratings of assistant messages (package feedback):
//
//	PUT    /Chat/{chatId}/feedback/{messageId}   {"rating": "up"|"down", "comment"?: "…"}
//	DELETE /Chat/{chatId}/feedback/{messageId}
//
// A message is rated by the id its stream and GET /Chat/{chatId} give it;
// GET /Chat/{chatId} returns each rating in its message's metadata
// ({"feedback": {"rating", "comment", "updated"}}).

import (
	"fmt"
	"net/http"
	"slices"

	"google.golang.org/adk/v2/platform"

	"github.com/baton-run/baton/feedback"
	"github.com/baton-run/baton/toolcallback"
)

// ratingBody is PUT /Chat/{chatId}/feedback/{messageId}.
type ratingBody struct {
	Rating  string `json:"rating"`
	Comment string `json:"comment"`
}

// Rate serves PUT /Chat/{chatId}/feedback/{messageId}: the caller's rating
// of an assistant message of their chat, replacing an earlier one.
func (s *Server) Rate(w http.ResponseWriter, r *http.Request, chatID, messageID string) error {
	user, err := s.userID(r)
	if err != nil {
		return err
	}
	var body ratingBody
	if err := s.decodeSmall(w, r, &body); err != nil {
		return err
	}
	rating := feedback.Rating{Rating: body.Rating, Comment: body.Comment, Updated: platform.Now(r.Context()).UTC()}
	if err := rating.Check(); err != nil {
		return err // before any read: bad input costs nothing
	}
	if err := s.checkAnswer(r, user, chatID, messageID); err != nil {
		return err
	}
	if err := s.team.Feedback().Put(r.Context(), user, chatID, messageID, rating); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, rating)
	return nil
}

// Unrate serves DELETE /Chat/{chatId}/feedback/{messageId}.
func (s *Server) Unrate(w http.ResponseWriter, r *http.Request, chatID, messageID string) error {
	user, err := s.userID(r)
	if err != nil {
		return err
	}
	if err := s.checkAnswer(r, user, chatID, messageID); err != nil {
		return err
	}
	if err := s.team.Feedback().Delete(r.Context(), user, chatID, messageID); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// checkAnswer checks that messageID names an assistant message of user's
// chat, as the chat's history shows it: a rating is only ever of a message
// there is.
func (s *Server) checkAnswer(r *http.Request, user, chatID, messageID string) error {
	state, err := s.team.Pending(r.Context(), toolcallback.PendingRequest{UserID: user, ChatID: chatID, History: wholeHistory})
	if err != nil {
		return err
	}
	messages := uiMessages(state.History, state.History.Len(), state.Calls)
	if !slices.ContainsFunc(messages, func(m uiMessageView) bool { return m.ID == messageID && m.Role == "assistant" }) {
		return fmt.Errorf("%w: %q is no assistant message of the chat", toolcallback.ErrMessageNotFound, messageID)
	}
	return nil
}

// withRatings puts user's ratings of the page's assistant messages in
// their metadata, read in one round trip.
func (s *Server) withRatings(r *http.Request, user, chatID string, messages []uiMessageView) error {
	var ids []string
	for _, m := range messages {
		if m.Role == "assistant" {
			ids = append(ids, m.ID)
		}
	}
	ratings, err := s.team.Feedback().Ratings(r.Context(), user, chatID, ids)
	if err != nil || len(ratings) == 0 {
		return err
	}
	for i := range messages {
		messages[i].rate(ratings)
	}
	return nil
}

// rate puts m's rating, if ratings hold one, in its metadata (a copy:
// metadata maps may be shared).
func (m *uiMessageView) rate(ratings map[string]feedback.Rating) {
	rating, ok := ratings[m.ID]
	if !ok || m.Role != "assistant" {
		return
	}
	meta := map[string]any{"feedback": rating}
	for k, v := range m.Metadata {
		meta[k] = v
	}
	m.Metadata = meta
}
