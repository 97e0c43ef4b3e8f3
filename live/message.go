package live

import (
	"encoding/json"

	"github.com/baton-run/baton/toolcallback"
)

// Client is the device at the other end of a conversation: the HTTP
// edge's WebSocket, or a test. Its methods are called from several
// goroutines (the model's voice as it comes, messages after the commits
// they follow): an implementation serialises its writes, and should not
// hold them long, since the voice waits for nothing else.
type Client interface {
	// Audio sends the model's voice: 16-bit little-endian mono PCM at
	// 24 kHz.
	Audio(pcm []byte) error
	// Send sends a message (docs/http-api.md has them as JSON).
	Send(m Message) error
}

// Message is a message to the client; each is one JSON text frame with a
// "type". The conversation sends Ready, Transcript, ToolCall, ToolResult,
// ToolProgress and Signal; the HTTP edge sends Error and End, once the conversation
// has ended (Conversation.Wait).
type Message interface{ messageType() string }

// Ready opens the conversation: the chat, its agent, whether the model
// session resumed an earlier holder's (by its handle), and the calls
// waiting for an answer that the client's device may give.
type Ready struct {
	Type    string     `json:"type"` // "ready"
	ChatID  string     `json:"chatId"`
	Agent   string     `json:"agent"`
	Resumed bool       `json:"resumed"`
	Calls   []ToolCall `json:"calls"`
}

// Transcript is words of the user or of the assistant: Text is a piece
// (Final false), or the whole message once it ended (Final true).
// MessageID names the message as GET /Chat/{chatId} does after a reload.
type Transcript struct {
	Type      string `json:"type"` // "transcript"
	Role      string `json:"role"` // "user" or "assistant"
	MessageID string `json:"messageId"`
	Text      string `json:"text"`
	Final     bool   `json:"final"`
}

// ToolCall is a call waiting for the client: a browser tool to run, an
// approval to ask, a question to put. Kind is "browser", "approval",
// "input" (or "external" or "background", which the client only shows:
// a background call's progress comes as ToolProgress). An approval is
// answered with ApprovalID; the others with ToolCallID. DeviceID is the
// device that may answer it ("" when any of the user's may).
type ToolCall struct {
	Type       string         `json:"type"` // "tool-call"
	ToolCallID string         `json:"toolCallId"`
	ToolName   string         `json:"toolName"`
	Input      map[string]any `json:"input"`
	Kind       string         `json:"kind"`
	ApprovalID string         `json:"approvalId,omitempty"`
	DeviceID   string         `json:"deviceId"`
}

// ToolResult is the outcome of a call once the model has it: an output, or
// an error.
type ToolResult struct {
	Type       string `json:"type"` // "tool-result"
	ToolCallID string `json:"toolCallId"`
	Output     any    `json:"output,omitempty"`
	ErrorText  string `json:"errorText,omitempty"`
}

// ToolProgress is how a background call shown as a ToolCall (kind
// "background") is going: the latest progress its work stored (a JSON
// value; a string is a line of text), sent as the worker stores it, at
// most once per the team's ProgressInterval per call. The call's
// ToolResult follows once the model has its result.
type ToolProgress struct {
	Type       string          `json:"type"` // "tool-progress"
	ToolCallID string          `json:"toolCallId"`
	ToolName   string          `json:"toolName"`
	Progress   json.RawMessage `json:"progress"`
}

// Signal is a message with no field but its type: "turn-complete" (the
// model finished speaking), "interrupted" (the user spoke into the
// model's answer: drop what is queued for playback), "reconnecting" (the
// model's connection is being replaced: a gap in the audio may follow).
type Signal struct {
	Type string `json:"type"`
}

// Error says why the conversation, or what the client just sent, failed:
// Code is the HTTP API's error code (docs/http-api.md).
type Error struct {
	Type    string `json:"type"` // "error"
	Code    string `json:"code"`
	Message string `json:"message"`
}

// End is the last message: why the conversation ended (an End reason).
type End struct {
	Type   string `json:"type"` // "end"
	Reason string `json:"reason"`
}

func (Ready) messageType() string        { return "ready" }
func (Transcript) messageType() string   { return "transcript" }
func (ToolCall) messageType() string     { return "tool-call" }
func (ToolResult) messageType() string   { return "tool-result" }
func (ToolProgress) messageType() string { return "tool-progress" }
func (m Signal) messageType() string     { return m.Type }
func (Error) messageType() string        { return "error" }
func (End) messageType() string          { return "end" }

// The reasons a conversation ends (End.Reason).
const (
	// EndStopped: a stop was asked for the chat (DELETE
	// /Chat/{chatId}/stream, from any tab, on any instance).
	EndStopped = "stopped"
	// EndLeaseLost: another holder took the chat over.
	EndLeaseLost = "lease-lost"
	// EndTimeout: the conversation lasted its longest (Options.MaxDuration):
	// the client reconnects to go on.
	EndTimeout = "timeout"
	// EndClosed: the client closed it, or it failed (an Error says why).
	EndClosed = "closed"
	// EndReplaced: the same device opened a new conversation on the chat.
	EndReplaced = "replaced"
)

// Answer is an answer the client gives to a call: ToolCallID with Output
// or ErrorText, or ApprovalID with Approved (and Payload, an approver's
// edit of the arguments).
type Answer struct {
	ToolCallID string         `json:"toolCallId,omitempty"`
	Output     map[string]any `json:"output,omitempty"`
	ErrorText  string         `json:"errorText,omitempty"`
	ApprovalID string         `json:"approvalId,omitempty"`
	Approved   *bool          `json:"approved,omitempty"`
	Payload    any            `json:"payload,omitempty"`
}

// toolCall is the message that shows c, a call waiting for an answer.
func toolCall(c *toolcallback.Call) ToolCall {
	m := ToolCall{Type: "tool-call", ToolCallID: c.OriginalID, ToolName: c.Tool, Input: c.Args, Kind: string(c.Kind)}
	if !c.AnyDevice {
		m.DeviceID = c.ClientID
	}
	switch c.Kind {
	case toolcallback.KindApproval:
		m.ApprovalID = c.ID
	case toolcallback.KindInput:
		// A question is answered with its own id; its input is what it
		// asks.
		m.ToolCallID, m.Input = c.ID, asMap(c.Input)
	}
	if m.Input == nil {
		m.Input = map[string]any{}
	}
	return m
}

// asMap is v as a JSON object.
func asMap(v any) map[string]any {
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	return m
}
