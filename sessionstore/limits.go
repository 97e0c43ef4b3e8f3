package sessionstore

import (
	"slices"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/adk/v2/session"
)

// What the turn limits (toolcallback's Limits) keep here: a chat's recent
// turn times live in its session document, which the commit storing the
// turn's message writes anyway, so counting a chat's turns costs no write
// of its own; the user's counts live in documents of the caller's, written
// in that same commit (AppendOptions.Writes).

// TurnLog returns the times of the recent turns stored in sess's session
// document (AppendOptions.TurnLog), oldest first as written; nil for a
// session not read from this service or not stored yet.
func TurnLog(sess session.Session) []time.Time {
	ss, ok := sess.(*storedSession)
	if !ok {
		return nil
	}
	ss.mu.RLock()
	defer ss.mu.RUnlock()
	return slices.Clone(ss.turnLog)
}

// UserRef is the user's state document, under which documents kept per
// user beside the sessions live (the turn limits' counts).
func (s *Service) UserRef(app, user string) *firestore.DocumentRef { return s.userRef(app, user) }
