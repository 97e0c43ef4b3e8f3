package toolcallback

import (
	"context"
	"maps"

	"github.com/baton-run/baton/sessionstore"
)

// chatReadKey carries, on a turn's context, the chat record the turn read
// (or created) before the model runs.
type chatReadKey struct{}

// chatRead is what a turn knows of its chat's record. A nil *chatRead on
// the context says the turn knows nothing current.
type chatRead struct {
	mcp map[string]sessionstore.MCPSession
}

// withChatRead notes on ctx the chat record the turn read, for
// ChatMCPSessions. Only the MCP sessions are kept, copied: the turn may go on
// changing its chat.
func withChatRead(ctx context.Context, chat *sessionstore.Chat) context.Context {
	return context.WithValue(ctx, chatReadKey{}, &chatRead{mcp: maps.Clone(chat.MCP)})
}

// withoutChatRead says the turn's read of its chat may be stale: it waited
// for the lease (or took it after a conflict), so another turn may have
// changed the chat in between.
func withoutChatRead(ctx context.Context) context.Context {
	return context.WithValue(ctx, chatReadKey{}, (*chatRead)(nil))
}

// ChatMCPSessions returns the chat's MCP sessions (sessionstore.Chat.MCP)
// as the turn running in ctx read them, and whether it read them: a tool
// that would read the chat record for them reads nothing. ok is true only
// when that read is current: the turn's first commit was conditional on
// the session being as read, and a session is recorded in the chat only by
// a turn that holds the chat's lease, which writes the session first. It
// is false for a resume, a sweep, a turn that waited for the lease, and
// outside a Team's turn.
func ChatMCPSessions(ctx context.Context) (map[string]sessionstore.MCPSession, bool) {
	r, _ := ctx.Value(chatReadKey{}).(*chatRead)
	if r == nil {
		return nil, false
	}
	return r.mcp, true
}
