package console

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"google.golang.org/adk/v2/platform"
	"google.golang.org/adk/v2/session"

	"github.com/baton-run/baton/internal/eventlist"
	"github.com/baton-run/baton/sessionstore"
	"github.com/baton-run/baton/toolcallback"
	"github.com/baton-run/baton/transcript"
)

// Entry is one thing that happened in a chat.
type Entry struct {
	At time.Time `json:"at"`
	// Kind: message, reply, call, response, stop-note, rewind, switch,
	// live, invocation-start, invocation-end, call-paused, call-settled,
	// stop-request, lease, chat, action.
	Kind       string   `json:"kind"`
	Invocation string   `json:"invocation,omitempty"`
	Author     string   `json:"author,omitempty"`
	Text       string   `json:"text,omitempty"`
	Call       *CallRow `json:"call,omitempty"`
	Action     *Action  `json:"action,omitempty"`
	// Rewound: a rewind took the event back; it stays stored.
	Rewound bool `json:"rewound,omitempty"`
}

// Timeline is a chat's history as an operator reads it.
type Timeline struct {
	User    string    `json:"user"`
	Chat    string    `json:"chat"`
	Agent   string    `json:"agent"`
	Session string    `json:"session"`
	Retired []string  `json:"retired,omitempty"`
	Lease   LeaseView `json:"lease"`
	Calls   []CallRow `json:"calls"`
	Entries []Entry   `json:"entries"`
}

// LeaseView is the session's lease as stored.
type LeaseView struct {
	Holder  string    `json:"holder,omitempty"`
	Fence   int64     `json:"fence"`
	Expires time.Time `json:"expires,omitzero"`
	// State: released, held (its term ahead) or expired (past its term,
	// never released).
	State string `json:"state"`
}

// maxText bounds an entry's text.
const maxText = 600

// ChatTimeline reads a chat and everything stored about it (the chat, its
// session whole, its ledger records, its stop requests, the actions on
// it) and puts it in order.
func (c *Console) ChatTimeline(ctx context.Context, user, chatID string) (*Timeline, error) {
	for _, id := range []struct{ kind, v string }{{"user id", user}, {"chat id", chatID}} {
		if err := sessionstore.ValidateID(id.kind, id.v); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrBadInput, err)
		}
	}
	app := c.team.App()
	chat, err := c.sessions.GetChat(ctx, app, user, chatID)
	if err != nil {
		return nil, err
	}
	tl := &Timeline{User: user, Chat: chatID, Agent: chat.Agent, Session: chat.SessionID, Retired: chat.Retired, Calls: []CallRow{}}
	tl.Entries = append(tl.Entries, Entry{At: chat.Created, Kind: "chat", Text: "chat created"})
	if chat.CleanupAt != nil {
		tl.Entries = append(tl.Entries, Entry{At: *chat.CleanupAt, Kind: "chat", Text: fmt.Sprintf("cleanup due (building %q, retired %v)", chat.Building, chat.Retired)})
	}
	sess, err := c.sessions.Read(ctx, sessionstore.ReadRequest{App: app, User: user, SessionID: chat.SessionID})
	switch {
	case err == nil:
		tl.Lease = leaseView(ctx, sess)
		tl.Entries = append(tl.Entries, eventEntries(sess.Events(), false)...)
		tl.Entries = append(tl.Entries, eventEntries(eventlist.List(sess.Rewound()), true)...)
	case !errors.Is(err, sessionstore.ErrNotFound):
		return nil, err
	}
	if err := c.addRecords(ctx, tl, user, chat.SessionID); err != nil {
		return nil, err
	}
	stops, err := c.sessions.Stops(ctx, app, user, chat.SessionID)
	if err != nil {
		return nil, err
	}
	for _, s := range stops {
		tl.Entries = append(tl.Entries, Entry{At: s.Requested, Kind: "stop-request", Text: fmt.Sprintf("stop asked of the invocation holding lease %d", s.Fence)})
	}
	actions, err := c.actionsOn(ctx, user, chatID)
	if err != nil {
		return nil, err
	}
	for i := range actions {
		tl.Entries = append(tl.Entries, Entry{At: actions[i].At, Kind: "action", Action: &actions[i], Text: actions[i].What})
	}
	slices.SortStableFunc(tl.Entries, func(a, b Entry) int { return a.At.Compare(b.At) })
	return tl, nil
}

