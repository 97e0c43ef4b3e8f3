package toolcallback

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/genai"

	"github.com/baton-run/baton/a2ui"
	"github.com/baton-run/baton/limits"
	"github.com/baton-run/baton/sessionstore"
)

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
	// Actions are presses on cards the message sends (cardaction.go): the
	// turn checks each against the surfaces the chat shows, as they last
	// were, and the model reads each after Content. A surface not shown
	// fails with a2ui.ErrNoSurface, a form's with a2ui.ErrSurfaceWaits, an
	// action not offered with a2ui.ErrNotOffered; nothing is written.
	Actions []a2ui.Action
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
	if req.Content == nil {
		req.Content = &genai.Content{Role: genai.RoleUser}
	}
	if len(req.Content.Parts) == 0 && len(req.Actions) == 0 {
		return nil, nil, fmt.Errorf("%w: empty message", ErrInvalidAnswer)
	}
	if req.Agent != "" && t.engines[req.Agent] == nil {
		return nil, nil, &UnknownAgentError{Name: req.Agent, Known: t.Agents()}
	}
	var inv *Invocation
	var report *SwitchReport
	err := t.withFiles(ctx, req.UserID, req.ChatID, req.Content, func(content *genai.Content) (err error) {
		req.Content = content
		var s started
		s, report, err = t.turn(ctx, turnRequest{TurnRequest: req}, t.carryOut)
		inv = s.inv
		return err
	})
	return inv, report, err
}

// withFiles stores the inline files of the message sent in user's chat
// (Options.Files), runs the message with the content that refers to them,
// and deletes them again when run wrote nothing (wroteNothing).
func (t *Team) withFiles(ctx context.Context, user, chat string, sent *genai.Content, run func(*genai.Content) error) error {
	content, err := t.opts.Files.SaveMessage(ctx, user, chat, sent)
	if err != nil {
		return err
	}
	err = run(content)
	if wroteNothing(err) {
		t.opts.Files.Drop(ctx, user, sent, content)
	}
	return err
}

// wroteNothing reports whether a turn's error says the turn wrote nothing
// (so nothing refers to the files it saved). Any other error may come
// after the message was stored (a client that left while the commit was
// in flight), and its files stay.
func wroteNothing(err error) bool {
	return errors.Is(err, sessionstore.ErrBusy) || errors.Is(err, ErrMessageTaken) ||
		errors.Is(err, limits.ErrRateLimited) || errors.Is(err, limits.ErrBudgetExhausted) ||
		errors.Is(err, ErrMessageNotFound) || errors.Is(err, ErrRewound) || refusedAction(err)
}
