package console

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"google.golang.org/adk/v2/platform"

	"github.com/baton-run/baton/ledger"
	"github.com/baton-run/baton/sessionstore"
)

// State is a list of chats the console shows.
type State string

const (
	StateRunning      State = "running"       // an invocation or a live segment holds the chat
	StateLive         State = "live"          // a live segment holds it
	StateWaiting      State = "waiting"       // calls wait for a person, a browser or a system
	StateBackground   State = "background"    // calls wait for work the deployment runs
	StateStuckLease   State = "stuck-lease"   // a lease past its term never released
	StateStuckCall    State = "stuck-call"    // a call past its due time the sweeper did not close
	StateStuckCleanup State = "stuck-cleanup" // a switch or deletion left half done
)

// States lists every list the console shows, in its order.
var States = []State{StateRunning, StateLive, StateWaiting, StateBackground, StateStuckLease, StateStuckCall, StateStuckCleanup}

// workKinds are the kinds of paused calls answered by work the deployment
// runs itself or waits on for another system it called (a queue's worker:
// background tools; a remote A2A agent's task), as opposed to a person, a
// browser or a token's holder.
var workKinds = []ledger.Kind{ledger.KindBackground, ledger.KindRemote}

// personKinds are the ledger's other kinds.
func personKinds() []ledger.Kind {
	var out []ledger.Kind
	for _, k := range ledger.Kinds {
		if !slices.Contains(workKinds, k) {
			out = append(out, k)
		}
	}
	return out
}

// ChatQuery asks for a page of one list.
type ChatQuery struct {
	State State
	User  string
	Agent string
	// MinAge keeps chats in the state for at least that long (the
	// waiting, background and stuck lists).
	MinAge time.Duration
	Cursor string
	Limit  int // 1 to 200
}

// ChatRow is one chat of a list.
type ChatRow struct {
	User  string `json:"user"`
	Chat  string `json:"chat"`
	Agent string `json:"agent,omitempty"` // "" when the list's records do not name it
	// Session is the ADK session the row was found by.
	Session string `json:"session,omitempty"`
	// Since is when the chat entered the state: the lease's term (running,
	// live: until when; stuck lease: since when), the oldest call's
	// creation (waiting), its due time (stuck call), the cleanup's.
	Since  time.Time `json:"since"`
	Holder string    `json:"holder,omitempty"`
	Calls  []CallRow `json:"calls,omitempty"`
}

// CallRow is a paused call as the console shows it.
type CallRow struct {
	ID         string         `json:"id"`
	Tool       string         `json:"tool"`
	Kind       string         `json:"kind"`
	Status     string         `json:"status"`
	Args       map[string]any `json:"args,omitempty"`
	Client     string         `json:"client,omitempty"`
	Created    time.Time      `json:"created"`
	Expires    time.Time      `json:"expires"`
	Resolved   time.Time      `json:"resolved,omitzero"`
	ResolvedBy string         `json:"resolvedBy,omitempty"`
	Reason     string         `json:"reason,omitempty"`
	Resumed    bool           `json:"resumed"`
	Answer     any            `json:"answer,omitempty"`
	Hint       string         `json:"hint,omitempty"`
}

func callRow(c *ledger.Call) CallRow {
	r := CallRow{ID: c.ID, Tool: c.Tool, Kind: string(c.Kind), Status: string(c.Status), Args: c.Args, Client: c.ClientID,
		Created: c.Created, Expires: c.Expires, Resolved: c.Resolved, ResolvedBy: c.ResolvedBy, Reason: c.Reason,
		Resumed: c.Resumed, Hint: c.Hint}
	if c.Answer != nil {
		r.Answer = c.Answer
	}
	return r
}

// ChatPage is one page of a list.
type ChatPage struct {
	State State     `json:"state"`
	Rows  []ChatRow `json:"rows"`
	Next  string    `json:"next,omitempty"`
}

// Chats returns one page of q.State's list: one query.
func (c *Console) Chats(ctx context.Context, q ChatQuery) (*ChatPage, error) {
	if err := c.checkQuery(q); err != nil {
		return nil, err
	}
	now := platform.Now(ctx)
	page := &ChatPage{State: q.State, Rows: []ChatRow{}}
	var err error
	switch q.State {
	case StateRunning, StateLive, StateStuckLease:
		err = c.sessionRows(ctx, q, now, page)
	case StateWaiting, StateBackground, StateStuckCall:
		err = c.callRows(ctx, q, now, page)
	case StateStuckCleanup:
		err = c.cleanupRows(ctx, q, now, page)
	}
	if err != nil {
		return nil, err
	}
	return page, nil
}

