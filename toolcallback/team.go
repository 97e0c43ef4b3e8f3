package toolcallback

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/platform"
	"google.golang.org/adk/v2/session"
	"google.golang.org/genai"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

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
// delegated to the Engine of the active agent.
type Team struct {
	app      string
	sessions *sessionstore.Service
	client   *firestore.Client
	engines  map[string]*Engine
	members  map[string]Member
	names    []string // in order; the first is the default agent
	opts     Options
}

// NewTeam returns a Team of members for app; the first member is the agent
// of new chats.
func NewTeam(client *firestore.Client, sessions *sessionstore.Service, app string, members []Member, opts *Options) (*Team, error) {
	if len(members) == 0 {
		return nil, errors.New("a team needs at least one agent")
	}
	t := &Team{app: app, sessions: sessions, client: client, engines: map[string]*Engine{}, members: map[string]Member{}, opts: opts.withDefaults()}
	for _, m := range members {
		name := m.Agent.Name()
		if _, dup := t.engines[name]; dup {
			return nil, fmt.Errorf("two agents named %q", name)
		}
		e, err := New(client, sessions, app, m.Agent, opts)
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
	// MessageID is the client's id for the message (see TurnRequest).
	MessageID string
}

// SwitchReport says whether a turn moved the chat to another agent.
type SwitchReport struct {
	Switched bool   `json:"switched"`
	From     string `json:"from,omitempty"`
	To       string `json:"to"`
}

// maxSwitchSuffix is the longest suffix chatSessionID appends to a chat
// id: "~" and a switch count of up to 19 digits.
const maxSwitchSuffix = 20

// chatSessionID names the ADK session of a chat's n-th agent. It is a valid
// document id for every valid chat id and every n, so a chat id that is
// accepted once works for the chat's whole life: "chat~n" while that fits
// whatever n becomes, and for a longer chat id "n~sha256-<hex of the chat
// id>". The two forms never meet: in the first, the last '~' is followed
// by digits only; in the second, by "sha256-".
func chatSessionID(chat string, n int) string {
	if len(chat)+maxSwitchSuffix <= sessionstore.MaxIDBytes {
		return fmt.Sprintf("%s~%d", chat, n)
	}
	return fmt.Sprintf("%d~sha256-%x", n, sha256.Sum256([]byte(chat)))
}

// Turn runs a message in a chat, switching agents first if asked.
func (t *Team) Turn(ctx context.Context, req ChatTurn) (*Invocation, *SwitchReport, error) {
	if err := validateIDs(req.UserID, req.ChatID, req.ClientID); err != nil {
		return nil, nil, err
	}
	if req.Agent != "" && t.engines[req.Agent] == nil {
		return nil, nil, &UnknownAgentError{Name: req.Agent, Known: t.Agents()}
	}
	chat, err := t.chat(ctx, req.UserID, req.ChatID, req.Agent)
	if err != nil {
		return nil, nil, err
	}
	report := &SwitchReport{To: chat.Agent}
	if req.Agent != "" && req.Agent != chat.Agent {
		if chat, err = t.switchAgent(ctx, chat, req.Agent, req.ClientID); err != nil {
			return nil, nil, err
		}
		report = &SwitchReport{Switched: true, From: report.To, To: chat.Agent}
	} else {
		t.touch(ctx, chat)
	}
	inv, err := t.engines[chat.Agent].Turn(ctx, TurnRequest{UserID: req.UserID, SessionID: chat.SessionID, ClientID: req.ClientID, Content: req.Content, MessageID: req.MessageID})
	return inv, report, err
}

// chat reads a chat, creating it (with agent, or the default) on first use.
func (t *Team) chat(ctx context.Context, user, id, agentName string) (*sessionstore.Chat, error) {
	chat, err := t.sessions.GetChat(ctx, t.app, user, id)
	if !errors.Is(err, sessionstore.ErrNotFound) {
		return chat, err
	}
	if agentName == "" {
		agentName = t.names[0]
	}
	now := platform.Now(ctx)
	chat = &sessionstore.Chat{App: t.app, UserID: user, ID: id, Agent: agentName, SessionID: chatSessionID(id, 0),
		Created: now, LastActivity: now}
	err = t.sessions.CreateChat(ctx, chat)
	if errors.Is(err, sessionstore.ErrAlreadyExists) {
		return t.sessions.GetChat(ctx, t.app, user, id)
	}
	return chat, err
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

// switchAgent moves chat to agent target, under the old session's lease so
// that two tabs switching at once cannot fork the conversation. At every
// step the chat points at a complete ADK session, the old one until the
// compare-and-set that moves it to the new one; leftovers of a switch that
// dies are recorded in the chat for cleanup.
func (t *Team) switchAgent(ctx context.Context, chat *sessionstore.Chat, target, client string) (*sessionstore.Chat, error) {
	from := t.engines[chat.Agent]
	if from == nil {
		from = t.engines[t.names[0]]
	}
	oldID := chat.SessionID
	wait := time.Duration(0)
	if t.opts.LeasePolicy == LeaseEnqueue {
		wait = t.opts.MaxWait
	}
	h, err := from.acquire(ctx, chat.UserID, oldID, client, wait, false)
	switch {
	case errors.Is(err, ErrNotFound):
		h = nil // the chat's first turn never ran: nothing to migrate or fence
	case err != nil:
		return nil, err
	}
	if h != nil {
		defer from.release(ctx, h)
		ctx = h.bind(ctx)
	}
	// Under the lease, the chat must still point at the session we hold.
	if chat, err = t.sessions.GetChat(ctx, t.app, chat.UserID, chat.ID); err != nil {
		return nil, err
	}
	if chat.SessionID != oldID {
		return nil, &sessionstore.BusyError{SessionID: chat.ID, RetryAfter: time.Second}
	}
	if chat.Agent == target {
		return chat, nil
	}
	now := platform.Now(ctx)

	// 1. Note the session about to be built, so a crash leaves a findable
	// orphan rather than an invisible one.
	newID := chatSessionID(chat.ID, chat.Switches+1)
	cleanup := now.Add(from.opts.InvocationTimeout + from.opts.LeaseTTL)
	chat.Building, chat.CleanupAt = newID, &cleanup
	if err := t.sessions.SaveChat(ctx, chat); err != nil {
		return nil, busyOnConflict(chat.ID, err)
	}

	// 2. Cancel what the old agent still waits for; late answers get 410.
	outcomes := map[string]string{}
	var old session.Session
	if h != nil {
		if old, err = from.loadSession(ctx, chat.UserID, oldID); err != nil {
			return nil, err
		}
		closed, err := from.closeOpenCalls(ctx, old)
		if err != nil {
			return nil, err
		}
		// What a dead invocation left unanswered is closed before the
		// conversation moves (the cancelled calls get their outcome below).
		if err := from.repairTail(ctx, old, nil, knownCalls(closed)); err != nil {
			return nil, err
		}
		for _, d := range closed {
			outcomes[d.OriginalID] = "cancelled when the conversation moved to " + target
		}
	}

	// 3. Build the new session with the conversation so far.
	var history []*session.Event
	state := map[string]any{}
	if old != nil {
		m := sessionstore.Migration{From: chat.Agent, To: target, At: now, Outcome: outcomes,
			Args: map[string]map[string]any{}, Approved: map[string]bool{}}
		for id, d := range Decisions(old.Events()) {
			m.Args[id], m.Approved[id] = d.Args, d.Approved
		}
		history = sessionstore.MigrateHistory(ctx, old.Events(), m)
		if !t.members[target].DropState {
			state = sessionstore.SessionScopedState(old)
		}
	}
	create := &session.CreateRequest{AppName: t.app, UserID: chat.UserID, SessionID: newID, State: state}
	if _, err := t.sessions.CreateWithEvents(ctx, create, history); errors.Is(err, sessionstore.ErrAlreadyExists) {
		// A leftover of a switch that died at this number: replace it.
		if _, err := t.sessions.PurgeSession(ctx, t.app, chat.UserID, newID); err != nil {
			return nil, err
		}
		if _, err := t.sessions.CreateWithEvents(ctx, create, history); err != nil {
			return nil, err
		}
	} else if err != nil {
		return nil, err
	}

	// 4. Point the chat at it: the switch is done once this write lands.
	from.opts.Logger.Info("agent switch", "chat", chat.ID, "from", chat.Agent, "to", target)
	chat.Agent, chat.SessionID, chat.Building = target, newID, ""
	chat.Retired = append(chat.Retired, oldID)
	if len(chat.Retired) > maxRetired {
		chat.Retired = chat.Retired[len(chat.Retired)-maxRetired:]
	}
	chat.Switches++
	chat.LastSwitch, chat.LastActivity = now, now
	chat.CleanupAt = &now // the old session is to be deleted
	if err := t.sessions.SaveChat(ctx, chat); err != nil {
		return nil, busyOnConflict(chat.ID, err)
	}

	// 5. Delete the old session (its ledger stays, so late answers find
	// their cancelled calls). A failure here is left to cleanup.
	if err := t.retire(ctx, chat, oldID); err != nil {
		from.opts.Logger.Warn("delete the old session after a switch; cleanup will retry", "chat", chat.ID, "session", oldID, "error", err)
		return chat, nil
	}
	chat.CleanupAt = nil
	if err := t.sessions.SaveChat(ctx, chat); err != nil {
		from.opts.Logger.Warn("clear chat cleanup mark", "chat", chat.ID, "error", err)
	}
	return chat, nil
}

// maxRetired bounds how many old sessions a chat remembers; the ledger
// records of older ones are left to their TTL.
const maxRetired = 20

// retire deletes a replaced session's document and events.
func (t *Team) retire(ctx context.Context, chat *sessionstore.Chat, sid string) error {
	return t.sessions.Delete(ctx, &session.DeleteRequest{AppName: t.app, UserID: chat.UserID, SessionID: sid})
}

func busyOnConflict(chatID string, err error) error {
	if errors.Is(err, sessionstore.ErrConflict) {
		return &sessionstore.BusyError{SessionID: chatID, RetryAfter: time.Second}
	}
	return err
}

// Chat returns a chat, for its active session and agent.
func (t *Team) Chat(ctx context.Context, user, chatID string) (*sessionstore.Chat, error) {
	chat, err := t.sessions.GetChat(ctx, t.app, user, chatID)
	if errors.Is(err, sessionstore.ErrNotFound) {
		return nil, fmt.Errorf("%w: chat %q", ErrNotFound, chatID)
	}
	return chat, err
}

// Pending lists the chat's pending calls that client may answer; an empty
// client lists every client's.
func (t *Team) Pending(ctx context.Context, user, chatID, client string) ([]*Call, error) {
	if err := validateIDs(user, chatID, client); err != nil {
		return nil, err
	}
	chat, err := t.Chat(ctx, user, chatID)
	if err != nil {
		return nil, err
	}
	return t.engine(chat.Agent).Pending(ctx, user, chat.SessionID, client)
}

// Resume answers a call of a chat. r.SessionID is the chat id; with a
// token, the token names the session. An answer to a call of an agent the
// chat has left finds the call cancelled.
func (t *Team) Resume(ctx context.Context, r Result) (*Resumption, error) {
	if r.Token != "" {
		claims, err := t.engine(t.names[0]).verifyToken(ctx, r.Token)
		if err != nil {
			return nil, err
		}
		agentName, err := t.callAgent(ctx, claims.User, claims.Session, claims.Call)
		if err != nil {
			return nil, err
		}
		return t.engine(agentName).Resume(ctx, r)
	}
	if err := validateIDs(r.UserID, r.SessionID, r.ClientID); err != nil {
		return nil, err
	}
	if err := sessionstore.ValidateID("call id", r.CallID); err != nil {
		return nil, err
	}
	chat, err := t.Chat(ctx, r.UserID, r.SessionID)
	if err != nil {
		return nil, err
	}
	active := r
	active.SessionID = chat.SessionID
	res, err := t.engine(chat.Agent).Resume(ctx, active)
	if !errors.Is(err, ErrNotFound) {
		return res, err
	}
	for _, sid := range slices.Backward(chat.Retired) {
		agentName, aerr := t.callAgent(ctx, r.UserID, sid, r.CallID)
		if errors.Is(aerr, ErrNotFound) {
			continue
		}
		if aerr != nil {
			return nil, aerr
		}
		retired := r
		retired.SessionID = sid
		return t.engine(agentName).Resume(ctx, retired)
	}
	return nil, err
}

// callAgent reads which agent's runner made a call.
func (t *Team) callAgent(ctx context.Context, user, sid, callID string) (string, error) {
	if err := validateIDs(user, sid, ""); err != nil {
		return "", err
	}
	if err := sessionstore.ValidateID("call id", callID); err != nil {
		return "", err
	}
	snap, err := t.engine(t.names[0]).callRef(user, sid, callID).Get(ctx)
	if status.Code(err) == codes.NotFound {
		return "", fmt.Errorf("%w: call %q", ErrNotFound, callID)
	}
	if err != nil {
		return "", translate(err)
	}
	var d callDoc
	if err := snap.DataTo(&d); err != nil {
		return "", err
	}
	return d.Agent, nil
}

// Token returns the call token of c (see Engine.Token).
func (t *Team) Token(c *Call) (string, error) { return t.engine(t.names[0]).Token(c) }

// engine returns the engine of an agent, or the default one for a name the
// team no longer has (its calls can still be found and refused).
func (t *Team) engine(name string) *Engine {
	if e := t.engines[name]; e != nil {
		return e
	}
	return t.engines[t.names[0]]
}

// TeamSweepReport says what one Team.Sweep did.
type TeamSweepReport struct {
	SweepReport
	Repaired int `json:"repaired"` // chats whose switch leftovers were removed
	Idle     int `json:"idle"`     // idle chats deleted with all their documents
}

// chatBatch bounds the chats one sweep handles per kind of cleanup.
const chatBatch = 20

// Sweep expires overdue calls for every agent, removes what switches that
// died left behind, and deletes chats idle beyond Options.IdleRetention.
func (t *Team) Sweep(ctx context.Context, now time.Time) (TeamSweepReport, error) {
	var report TeamSweepReport
	for _, name := range t.names {
		r, err := t.engines[name].Sweep(ctx, now)
		report.Expired += r.Expired
		report.Resumed += r.Resumed
		report.Skipped += r.Skipped
		if err != nil {
			return report, err
		}
	}
	due, err := t.sessions.ChatsToClean(ctx, t.app, now, chatBatch)
	if err != nil {
		return report, err
	}
	for _, chat := range due {
		if ctx.Err() != nil {
			return report, nil
		}
		if err := t.repairChat(ctx, chat); err != nil {
			t.opts.Logger.Warn("chat cleanup", "chat", chat.ID, "error", err)
			continue
		}
		report.Repaired++
	}
	idle, err := t.sessions.IdleChats(ctx, t.app, now.Add(-t.opts.IdleRetention), chatBatch)
	if err != nil {
		return report, err
	}
	for _, chat := range idle {
		if ctx.Err() != nil {
			return report, nil
		}
		deleted, err := t.deleteChat(ctx, chat)
		if err != nil {
			t.opts.Logger.Warn("idle chat cleanup", "chat", chat.ID, "error", err)
			continue
		}
		if deleted {
			report.Idle++
		}
	}
	return report, nil
}

// repairChat deletes the session a dead switch was building and the
// retired sessions still present, then clears the chat's cleanup mark.
func (t *Team) repairChat(ctx context.Context, chat *sessionstore.Chat) error {
	if chat.Building != "" && chat.Building != chat.SessionID {
		if _, err := t.sessions.PurgeSession(ctx, t.app, chat.UserID, chat.Building); err != nil {
			return err
		}
	}
	for _, sid := range chat.Retired {
		if sid == chat.SessionID {
			continue
		}
		if err := t.retire(ctx, chat, sid); err != nil {
			return err
		}
	}
	chat.Building, chat.CleanupAt = "", nil
	return t.sessions.SaveChat(ctx, chat)
}

// deleteChat removes an idle chat and every document under it: its active
// session, the sessions it retired (with their ledgers) and the chat
// itself. A chat in use (its session leased) is left alone.
func (t *Team) deleteChat(ctx context.Context, chat *sessionstore.Chat) (bool, error) {
	e := t.engine(chat.Agent)
	h, err := e.acquire(ctx, chat.UserID, chat.SessionID, "sweeper", 0, false)
	switch {
	case errors.Is(err, sessionstore.ErrBusy):
		return false, nil
	case errors.Is(err, ErrNotFound):
	case err != nil:
		return false, err
	default:
		defer h.stop() // the lease is deleted with the session
	}
	for _, sid := range append(slices.Clone(chat.Retired), chat.Building, chat.SessionID) {
		if sid == "" {
			continue
		}
		if _, err := t.sessions.PurgeSession(ctx, t.app, chat.UserID, sid); err != nil {
			return false, err
		}
	}
	return true, t.sessions.DeleteChat(ctx, chat)
}
