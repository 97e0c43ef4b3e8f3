package ledger

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"cloud.google.com/go/firestore"

	"github.com/baton-run/baton/a2ui"
	"github.com/baton-run/baton/userinput"
)

// Kind says who answers a paused call. A new kind of paused call is a new
// Kind here (with, when it needs state of its own, a typed field of Call
// and of the stored record, as Input and Surfaces are) and a tool
// declaration in toolcallback.
type Kind string

const (
	// KindBrowser calls are run by the user's browser.
	KindBrowser Kind = "browser"
	// KindApproval calls are ADK tool confirmations a person answers.
	KindApproval Kind = "approval"
	// KindExternal calls are answered by another system holding a call token.
	KindExternal Kind = "external"
	// KindInput calls are a tool's questions to a person (userinput.Ask), a
	// form the device that started the turn fills in.
	KindInput Kind = "input"
	// KindSurface calls show A2UI surfaces and wait for the person's action
	// on one of them.
	KindSurface Kind = "surface"
	// KindBackground calls are a Go tool's work run off the request: a
	// queue delivers it to a worker, whose result answers the call (see
	// Work).
	KindBackground Kind = "background"
	// KindRemote calls are a remote A2A agent's task: the queue sends the
	// call's message, and the remote's notifications (or the sweeper's
	// reads) answer it (see Remote).
	KindRemote Kind = "remote"
)

// Kinds lists every Kind, for readers that show or filter records by kind
// (the operator's console). A new Kind is added here too; a test holds the
// list to the constants declared in this package.
var Kinds = []Kind{KindBrowser, KindApproval, KindExternal, KindInput, KindSurface, KindBackground, KindRemote}

// Status is where a paused call stands: pending until a first writer
// settles it (resolved by an answer, expired by the sweeper or its asker,
// cancelled by a new message, a stop or a rewind); a settled call never
// changes status again.
type Status string

const (
	StatusPending   Status = "pending"
	StatusResolved  Status = "resolved"
	StatusExpired   Status = "expired"
	StatusCancelled Status = "cancelled"
)

// Call is a paused call as the ledger records it.
type Call struct {
	ID        string // the id the answer must carry (for approvals, the confirmation call's id)
	App       string
	Agent     string // the root agent whose runner made the call
	UserID    string
	SessionID string
	// Chat is the chat whose session made the call ("" for a session of
	// no chat): its listing counts the call while it waits for a person
	// (waiting.go).
	Chat       string
	Invocation string
	ClientID   string // the client that started the turn
	Tool       string // the tool the model called
	Args       map[string]any
	Kind       Kind
	// Step is the id of the model event whose function calls this call
	// belongs to; calls of one step are resumed together.
	Step string
	// OriginalID is the model's function call id. It equals ID except for
	// approvals, whose ID is ADK's confirmation call.
	OriginalID string
	AnyDevice  bool
	// InCall: a question asked while the calling tool still runs
	// (toolcallback.AskInCall, KindInput), which that tool waits for; it is
	// answered like any call, never delivered to the agent.
	InCall bool
	Hint   string // approvals: ADK's explanation for the person
	// Input is what a KindInput call asks the person (without the
	// server's request state, InputState, which is never shown).
	Input *userinput.Request
	// Surfaces are what a KindSurface call shows, each surface in full.
	Surfaces [][]a2ui.Message
	// Work is what a KindBackground call's record says of its work; nil
	// for other kinds.
	Work *Work
	// Remote is what a KindRemote call's record says of its remote task;
	// nil for other kinds. A remote call has a Work too: its sends go
	// through the queue as a background call's work does.
	Remote *Remote
	Status Status
	Answer *Answer // the recorded answer, once resolved
	// ResolvedBy is the client that recorded the answer ("" for a token's
	// holder).
	ResolvedBy string
	// Reason is why a closer settled the call without an answer, when it
	// gave one (an operator's expiry): the model reads it in the call's
	// error response.
	Reason   string
	Created  time.Time
	Expires  time.Time
	Resolved time.Time
	Resumed  bool // the agent has been resumed with this call's answer

	inputState string
	answer     []byte    // the answer as stored
	version    time.Time // the record's update time as read: the condition of its updates
}

// InputState is the server's request state of a KindInput call, kept in
// the ledger for the tool that runs again with the answer.
func (c *Call) InputState() string { return c.inputState }

// SameAnswer reports whether a is the answer recorded for c.
func (c *Call) SameAnswer(a Answer) bool {
	b, err := json.Marshal(a)
	return err == nil && bytes.Equal(b, c.answer)
}

