package toolcallback

import (
	"container/list"
	"context"
	"errors"
	"sync"

	"google.golang.org/adk/v2/platform"
	"google.golang.org/adk/v2/session"

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
// (what the sessions take in the store, sessionstore.StoredSize). A handle
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
	sess session.Session
	size int
}

func newWarmChats(maxChats, maxBytes int) *warmChats {
	return &warmChats{maxChats: maxChats, maxBytes: maxBytes, order: list.New(), byKey: map[string]*list.Element{}}
}

func warmKey(user, chat string) string { return user + "\x00" + chat }

// take removes and returns the copy of a chat, if there is one.
func (w *warmChats) take(user, chatID string) (*sessionstore.Chat, session.Session) {
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
func (w *warmChats) put(chat *sessionstore.Chat, sess session.Session) {
	if w == nil {
		return
	}
	size := sessionstore.StoredSize(sess)
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
func (t *Team) keepWarm(chat *sessionstore.Chat) func(session.Session) {
	if t.warm == nil {
		return nil
	}
	return func(sess session.Session) { t.warm.put(chat, sess) }
}

// warmTurn runs req on this instance's copy of the chat, if it has one
// that can serve it. ok is false when it ran nothing and wrote nothing:
// no copy, one that cannot serve this turn, or one that lost its race
// (someone wrote the session since); the caller then reads the chat.
func (t *Team) warmTurn(ctx context.Context, req ChatTurn) (_ *Invocation, _ *SwitchReport, ok bool, _ error) {
	now := platform.Now(ctx)
	if t.warm == nil || req.Limits.UserTokensPerDay > 0 {
		return nil, nil, false, nil
	}
	var m *meter
	if !req.Limits.zero() {
		m = &meter{limits: req.Limits, now: now}
	}
	if req.Limits.UserTurnsPerMinute > 0 {
		turns, ok := t.turns.get(req.UserID)
		if !ok {
			return nil, nil, false, nil
		}
		m.turns, m.remember = &turns, t.rememberTurns(req.UserID)
	}
	chat, sess := t.warm.take(req.UserID, req.ChatID)
	if sess == nil || (req.Agent != "" && req.Agent != chat.Agent) ||
		sessionstore.MayHaveOpenDocs(sess) || needsRepair(sess.Events(), nil) {
		return nil, nil, false, nil
	}
	if err := m.check(sess, req.MessageID); err != nil {
		// The store holds at least the turns the copy does: a refusal
		// holds.
		return nil, nil, true, err
	}
	in := req.in(chat.SessionID, m)
	in.keep = t.keepWarm(chat)
	inv, err := t.engines[chat.Agent].fastTurn(ctx, in, sess, true)
	if errors.Is(err, sessionstore.ErrBusy) || errors.Is(err, sessionstore.ErrNotFound) || errors.Is(err, ErrMessageTaken) {
		// Lost its race (a write, a deleted session or turns document), or
		// a message a rewind elsewhere may have given back: the read
		// decides.
		return nil, nil, false, nil
	}
	if err == nil {
		t.touch(ctx, chat)
	}
	return inv, &SwitchReport{To: chat.Agent}, true, err
}

// userTurnsCache keeps, per user, the turns document (see limits.go) as
// this instance last read or wrote it, for warm turns. Like
// activeSessions it is a guess checked by the store: a warm turn's commit
// writes the document on condition of the version kept here.
type userTurnsCache struct {
	mu    sync.Mutex
	users map[string]userTurns
}

func (c *userTurnsCache) get(user string) (userTurns, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	u, ok := c.users[user]
	return u, ok
}

// put keeps u, read from the store, or (written) what a commit stored,
// unless a later version of the user's document is kept.
func (c *userTurnsCache) put(user string, u userTurns, written bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.users[user]; ok && written && old.version.After(u.version) {
		return
	}
	if c.users == nil || len(c.users) >= maxActiveSessions {
		c.users = map[string]userTurns{}
	}
	c.users[user] = u
}

// rememberTurns keeps what a message's commit stored in user's turns
// document (meter.remember).
func (t *Team) rememberTurns(user string) func(userTurns) {
	return func(u userTurns) { t.turns.put(user, u, true) }
}
