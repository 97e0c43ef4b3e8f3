package toolcallback

import (
	"context"
	"errors"
	"time"

	"google.golang.org/adk/v2/platform"
	"google.golang.org/adk/v2/session"

	"github.com/baton-run/baton/a2ui"
	"github.com/baton-run/baton/sessionstore"
	"github.com/baton-run/baton/transcript"
)

// switchAgent moves chat to agent target (moveChat), then tells
// Options.ChatSwitched.
func (t *Team) switchAgent(ctx context.Context, chat *sessionstore.Chat, target string) error {
	from := chat.Agent
	moved, err := t.moveChat(ctx, chat, target)
	if err != nil {
		return err
	}
	t.memory.points(moved.UserID, moved.ID, moved.SessionID)
	if t.opts.ChatSwitched != nil && moved.Agent != from {
		t.opts.ChatSwitched(ctx, moved, from)
	}
	return nil
}

// moveChat moves chat to agent target, under the old session's lease so
// that two tabs switching at once cannot fork the conversation. At every
// step the chat points at a complete ADK session, the old one until the
// compare-and-set that moves it to the new one; leftovers of a switch that
// dies are recorded in the chat for cleanup.
func (t *Team) moveChat(ctx context.Context, chat *sessionstore.Chat, target string) (*sessionstore.Chat, error) {
	from := t.engine(chat.Agent)
	oldID := chat.SessionID
	h, chat, err := t.lockForSwitch(ctx, from, chat)
	if err != nil {
		return nil, err
	}
	if h != nil {
		defer from.release(ctx, h)
	}
	if chat.Agent == target {
		return chat, nil
	}
	now := platform.Now(ctx)

	// 1. Note the session about to be built, so a crash leaves a findable
	// orphan rather than an invisible one.
	newID := sessionstore.ChatSessionID(chat.ID, chat.Switches+1)
	cleanup := now.Add(from.opts.InvocationTimeout + from.opts.LeaseTTL)
	chat.Building, chat.CleanupAt = newID, &cleanup
	if err := t.sessions.SaveChat(ctx, chat); err != nil {
		return nil, busyOnConflict(chat.ID, err)
	}

	// 2. Cancel what the old agent still waits for; late answers get 410.
	var old *sessionstore.Session
	outcomes := map[string]string{}
	if h != nil {
		if old, outcomes, err = from.closeForSwitch(ctx, h.lease, chat.UserID, oldID, target); err != nil {
			return nil, err
		}
	}

	// 3. Build the new session with the conversation so far.
	if err := t.buildSwitched(ctx, chat, old, outcomes, target, newID, now); err != nil {
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

// lockForSwitch takes the lease of the chat's active session and reads the
// chat again under it: it must still point at that session. The lease is
// nil when the session was never stored (the chat's first turn never
// ran): there is nothing to migrate or fence then.
func (t *Team) lockForSwitch(ctx context.Context, from *engine, chat *sessionstore.Chat) (*heldLease, *sessionstore.Chat, error) {
	oldID := chat.SessionID
	h, err := from.acquire(ctx, chat.UserID, oldID, "switch", from.leaseWait())
	switch {
	case errors.Is(err, sessionstore.ErrNotFound):
		h = nil
	case err != nil:
		return nil, nil, err
	}
	fresh, err := t.sessions.GetChat(ctx, t.app, chat.UserID, chat.ID)
	if err == nil && fresh.SessionID != oldID {
		err = &sessionstore.BusyError{SessionID: chat.ID, RetryAfter: time.Second}
	}
	if err != nil {
		if h != nil {
			from.release(ctx, h)
		}
		return nil, nil, err
	}
	return h, fresh, nil
}

// closeForSwitch reads the old session under lease, cancels its pending
// calls and closes what a dead invocation left unanswered, and returns the
// session with the outcome each cancelled call's record will show.
func (e *engine) closeForSwitch(ctx context.Context, lease *sessionstore.Lease, user, sid, target string) (*sessionstore.Session, map[string]string, error) {
	old, err := e.sessions.Read(ctx, sessionstore.ReadRequest{App: e.app, User: user, SessionID: sid, Lease: lease})
	if err != nil {
		return nil, nil, err
	}
	closed, err := e.closeOpenCalls(ctx, old)
	if err != nil {
		return nil, nil, err
	}
	// What a dead invocation left unanswered is closed before the
	// conversation moves (the cancelled calls get their outcome below).
	if err := e.repairTail(ctx, old, nil, knownCalls(closed)); err != nil {
		return nil, nil, err
	}
	outcomes := map[string]string{}
	for _, d := range closed {
		outcomes[d.OriginalID] = "cancelled when the conversation moved to " + target
	}
	return old, outcomes, nil
}

// buildSwitched creates the session newID of agent target holding the
// conversation of old (if any) as MigrateHistory rewrites it, replacing a
// leftover of a switch that died at the same number.
func (t *Team) buildSwitched(ctx context.Context, chat *sessionstore.Chat, old *sessionstore.Session, outcomes map[string]string, target, newID string, now time.Time) error {
	var history []*session.Event
	state := map[string]any{}
	if old != nil {
		m := sessionstore.Migration{From: chat.Agent, To: target, At: now, Outcome: outcomes,
			Args: map[string]map[string]any{}, Approved: map[string]bool{}, Keep: []string{transcript.MessageIDKey},
			KeepMetadata: []string{a2ui.MetadataKey}}
		for id, d := range transcript.ApprovalDecisions(old.Events()) {
			m.Args[id], m.Approved[id] = d.Args, d.Approved
		}
		history = sessionstore.MigrateHistory(ctx, old.Events(), m)
		if !t.members[target].DropState {
			state = old.ScopedState()
		}
	}
	create := &session.CreateRequest{AppName: t.app, UserID: chat.UserID, SessionID: newID, State: state}
	_, err := t.sessions.CreateWithEvents(ctx, create, history)
	if !errors.Is(err, sessionstore.ErrAlreadyExists) {
		return err
	}
	if _, err := t.sessions.PurgeSession(ctx, t.app, chat.UserID, newID); err != nil {
		return err
	}
	_, err = t.sessions.CreateWithEvents(ctx, create, history)
	return err
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