// Answer is the result of a paused call. Exactly one of Output, Error and
// Approved is set.
type Answer struct {
	Output   map[string]any `json:"output,omitempty"`
	Error    string         `json:"error,omitempty"`
	Approved *bool          `json:"approved,omitempty"`
	Payload  any            `json:"payload,omitempty"` // approvals: the approver's optional payload
	// Files, beside an Output, are files the answer brings, kept in the
	// chat's file store (a remote agent's result): they reach the model
	// and the pages with the call's response. Set by Baton, never by a
	// client's answer.
	Files []File `json:"files,omitempty"`
	// Surfaces, beside an Output, are A2UI messages the answer shows the
	// person (a remote agent's result), checked against the catalog when
	// recorded. Set by Baton, never by a client's answer.
	Surfaces []a2ui.Message `json:"surfaces,omitempty"`
}

// File is a file an answer brings: the reference part's URI of a file of
// the chat's file store (package chatfiles), its media type, and the name
// its sender gave it.
type File struct {
	URI       string `json:"uri"`
	MediaType string `json:"mediaType,omitempty"`
	Name      string `json:"name,omitempty"`
}

// The stored record's field names, named here once: every query, update
// and index of the ledger uses these.
const (
	fieldScope    = "scope"
	fieldStatus   = "status"
	fieldStep     = "step"
	fieldAnswer   = "answer"
	fieldResolved = "resolved"
	fieldBy       = "resolvedBy"
	fieldReason   = "reason"
	fieldKind     = "kind"
	fieldUser     = "user"
	fieldCreated  = "created"
	fieldResumed  = "resumed"
	fieldSweepAt  = "sweepAt"
	fieldGCAt     = "gcAt"
	// fieldInCall is the in-call question's mark. It keeps the name
	// "live" that earlier versions wrote, so that a question asked while
	// a deployment rolls out is still found by either version.
	fieldInCall = "live"
)

// record is the stored form of a Call, converted at the package's edge.
type record struct {
	ID         string        `firestore:"id"`
	App        string        `firestore:"app"`
	Scope      string        `firestore:"scope"` // "{root}/{app}/{agent}", the sweeper's equality filter
	Agent      string        `firestore:"agent"`
	User       string        `firestore:"user"`
	Session    string        `firestore:"session"`
	Chat       string        `firestore:"chat,omitempty"`
	Invocation string        `firestore:"invocation"`
	Client     string        `firestore:"client"`
	Tool       string        `firestore:"tool"`
	Args       []byte        `firestore:"args"` // JSON
	Kind       string        `firestore:"kind"`
	Step       string        `firestore:"step"`
	OriginalID string        `firestore:"originalId"`
	AnyDevice  bool          `firestore:"anyDevice"`
	Hint       string        `firestore:"hint"`
	Input      []byte        `firestore:"input"`            // KindInput: JSON of the userinput.Request shown
	Surface    []byte        `firestore:"surface"`          // KindSurface: JSON of the surfaces shown
	InputState string        `firestore:"inputState"`       // KindInput: the server's request state, never shown
	InCall     bool          `firestore:"live"`             // fieldInCall
	Work       *workRecord   `firestore:"work,omitempty"`   // KindBackground, KindRemote: fieldWork
	Remote     *remoteRecord `firestore:"remote,omitempty"` // KindRemote: fieldRemote
	Status     string        `firestore:"status"`
	Answer     []byte        `firestore:"answer"` // JSON of Answer
	ResolvedBy string        `firestore:"resolvedBy"`
	Reason     string        `firestore:"reason,omitempty"`
	Created    time.Time     `firestore:"created"`
	Expires    time.Time     `firestore:"expires"`
	Resolved   time.Time     `firestore:"resolved"`
	Resumed    bool          `firestore:"resumed"`
	// SweepAt is when the sweeper must next look at the call: its expiry
	// while pending, a grace period after an answer until the agent is
	// resumed. It is removed once the agent has the answer (or, for an
	// in-call question, never set). The sweeper's only query is a range
	// on this field.
	SweepAt *time.Time `firestore:"sweepAt"`
	// GCAt is the TTL field: Firestore deletes the record some time after.
	GCAt time.Time `firestore:"gcAt"`
}

