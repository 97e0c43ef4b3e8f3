package toolcallback

import (
	"context"
	"fmt"
	"iter"

	"github.com/baton-run/baton/internal/eventlist"
	"github.com/baton-run/baton/sessionstore"
)

// FollowedChat is a chat as one read found it, for a reader that follows
// it (a reloaded page, another tab): its active session's changes, its
// pending calls and its open questions, without reading the chat again.
type FollowedChat struct {
	Chat *sessionstore.Chat
	t    *Team
}

// Follow reads the chat, for a reader that follows it. An unknown chat,
// another user's, or a deleted one is sessionstore.ErrNotFound.
func (t *Team) Follow(ctx context.Context, user, chatID string) (*FollowedChat, error) {
	if err := validIDs("user id", user, "chat id", chatID); err != nil {
		return nil, err
	}
	chat, err := t.sessions.GetChat(ctx, t.app, user, chatID)
	if err != nil {
		return nil, err
	}
	if chat.Deleted != nil {
		return nil, fmt.Errorf("%w: chat %q", sessionstore.ErrNotFound, chatID)
	}
	return &FollowedChat{Chat: chat, t: t}, nil
}

// Pending returns the chat's agent, its pending calls that client may
// answer (empty: every client's, each naming its client), and its history
// events: at most history of the session's recent ones, or, for a negative
// history, all of them.
func (f *FollowedChat) Pending(ctx context.Context, client string, history int) (*PendingState, error) {
	calls, events, whole, err := f.t.engine(f.Chat.Agent).pending(ctx, f.Chat.UserID, f.Chat.SessionID, client, history < 0)
	if err != nil {
		return nil, err
	}
	if n := len(events); history >= 0 && history < n {
		events, whole = events[n-history:], false
	}
	return &PendingState{Agent: f.Chat.Agent, Calls: calls, History: eventlist.List(events), Whole: whole}, nil
}

// Watch follows the chat's active session as it is written to, from any
// instance (see sessionstore.Service.Watch): first its recent latest
// events, then each append and each change of its lease.
func (f *FollowedChat) Watch(ctx context.Context, recent int) iter.Seq2[*sessionstore.Change, error] {
	return f.t.sessions.Watch(ctx, f.t.app, f.Chat.UserID, f.Chat.SessionID, recent)
}

// InCallQuestions follows the in-call questions of the chat's session
// (AskInCall), from any instance, until ctx ends: it yields each question
// pending when it starts or asked later, and each of those again once
// closed (answered, expired or cancelled), as recorded; show them with
// InCallQuestionEvent. It listens to the session's pending questions
// (ledger.Ledger.Questions): a read per question, none while nobody asks.
func (f *FollowedChat) InCallQuestions(ctx context.Context) iter.Seq2[*Call, error] {
	return f.t.ledger.Questions(ctx, f.Chat.UserID, f.Chat.SessionID)
}

// Working follows the background calls of the chat's session while they
// run, from any instance, until ctx ends: it yields each one pending when
// it starts, each change of its record (its progress, Call.Work), and
// each once settled, as recorded. It listens to the session's pending
// background calls (ledger.Ledger.Working): a read per change yielded,
// none while nothing changes; the progress of one call changes its record
// at most once per Options.ProgressInterval.
func (f *FollowedChat) Working(ctx context.Context) iter.Seq2[*Call, error] {
	return f.t.ledger.Working(ctx, f.Chat.UserID, f.Chat.SessionID)
}
