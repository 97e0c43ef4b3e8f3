package toolcallback

import (
	"context"
	"errors"
	"slices"

	"github.com/baton-run/baton/sessionstore"
)

// chatBatch bounds the chats one sweep handles per kind of cleanup.
const chatBatch = 20

// repairChat deletes the session a dead switch was building and the
// retired sessions still present, then clears the chat's cleanup mark.
func (t *Team) repairChat(ctx context.Context, chat *sessionstore.Chat) error {
	if chat.Building != "" && chat.Building != chat.SessionID {
		if _, err := t.sessions.PurgeSession(ctx, t.app, chat.UserID, chat.Building); err != nil {
			return err
		}
	}
	for _, sid := range chat.Retired {
		if sid == chat.SessionID {
			continue
		}
		if err := t.retire(ctx, chat, sid); err != nil {
			return err
		}
	}
	chat.Building, chat.CleanupAt = "", nil
	return t.sessions.SaveChat(ctx, chat)
}

// deleteChat removes an idle chat and every document under it: its active
// session, the sessions it retired (with their ledgers), its files and the
// chat itself. A chat in use (its session leased) is left alone.
func (t *Team) deleteChat(ctx context.Context, chat *sessionstore.Chat) (bool, error) {
	t.memory.forget(chat.UserID, chat.ID)
	e := t.engine(chat.Agent)
	h, err := e.acquire(ctx, chat.UserID, chat.SessionID, "sweeper", 0)
	switch {
	case errors.Is(err, sessionstore.ErrBusy):
		return false, nil
	case errors.Is(err, sessionstore.ErrNotFound):
	case err != nil:
		return false, err
	default:
		defer h.stop() // the lease is deleted with the session
	}
	for _, sid := range append(slices.Clone(chat.Retired), chat.Building, chat.SessionID) {
		if sid == "" {
			continue
		}
		if _, err := t.sessions.PurgeSession(ctx, t.app, chat.UserID, sid); err != nil {
			return false, err
		}
	}
	// Files go before the chat: a failure leaves the chat for the next
	// sweep to try again.
	if err := t.opts.Files.DeleteChat(ctx, chat); err != nil {
		return false, err
	}
	return true, t.sessions.DeleteChat(ctx, chat)
}