// recordOf is c's stored form, of agent's scope, with opts' retention
// and grace.
func (l *Ledger) recordOf(c *Call) (*record, error) {
	scope, retention := l.scope(c.Agent), l.opts.Retention
	args, err := json.Marshal(c.Args)
	if err != nil {
		return nil, fmt.Errorf("encode arguments of %q: %w", c.ID, err)
	}
	r := &record{
		ID: c.ID, App: c.App, Scope: scope, Agent: c.Agent, User: c.UserID, Session: c.SessionID, Chat: c.Chat, Invocation: c.Invocation,
		Client: c.ClientID, Tool: c.Tool, Args: args, Kind: string(c.Kind), Step: c.Step, OriginalID: c.OriginalID,
		AnyDevice: c.AnyDevice, Hint: c.Hint, InputState: c.inputState, InCall: c.InCall, Status: string(c.Status),
		ResolvedBy: c.ResolvedBy, Reason: c.Reason, Created: c.Created, Expires: c.Expires, Resolved: c.Resolved, Resumed: c.Resumed,
		Answer: c.answer, GCAt: c.Expires.Add(retention),
	}
	if c.Input != nil {
		if r.Input, err = json.Marshal(c.Input); err != nil {
			return nil, fmt.Errorf("encode input request of %q: %w", c.ID, err)
		}
	}
	if c.Surfaces != nil {
		if r.Surface, err = json.Marshal(c.Surfaces); err != nil {
			return nil, fmt.Errorf("encode surfaces of %q: %w", c.ID, err)
		}
	}
	if c.Work != nil {
		r.Work = l.workRecordOf(c)
	}
	if c.Remote != nil {
		r.Remote = remoteRecordOf(c.Remote)
	}
	if !c.Resumed {
		sweepAt := c.Expires
		if r.Work != nil && r.Work.Enqueued.IsZero() {
			// To be enqueued: the sweeper repairs an enqueue that a crash
			// after the commit left undone.
			sweepAt = minTime(c.Created.Add(l.opts.EnqueueGrace), c.Expires)
		}
		r.SweepAt = &sweepAt
	}
	return r, nil
}

// call is r as a Call, whose updates are conditioned on version.
func (r *record) call(version time.Time) (*Call, error) {
	c := &Call{
		ID: r.ID, App: r.App, Agent: r.Agent, UserID: r.User, SessionID: r.Session, Chat: r.Chat, Invocation: r.Invocation,
		ClientID: r.Client, Tool: r.Tool, Kind: Kind(r.Kind), Step: r.Step, OriginalID: r.OriginalID,
		AnyDevice: r.AnyDevice, InCall: r.InCall, Hint: r.Hint, Status: Status(r.Status), ResolvedBy: r.ResolvedBy,
		Reason: r.Reason, Created: r.Created, Expires: r.Expires, Resolved: r.Resolved, Resumed: r.Resumed,
		inputState: r.InputState, answer: r.Answer, version: version,
	}
	if r.Work != nil {
		c.Work = r.Work.work()
	}
	if r.Remote != nil {
		c.Remote = r.Remote.remote()
	}
	if len(r.Args) > 0 {
		if err := json.Unmarshal(r.Args, &c.Args); err != nil {
			return nil, fmt.Errorf("decode arguments of %q: %w", r.ID, err)
		}
	}
	if len(r.Input) > 0 {
		c.Input = &userinput.Request{}
		if err := json.Unmarshal(r.Input, c.Input); err != nil {
			return nil, fmt.Errorf("decode input request of %q: %w", r.ID, err)
		}
	}
	if len(r.Surface) > 0 {
		if err := json.Unmarshal(r.Surface, &c.Surfaces); err != nil {
			return nil, fmt.Errorf("decode surfaces of %q: %w", r.ID, err)
		}
	}
	if len(r.Answer) > 0 {
		c.Answer = &Answer{}
		if err := json.Unmarshal(r.Answer, c.Answer); err != nil {
			return nil, fmt.Errorf("decode answer to %q: %w", r.ID, err)
		}
	}
	return c, nil
}

// decode is the call a snapshot of a record holds; ErrNotFound when it
// does not exist.
func decode(snap *firestore.DocumentSnapshot) (*Call, error) {
	if snap == nil || !snap.Exists() {
		id := ""
		if snap != nil {
			id = snap.Ref.ID
		}
		return nil, fmt.Errorf("%w: %q", ErrNotFound, id)
	}
	return decodeData(snap.Ref.ID, snap.UpdateTime, snap.DataTo)
}

// decodeData is the call of record id, last written at version, whose
// fields dataTo decodes.
func decodeData(id string, version time.Time, dataTo func(any) error) (*Call, error) {
	var r record
	if err := dataTo(&r); err != nil {
		return nil, fmt.Errorf("decode call %q: %w", id, err)
	}
	return r.call(version)
}

// SetInputState sets the server's request state of a KindInput call about
// to be recorded (see InputState).
func (c *Call) SetInputState(state string) { c.inputState = state }
