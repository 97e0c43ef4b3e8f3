package toolcallback

import (
	"context"
	"time"

	"google.golang.org/adk/v2/platform"

	"github.com/baton-run/baton/sessionstore"
)

// A user's chats: the list, most recent activity first, with what each
// waits for (ListChats), and a rename. What the list shows is stored in
// each chat's document (sessionstore.Listing) by commits the chat's turns,
// resumes and calls make anyway: the commit that claims a session records
// the activity and until when the chat is held (activity), the one that
// releases it that nothing holds it (invocationSessions.finish), and the
// ledger's commits what waits for the person. A list page is one query.

// liveActiveBound is how long a live segment may hold a chat at most, as
// its listing says (Cloud Run holds a WebSocket for at most an hour).
const liveActiveBound = time.Hour

// activity is the write that records, in the claiming commit of an
// invocation (or a live segment) of user's chat, that the chat is in use
// until its deadline.
func (e *engine) activity(ctx context.Context, user, chat string, live bool) sessionstore.Write {
	now := platform.Now(ctx)
	until := now.Add(e.opts.InvocationTimeout + e.opts.LeaseTTL)
	if live {
		until = now.Add(liveActiveBound)
	}
	return e.sessions.ChatActivity(sessionstore.ChatKey{App: e.app, User: user, ID: chat}, sessionstore.Activity{At: now, Until: until, Live: live})
}

// ChatState is what a chat is doing, as a list shows it.
type ChatState string

const (
	// ChatIdle: nothing runs and nothing waits for the person.
	ChatIdle ChatState = "idle"
	// ChatRunning: a turn or an answer's resume runs.
	ChatRunning ChatState = "running"
	// ChatLive: a live (voice) segment holds the chat.
	ChatLive ChatState = "live"
	// ChatWaiting: calls wait for the person (Waiting counts them).
	ChatWaiting ChatState = "waiting"
)

// Waiting counts a chat's calls that wait for its user, by what they ask:
// approvals, questions (a tool's input requests), forms (A2UI surfaces
// waiting for an action) and browser calls. The counts are those the
// device the list was asked for may answer (its own and any device's);
// Elsewhere counts those only another of the user's devices may.
type Waiting struct {
	Approvals int `json:"approvals"`
	Questions int `json:"questions"`
	Forms     int `json:"forms"`
	Browser   int `json:"browser"`
	Elsewhere int `json:"elsewhere"`
}

// Here is how many calls the device may answer.
func (w Waiting) Here() int { return w.Approvals + w.Questions + w.Forms + w.Browser }

// ChatSummary is one chat as a list shows it.
type ChatSummary struct {
	ID           string
	Title        string
	Agent        string
	Created      time.Time
	LastActivity time.Time
	State        ChatState
	Waiting      Waiting
}

// ChatList is a page of a user's chats, most recent activity first.
type ChatList struct {
	Chats []ChatSummary
	// Next is where the next page starts (ListRequest.After); nil after
	// the last page.
	Next *sessionstore.ListCursor
}

// ListRequest asks for a page of a user's chats.
type ListRequest struct {
	UserID string
	// ClientID is the device that asks: the waiting calls it may answer
	// are told apart from those of the user's other devices.
	ClientID string
	Limit    int
	After    sessionstore.ListCursor
}

// ListChats returns a page of the user's chats, most recent activity
// first, each with its state and what waits for the person: one query.
func (t *Team) ListChats(ctx context.Context, req ListRequest) (*ChatList, error) {
	if err := validIDs("user id", req.UserID); err != nil {
		return nil, err
	}
	if req.ClientID != "" {
		if err := validIDs("client id", req.ClientID); err != nil {
			return nil, err
		}
	}
	page, err := t.sessions.ListChats(ctx, t.app, req.UserID, req.Limit, req.After)
	if err != nil {
		return nil, err
	}
	now := platform.Now(ctx)
	out := &ChatList{Chats: make([]ChatSummary, 0, len(page.Chats)), Next: page.Next}
	for _, c := range page.Chats {
		out.Chats = append(out.Chats, summary(c, req.ClientID, now))
	}
	return out, nil
}

// summary is c as a list shows it to client at now.
func summary(c sessionstore.Listed, client string, now time.Time) ChatSummary {
	s := ChatSummary{ID: c.ID, Title: c.Title(), Agent: c.Agent, Created: c.Created, LastActivity: c.LastActivity, State: ChatIdle}
	for _, w := range c.Waiting {
		if !now.Before(w.Expires) {
			continue // expired: the sweeper closes it
		}
		if !w.AnyDevice && w.Client != client {
			s.Waiting.Elsewhere++
			continue
		}
		switch Kind(w.Kind) {
		case KindApproval:
			s.Waiting.Approvals++
		case KindInput:
			s.Waiting.Questions++
		case KindSurface:
			s.Waiting.Forms++
		case KindBrowser:
			s.Waiting.Browser++
		}
	}
	active := c.ActiveUntil != nil && now.Before(*c.ActiveUntil)
	switch {
	case s.Waiting.Here()+s.Waiting.Elsewhere > 0:
		s.State = ChatWaiting
	case active && c.Live:
		s.State = ChatLive
	case active:
		s.State = ChatRunning
	}
	return s
}

// RenameChat gives the user's chat the title a person chose (trimmed, at
// most MaxTitleRunes; ErrInvalidTitle otherwise, writing nothing). An
// unknown chat, another user's, or a deleted one is
// sessionstore.ErrNotFound.
func (t *Team) RenameChat(ctx context.Context, user, chatID, title string) error {
	if err := validIDs("user id", user, "chat id", chatID); err != nil {
		return err
	}
	title, err := checkTitle(title)
	if err != nil {
		return err
	}
	return t.sessions.RenameChat(ctx, sessionstore.ChatKey{App: t.app, User: user, ID: chatID}, title)
}