// addRecords adds the session's ledger records and their transitions.
func (c *Console) addRecords(ctx context.Context, tl *Timeline, user, sid string) error {
	calls, err := c.ledger.OfSession(ctx, user, sid)
	if err != nil {
		return err
	}
	for _, call := range calls {
		row := callRow(call)
		tl.Calls = append(tl.Calls, row)
		tl.Entries = append(tl.Entries, Entry{At: call.Created, Kind: "call-paused", Invocation: call.Invocation, Call: &row,
			Text: fmt.Sprintf("%s call %s paused: %s", call.Kind, call.Tool, call.ID)})
		if !call.Resolved.IsZero() {
			text := fmt.Sprintf("call %s %s", call.ID, call.Status)
			if call.ResolvedBy != "" {
				text += " by " + call.ResolvedBy
			}
			if call.Reason != "" {
				text += ": " + call.Reason
			}
			tl.Entries = append(tl.Entries, Entry{At: call.Resolved, Kind: "call-settled", Invocation: call.Invocation, Call: &row, Text: text})
		}
	}
	return nil
}

// leaseView is sess's lease as read.
func leaseView(ctx context.Context, sess *sessionstore.Session) LeaseView {
	holder, fence, expires := sess.StoredLease()
	v := LeaseView{Holder: holder, Fence: fence, Expires: expires, State: "released"}
	switch {
	case holder == "":
	case expires.After(platform.Now(ctx)):
		v.State = "held"
	default:
		v.State = "expired"
	}
	return v
}

// eventEntries are the entries of events, and each invocation's first
// and last event (one holding of the lease each).
func eventEntries(events session.Events, rewound bool) []Entry {
	var out []Entry
	type span struct{ first, last time.Time }
	spans := map[string]*span{}
	var order []string
	for ev := range events.All() {
		out = append(out, eventEntry(ev, rewound))
		if ev.InvocationID == "" {
			continue
		}
		s, ok := spans[ev.InvocationID]
		if !ok {
			s = &span{first: ev.Timestamp}
			spans[ev.InvocationID] = s
			order = append(order, ev.InvocationID)
		}
		s.last = ev.Timestamp
	}
	if rewound {
		return out
	}
	for _, inv := range order {
		s := spans[inv]
		out = append(out, Entry{At: s.first, Kind: "invocation-start", Invocation: inv, Text: "invocation started (lease taken)"},
			Entry{At: s.last, Kind: "invocation-end", Invocation: inv, Text: "invocation's last event (lease released after it)"})
	}
	return out
}

// eventEntry is one event as an entry.
func eventEntry(ev *session.Event, rewound bool) Entry {
	e := Entry{At: ev.Timestamp, Kind: "reply", Invocation: ev.InvocationID, Author: ev.Author, Rewound: rewound}
	if ev.Author == "user" {
		e.Kind = "message"
	}
	var text []string
	for _, p := range transcript.Parts(ev) {
		switch {
		case p.FunctionCall != nil:
			e.Kind = "call"
			text = append(text, fmt.Sprintf("calls %s(%v) [%s]", p.FunctionCall.Name, p.FunctionCall.Args, p.FunctionCall.ID))
		case p.FunctionResponse != nil:
			e.Kind = "response"
			text = append(text, fmt.Sprintf("response to %s [%s]: %v", p.FunctionResponse.Name, p.FunctionResponse.ID, p.FunctionResponse.Response))
		case p.Thought:
		case p.Text != "":
			text = append(text, p.Text)
		}
	}
	if r, ok := sessionstore.RewindMarkOf(ev); ok {
		e.Kind, text = "rewind", []string{"rewind: the turn from invocation " + r.Before + " on was taken back"}
	}
	if sw, _, ok := sessionstore.MovedBy(ev); ok {
		text = append(text, fmt.Sprintf("(moved by the switch from %s to %s at %s)", sw.From, sw.To, sw.At.Format(time.RFC3339)))
	}
	if transcript.IsStopNote(ev) {
		e.Kind = "stop-note"
	}
	if toolcallback.OpensLive(ev) {
		e.Kind, text = "live", []string{"live segment opened"}
	}
	e.Text = strings.Join(text, " ")
	if len(e.Text) > maxText {
		e.Text = e.Text[:maxText] + "…"
	}
	return e
}
