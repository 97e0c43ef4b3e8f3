package agent

import (
	"time"

	"github.com/baton-run/baton/a2aremote"
	"github.com/baton-run/baton/toolcallback"
)

// EventsTool is the concierge's events agent: the remote A2A agent whose
// card is at url (local/events, started by the local runner on a port of
// its own), as the tool ask_events. It may be on loopback: it is.
func EventsTool(url string) (*toolcallback.RemoteTool, error) {
	return toolcallback.Remote(toolcallback.RemoteConfig{
		Name:        "ask_events",
		Description: "Ask the events agent what is on in town; it may ask the user which part of town first.",
		Agent:       a2aremote.Config{CardURL: url, AllowPrivate: true},
		Timeout:     30 * time.Minute,
		PollEvery:   30 * time.Second,
	})
}
