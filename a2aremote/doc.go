// Package a2aremote is the client side of A2A: one remote agent a team
// delegates to (toolcallback.Remote), reached through a2a-go's client
// over JSON-RPC, A2A 1.0 or 0.3 as the remote's card says. It resolves
// the remote's card once per instance, sends a message on a task (with a
// push config naming Baton's push callback and a token bound to the
// call), reads a task (tasks/get) and cancels one (tasks/cancel), and
// turns what the remote says into Task, a value of Baton's own, so that
// neither the ledger nor the planner knows a2a-go's types.
//
// It stores nothing: a remote task's state lives in its call's ledger
// record (ledger.Remote).
//
// # Where requests may go
//
// Only to the agents a deployment configures: the card is read from the
// configured URL, and the card's endpoints must be on that URL's host
// (a card cannot send Baton elsewhere). Every connection goes through a
// dialer that checks the address it actually connects to, after name
// resolution: loopback, private, link-local, multicast and unspecified
// addresses are refused unless the remote's Config.AllowPrivate says
// otherwise (a local runner, a test, a peer on the same private network).
// Checking the resolved address, not the URL's text, closes the way a
// name that resolves to 127.0.0.1 or to the metadata server would open.
// Redirects are not followed. A file a remote's result names by URL is
// fetched through the same client (Fetch), size-limited, with the
// remote's headers only on the card's own host.
//
// It is a folder of its own because toolcallback (which decides when to
// send) and functions (the push callback's door) both use it, and the
// server side, a2aserver, depends on toolcallback.
package a2aremote
