package toolcallback

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"time"

	"github.com/baton-run/baton/sessionstore"
	"google.golang.org/adk/v2/platform"
	"google.golang.org/adk/v2/session"
)

// maxSwitchSuffix is the longest suffix chatSessionID appends to a chat
// id: "~" and a switch count of up to 19 digits.
const maxSwitchSuffix = 20

// chatSessionID names the ADK session of a chat's n-th agent. It is a valid
// document id for every valid chat id and every n, so a chat id that is
// accepted once works for the chat's whole life: "chat~n" while that fits
// whatever n becomes, and for a longer chat id "n~sha256-<hex of the chat
// id>". The two forms never meet: in the first, the last '~' is followed
// by digits only; in the second, by "sha256-".
func chatSessionID(chat string, n int) string {
	if len(chat)+maxSwitchSuffix <= sessionstore.MaxIDBytes {
		return fmt.Sprintf("%s~%d", chat, n)
	}
	return fmt.Sprintf("%d~sha256-%x", n, sha256.Sum256([]byte(chat)))
}

// switchAgent moves chat to agent target, under the old session's lease so
// that two tabs switching at once cannot fork the conversation. At every
// step the chat points at a complete ADK session, the old one until the
// compare-and-set that moves it to the new one; leftovers of a switch that
// dies are recorded in the chat for cleanup.
func (t *Team) switchAgent(ctx context.Context, chat *sessionstore.Chat, target, client string) (*sessionstore.Chat, error) {
	from := t.engines[chat.Agent]
	if from == nil {
		from = t.engines[t.names[0]]
	}
	oldID := chat.SessionID
	wait := time.Duration(0)
	if t.opts.LeasePolicy == LeaseEnqueue {
		wait = t.opts.MaxWait
	}
	h, err := from.acquire(ctx, chat.UserID, oldID, client, wait, false)
	switch {
	case errors.Is(err, sessionstore.ErrNotFound):
		h = nil // the chat's first turn never ran: nothing to migrate or fence
	case err != nil:
		return nil, err
	}
	var lease *sessionstore.Lease
	if h != nil {
		defer from.release(ctx, h)
		lease = h.lease
	}
	// Under the lease, the chat must still point at the session we hold.
	if chat, err = t.sessions.GetChat(ctx, t.app, chat.UserID, chat.ID); err != nil {
		return nil, err
	}
	if chat.SessionID != oldID {
		return nil, &sessionstore.BusyError{SessionID: chat.ID, RetryAfter: time.Second}
	}
	if chat.Agent == target {
		return chat, nil
	}
	now := platform.Now(ctx)

	// 1. Note the session about to be built, so a crash leaves a findable
	// orphan rather than an invisible one.
	newID := chatSessionID(chat.ID, chat.Switches+1)
	cleanup := now.Add(from.opts.InvocationTimeout + from.opts.LeaseTTL)
	chat.Building, chat.CleanupAt = newID, &cleanup
	if err := t.sessions.SaveChat(ctx, chat); err != nil {
		return nil, busyOnConflict(chat.ID, err)
	}

	// 2. Cancel what the old agent still waits for; late answers get 410.
	outcomes := map[string]string{}
	var old session.Session
	if h != nil {
		if old, err = from.getSession(ctx, lease, chat.UserID, oldID, 0, false); err != nil {
			return nil, err
		}
		closed, err := from.closeOpenCalls(ctx, old)
		if err != nil {
			return nil, err
		}
		// What a dead invocation left unanswered is closed before the
		// conversation moves (the cancelled calls get their outcome below).
		if err := from.repairTail(ctx, old, nil, knownCalls(closed)); err != nil {
			return nil, err
		}
		for _, d := range closed {
			outcomes[d.OriginalID] = "cancelled when the conversation moved to " + target
		}
	}

	// 3. Build the new session with the conversation so far.
	var history []*session.Event
	state := map[string]any{}
	if old != nil {
		m := sessionstore.Migration{From: chat.Agent, To: target, At: now, Outcome: outcomes,
			Args: map[string]map[string]any{}, Approved: map[string]bool{}}
		for id, d := range Decisions(old.Events()) {
			m.Args[id], m.Approved[id] = d.Args, d.Approved
		}
		history = sessionstore.MigrateHistory(ctx, old.Events(), m)
		if !t.members[target].DropState {
			state = sessionstore.SessionScopedState(old)
		}
	}
	create := &session.CreateRequest{AppName: t.app, UserID: chat.UserID, SessionID: newID, State: state}
	if _, err := t.sessions.CreateWithEvents(ctx, create, history); errors.Is(err, sessionstore.ErrAlreadyExists) {
		// A leftover of a switch that died at this number: replace it.
		if _, err := t.sessions.PurgeSession(ctx, t.app, chat.UserID, newID); err != nil {
			return nil, err
		}
		if _, err := t.sessions.CreateWithEvents(ctx, create, history); err != nil {
			return nil, err
		}
	} else if err != nil {
		return nil, err
	}

	// 4. Point the chat at it: the switch is done once this write lands.
	from.opts.Logger.Info("agent switch", "chat", chat.ID, "from", chat.Agent, "to", target)
	chat.Agent, chat.SessionID, chat.Building = target, newID, ""
	chat.Retired = append(chat.Retired, oldID)
	if len(chat.Retired) > maxRetired {
		chat.Retired = chat.Retired[len(chat.Retired)-maxRetired:]
	}
	chat.Switches++
	chat.LastSwitch, chat.LastActivity = now, now
	chat.CleanupAt = &now // the old session is to be deleted
	if err := t.sessions.SaveChat(ctx, chat); err != nil {
		return nil, busyOnConflict(chat.ID, err)
	}

	// 5. Delete the old session (its ledger stays, so late answers find
	// their cancelled calls). A failure here is left to cleanup.
	if err := t.retire(ctx, chat, oldID); err != nil {
		from.opts.Logger.Warn("delete the old session after a switch; cleanup will retry", "chat", chat.ID, "session", oldID, "error", err)
		return chat, nil
	}
	chat.CleanupAt = nil
	if err := t.sessions.SaveChat(ctx, chat); err != nil {
		from.opts.Logger.Warn("clear chat cleanup mark", "chat", chat.ID, "error", err)
	}
	return chat, nil
}

// maxRetired bounds how many old sessions a chat remembers; the ledger
// records of older ones are left to their TTL.
const maxRetired = 20

// retire deletes a replaced session's document and events.
func (t *Team) retire(ctx context.Context, chat *sessionstore.Chat, sid string) error {
	return t.sessions.Delete(ctx, &session.DeleteRequest{AppName: t.app, UserID: chat.UserID, SessionID: sid})
}

func busyOnConflict(chatID string, err error) error {
	if errors.Is(err, sessionstore.ErrConflict) {
		return &sessionstore.BusyError{SessionID: chatID, RetryAfter: time.Second}
	}
	return err
}
