package console

import (
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/adk/v2/platform"

	"github.com/baton-run/baton/limits"
	"github.com/baton-run/baton/sessionstore"
)

// UserInfo is what the identity provider says of a user.
type UserInfo struct {
	Kind    string `json:"kind"` // "user", "anonymous", "service" or "" when unknown
	Email   string `json:"email,omitempty"`
	Blocked bool   `json:"blocked"`
}

// Feedback is a rating a user gave a message (package feedback stores
// it).
type Feedback struct {
	Chat    string    `json:"chat"`
	Message string    `json:"message"`
	Rating  string    `json:"rating"`
	Comment string    `json:"comment,omitempty"`
	At      time.Time `json:"at"`
}

// UserPage is a user as an operator sees them.
type UserPage struct {
	User  string    `json:"user"`
	Info  *UserInfo `json:"info,omitempty"` // nil when no identity provider tells
	Chats []ChatSum `json:"chats"`
	Next  string    `json:"next,omitempty"`
	// Usage is what they used today, against the limits of each kind of
	// user (the one that applies is Info.Kind's).
	Usage  limits.UserDay           `json:"usage"`
	Limits map[string]limits.Limits `json:"limits"`
	// Feedback is the ratings given in this page's chats; nil, with
	// FeedbackNote saying why, when Options.Account is not set.
	Feedback     []Feedback `json:"feedback"`
	FeedbackNote string     `json:"feedbackNote,omitempty"`
	Actions      []Action   `json:"actions"`
}

// ChatSum is one of a user's chats.
type ChatSum struct {
	Chat         string    `json:"chat"`
	Agent        string    `json:"agent"`
	Created      time.Time `json:"created"`
	LastActivity time.Time `json:"lastActivity"`
	Switches     int       `json:"switches"`
}

// User reads a user's page: a page of their chats (most recent activity
// first), today's usage, the actions on them.
func (c *Console) User(ctx context.Context, user, cursor string, limit int) (*UserPage, error) {
	if err := sessionstore.ValidateID("user id", user); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadInput, err)
	}
	if limit < 1 || limit > 200 {
		return nil, fmt.Errorf("%w: a page of 1 to 200 chats", ErrBadInput)
	}
	chats, next, err := c.sessions.Chats(ctx, sessionstore.ChatFilter{App: c.team.App(), User: user, Cursor: cursor, Limit: limit})
	if err != nil {
		return nil, badCursor(err)
	}
	p := &UserPage{User: user, Chats: []ChatSum{}, Next: next, Limits: c.opts.Limits}
	for _, ch := range chats {
		p.Chats = append(p.Chats, ChatSum{Chat: ch.ID, Agent: ch.Agent, Created: ch.Created, LastActivity: ch.LastActivity, Switches: ch.Switches})
	}
	if p.Usage, err = c.counter.UserUsage(ctx, user, platform.Now(ctx)); err != nil {
		return nil, err
	}
	if c.opts.Identity != nil {
		if p.Info, err = c.opts.Identity.User(ctx, user); err != nil && !errors.Is(err, sessionstore.ErrNotFound) {
			return nil, err
		}
	}
	p.FeedbackNote = "this deployment keeps no ratings"
	if c.opts.Account != nil {
		ids := make([]string, len(chats))
		for i, ch := range chats {
			ids[i] = ch.ID
		}
		if p.Feedback, err = c.opts.Account.Feedback(ctx, user, ids); err != nil {
			return nil, err
		}
		p.FeedbackNote = ""
	}
	if p.Actions, err = c.actionsOn(ctx, user, ""); err != nil {
		return nil, err
	}
	return p, nil
}
