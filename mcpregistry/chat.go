package mcpregistry

import (
	"context"
	"errors"
	"slices"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/tool"

	"github.com/baton-run/baton/sessionstore"
)

// Toolsets declares that agent uses servers and returns their toolsets,
// for the agent's configuration. An agent switch keeps the chat's sessions
// with the servers the new agent declares and ends the others (Switched).
func (r *Registry) Toolsets(agent string, servers ...string) ([]tool.Toolset, error) {
	var sets []tool.Toolset
	for _, name := range servers {
		if _, ok := r.servers[name]; !ok {
			return nil, errors.Join(ErrUnknownServer, errors.New(name))
		}
		sets = append(sets, &toolset{r: r, server: name})
	}
	r.mu.Lock()
	r.uses[agent] = append(r.uses[agent], servers...)
	r.mu.Unlock()
	return sets, nil
}

// CloseChat ends the chat's MCP sessions: it closes this instance's
// connections and ends the server sessions, those recorded in the chat
// included (HTTP DELETE), whichever instance opened them. Call it when the
// chat is deleted. Each close is bounded by CloseTimeout, and they run
// concurrently, outside the registry's lock.
func (r *Registry) CloseChat(ctx context.Context, chat *sessionstore.Chat) error {
	return r.end(ctx, chat, func(string) bool { return true })
}

// Switched ends the chat's sessions with the servers its new agent
// (chat.Agent) does not declare, and forgets them in the chat record; the
// others carry on for the new agent. It is toolcallback's ChatSwitched.
func (r *Registry) Switched(ctx context.Context, chat *sessionstore.Chat, from string) error {
	r.mu.Lock()
	keep := slices.Clone(r.uses[chat.Agent])
	r.mu.Unlock()
	retired := func(server string) bool { return !slices.Contains(keep, server) }
	err := r.end(ctx, chat, retired)
	for name := range chat.MCP {
		if retired(name) {
			err = errors.Join(err, r.sessions.SetChatMCP(ctx, sessionstore.ChatKey{App: chat.App, User: chat.UserID, ID: chat.ID}, name, nil))
		}
	}
	return err
}

// end ends the chat's sessions with the servers ending picks.
func (r *Registry) end(ctx context.Context, chat *sessionstore.Chat, ending func(server string) bool) error {
	c := chatOf(chat)
	live := map[string]bool{}
	var entries []*entry
	r.mu.Lock()
	for k, e := range r.conns {
		if k.chat == c && ending(k.server) && r.remove(k, e, true) {
			live[k.server] = true
			entries = append(entries, e)
		}
	}
	r.mu.Unlock()
	// Sessions this instance has no connection to are ended through a
	// connection that does nothing else: it needs no handshake, and its
	// close sends the DELETE.
	ends := make([]error, 0, len(chat.MCP))
	done := make(chan error, len(chat.MCP))
	for name, stored := range chat.MCP {
		srv, ok := r.servers[name]
		if !ok || live[name] || !ending(name) || srv.Transport() != "http" {
			continue
		}
		go func() {
			ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.opts.CloseTimeout)
			defer cancel()
			c, err := r.dial(ctx, srv, &stored, false)
			if err == nil {
				err = r.closeConn(c, true)
			}
			done <- err
		}()
		ends = append(ends, nil)
	}
	err := r.closeAll(entries)
	for i := range ends {
		ends[i] = <-done
	}
	return errors.Join(err, errors.Join(ends...))
}

// chatOfContext names the conversation an agent runs in: the chat of a
// Team, or, for a session that is not a chat's, the ADK session.
func chatOfContext(ctx agent.ReadonlyContext) Chat {
	if id, ok := sessionstore.ChatOfSession(ctx.SessionID()); ok {
		return Chat{App: ctx.AppName(), User: ctx.UserID(), ID: id, Stored: true}
	}
	return Chat{App: ctx.AppName(), User: ctx.UserID(), ID: ctx.SessionID()}
}
