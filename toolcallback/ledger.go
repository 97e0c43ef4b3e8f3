package toolcallback

import (
	"encoding/json"
	"slices"
	"time"

	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/tool/toolconfirmation"
	"google.golang.org/genai"
)

// Status is where a paused call stands.
type Status string

const (
	StatusPending   Status = "pending"
	StatusResolved  Status = "resolved"
	StatusExpired   Status = "expired"
	StatusCancelled Status = "cancelled"
)

// clientMetadataKey names the CustomMetadata entry in which the engine
// stamps, on every event that pauses, the client that started the turn, so
// a lost ledger record can be rebuilt with it.
const clientMetadataKey = "baton_client"

// Call is a paused call as the ledger records it.
type Call struct {
	ID         string // the id the answer must carry (for approvals, the confirmation call's id)
	App        string
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
	Hint       string // approvals: ADK's explanation for the person
	Status     Status
	Answer     *Answer // the recorded answer, once resolved
	Created    time.Time
	Expires    time.Time
	Resolved   time.Time
	Resumed    bool // the agent has been resumed with this call's answer
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
		ID: d.ID, App: d.App, UserID: d.User, SessionID: d.Session, Invocation: d.Invocation,
		ClientID: d.Client, Tool: d.Tool, Kind: Kind(d.Kind), Step: d.Step, OriginalID: d.OriginalID,
		AnyDevice: d.AnyDevice, Hint: d.Hint, Status: Status(d.Status),
		Created: d.Created, Expires: d.Expires, Resolved: d.Resolved, Resumed: d.Resumed,
	}
	if len(d.Args) > 0 {
		if err := json.Unmarshal(d.Args, &c.Args); err != nil {
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

// detected is a paused call found in a session's events.
type detected struct {
	id, tool, step, originalID, client, invocation, hint string
	args                                                 map[string]any
	kind                                                 Kind
	timeout                                              time.Duration
	anyDevice                                            bool
	created                                              time.Time
}

// detector finds paused calls in a stream of events, in order. It is used
// live, as the invocation emits events, and to rebuild lost ledger records
// from a stored session.
type detector struct {
	// calls maps a model function call id to the call, the id of its
	// event and the client stamped on it.
	calls map[string]modelCall
}

type modelCall struct {
	eventID string
	call    *genai.FunctionCall
	client  string
}

func newDetector() *detector { return &detector{calls: map[string]modelCall{}} }

// observe takes the next non-partial event and returns the calls it pauses.
func (d *detector) observe(ev *session.Event) []detected {
	if ev == nil || ev.Partial || ev.Content == nil {
		return nil
	}
	client, _ := ev.CustomMetadata[clientMetadataKey].(string)
	var out []detected
	for _, p := range ev.Content.Parts {
		if fc := p.FunctionCall; fc != nil {
			if fc.Name == toolconfirmation.FunctionCallName {
				if c, ok := d.approval(ev, fc, client); ok {
					out = append(out, c)
				}
				continue
			}
			d.calls[fc.ID] = modelCall{eventID: ev.ID, call: fc, client: client}
		}
		if fr := p.FunctionResponse; fr != nil && ev.Author != "user" {
			marker, ok := parseMarker(fr.Response[pendingKey])
			if !ok {
				continue
			}
			mc, ok := d.calls[fr.ID]
			if !ok {
				continue
			}
			out = append(out, detected{
				id: fr.ID, tool: fr.Name, step: mc.eventID, originalID: fr.ID, client: mc.client,
				invocation: ev.InvocationID, args: mc.call.Args, kind: marker.Kind,
				timeout:   time.Duration(marker.TimeoutSeconds * float64(time.Second)),
				anyDevice: marker.AnyDevice, created: ev.Timestamp,
			})
		}
	}
	return out
}

func (d *detector) approval(ev *session.Event, fc *genai.FunctionCall, client string) (detected, bool) {
	original, err := toolconfirmation.OriginalCallFrom(fc)
	if err != nil || original == nil {
		return detected{}, false
	}
	step := ev.ID
	if mc, ok := d.calls[original.ID]; ok {
		step = mc.eventID
	}
	var hint string
	if raw, err := json.Marshal(fc.Args["toolConfirmation"]); err == nil {
		var tc toolconfirmation.ToolConfirmation
		if json.Unmarshal(raw, &tc) == nil {
			hint = tc.Hint
		}
	}
	return detected{
		id: fc.ID, tool: original.Name, step: step, originalID: original.ID, client: client,
		invocation: ev.InvocationID, args: original.Args, kind: KindApproval, hint: hint, created: ev.Timestamp,
	}, true
}

func parseMarker(v any) (pendingMarker, bool) {
	if v == nil {
		return pendingMarker{}, false
	}
	b, err := json.Marshal(v)
	if err != nil {
		return pendingMarker{}, false
	}
	var m pendingMarker
	if json.Unmarshal(b, &m) != nil || m.Kind == "" {
		return pendingMarker{}, false
	}
	return m, true
}

// openCalls returns the paused calls of a stored session that no later
// user event answers: the calls that must have a pending ledger record.
func openCalls(events session.Events) []detected {
	d := newDetector()
	var found []detected
	answered := map[string]bool{}
	for ev := range events.All() {
		found = append(found, d.observe(ev)...)
		if ev.Author == "user" && ev.Content != nil {
			for _, p := range ev.Content.Parts {
				if p.FunctionResponse != nil {
					answered[p.FunctionResponse.ID] = true
				}
			}
		}
	}
	return slices.DeleteFunc(found, func(c detected) bool { return answered[c.id] || answered[c.originalID] })
}
