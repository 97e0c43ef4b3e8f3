package console

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/adk/v2/platform"

	"github.com/baton-run/baton/sessionstore"
)

// actionsCollection holds the record of operator actions, under the app's
// document.
const actionsCollection = "operatorActions"

// Action is one operator action as recorded.
type Action struct {
	ID       string    `json:"id" firestore:"id"`
	At       time.Time `json:"at" firestore:"at"`
	Operator string    `json:"operator" firestore:"operator"`
	What     string    `json:"what" firestore:"what"`
	User     string    `json:"user,omitempty" firestore:"user"`
	Chat     string    `json:"chat,omitempty" firestore:"chat"`
	Call     string    `json:"call,omitempty" firestore:"call"`
	Reason   string    `json:"reason,omitempty" firestore:"reason"`
	// Outcome is "started" until the action ended, then "done" or
	// "failed"; Detail says what it did or why it failed.
	Outcome string    `json:"outcome" firestore:"outcome"`
	Detail  string    `json:"detail,omitempty" firestore:"detail"`
	Ended   time.Time `json:"ended,omitzero" firestore:"ended"`
}

// maxListed bounds the actions a user's page or a chat's timeline shows.
const maxListed = 200

func (c *Console) actionDoc(id string) sessionstore.DocName {
	return c.sessions.AppDoc(c.team.App()).Child(actionsCollection, id)
}

func (c *Console) actions() *firestore.CollectionRef {
	return c.sessions.Client().Doc(c.sessions.AppDoc(c.team.App()).Path()).Collection(actionsCollection)
}

// begin records a as started (its id and time set here) and logs it.
func (c *Console) begin(ctx context.Context, a *Action) error {
	a.ID, a.At, a.Outcome = platform.NewUUID(ctx), platform.Now(ctx), "started"
	if _, err := c.sessions.Commit(ctx, sessionstore.Create(c.actionDoc(a.ID), a)); err != nil {
		return fmt.Errorf("record operator action: %w", err)
	}
	c.log.InfoContext(ctx, "operator action", "action", a.What, "operator", a.Operator, "user", a.User, "chat", a.Chat, "call", a.Call, "id", a.ID)
	return nil
}

// end records how a ended: err nil, with detail, or the error.
func (c *Console) end(ctx context.Context, a *Action, detail string, err error) {
	a.Outcome, a.Detail, a.Ended = "done", detail, platform.Now(ctx)
	level := slog.LevelInfo
	if err != nil {
		a.Outcome, a.Detail, level = "failed", err.Error(), slog.LevelWarn
	}
	ctx = context.WithoutCancel(ctx)
	if _, werr := c.sessions.Commit(ctx, sessionstore.Update(c.actionDoc(a.ID), time.Time{},
		firestore.Update{Path: "outcome", Value: a.Outcome}, firestore.Update{Path: "detail", Value: a.Detail},
		firestore.Update{Path: "ended", Value: a.Ended})); werr != nil {
		c.log.ErrorContext(ctx, "record the end of an operator action", "id", a.ID, "error", werr)
	}
	c.log.Log(ctx, level, "operator action ended", "action", a.What, "operator", a.Operator, "id", a.ID, "outcome", a.Outcome, "detail", a.Detail)
}

// Actions returns a page of the record, most recent first, and the cursor
// of the next page ("" at the end).
func (c *Console) Actions(ctx context.Context, cursor string, limit int) ([]Action, string, error) {
	if limit < 1 || limit > maxListed {
		return nil, "", fmt.Errorf("%w: a page of 1 to %d actions", ErrBadInput, maxListed)
	}
	q := c.actions().OrderBy("at", firestore.Desc).OrderBy(firestore.DocumentID, firestore.Desc)
	q, err := sessionstore.StartAfter(c.sessions.Client(), q, cursor, c.sessions.Root()+"/"+c.team.App()+"/")
	if err != nil {
		return nil, "", fmt.Errorf("%w: %w", ErrBadInput, err)
	}
	snaps, err := q.Limit(limit).Documents(ctx).GetAll()
	if err != nil {
		return nil, "", fmt.Errorf("list operator actions: %w", sessionstore.FirestoreError(err))
	}
	out, err := decodeActions(snaps)
	next := ""
	if err == nil && len(snaps) == limit {
		next = sessionstore.CursorAfter(snaps[len(snaps)-1], "at").String()
	}
	return out, next, err
}

// actionsOn returns the latest actions on a user's chat (chat "": on the
// user, any chat), most recent first, at most maxListed.
func (c *Console) actionsOn(ctx context.Context, user, chat string) ([]Action, error) {
	q := c.actions().Where("user", "==", user)
	if chat != "" {
		q = q.Where("chat", "==", chat)
	}
	snaps, err := q.Limit(maxListed).Documents(ctx).GetAll()
	if err != nil {
		return nil, fmt.Errorf("list operator actions: %w", sessionstore.FirestoreError(err))
	}
	out, err := decodeActions(snaps)
	slices.SortFunc(out, func(a, b Action) int { return b.At.Compare(a.At) })
	return out, err
}

func decodeActions(snaps []*firestore.DocumentSnapshot) ([]Action, error) {
	out := make([]Action, 0, len(snaps))
	for _, s := range snaps {
		var a Action
		if err := s.DataTo(&a); err != nil {
			return nil, fmt.Errorf("decode operator action %s: %w", s.Ref.ID, err)
		}
		out = append(out, a)
	}
	return out, nil
}
