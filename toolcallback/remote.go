package toolcallback

import (
	"fmt"
	"time"

	"google.golang.org/adk/v2/tool"

	"github.com/baton-run/baton/a2aremote"
	"github.com/baton-run/baton/a2ui"
	"github.com/baton-run/baton/ledger"
)

// KindRemote calls are a remote A2A agent's task (see Remote).
const KindRemote = ledger.KindRemote

// RemoteConfig declares a remote A2A agent as a tool.
type RemoteConfig struct {
	// Name and Description are the tool's, as the model sees them.
	Name        string
	Description string
	// Agent is the remote agent: its card's URL, its credentials, whether
	// it may be on a private address (a2aremote.Config).
	Agent a2aremote.Config
	// Timeout bounds a call from the model's request to the remote's
	// answer, its questions to the person included; hours are allowed.
	// A call whose time runs out is cancelled on the remote and the model
	// told so. Zero uses the team's CallTimeout.
	Timeout time.Duration
	// PollEvery is how often the sweeper reads the remote task
	// (tasks/get) while the call is pending: the only way a remote that
	// sends no push notifications is heard, and a safety net for a lost
	// notification (a2a-go's sender, for one, does not retry). The sweeper
	// reads a call at most once per its own run. Default 1 minute.
	PollEvery time.Duration
	// Catalog checks the A2UI messages of the remote's results, shown to
	// the person as surfaces; default a2ui.BasicCatalog.
	Catalog *a2ui.Catalog
}

// RemoteTool is a remote A2A agent as a tool: the model's call pauses the
// agent like a background call (its ledger record is stored with the
// event that holds it, and the turn ends); the queue sends the call's
// message to the remote (Team.Work), with a push config naming the
// deployment's push callback and a token bound to that one call; the
// remote's notifications (Team.Notify), or the sweeper's reads, record
// its progress, relay its questions to the person, and its result
// resumes the agent, once. Give it to the agent's tools and to its team
// member's Remote, where the worker and the push callback find it.
type RemoteTool struct {
	*pausing
	agent   *a2aremote.Agent
	poll    time.Duration
	catalog *a2ui.Catalog
}

// remoteArgs is what the model gives a remote agent: the message.
type remoteArgs struct {
	Message string `json:"message" jsonschema:"what to ask the remote agent, in full: it sees nothing else of the conversation"`
}

// Remote declares the remote agent cfg names as a tool.
func Remote(cfg RemoteConfig) (*RemoteTool, error) {
	agent, err := a2aremote.New(cfg.Agent)
	if err != nil {
		return nil, fmt.Errorf("remote tool %q: %w", cfg.Name, err)
	}
	poll := cfg.PollEvery
	if poll <= 0 {
		poll = time.Minute
	}
	p, err := pausingTool[remoteArgs](cfg.Name, cfg.Description, pauseSpec{Kind: KindRemote, Timeout: cfg.Timeout, AnyDevice: true,
		attempts: 1, poll: poll})
	if err != nil {
		return nil, err
	}
	catalog := cfg.Catalog
	if catalog == nil {
		if catalog, err = a2ui.BasicCatalog(); err != nil {
			return nil, err
		}
	}
	return &RemoteTool{pausing: p.(*pausing), agent: agent, poll: poll, catalog: catalog}, nil
}

var _ tool.Tool = (*RemoteTool)(nil)

// Agent is the remote agent the tool delegates to.
func (rt *RemoteTool) Agent() *a2aremote.Agent { return rt.agent }

// PushToken is the token c, a remote call, gives its remote to echo with
// each push notification (Notify checks it).
func (t *Team) PushToken(c *Call) (string, error) {
	token, _, err := t.ledger.PushToken(c)
	return token, err
}
