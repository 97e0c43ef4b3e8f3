// Package mcpregistry keeps an instance's MCP client sessions, one per chat
// and server, shared by every agent of the chat, and gives agents their
// servers' tools as ADK toolsets.
//
// ADK's mcptoolset holds one session per toolset value and lists the tools
// on every model request; a chat that moves between agents or instances
// would lose the server's state (an open browser, a playlist). Here a
// session belongs to the chat: Registry.Session gets or creates it with one
// connect per chat and server however many callers race, and the tool list
// is cached on the connection until the server sends
// notifications/tools/list_changed.
//
// # Across instances
//
// The session of a Streamable HTTP server is recorded in the chat
// (sessionstore.Chat.MCP: the Mcp-Session-Id and the initialize result). An
// instance with no connection of its own continues that session: its HTTP
// transport answers the initialize handshake from the record instead of
// starting a new session, which the server would do for a second
// initialize. A session the server no longer has is replaced and recorded
// again.
//
// A new session is recorded before its first use that may leave state on
// the server (a tool call, or a caller's use of Registry.Session), not
// when it connects: a turn's connect (listing the tools) comes before the
// model's first request, and is kept off that path. The recorded sessions
// a turn starts from come with the Team's own read of the chat
// (toolcallback.ChatMCPSessions), so a chat's first turn through a Team makes
// no Firestore round trip for MCP before the model. A session never
// recorded is ended when its connection closes, since no other instance
// can continue it.
//
// Closing a connection (idle, broken, instance shutdown) leaves a recorded
// server session alone; only the chat's end (CloseChat) or an agent
// switch to an agent that does not declare the server (Switched) ends it,
// with the DELETE go-sdk sends, from whichever instance sees the end.
// stdio servers are processes of one instance, at most Options.MaxStdio of
// them: their sessions do not move, and a chat on another instance starts
// a new one.
//
// # Locks and deadlines
//
// The registry's lock guards its map only. Connects run outside it, bounded
// by ConnectTimeout; closes run outside it and are waited for at most
// CloseTimeout, then abandoned, so a server that hangs on close delays no
// other chat. A connection whose session ends (a crashed process, a server
// that dropped the session) is removed and re-created on next use.
//
// # Tool calls
//
// A tool appears to the model as "<server>_<tool>". Every failure (server
// unreachable, connection broken, the tool's own error) is returned as the
// call's error, which ADK gives the model as an error response. A long task
// holds the turn until CallTimeout.
//
// # Protocol versions and input
//
// A new connection negotiates (connect.go): a server that answers
// server/discover speaks 2026-07-28 and keeps no session (nothing is
// recorded); any other speaks 2025-11-25, whose session is recorded and
// continued as above. A 2026-07-28 server asks for a person's input by
// answering a call with input requests: the call pauses through the ledger
// and resumes on any instance (input.go). A 2025-11-25 server asks with
// elicitation/create on the live call: the instance holding it keeps the
// turn open and waits for the answer in the ledger (elicit.go). See
// docs/mcp-input.md.
//
// # Storage
//
// It stores nothing of its own: the chat document's "mcp" map field
// (sessionstore.SetChatMCP), written once per new session, at its first
// tool call.
package mcpregistry

import "github.com/baton-run/baton/sessionstore"

// DataKinds are the kinds of a person's data this package keeps (see
// sessionstore.DataKind): a field of the chat's document, and what the MCP
// server keeps for that session.
var DataKinds = []sessionstore.DataKind{
	{Name: "MCP session", Owner: "mcpregistry", Path: "{chat}.mcp.{server}; the server's own session", Scope: sessionstore.ScopeChat,
		Why: "a session id with an MCP server, ended (HTTP DELETE) when the chat is deleted", Kept: "as long as its chat"},
}
