package toolcallback

import (
	"errors"

	"google.golang.org/adk/v2/session"
)

// MessageIDKey is the session-state key that holds the client's id of the
// last message a turn took (TurnRequest.MessageID). The user event of that
// turn sets it, so the id is stored in the same commit as the message.
const MessageIDKey = "baton_message_id"

// ErrMessageTaken is returned by Turn when the session already took a
// message with the request's MessageID: the client sent it again.
var ErrMessageTaken = errors.New("message already taken")

// takenMessage returns the client's id of the last message sess took, or "".
func takenMessage(sess session.Session) string {
	v, err := sess.State().Get(MessageIDKey)
	if err != nil {
		return ""
	}
	id, _ := v.(string)
	return id
}
