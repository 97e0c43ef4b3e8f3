package toolcallback

import (
	"sync"

	"github.com/baton-run/baton/sessionstore"
)

// activeSessions remembers, per chat, the ADK session it last pointed at,
// so that a turn can read the chat and its session in one round trip. It
// is a guess checked against the chat document read in that same round
// trip: a wrong or missing entry (a cold instance, a switch made by
// another instance) costs one more read of the session, never a wrong one.
// Without an entry the guess is the chat's first session (sessionstore.ChatSessionID).
type activeSessions struct {
	mu  sync.Mutex
	ids map[string]string // by user and chat id
}

// maxActiveSessions bounds the memory the guesses take; past it they are
// forgotten all at once and relearned.
const maxActiveSessions = 100_000

func (a *activeSessions) guess(user, chat string) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	if sid, ok := a.ids[user+"\x00"+chat]; ok {
		return sid
	}
	return sessionstore.ChatSessionID(chat, 0)
}

func (a *activeSessions) put(user, chat, sid string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.ids == nil || len(a.ids) >= maxActiveSessions {
		a.ids = map[string]string{}
	}
	a.ids[user+"\x00"+chat] = sid
}
