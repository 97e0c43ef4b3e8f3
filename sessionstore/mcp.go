package sessionstore

import (
	"context"
	"errors"
	"fmt"

	"cloud.google.com/go/firestore"
)

// MCPSession is a chat's session with a Streamable HTTP MCP server: the
// server's Mcp-Session-Id and its initialize result, which an instance that
// has no connection of its own needs to continue the session without a new
// handshake.
type MCPSession struct {
	ID   string `firestore:"id"`
	Init string `firestore:"init"` // the initialize result, JSON
}

// SetChatMCP records the chat's session with the MCP server named server,
// or forgets it when m is nil. It writes that one field, unconditionally:
// the chat's other fields, and SaveChat's compare-and-set, are left to the
// chat's owner (a write here does make a concurrent SaveChat of an older
// read fail with ErrConflict). A missing chat wraps ErrNotFound.
func (s *Service) SetChatMCP(ctx context.Context, key ChatKey, server string, m *MCPSession) error {
	app, user, chat := key.App, key.User, key.ID
	if err := validateKey(app, user, chat); err != nil {
		return err
	}
	var v any = firestore.Delete
	if m != nil {
		v = *m
	}
	_, err := s.chatRef(app, user, chat).Update(ctx, []firestore.Update{{FieldPath: firestore.FieldPath{"mcp", server}, Value: v}})
	switch err = FirestoreError(err); {
	case errors.Is(err, ErrNotFound):
		return fmt.Errorf("%w: chat %q", ErrNotFound, chat)
	case err != nil:
		return fmt.Errorf("record MCP session of chat %q: %w", chat, err)
	}
	return nil
}
