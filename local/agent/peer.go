package agent

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/baton-run/baton/a2aremote"
	"github.com/baton-run/baton/toolcallback"
)

// PeerUser is who a runner's concierge is, by default, on the other
// runner's A2A function when it delegates there (PeerTool): that runner's
// chats of this user hold the questions it was asked.
const PeerUser = "peer-runner"

// PeerTool is the concierge's other runner: the concierge of another go
// run ./local, whose base URL is url (its A2A function at url/A2A), as
// the tool ask_peer. It presents itself to that runner as user (PeerUser
// unless a test names another): with an ID token of the Firebase Auth
// emulator of project (unsigned, as the
// emulator's own are, which the Admin SDK accepts only when it talks to
// an emulator), and with X-Baton-User for a runner in development
// identity. A deployment would present a Google-signed token of its
// service account instead (docs/remote-agents.md).
func PeerTool(url, project, user string) (*toolcallback.RemoteTool, error) {
	return toolcallback.Remote(toolcallback.RemoteConfig{
		Name:        "ask_peer",
		Description: "Ask the concierge of the other Baton runner; give the whole question, it sees nothing else of this conversation.",
		Agent: a2aremote.Config{
			CardURL:      strings.TrimSuffix(url, "/") + "/A2A",
			Header:       http.Header{"Authorization": {"Bearer " + emulatorToken(project, user, time.Now())}, "X-Baton-User": {user}},
			AllowPrivate: true,
		},
		Timeout:   30 * time.Minute,
		PollEvery: 30 * time.Second,
	})
}

// emulatorToken is an ID token of the Auth emulator of project for user
// uid, as the emulator writes one (no signature), valid for a year from
// now.
func emulatorToken(project, uid string, now time.Time) string {
	enc := func(v any) string {
		raw, _ := json.Marshal(v) // maps of strings and numbers
		return base64.RawURLEncoding.EncodeToString(raw)
	}
	header := map[string]any{"alg": "none", "typ": "JWT"}
	claims := map[string]any{
		"iss": "https://securetoken.google.com/" + project, "aud": project, "sub": uid, "user_id": uid,
		"iat": now.Unix(), "auth_time": now.Unix(), "exp": now.Add(365 * 24 * time.Hour).Unix(),
		"firebase": map[string]any{"sign_in_provider": "custom", "identities": map[string]any{}},
	}
	return enc(header) + "." + enc(claims) + "."
}
