package toolcallback

import (
	"context"
	"errors"
	"iter"
	"maps"

	"google.golang.org/adk/v2/session"

	"github.com/baton-run/baton/internal/eventlist"
	"github.com/baton-run/baton/sessionstore"
)

// What an export of a person's data (package account) reads of the team's
// chats: each chat, one at a time, so that an export holds one chat's
// history in memory whatever the account's size.

// ChatRecord is all a chat holds, for an export.
type ChatRecord struct {
	Chat *sessionstore.Chat
	// History is the active session's whole history (rewound events left
	// out, as every reader sees it).
	History session.Events
	// Calls are the calls still waiting for an answer, by any device.
	Calls []*Call
	// State is the session's own state (no app:, user: or temp: keys).
	State map[string]any
}

// Chats yields user's chats, deleted ones left out, reading a page at a
// time.
func (t *Team) Chats(ctx context.Context, user string) iter.Seq2[*sessionstore.Chat, error] {
	return func(yield func(*sessionstore.Chat, error) bool) {
		if err := validIDs("user id", user); err != nil {
			yield(nil, err)
			return
		}
		stop := errors.New("stopped")
		err := t.eachChat(ctx, user, func(c *sessionstore.Chat) error {
			if c.Deleted != nil {
				return nil
			}
			if !yield(c, nil) {
				return stop
			}
			return nil
		})
		if err != nil && !errors.Is(err, stop) {
			yield(nil, err)
		}
	}
}

// ChatRecord reads all of chat (one of Chats'): its active session whole
// and its pending calls.
func (t *Team) ChatRecord(ctx context.Context, chat *sessionstore.Chat) (*ChatRecord, error) {
	r := &ChatRecord{Chat: chat, History: eventlist.List(nil), State: map[string]any{}}
	sess, err := t.sessions.Read(ctx, sessionstore.ReadRequest{App: t.app, User: chat.UserID, SessionID: chat.SessionID})
	if err != nil {
		if errors.Is(err, sessionstore.ErrNotFound) {
			return r, nil // the chat's first turn never stored its session
		}
		return nil, err
	}
	if r.Calls, err = t.ledger.Pending(ctx, chat.UserID, chat.SessionID); err != nil {
		return nil, err
	}
	r.History = sess.Events()
	maps.Insert(r.State, sess.State().All())
	return r, nil
}
