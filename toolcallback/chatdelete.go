package toolcallback

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"google.golang.org/adk/v2/platform"

	"github.com/baton-run/baton/sessionstore"
)

// Deleting a chat, in this order, each step idempotent:
//
//  1. the tombstone (sessionstore.MarkChatDeleted): from this write on,
//     no list shows the chat, reading it finds nothing, a turn in it is
//     refused and an answer to one of its calls gets ErrChatDeleted;
//  2. what runs in it is stopped, through Stop (a running turn or a live
//     segment asked to stop and waited for; a paused turn's calls
//     cancelled), and the session's lease taken, so nothing starts again;
//  3. its sessions are purged, with their events and ledger records;
//  4. its files, then what other parts keep for it (MCP sessions, through
//     Options.ChatDeleted);
//  5. the documents under the chat (A2A tasks, ratings) and the chat
//     document, left a bare tombstone that Firestore collects after
//     Options.Retention (sessionstore.FinishChatDeletion).
//
// A deletion that dies after step 1 is finished by the sweeper, which
// finds the tombstone by its cleanup time (Sweep, repairChat), or by the
// next DeleteChat of the chat; it is never half-visible, because step 1
// alone hides it.

// deleteGrace is how long after a deletion began the sweeper finishes it
// if nothing else has.
const deleteGrace = time.Minute

// deleteAttempts bounds how often a deletion stops what holds the chat
// before leaving the rest to the sweeper.
const deleteAttempts = 3

// DeleteReport says what a deletion did.
type DeleteReport struct {
	// Chats are the chats whose deletion this call finished.
	Chats int `json:"chats"`
	// Documents are the Firestore documents it deleted.
	Documents int `json:"documents"`
	// Stopped: something ran in a chat and was stopped first.
	Stopped bool `json:"stopped"`
}

func (r *DeleteReport) add(o *DeleteReport) {
	r.Chats += o.Chats
	r.Documents += o.Documents
	r.Stopped = r.Stopped || o.Stopped
}

// DeleteChat deletes the user's chat and everything under it (see above).
// It is idempotent: a chat being deleted is finished, one deleted is done.
// An unknown chat, or another user's, is sessionstore.ErrNotFound. When
// something keeps holding the chat, it returns ErrDeletionPending with the
// chat already gone for every reader; the sweeper finishes it.
func (t *Team) DeleteChat(ctx context.Context, user, chatID string) (*DeleteReport, error) {
	if err := validIDs("user id", user, "chat id", chatID); err != nil {
		return nil, err
	}
	now := platform.Now(ctx)
	chat, err := t.sessions.MarkChatDeleted(ctx, sessionstore.ChatKey{App: t.app, User: user, ID: chatID}, now, now.Add(deleteGrace))
	if err != nil {
		return nil, err
	}
	t.memory.forget(user, chatID)
	return t.finishDelete(ctx, chat)
}

// finishDelete carries out steps 2 to 5 for chat, marked deleted.
func (t *Team) finishDelete(ctx context.Context, chat *sessionstore.Chat) (*DeleteReport, error) {
	report := &DeleteReport{}
	if chat.Finished() {
		return report, nil
	}
	h, stopped, err := t.stopForDelete(ctx, chat)
	report.Stopped = stopped
	if err != nil {
		return report, err
	}
	if h != nil {
		defer h.stop() // the lease goes with the session
	}
	for _, sid := range append(slices.Clone(chat.Retired), chat.Building, chat.SessionID) {
		if sid == "" {
			continue
		}
		n, err := t.sessions.PurgeSession(ctx, t.app, chat.UserID, sid)
		report.Documents += n
		if err != nil {
			return report, err
		}
	}
	if err := t.opts.Files.DeleteChat(ctx, chat); err != nil {
		return report, err
	}
	if t.opts.ChatDeleted != nil {
		t.opts.ChatDeleted(ctx, chat)
	}
	n, err := t.sessions.FinishChatDeletion(ctx, chat, t.opts.Retention)
	report.Documents += n
	if err != nil {
		return report, err
	}
	report.Chats = 1
	t.opts.Logger.Info("chat deleted", "chat", chat.ID, "documents", report.Documents)
	return report, nil
}

