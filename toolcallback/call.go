package toolcallback

import (
	"encoding/json"
	"time"

	"github.com/baton-run/baton/a2ui"
	"github.com/baton-run/baton/userinput"
)

// Status is where a paused call stands.
type Status string

const (
	StatusPending   Status = "pending"
	StatusResolved  Status = "resolved"
	StatusExpired   Status = "expired"
	StatusCancelled Status = "cancelled"
)

// Call is a paused call as the ledger records it.
type Call struct {
	ID         string // the id the answer must carry (for approvals, the confirmation call's id)
	App        string
	Agent      string // the root agent whose runner made the call
	UserID     string
	SessionID  string
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
	// Live: a question asked on a live call (AskLive, KindInput), which the
	// asking tool waits for while the turn runs; it is answered by ToolResult,
	// never delivered to the agent.
	Live bool
	Hint string // approvals: ADK's explanation for the person
	// Input is what a KindInput call asks the person (without the
	// server's request state, which stays in the ledger).
	Input *userinput.Request
	// Surfaces are what a KindSurface call shows, each surface in full
	// (see SurfaceShown).
	Surfaces [][]a2ui.Message
	Status   Status
	Answer   *Answer // the recorded answer, once resolved
	Created  time.Time
	Expires  time.Time
	Resolved time.Time
	Resumed  bool // the agent has been resumed with this call's answer
}

// Answer is the result of a paused call. Exactly one of Output, Error and
// Approved is set.
type Answer struct {
	Output   map[string]any `json:"output,omitempty"`
	Error    string         `json:"error,omitempty"`
	Approved *bool          `json:"approved,omitempty"`
	Payload  any            `json:"payload,omitempty"` // approvals: the approver's optional payload
}

// callDoc is the stored form of a Call.
type callDoc struct {
	ID         string    `firestore:"id"`
	App        string    `firestore:"app"`
	Scope      string    `firestore:"scope"` // "{root}/{app}/{agent}", Sweep's equality filter
	Agent      string    `firestore:"agent"` // the root agent whose runner made the call
	User       string    `firestore:"user"`
	Session    string    `firestore:"session"`
	Invocation string    `firestore:"invocation"`
	Client     string    `firestore:"client"`
	Tool       string    `firestore:"tool"`
	Args       []byte    `firestore:"args"` // JSON
	Kind       string    `firestore:"kind"`
	Step       string    `firestore:"step"`
	OriginalID string    `firestore:"originalId"`
	AnyDevice  bool      `firestore:"anyDevice"`
	Hint       string    `firestore:"hint"`
	Input      []byte    `firestore:"input"`      // KindInput: JSON of the userinput.Request shown
	Surface    []byte    `firestore:"surface"`    // KindSurface: JSON of the surfaces shown (SurfaceShown.Surfaces)
	InputState string    `firestore:"inputState"` // KindInput: the server's request state, never shown
	Live       bool      `firestore:"live"`       // asked by AskLive: answered to the waiting tool, never resumed
	Status     string    `firestore:"status"`
	Answer     []byte    `firestore:"answer"` // JSON of Answer
	ResolvedBy string    `firestore:"resolvedBy"`
	Created    time.Time `firestore:"created"`
	Expires    time.Time `firestore:"expires"`
	Resolved   time.Time `firestore:"resolved"`
	Resumed    bool      `firestore:"resumed"`
	// SweepAt is when Sweep must next look at the call: its expiry while
	// pending, a grace period after an answer until the agent is resumed.
	// It is removed once the agent has the answer. Sweep's only query is a
	// range on this field.
	SweepAt *time.Time `firestore:"sweepAt"`
	// GCAt is the TTL field: Firestore deletes the record some time after.
	GCAt time.Time `firestore:"gcAt"`
}

func (d *callDoc) call() (*Call, error) {
	c := &Call{
		ID: d.ID, App: d.App, Agent: d.Agent, UserID: d.User, SessionID: d.Session, Invocation: d.Invocation,
		ClientID: d.Client, Tool: d.Tool, Kind: Kind(d.Kind), Step: d.Step, OriginalID: d.OriginalID,
		AnyDevice: d.AnyDevice, Live: d.Live, Hint: d.Hint, Status: Status(d.Status),
		Created: d.Created, Expires: d.Expires, Resolved: d.Resolved, Resumed: d.Resumed,
	}
	if len(d.Args) > 0 {
		if err := json.Unmarshal(d.Args, &c.Args); err != nil {
			return nil, err
		}
	}
	if len(d.Input) > 0 {
		c.Input = &userinput.Request{}
		if err := json.Unmarshal(d.Input, c.Input); err != nil {
			return nil, err
		}
	}
	if len(d.Surface) > 0 {
		if err := json.Unmarshal(d.Surface, &c.Surfaces); err != nil {
			return nil, err
		}
	}
	if len(d.Answer) > 0 {
		c.Answer = &Answer{}
		if err := json.Unmarshal(d.Answer, c.Answer); err != nil {
			return nil, err
		}
	}
	return c, nil
}
