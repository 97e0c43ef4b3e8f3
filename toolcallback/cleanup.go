package toolcallback

import (
	"context"
	"time"

	"github.com/baton-run/baton/sessionstore"
)

// chatBatch bounds the chats one sweep handles per kind of cleanup.
const chatBatch = 20

// repairChat finishes the deletion of a chat marked deleted; for any other
// chat it deletes the session a dead switch was building and the retired
// sessions still present, then clears the chat's cleanup mark.
func (t *Team) repairChat(ctx context.Context, chat *sessionstore.Chat) error {
	if chat.Deleted != nil {
		_, err := t.finishDelete(ctx, chat)
		return err
	}
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

// deleteIdleChat deletes a chat idle beyond Options.IdleRetention as
// DeleteChat does. A chat used since (its claiming commits write its
// activity) is left alone.
func (t *Team) deleteIdleChat(ctx context.Context, chat *sessionstore.Chat, now time.Time) (bool, error) {
	if chat.Deleted == nil {
		fresh, err := t.sessions.GetChat(ctx, t.app, chat.UserID, chat.ID)
		if err != nil || now.Sub(fresh.LastActivity) < t.opts.IdleRetention {
			return false, err
		}
		if chat, err = t.sessions.MarkChatDeleted(ctx, sessionstore.ChatKey{App: t.app, User: chat.UserID, ID: chat.ID}, now, now.Add(deleteGrace)); err != nil {
			return false, err
		}
		t.memory.forget(chat.UserID, chat.ID)
	}
	r, err := t.finishDelete(ctx, chat)
	return err == nil && r.Chats == 1, err
}
