package toolcallback

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/platform"
	"google.golang.org/adk/v2/session"
	"google.golang.org/genai"

	"github.com/baton-run/baton/internal/eventlist"
	"github.com/baton-run/baton/sessionstore"
)

// Member is one agent of a Team.
type Member struct {
	Agent agent.Agent
	// DropState: when the conversation switches to this agent, it starts
	// without the previous agent's session-scoped state (user: and app:
	// state are shared anyway; temp: never moves).
	DropState bool
}

// Team serves chat sessions that can move between agents. A chat id is what
// clients hold; behind it exactly one ADK session is active, belonging to
// one agent. Asking a chat for another agent switches: the old agent's
// pending calls are cancelled, a new ADK session is built holding the
// conversation (MigrateHistory), the chat is pointed at it with a
// compare-and-set, and the old session is deleted. Everything else is
// delegated to the engine of the active agent.
type Team struct {
	app      string
	sessions *sessionstore.Service
	client   *firestore.Client
	engines  map[string]*engine
	members  map[string]Member
	names    []string // in order; the first is the default agent
	opts     Options
	active   activeSessions
	warm     *warmChats // nil: warm turns off
	turns    userTurnsCache
}

// NewTeam returns a Team of members for app; the first member is the agent
// of new chats.
func NewTeam(client *firestore.Client, sessions *sessionstore.Service, app string, members []Member, opts *Options) (*Team, error) {
	if len(members) == 0 {
		return nil, errors.New("a team needs at least one agent")
	}
	t := &Team{app: app, sessions: sessions, client: client, engines: map[string]*engine{}, members: map[string]Member{}, opts: opts.withDefaults()}
	if t.opts.SessionStateOnly && t.opts.WarmChats > 0 {
		t.warm = newWarmChats(t.opts.WarmChats, t.opts.WarmBytes)
	}
	for _, m := range members {
		name := m.Agent.Name()
		if _, dup := t.engines[name]; dup {
			return nil, fmt.Errorf("two agents named %q", name)
		}
		e, err := newEngine(client, sessions, app, m.Agent, opts)
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

// UnknownAgentError is returned for a chat asking for an agent the team
// does not have.
type UnknownAgentError struct {
	Name  string
	Known []string
}

func (e *UnknownAgentError) Error() string {
	return fmt.Sprintf("unknown agent %q (known: %v)", e.Name, e.Known)
}

// ChatTurn is one user message to a chat.
type ChatTurn struct {
	UserID   string
	ChatID   string // created on first use
	ClientID string
	// Agent names the agent to talk to; empty keeps the chat's current one.
	Agent   string
	Content *genai.Content
	// MessageID is the client's id for the message: the same id sent
	// again fails with ErrMessageTaken, and no second turn runs.
	MessageID string
	// Limits are the caller's turn limits (zero: none); a turn over one
	// fails with a *LimitError and writes nothing (see limits.go).
	Limits Limits
}

// SwitchReport says whether a turn moved the chat to another agent.
type SwitchReport struct {
	Switched bool   `json:"switched"`
	From     string `json:"from,omitempty"`
	To       string `json:"to"`
}

// Turn runs a message in a chat, switching agents first if asked.
func (t *Team) Turn(ctx context.Context, req ChatTurn) (*Invocation, *SwitchReport, error) {
	if err := validIDs("user id", req.UserID, "chat id", req.ChatID, "client id", req.ClientID); err != nil {
		return nil, nil, err
	}
	if req.Content == nil || len(req.Content.Parts) == 0 {
		return nil, nil, fmt.Errorf("%w: empty message", ErrInvalidAnswer)
	}
	if req.Agent != "" && t.engines[req.Agent] == nil {
		return nil, nil, &UnknownAgentError{Name: req.Agent, Known: t.Agents()}
	}
	var inv *Invocation
	var report *SwitchReport
	err := t.withFiles(ctx, req.UserID, req.ChatID, req.Content, func(content *genai.Content) (err error) {
		req.Content = content
		inv, report, err = t.turn(ctx, req)
		return err
	})
	return inv, report, err
}

// turn runs a message whose files are stored.
func (t *Team) turn(ctx context.Context, req ChatTurn) (*Invocation, *SwitchReport, error) {
	if inv, report, ok, err := t.warmTurn(ctx, req); ok {
		return inv, report, err
	}
	// One round trip reads the chat with the session it is believed to
	// point at, and what the caller's limits count; the engine hands that
	// read to the runner.
	chat, sess, m, err := t.readChat(ctx, req.UserID, req.ChatID, req.Limits)
	if err == nil || errors.Is(err, sessionstore.ErrNotFound) {
		// Refused before anything is written (an agent switch, the
		// chat's activity): the engine checks the chat again once it
		// has read a session this read did not find.
		if m != nil && m.turns != nil && m.err == nil {
			t.turns.put(req.UserID, *m.turns, false)
			m.remember = t.rememberTurns(req.UserID)
		}
		if lerr := m.check(sess, req.MessageID); lerr != nil {
			return nil, nil, lerr
		}
	}
	if errors.Is(err, sessionstore.ErrNotFound) {
		var inv *Invocation
		if inv, chat, err = t.newChatTurn(ctx, req, m); inv != nil {
			return inv, &SwitchReport{To: chat.Agent}, nil
		}
	}
	if err != nil {
		return nil, nil, err
	}
	report := &SwitchReport{To: chat.Agent}
	if req.Agent != "" && req.Agent != chat.Agent {
		if chat, err = t.switchAgent(ctx, chat, req.Agent, req.ClientID); err != nil {
			return nil, nil, err
		}
		report = &SwitchReport{Switched: true, From: report.To, To: chat.Agent}
		sess = nil
		if t.opts.ChatSwitched != nil {
			t.opts.ChatSwitched(ctx, chat, report.From)
		}
	}
	t.active.put(req.UserID, req.ChatID, chat.SessionID)
	turnCtx := ctx
	if sess != nil && !report.Switched {
		// The chat and its session, read together: the commit that
		// claims the lease on that session says the chat read is current.
		turnCtx = withChatRead(ctx, chat)
	}
	in := req.in(chat.SessionID, m)
	in.keep = t.keepWarm(chat)
	inv, err := t.engines[chat.Agent].turn(turnCtx, in, sess)
	if err == nil && !report.Switched {
		// Once the turn runs: a turn refused (busy, over a limit) writes
		// nothing.
		t.touch(ctx, chat)
	}
	return inv, report, err
}

// newChatTurn runs the first turn of a chat that did not exist when read:
// one commit creates the chat with its session, lease and first message.
// If another request created the chat first, it returns that chat and no
// invocation, and the turn goes the usual way.
func (t *Team) newChatTurn(ctx context.Context, req ChatTurn, m *meter) (*Invocation, *sessionstore.Chat, error) {
	chat := t.chatFor(ctx, req.UserID, req.ChatID, req.Agent)
	in := req.in(chat.SessionID, m)
	in.keep = t.keepWarm(chat)
	inv, err := t.engines[chat.Agent].firstTurn(withChatRead(ctx, chat), in, chat)
	if err == nil {
		t.active.put(req.UserID, req.ChatID, chat.SessionID)
		return inv, chat, nil
	}
	if !errors.Is(err, sessionstore.ErrBusy) {
		return nil, nil, err
	}
	chat, err = t.newChat(ctx, req.UserID, req.ChatID, req.Agent)
	return nil, chat, err
}

// in is the message of req for the chat's ADK session sid, held to the
// limits m read (nil: none).
func (req ChatTurn) in(sid string, m *meter) turnRequest {
	return turnRequest{UserID: req.UserID, SessionID: sid, ClientID: req.ClientID, Content: req.Content, MessageID: req.MessageID, meter: m}
}

// newChat creates a chat known not to exist, with agent (or the default);
// if another request created it first, that one is returned.
func (t *Team) newChat(ctx context.Context, user, id, agentName string) (*sessionstore.Chat, error) {
	chat := t.chatFor(ctx, user, id, agentName)
	err := t.sessions.CreateChat(ctx, chat)
	if errors.Is(err, sessionstore.ErrAlreadyExists) {
		return t.sessions.GetChat(ctx, t.app, user, id)
	}
	return chat, err
}

// chatFor returns a new chat with agent (or the default), not yet stored.
func (t *Team) chatFor(ctx context.Context, user, id, agentName string) *sessionstore.Chat {
	if agentName == "" {
		agentName = t.names[0]
	}
	now := platform.Now(ctx)
	return &sessionstore.Chat{App: t.app, UserID: user, ID: id, Agent: agentName, SessionID: chatSessionID(id, 0),
		Created: now, LastActivity: now}
}

// touch records activity, at most hourly: idle cleanup needs no finer
// grain, and a write per turn would cost more than it tells.
func (t *Team) touch(ctx context.Context, chat *sessionstore.Chat) {
	now := platform.Now(ctx)
	if now.Sub(chat.LastActivity) < time.Hour {
		return
	}
	chat.LastActivity = now
	if err := t.sessions.SaveChat(ctx, chat); err != nil && !errors.Is(err, sessionstore.ErrConflict) {
		t.opts.Logger.Warn("record chat activity", "chat", chat.ID, "error", err)
	}
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

// Pending returns the chat's agent, its pending calls that client may
// answer (an empty client: every client's, each naming its client), and
// its latest history events: at most history of those among the session's
// recent ones, or, for a negative history, all of the session's events.
func (t *Team) Pending(ctx context.Context, user, chatID, client string, history int) (*PendingState, error) {
	if err := validIDs("user id", user, "chat id", chatID); err != nil {
		return nil, err
	}
	if client != "" {
		if err := validIDs("client id", client); err != nil {
			return nil, err
		}
	}
	chat, err := t.sessions.GetChat(ctx, t.app, user, chatID)
	if err != nil {
		return nil, err
	}
	calls, events, whole, err := t.engine(chat.Agent).pending(ctx, user, chat.SessionID, client, history < 0)
	if err != nil {
		return nil, err
	}
	if n := len(events); history >= 0 && history < n {
		events, whole = events[n-history:], false
	}
	return &PendingState{Agent: chat.Agent, Calls: calls, History: eventlist.List(events), Whole: whole}, nil
}

// Watch follows the chat's active session as it is written to, from any
// instance (see sessionstore.Service.Watch): first its recent latest
// events, then each append and each change of its lease. An unknown chat
// yields sessionstore.ErrNotFound.
func (t *Team) Watch(ctx context.Context, user, chatID string, recent int) iter.Seq2[*sessionstore.Change, error] {
	return func(yield func(*sessionstore.Change, error) bool) {
		if err := validIDs("user id", user, "chat id", chatID); err != nil {
			yield(nil, err)
			return
		}
		chat, err := t.sessions.GetChat(ctx, t.app, user, chatID)
		if err != nil {
			yield(nil, err)
			return
		}
		for c, err := range t.sessions.Watch(ctx, t.app, user, chat.SessionID, recent) {
			if !yield(c, err) || err != nil {
				return
			}
		}
	}
}

// Resume answers a call of a chat, r.ChatID; with a token, the token
// names the call's session instead. An answer to a call of an agent the
// chat has left finds the call cancelled.
func (t *Team) Resume(ctx context.Context, r Result) (*Resumption, error) {
	if r.Token != "" {
		// The token is verified here, once, and the record it names read
		// once.
		doc, snap, err := t.engine(t.names[0]).tokenCall(ctx, &r)
		if err != nil {
			return nil, err
		}
		return t.engine(doc.Agent).resume(ctx, r, doc, snap)
	}
	if err := validIDs("user id", r.UserID, "chat id", r.ChatID, "client id", r.ClientID, "call id", r.CallID); err != nil {
		return nil, err
	}
	t.warm.drop(r.UserID, r.ChatID) // the resume writes the session
	// One round trip reads the chat, the session it is believed to point
	// at (see activeSessions) and the call in that session.
	e := t.engine(t.names[0])
	guess := t.active.guess(r.UserID, r.ChatID)
	chat, sess, snaps, err := t.sessions.GetChatSession(ctx, t.app, r.UserID, r.ChatID, guess, !t.opts.SessionStateOnly,
		e.callRef(r.UserID, guess, r.CallID))
	if err != nil {
		return nil, err
	}
	t.active.put(r.UserID, r.ChatID, chat.SessionID)
	if sess != nil && snaps[0].Exists() {
		doc, snap, err := decodeCall(snaps[0])
		if err != nil {
			return nil, err
		}
		if res, err := t.engine(doc.Agent).fastResume(ctx, r, doc, snap, sess); res != nil || err != nil {
			return res, err
		}
		return t.engine(doc.Agent).resume(ctx, r, doc, snap)
	}
	// The call is the active session's or, answered late, one of a
	// session the chat retired (where it was cancelled).
	sids := []string{chat.SessionID}
	for _, sid := range slices.Backward(chat.Retired) {
		sids = append(sids, sid)
	}
	for _, sid := range sids {
		doc, snap, err := e.readCall(ctx, e.callRef(r.UserID, sid, r.CallID))
		if errors.Is(err, ErrCallNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		return t.engine(doc.Agent).resume(ctx, r, doc, snap)
	}
	return nil, fmt.Errorf("%w: %q", ErrCallNotFound, r.CallID)
}

// Token returns an opaque token that alone authorises answering c, for an
// external system or an approval link. It expires with the call. The same
// exactly-once rules apply to answers carrying it. It needs
// Options.TokenKey.
func (t *Team) Token(c *Call) (string, error) { return t.engine(t.names[0]).token(c) }

// engine returns the engine of an agent, or the default one for a name the
// team no longer has (its calls can still be found and refused).
func (t *Team) engine(name string) *engine {
	if e := t.engines[name]; e != nil {
		return e
	}
	return t.engines[t.names[0]]
}

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