// stopForDelete stops what runs in chat (through Stop: a running
// invocation or live segment asked to stop and waited for, a paused
// turn's calls cancelled) and takes its session's lease, which it keeps
// renewed until the session is purged; nil when the session was never
// stored. It reports whether something was running.
func (t *Team) stopForDelete(ctx context.Context, chat *sessionstore.Chat) (*heldLease, bool, error) {
	e := t.engine(chat.Agent)
	stopped := false
	for range deleteAttempts {
		report, err := t.Stop(ctx, chat.UserID, chat.ID, e.opts.LeaseTTL+time.Second)
		if err != nil && !errors.Is(err, sessionstore.ErrNotFound) {
			return nil, stopped, err
		}
		stopped = stopped || report != nil && report.Running
		h, err := e.acquire(ctx, chat.UserID, chat.SessionID, "delete", 0)
		switch {
		case err == nil:
			return h, stopped, nil
		case errors.Is(err, sessionstore.ErrNotFound):
			return nil, stopped, nil
		case !errors.Is(err, sessionstore.ErrBusy):
			return nil, stopped, err
		}
	}
	return nil, stopped, fmt.Errorf("%w: chat %q is still held", ErrDeletionPending, chat.ID)
}

// accountPage is how many chats an account's deletion reads at a time.
const accountPage = 100

// DeleteAccount deletes everything Baton keeps for user: every chat (as
// DeleteChat does: all of them are marked deleted first, then each is
// finished), the user's own files, turn counts and user: state, and last
// the account itself. It is idempotent; it is marked first
// (sessionstore.MarkAccountDeleting), so that one that dies, or returns
// ErrDeletionPending because a chat stayed held, is finished by Sweep.
func (t *Team) DeleteAccount(ctx context.Context, user string) (*DeleteReport, error) {
	if err := validIDs("user id", user); err != nil {
		return nil, err
	}
	if _, err := t.sessions.MarkAccountDeleting(ctx, t.app, user, platform.Now(ctx)); err != nil {
		return nil, err
	}
	return t.finishAccount(ctx, user)
}

// AccountDeletion reports whether the deletion of user's data is under
// way (marked and not finished).
func (t *Team) AccountDeletion(ctx context.Context, user string) (bool, error) {
	if err := validIDs("user id", user); err != nil {
		return false, err
	}
	a, err := t.sessions.GetAccount(ctx, t.app, user)
	if err != nil {
		return false, err
	}
	return a.Deleting != nil, nil
}

// finishAccount carries out an account's deletion, marked already.
func (t *Team) finishAccount(ctx context.Context, user string) (*DeleteReport, error) {
	report := &DeleteReport{}
	now := platform.Now(ctx)
	// Every chat is gone for readers before any is taken apart.
	err := t.eachChat(ctx, user, func(c *sessionstore.Chat) error {
		if c.Deleted != nil {
			return nil
		}
		_, err := t.sessions.MarkChatDeleted(ctx, sessionstore.ChatKey{App: t.app, User: user, ID: c.ID}, now, now.Add(deleteGrace))
		t.memory.forget(user, c.ID)
		return err
	})
	if err != nil {
		return report, err
	}
	pending := false
	err = t.eachChat(ctx, user, func(c *sessionstore.Chat) error {
		r, err := t.finishDelete(ctx, c)
		report.add(r)
		if errors.Is(err, ErrDeletionPending) {
			pending = true
			return nil
		}
		return err
	})
	if err != nil {
		return report, err
	}
	if pending {
		return report, fmt.Errorf("%w: a chat of the account is still held", ErrDeletionPending)
	}
	if err := t.opts.Files.DeleteUser(ctx, user); err != nil {
		return report, err
	}
	n, err := t.sessions.DeleteUserData(ctx, t.app, user)
	report.Documents += n
	if err == nil {
		t.opts.Logger.Info("account deleted", "chats", report.Chats, "documents", report.Documents)
	}
	return report, err
}

// eachChat calls f with each of user's chats, deleted ones included, a
// page at a time.
func (t *Team) eachChat(ctx context.Context, user string, f func(*sessionstore.Chat) error) error {
	after := ""
	for {
		chats, err := t.sessions.UserChats(ctx, t.app, user, accountPage, after)
		if err != nil {
			return err
		}
		for _, c := range chats {
			if err := f(c); err != nil {
				return err
			}
		}
		if len(chats) < accountPage {
			return nil
		}
		after = chats[len(chats)-1].ID
	}
}
