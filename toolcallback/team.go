package toolcallback

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/session"

	"github.com/baton-run/baton/feedback"
	"github.com/baton-run/baton/ledger"
	"github.com/baton-run/baton/limits"
	"github.com/baton-run/baton/sessionstore"
)

// Member is one agent of a Team.
type Member struct {
	Agent agent.Agent
	// DropState: when the conversation switches to this agent, it starts
	// without the previous agent's session-scoped state (user: and app:
	// state are shared anyway; temp: never moves).
	DropState bool
	// Background are the background tools among the agent's (and its
	// sub-agents') tools: the worker, on any instance, runs a call's work
	// with the tool of that name found here (ADK does not expose an
	// agent's tools).
	Background []*BackgroundTool
	// Remote are the remote agents among the agent's tools: the worker
	// sends a call's messages, and the push callback reads its task,
	// through the remote of that name found here.
	Remote []*RemoteTool
}

// Team serves chat sessions that can move between agents. A chat id is what
// clients hold; behind it exactly one ADK session is active, belonging to
// one agent. Asking a chat for another agent switches: the old agent's
// pending calls are cancelled, a new ADK session is built holding the
// conversation (MigrateHistory), the chat is pointed at it with a
// compare-and-set, and the old session is deleted. Each agent's runs go
// through its engine; the ledger is the team's.
type Team struct {
	app      string
	sessions *sessionstore.Service
	ledger   *ledger.Ledger
	engines  map[string]*engine
	members  map[string]Member
	names    []string // in order; the first is the default agent
	opts     *Options
	memory   chatMemory
	limits   *limits.Counter
	feedback *feedback.Store
}

// NewTeam returns a Team of members for app; the first member is the agent
// of new chats.
func NewTeam(sessions *sessionstore.Service, app string, members []Member, opts *Options) (*Team, error) {
	if len(members) == 0 {
		return nil, errors.New("a team needs at least one agent")
	}
	o := opts.withDefaults()
	t := &Team{app: app, sessions: sessions, engines: map[string]*engine{}, members: map[string]Member{}, opts: &o,
		limits: limits.NewCounter(sessions, app), feedback: feedback.New(sessions, app),
		ledger: ledger.New(sessions, app, &ledger.Options{Retention: o.Retention, AnswerGrace: o.AnswerGrace, TokenKey: o.TokenKey,
			EnqueueGrace: o.EnqueueGrace})}
	if o.WarmChats > 0 {
		t.memory.warm = newWarmChats(o.WarmChats, o.WarmBytes)
	}
	for _, m := range members {
		name := m.Agent.Name()
		if _, dup := t.engines[name]; dup {
			return nil, fmt.Errorf("two agents named %q", name)
		}
		e, err := newEngine(t, m)
		if err != nil {
			return nil, fmt.Errorf("agent %q: %w", name, err)
		}
		t.engines[name], t.members[name] = e, m
		t.names = append(t.names, name)
	}
	return t, nil
}

// Agents returns the team's agent names; the first is the default.
func (t *Team) Agents() []string { return slices.Clone(t.names) }

// Members returns the team's members, in order; the first is the default.
func (t *Team) Members() []Member {
	out := make([]Member, len(t.names))
	for i, name := range t.names {
		out[i] = t.members[name]
	}
	return out
}

// Feedback is the store of the people's ratings of the team's answers,
// which a rewind deletes with the answers it takes back.
func (t *Team) Feedback() *feedback.Store { return t.feedback }

// App returns the app whose sessions the team serves.
func (t *Team) App() string { return t.app }

// UnknownAgentError is returned for a chat asking for an agent the team
// does not have.
type UnknownAgentError struct {
	Name  string
	Known []string
}

func (e *UnknownAgentError) Error() string {
	return fmt.Sprintf("unknown agent %q (known: %v)", e.Name, e.Known)
}

// engine returns the engine of an agent, or the default one for a name the
// team no longer has (its calls can still be found and refused).
func (t *Team) engine(name string) *engine {
	if e := t.engines[name]; e != nil {
		return e
	}
	return t.engines[t.names[0]]
}

// PendingState is what a reloaded page needs of a chat.
type PendingState struct {
	Agent string  // the chat's active agent
	Calls []*Call // the pending calls the client may answer, oldest first
	// History holds the active session's latest events, at most the
	// number asked for.
	History session.Events
	// Whole says History begins with the session's first event.
	Whole bool
}

// PendingRequest asks for what a reloaded page needs of a chat.
type PendingRequest struct {
	UserID, ChatID string
	// ClientID limits the calls to those the client may answer; empty:
	// every client's, each naming its client.
	ClientID string
	// History is how many of the session's recent events to return, at
	// most; negative: all of the session's events.
	History int
}

// Pending returns the chat's agent, its pending calls that the client may
// answer, and its history events (see PendingRequest).
func (t *Team) Pending(ctx context.Context, req PendingRequest) (*PendingState, error) {
	if req.ClientID != "" {
		if err := validIDs("client id", req.ClientID); err != nil {
			return nil, err
		}
	}
	f, err := t.Follow(ctx, req.UserID, req.ChatID)
	if err != nil {
		return nil, err
	}
	return f.Pending(ctx, req.ClientID, req.History)
}

// Token returns an opaque token that alone authorises answering c, for an
// external system or an approval link. It expires with the call. The same
// exactly-once rules apply to answers carrying it. It needs
// Options.TokenKey.
func (t *Team) Token(c *Call) (string, error) { return t.ledger.Token(c) }

// validIDs checks ids given as kind, value pairs: Team's methods check the
// ids they are given, once, before any becomes a document path; the engines
// and the store below take them as checked.
func validIDs(pairs ...string) error {
	for i := 0; i+1 < len(pairs); i += 2 {
		if err := sessionstore.ValidateID(pairs[i], pairs[i+1]); err != nil {
			return err
		}
	}
	return nil
}
