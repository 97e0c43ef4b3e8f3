package toolcallback

import (
	"container/list"
	"sync"
	"time"

	"github.com/baton-run/baton/sessionstore"
)

// Warm turns. An invocation that ends on this instance leaves its session
// handle as the store holds it (the reply and the lease's release are one
// commit), and the team keeps it, with the chat, in warmChats. The chat's
// next turn on this instance, if it finds it there, reads nothing: it
// stages the user's message on the copy and starts the runner at once,
// while the commit that stores the message and claims the lease runs
// beside the model request. That commit is conditional on the session's
// update time as the copy knows it, so it succeeds only if nothing wrote
// the session since; if it fails, the model request is cancelled, nothing
// was shown, and the turn reads the chat and runs the usual way.
//
// A copy is used only when the agents keep no app: or user: state
// (Options.SessionStateOnly: those are shared with other sessions, and the
// copy's would be stale) and the caller has no token budget (counted by
// unconditional increments, so a copy could not tell it is stale). A
// per-user turn rate is checked on this instance's copy of the user's
// turns document (userTurnsCache), which the message's commit writes on
// condition that it is still as the copy knows it.

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

// drop forgets a chat's copy: an operation on the chat other than a turn
// wrote its session.
func (w *warmChats) drop(user, chatID string) { w.take(user, chatID) }

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

// keepWarm returns what an invocation on chat's active session does with
// the handle it leaves (nil: nothing, warm turns are off).
func (t *Team) keepWarm(chat *sessionstore.Chat) func(*sessionstore.Session) {
	if t.warm == nil {
		return nil
	}
	return func(sess *sessionstore.Session) { t.warm.put(chat, sess) }
}

// copyView is what a turn of req knows of its chat from this instance's
// copy alone, at now; ok is false when there is no copy, or the turn's
// limits need a read (see limits.Counter.Cached). The copy is taken out:
// two turns never share one.
func (t *Team) copyView(req turnRequest, now time.Time) (_ turnView, ok bool) {
	if t.warm == nil {
		return turnView{}, false
	}
	meter, ok := t.limits.Cached(req.UserID, req.Limits, now)
	if !ok {
		return turnView{}, false
	}
	chat, sess := t.warm.take(req.UserID, req.ChatID)
	if sess == nil {
		return turnView{}, false
	}
	return turnView{chat: chat, sess: sess, copy: true, meter: meter}, true
}
