package geminilive

import (
	"time"

	"google.golang.org/genai"
)

// Kind says what an Event carries.
type Kind int

// The kinds of Event.
const (
	// Connected: a connection is ready; Resumed says whether it resumed
	// the model session by handle (else it was seeded with History).
	Connected Kind = iota + 1
	// Text: a piece of the model's text answer.
	Text
	// Audio: a chunk of the model's voice (PCM, 24 kHz).
	Audio
	// Transcript: words of the user (Role user) or of the model (Role
	// model); Final once the turn ended, with the whole turn's words.
	Transcript
	// ToolCall: the model calls Calls; answer with Deliver.
	ToolCall
	// Cancelled: the model withdrew the calls IDs (the user interrupted);
	// Deliver refuses them from now on.
	Cancelled
	// Usage: the tokens a model turn used.
	Usage
	// Handle: a new resumption handle, the latest one a later holder can
	// resume from (Session.Handle returns it too).
	Handle
	// GoAway: the model will close the connection within TimeLeft; the
	// session reconnects by itself.
	GoAway
	// Interrupted: the user spoke into the model's answer.
	Interrupted
	// TurnComplete: the model's turn ended.
	TurnComplete
)

// Event is one thing the model session did, in order.
type Event struct {
	Kind     Kind
	Text     string // Text, Transcript
	Role     string // Transcript: genai.RoleUser or genai.RoleModel
	Final    bool   // Transcript
	Audio    *genai.Blob
	Calls    []*genai.FunctionCall
	IDs      []string
	Usage    *genai.UsageMetadata
	Handle   string
	TimeLeft time.Duration
	Resumed  bool // Connected
}
