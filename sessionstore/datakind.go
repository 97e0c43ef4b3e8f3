package sessionstore

import (
	"context"
	"errors"
	"fmt"
)

// DataKind is one kind of thing Baton keeps for a person. Each part
// declares the kinds it writes (its DataKinds, as it declares its Indexes
// and TTLs); package account puts them together into the map of a
// person's data, which the export walks, whose scopes the deletion
// follows, and which a test holds to every document the code writes.
type DataKind struct {
	// Name says what it is ("chat", "ledger record").
	Name string
	// Owner is the package that reads and writes it.
	Owner string
	// Collection is its Firestore collection group; "" for what is not a
	// Firestore document (a file, a field of another kind's document).
	Collection string
	// Path is where it is, under the deployment's root.
	Path string
	// Scope is what it belongs to, and so which deletion takes it:
	// ScopeSession and ScopeChat go with the chat (toolcallback's
	// DeleteChat), ScopeUser with the account (DeleteAccount); ScopeApp is
	// the deployment's and names a user only in passing.
	Scope DataScope
	// Export is the part of an export that holds it (package account's
	// sections), or "" when it holds nothing of it: then Why says why.
	Export, Why string
	// Kept says for how long it is kept.
	Kept string
}

// DataScope is what a kind of data belongs to.
type DataScope string

const (
	ScopeApp     DataScope = "app"
	ScopeUser    DataScope = "user"
	ScopeChat    DataScope = "chat"
	ScopeSession DataScope = "session"
)

// The export's parts that this package's kinds are in (package account
// writes them).
const (
	ExportAccount  = "account"
	ExportChats    = "chats"
	ExportMessages = "messages"
	ExportState    = "state"
	ExportUsage    = "usage"
)

// DataKinds are the kinds of a person's data this package keeps.
var DataKinds = []DataKind{
	{Name: "account", Owner: "sessionstore", Collection: accountsCollection, Path: "{root}/{app}/accounts/{user}", Scope: ScopeUser,
		Export: ExportAccount, Kept: "while the user has data; deleted last by the account's deletion"},
	{Name: "user state", Owner: "sessionstore", Collection: "users", Path: "{root}/{app}/users/{user}", Scope: ScopeUser,
		Export: ExportState, Kept: "until the account is deleted"},
	{Name: "chat", Owner: "sessionstore", Collection: "chats", Path: "{root}/{app}/users/{user}/chats/{chat}", Scope: ScopeChat,
		Export: ExportChats, Kept: "until deleted, or idle for BATON_IDLE_RETENTION (30 days); its tombstone for the ledger's retention (7 days)"},
	{Name: "session", Owner: "sessionstore", Collection: "sessions", Path: "{root}/{app}/users/{user}/sessions/{session}", Scope: ScopeChat,
		Export: ExportMessages, Kept: "as long as its chat (an agent switch deletes the session it leaves)"},
	{Name: "event chunk", Owner: "sessionstore", Collection: "events", Path: "{session}/events/{n}", Scope: ScopeSession,
		Export: ExportMessages, Kept: "as long as its session"},
	{Name: "stop request", Owner: "sessionstore", Collection: "stops", Path: "{session}/stops/{fence}", Scope: ScopeSession,
		Why: "a request to stop a running turn: what it did is in the messages", Kept: "as long as its session"},
	{Name: "accounts cursor", Owner: "sessionstore", Collection: sweepsCollection, Path: "{root}/{app}/sweeps/accounts", Scope: ScopeApp,
		Why: "the sweeper's place in its walk over the accounts: one user id, replaced at the next sweep", Kept: "replaced at every sweep"},
}

// UserState reads user's user: state (the state keys ADK shares between
// the user's sessions).
func (s *Service) UserState(ctx context.Context, app, user string) (map[string]any, error) {
	if err := validateKey(app, user, "state"); err != nil {
		return nil, err
	}
	snap, err := s.userRef(app, user).Get(ctx)
	if err = FirestoreError(err); err != nil && !errors.Is(err, ErrNotFound) {
		return nil, fmt.Errorf("read user state: %w", err)
	}
	if err != nil {
		return map[string]any{}, nil
	}
	return decodeStateSnapshot(snap)
}
