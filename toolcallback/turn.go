package toolcallback

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/adk/v2/session"
	"google.golang.org/genai"

	"github.com/baton-run/baton/limits"
	"github.com/baton-run/baton/sessionstore"
)

// A turn is what one user message sets off: the invocation that answers it
// and every resume that continues it (answers to the calls it paused on),
// up to the next user message. A client shows a turn as one assistant
// message, and the id of the turn's first invocation names it: a resume
// reports it as ResumeOutcome.Turn.

// TurnRequest is one user message to a chat.
type TurnRequest struct {
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
	// fails with a *limits.LimitError and writes nothing.
	Limits limits.Limits
}

// SwitchReport says whether a turn moved the chat to another agent.
type SwitchReport struct {
	Switched bool   `json:"switched"`
	From     string `json:"from,omitempty"`
	To       string `json:"to"`
}

// Turn runs a message in a chat, switching agents first if asked.
func (t *Team) Turn(ctx context.Context, req TurnRequest) (*Invocation, *SwitchReport, error) {
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
		in := turnRequest{TurnRequest: req}
		in.Content = content
		inv, report, err = t.turn(ctx, in)
		return err
	})
	return inv, report, err
}

// maxPlans bounds how often one turn is planned: a plan that loses its race
// (planned on a copy or a read that another request made stale) is planned
// again on a fresh read.
const maxPlans = 3

// turn runs req: it looks at the chat (this instance's copy, or one read),
// plans the turn (planTurn decides, once per look) and carries the plan
// out. A switch is carried out, then the turn is planned again on the chat
// as it now is; a plan that lost its race is planned again on a read.
func (t *Team) turn(ctx context.Context, req turnRequest) (*Invocation, *SwitchReport, error) {
	report := &SwitchReport{}
	useCopy := true
	for attempt := 1; ; attempt++ {
		v, err := t.look(ctx, req, useCopy)
		if err != nil {
			return nil, nil, err
		}
		p := t.planTurn(ctx, req, v)
		if p.way == waySwitch {
			if err := t.switchFor(ctx, req, p.chat, report); err != nil {
				return nil, nil, err
			}
			useCopy = false
			continue
		}
		inv, err := t.carryOut(ctx, req, p)
		if p.replan && lostRace(err) && attempt < maxPlans {
			useCopy = false
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		report.To = p.chat.Agent
		t.active.put(req.UserID, req.ChatID, p.chat.SessionID)
		if !report.Switched {
			t.touch(ctx, p.chat) // once the turn runs: a refused turn writes nothing
		}
		return inv, report, nil
	}
}

// switchFor moves chat to the agent req asks for and notes it in report.
func (t *Team) switchFor(ctx context.Context, req turnRequest, chat *sessionstore.Chat, report *SwitchReport) error {
	from := chat.Agent
	chat, err := t.switchAgent(ctx, chat, req.Agent, req.ClientID)
	if err != nil {
		return err
	}
	if !report.Switched {
		report.Switched, report.From = true, from
	}
	if t.opts.ChatSwitched != nil {
		t.opts.ChatSwitched(ctx, chat, from)
	}
	return nil
}

// lostRace reports whether a plan's claiming commit failed because what it
// was planned on changed: the session was written or deleted, the chat
// created, or the message taken by another request since.
func lostRace(err error) bool {
	return errors.Is(err, sessionstore.ErrBusy) || errors.Is(err, sessionstore.ErrNotFound) || errors.Is(err, ErrMessageTaken)
}

// StartsTurn reports whether ev is a user message, which starts a turn: an
// event by the user with some content that is not a function response.
// (Answers to paused calls are user events too, made only of function
// responses; they continue a turn.)
func StartsTurn(ev *session.Event) bool {
	if ev == nil || ev.Author != "user" || ev.Content == nil {
		return false
	}
	for _, p := range ev.Content.Parts {
		if p != nil && p.FunctionResponse == nil {
			return true
		}
	}
	return false
}

// turnOf returns the invocation id of the turn the event with id step
// belongs to: that of the latest user message before it. fallback is
// returned when the message is not among events (a history longer than
// what was read).
func turnOf(events session.Events, step, fallback string) string {
	turn := ""
	for ev := range events.All() {
		if StartsTurn(ev) {
			turn = ev.InvocationID
		}
		if ev.ID == step {
			break
		}
	}
	if turn == "" {
		return fallback
	}
	return turn
}