// checkQuery refuses what a list cannot do.
func (c *Console) checkQuery(q ChatQuery) error {
	if !slices.Contains(States, q.State) {
		return fmt.Errorf("%w: state %q (want one of %v)", ErrBadInput, q.State, States)
	}
	if q.Limit < 1 || q.Limit > 200 {
		return fmt.Errorf("%w: a page of 1 to 200 chats", ErrBadInput)
	}
	if q.MinAge < 0 {
		return fmt.Errorf("%w: a negative age", ErrBadInput)
	}
	for _, id := range []struct{ kind, v string }{{"user id", q.User}, {"agent", q.Agent}} {
		if id.v != "" {
			if err := sessionstore.ValidateID(id.kind, id.v); err != nil {
				return fmt.Errorf("%w: %w", ErrBadInput, err)
			}
		}
	}
	if q.Agent != "" && !slices.Contains(c.team.Agents(), q.Agent) {
		return fmt.Errorf("%w: agent %q is not one of the team's %v", ErrBadInput, q.Agent, c.team.Agents())
	}
	switch q.State {
	case StateRunning, StateLive:
		if q.MinAge > 0 {
			return fmt.Errorf("%w: the %s list has no age (a lease's term says until when, not since when)", ErrBadInput, q.State)
		}
		fallthrough
	case StateStuckLease, StateStuckCleanup:
		if q.Agent != "" {
			return fmt.Errorf("%w: the %s list is not found from call records, which alone name their agent", ErrBadInput, q.State)
		}
	}
	return nil
}

// sessionRows fills page with sessions by lease.
func (c *Console) sessionRows(ctx context.Context, q ChatQuery, now time.Time, page *ChatPage) error {
	f := sessionstore.SessionFilter{App: c.team.App(), User: q.User, Now: now, Cursor: q.Cursor, Limit: q.Limit}
	switch q.State {
	case StateLive:
		f.State = sessionstore.LeaseLive
	case StateStuckLease:
		f.State, f.Before = sessionstore.LeaseStuck, now.Add(-max(q.MinAge, c.opts.StuckAfter))
	}
	rows, next, err := c.sessions.SessionsByLease(ctx, f)
	if err != nil {
		return badCursor(err)
	}
	for _, r := range rows {
		chat, _ := sessionstore.ChatOfSession(r.ID)
		since := r.Expires
		if q.State == StateLive {
			since = r.LiveUntil
		}
		page.Rows = append(page.Rows, ChatRow{User: r.User, Chat: chat, Session: r.ID, Since: since, Holder: r.Holder})
	}
	page.Next = next
	return nil
}

// callRows fills page with ledger records, one row per session.
func (c *Console) callRows(ctx context.Context, q ChatQuery, now time.Time, page *ChatPage) error {
	f := ledger.Filter{Agents: c.team.Agents(), User: q.User, Cursor: q.Cursor, Limit: q.Limit}
	if q.Agent != "" {
		f.Agents = []string{q.Agent}
	}
	var p *ledger.Page
	var err error
	switch q.State {
	case StateStuckCall:
		f.Before = now.Add(-max(q.MinAge, c.opts.StuckAfter))
		p, err = c.ledger.Overdue(ctx, f)
	default:
		if q.MinAge > 0 {
			f.Before = now.Add(-q.MinAge)
		}
		kinds := personKinds()
		if q.State == StateBackground {
			kinds = workKinds
		}
		p, err = c.ledger.Waiting(ctx, kinds, f)
	}
	if err != nil {
		return badCursor(err)
	}
	bySession := map[string]int{}
	for _, call := range p.Calls {
		i, ok := bySession[call.UserID+"/"+call.SessionID]
		if !ok {
			chat, _ := sessionstore.ChatOfSession(call.SessionID)
			since := call.Created
			if q.State == StateStuckCall {
				since = call.Expires
			}
			page.Rows = append(page.Rows, ChatRow{User: call.UserID, Chat: chat, Agent: call.Agent, Session: call.SessionID, Since: since})
			i = len(page.Rows) - 1
			bySession[call.UserID+"/"+call.SessionID] = i
		}
		page.Rows[i].Calls = append(page.Rows[i].Calls, callRow(call))
	}
	page.Next = p.Next
	return nil
}

// cleanupRows fills page with chats whose cleanup is overdue.
func (c *Console) cleanupRows(ctx context.Context, q ChatQuery, now time.Time, page *ChatPage) error {
	chats, next, err := c.sessions.Chats(ctx, sessionstore.ChatFilter{App: c.team.App(), User: q.User,
		CleanupBefore: now.Add(-max(q.MinAge, c.opts.StuckAfter)), Cursor: q.Cursor, Limit: q.Limit})
	if err != nil {
		return badCursor(err)
	}
	for _, ch := range chats {
		page.Rows = append(page.Rows, ChatRow{User: ch.UserID, Chat: ch.ID, Agent: ch.Agent, Session: ch.SessionID, Since: *ch.CleanupAt})
	}
	page.Next = next
	return nil
}

// badCursor marks a forged cursor as bad input.
func badCursor(err error) error {
	if errors.Is(err, sessionstore.ErrBadCursor) {
		return fmt.Errorf("%w: %w", ErrBadInput, err)
	}
	return err
}
