package toolcallback

import (
	"container/list"
	"sync"

	"github.com/baton-run/baton/sessionstore"
)

// chatMemory is what this instance remembers of the chats it served, each
// piece a guess the store checks before it is relied on: the session each
// chat last pointed at (activeSessions), and, with warm turns on, the
// session handle its last turn left (warmChats). An instance that
// remembers nothing reads.
type chatMemory struct {
	active activeSessions
	warm   *warmChats // nil: warm turns off
}

// recall returns, when wantCopy, chat's warm copy if this instance has one
// (taken out: two turns never share one), and the session chat is
// believed to point at: first (the session a chat starts with) unless the
// instance saw it point elsewhere.
func (m *chatMemory) recall(user, chat, first string, wantCopy bool) (sid string, copyChat *sessionstore.Chat, copySess *sessionstore.Session) {
	if wantCopy {
		copyChat, copySess = m.warm.take(user, chat)
	}
	return m.active.guess(user, chat, first), copyChat, copySess
}

// guess returns the session chat is believed to point at (see recall).
func (m *chatMemory) guess(user, chat string) string {
	return m.active.guess(user, chat, sessionstore.ChatSessionID(chat, 0))
}

// points notes that chat points at session sid.
func (m *chatMemory) points(user, chat, sid string) { m.active.put(user, chat, sid) }

// forget drops chat's warm copy: something other than a turn wrote its
// session.
func (m *chatMemory) forget(user, chat string) { m.warm.take(user, chat) }

// keeper returns what an invocation on chat's active session does with
// the handle it leaves (nil: nothing, warm turns are off).
func (m *chatMemory) keeper(chat *sessionstore.Chat) func(*sessionstore.Session) {
	if m.warm == nil {
		return nil
	}
	return func(sess *sessionstore.Session) { m.warm.put(chat, sess) }
}

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

func (a *activeSessions) guess(user, chat, first string) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	if sid, ok := a.ids[user+"\x00"+chat]; ok {
		return sid
	}
	return first
}

func (a *activeSessions) put(user, chat, sid string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.ids == nil || len(a.ids) >= maxActiveSessions {
		a.ids = map[string]string{}
	}
	a.ids[user+"\x00"+chat] = sid
}

// warmChats holds the latest handles of the chats this instance served,
// least recently used first out, within a number of chats and of bytes
// (what the sessions take in the store, sessionstore.Session.StoredSize). A handle
// is taken out while a turn uses it, so two turns never share one.
type warmChats struct {
	maxChats, maxBytes int

	mu    sync.Mutex
	bytes int
	order *list.List // of *warmChat, most recently used first
	byKey map[string]*list.Element
}

// warmChat is one chat's copy.
type warmChat struct {
	key  string
	chat *sessionstore.Chat
	sess *sessionstore.Session
	size int
}

func newWarmChats(maxChats, maxBytes int) *warmChats {
	return &warmChats{maxChats: maxChats, maxBytes: maxBytes, order: list.New(), byKey: map[string]*list.Element{}}
}

func warmKey(user, chat string) string { return user + "\x00" + chat }

// take removes and returns the copy of a chat, if there is one.
func (w *warmChats) take(user, chatID string) (*sessionstore.Chat, *sessionstore.Session) {
	if w == nil {
		return nil, nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	el, ok := w.byKey[warmKey(user, chatID)]
	if !ok {
		return nil, nil
	}
	c := w.removeLocked(el)
	return c.chat, c.sess
}

// put keeps sess, the active session of chat, as the chat's copy, and
// evicts the least recently used copies past the limits. A session larger
// than the whole byte limit is not kept.
func (w *warmChats) put(chat *sessionstore.Chat, sess *sessionstore.Session) {
	if w == nil {
		return
	}
	size := sess.StoredSize()
	key := warmKey(chat.UserID, chat.ID)
	w.mu.Lock()
	defer w.mu.Unlock()
	if el, ok := w.byKey[key]; ok {
		w.removeLocked(el)
	}
	if size > w.maxBytes {
		return
	}
	w.byKey[key] = w.order.PushFront(&warmChat{key: key, chat: chat, sess: sess, size: size})
	w.bytes += size
	for w.order.Len() > w.maxChats || w.bytes > w.maxBytes {
		w.removeLocked(w.order.Back())
	}
}

func (w *warmChats) removeLocked(el *list.Element) *warmChat {
	c := w.order.Remove(el).(*warmChat)
	delete(w.byKey, c.key)
	w.bytes -= c.size
	return c
}

// size returns how many chats the copies hold and their bytes.
func (w *warmChats) size() (chats, bytes int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.order.Len(), w.bytes
}
