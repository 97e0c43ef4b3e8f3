package account

import (
	"fmt"
	"slices"
	"strings"

	"github.com/baton-run/baton/a2aserver"
	"github.com/baton-run/baton/chatfiles"
	"github.com/baton-run/baton/feedback"
	"github.com/baton-run/baton/ledger"
	"github.com/baton-run/baton/limits"
	"github.com/baton-run/baton/mcpregistry"
	"github.com/baton-run/baton/sessionstore"
)

// Map is the map of what Baton keeps for a person: every kind of data,
// as the part that writes it declares it (its DataKinds), in one list.
// The export walks it (a part of the export per Export, in the order the
// map first names them, and a README listing every kind); the deletion
// follows its scopes (a chat's kinds go with the chat, a user's with the
// account); a test holds it to every document the code writes
// (TestMapCoversEveryKind). An operator's tools read it too.
var Map = slices.Concat(sessionstore.DataKinds, ledger.DataKinds, feedback.DataKinds, limits.DataKinds,
	chatfiles.DataKinds, a2aserver.DataKinds, mcpregistry.DataKinds)

// Parts are the parts of an export, in the order the map first names
// them.
func Parts() []string {
	var out []string
	for _, k := range Map {
		if k.Export != "" && !slices.Contains(out, k.Export) {
			out = append(out, k.Export)
		}
	}
	return out
}

// readme is the export's README: what each of its files holds, and every
// kind of data Baton keeps, exported or not, from the map.
func readme(user string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Everything Baton keeps for user %s.\n\n", user)
	b.WriteString(`Files:
  account.json               the account: the user's id, when this export was made
  state.json                 the user's own state (user: keys, shared by the user's chats)
  chats.ndjson               one line per chat: its id, title, agent, times and folder (dir)
  chats/{dir}/messages.ndjson   the chat's conversation, one AI SDK UI message per line,
                             with its id; an answer's rating in its metadata.feedback
  chats/{dir}/state.json     the chat's session state
  chats/{dir}/files/…        the chat's files, each version as name@version
  files/…                    the user's own files
  usage.json                 the turn and token counts the limits keep

What Baton keeps, and where this export holds it:
`)
	for _, k := range Map {
		where := "in " + k.Export
		if k.Export == "" {
			where = "not exported: " + k.Why
		}
		fmt.Fprintf(&b, "  - %s (%s): %s; kept %s\n", k.Name, k.Path, where, k.Kept)
	}
	return b.String()
}
