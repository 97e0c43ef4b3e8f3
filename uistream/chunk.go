package uistream

import (
	"encoding/json"
)

// Chunk is one chunk of a UI message stream. Its JSON is the chunk as the
// AI SDK reads it: {"type": Type(), ...the chunk's fields}.
type Chunk interface {
	Type() string
}

// The chunks, field for field as in uiMessageChunkSchema. Optional fields
// are omitted when empty; required ones never are.
type (
	// Start opens the stream; MessageID names the assistant message.
	Start struct {
		MessageID string `json:"messageId,omitempty"`
	}
	// StartStep opens a step (one model response and the tools it ran).
	StartStep struct{}
	// FinishStep closes a step; the client forgets its open text parts.
	FinishStep struct{}
	// TextStart opens text part ID.
	TextStart struct {
		ID string `json:"id"`
	}
	// TextDelta appends to the open text part ID.
	TextDelta struct {
		ID    string `json:"id"`
		Delta string `json:"delta"`
	}
	// TextEnd closes text part ID.
	TextEnd struct {
		ID string `json:"id"`
	}
	// ReasoningStart opens reasoning part ID: the model's thought summary,
	// which useChat keeps as a part of type "reasoning".
	ReasoningStart struct {
		ID string `json:"id"`
	}
	// ReasoningDelta appends to the open reasoning part ID.
	ReasoningDelta struct {
		ID    string `json:"id"`
		Delta string `json:"delta"`
	}
	// ReasoningEnd closes reasoning part ID.
	ReasoningEnd struct {
		ID string `json:"id"`
	}
	// ToolInputAvailable announces a tool call with its arguments.
	ToolInputAvailable struct {
		ToolCallID string          `json:"toolCallId"`
		ToolName   string          `json:"toolName"`
		Input      json.RawMessage `json:"input"`
		// ProviderExecuted marks a call the page must not run (useChat
		// hands the others to onToolCall); ProviderMetadata names the
		// device that may answer it (see Encoder.SetDevice).
		ProviderExecuted bool            `json:"providerExecuted,omitempty"`
		ProviderMetadata json.RawMessage `json:"providerMetadata,omitempty"`
	}
	// ToolApprovalRequest asks a person to approve call ToolCallID; the
	// answer names ApprovalID.
	ToolApprovalRequest struct {
		ApprovalID string `json:"approvalId"`
		ToolCallID string `json:"toolCallId"`
	}
	// ToolOutputAvailable is a tool call's result.
	ToolOutputAvailable struct {
		ToolCallID string          `json:"toolCallId"`
		Output     json.RawMessage `json:"output"`
		// ProviderExecuted marks the call as answered on the server's
		// side, which a page then has nothing to send for.
		ProviderExecuted bool `json:"providerExecuted,omitempty"`
		// Preliminary marks an output the call's final one replaces: a
		// background call's progress (Encoder.Progress).
		Preliminary bool `json:"preliminary,omitempty"`
	}
	// ToolOutputError is a tool call's failure, as shown to the user.
	ToolOutputError struct {
		ToolCallID       string `json:"toolCallId"`
		ErrorText        string `json:"errorText"`
		ProviderExecuted bool   `json:"providerExecuted,omitempty"`
	}
	// Data is a data-<Name> chunk, which the client adds to the message as
	// a part of that type; a chunk whose ID a part of that type already has
	// replaces that part's data instead.
	Data struct {
		Name string          `json:"-"`
		ID   string          `json:"id,omitempty"`
		Data json.RawMessage `json:"data"`
	}
	// File is a file of the assistant message (a model's image), at URL.
	File struct {
		URL       string `json:"url"`
		MediaType string `json:"mediaType"`
	}
	// Error reports a failure to the user; its text carries no internals.
	Error struct {
		ErrorText string `json:"errorText"`
	}
	// Finish ends the message.
	Finish struct{}
	// MessageMetadata is merged into the assistant message's metadata.
	MessageMetadata struct {
		MessageMetadata json.RawMessage `json:"messageMetadata"`
	}
)

func (Start) Type() string               { return "start" }
func (StartStep) Type() string           { return "start-step" }
func (FinishStep) Type() string          { return "finish-step" }
func (TextStart) Type() string           { return "text-start" }
func (TextDelta) Type() string           { return "text-delta" }
func (TextEnd) Type() string             { return "text-end" }
func (ReasoningStart) Type() string      { return "reasoning-start" }
func (ReasoningDelta) Type() string      { return "reasoning-delta" }
func (ReasoningEnd) Type() string        { return "reasoning-end" }
func (ToolInputAvailable) Type() string  { return "tool-input-available" }
func (ToolApprovalRequest) Type() string { return "tool-approval-request" }
func (ToolOutputAvailable) Type() string { return "tool-output-available" }
func (ToolOutputError) Type() string     { return "tool-output-error" }
func (c Data) Type() string              { return "data-" + c.Name }
func (File) Type() string                { return "file" }
func (Error) Type() string               { return "error" }
func (Finish) Type() string              { return "finish" }
func (MessageMetadata) Type() string     { return "message-metadata" }

// Each MarshalJSON encodes the chunk's fields under its type. (A defined
// type without the method, plain, keeps json.Marshal from recursing.)

func (c Start) MarshalJSON() ([]byte, error) { type plain Start; return typed(c, plain(c)) }
func (c StartStep) MarshalJSON() ([]byte, error) {
	type plain StartStep
	return typed(c, plain(c))
}
func (c FinishStep) MarshalJSON() ([]byte, error) {
	type plain FinishStep
	return typed(c, plain(c))
}
func (c TextStart) MarshalJSON() ([]byte, error) { type plain TextStart; return typed(c, plain(c)) }
func (c TextDelta) MarshalJSON() ([]byte, error) { type plain TextDelta; return typed(c, plain(c)) }
func (c TextEnd) MarshalJSON() ([]byte, error)   { type plain TextEnd; return typed(c, plain(c)) }
func (c ReasoningStart) MarshalJSON() ([]byte, error) {
	type plain ReasoningStart
	return typed(c, plain(c))
}
func (c ReasoningDelta) MarshalJSON() ([]byte, error) {
	type plain ReasoningDelta
	return typed(c, plain(c))
}
func (c ReasoningEnd) MarshalJSON() ([]byte, error) {
	type plain ReasoningEnd
	return typed(c, plain(c))
}
func (c ToolInputAvailable) MarshalJSON() ([]byte, error) {
	type plain ToolInputAvailable
	return typed(c, plain(c))
}
func (c ToolApprovalRequest) MarshalJSON() ([]byte, error) {
	type plain ToolApprovalRequest
	return typed(c, plain(c))
}
func (c ToolOutputAvailable) MarshalJSON() ([]byte, error) {
	type plain ToolOutputAvailable
	return typed(c, plain(c))
}
func (c ToolOutputError) MarshalJSON() ([]byte, error) {
	type plain ToolOutputError
	return typed(c, plain(c))
}
func (c Data) MarshalJSON() ([]byte, error)   { type plain Data; return typed(c, plain(c)) }
func (c File) MarshalJSON() ([]byte, error)   { type plain File; return typed(c, plain(c)) }
func (c Error) MarshalJSON() ([]byte, error)  { type plain Error; return typed(c, plain(c)) }
func (c Finish) MarshalJSON() ([]byte, error) { type plain Finish; return typed(c, plain(c)) }
func (c MessageMetadata) MarshalJSON() ([]byte, error) {
	type plain MessageMetadata
	return typed(c, plain(c))
}

// typed encodes fields, a struct, as a JSON object whose first member is
// the chunk's type.
func typed(c Chunk, fields any) ([]byte, error) {
	t, err := json.Marshal(c.Type())
	if err != nil {
		return nil, err
	}
	body, err := json.Marshal(fields)
	if err != nil {
		return nil, err
	}
	out := append([]byte(`{"type":`), t...)
	if len(body) > 2 { // more than "{}"
		out = append(out, ',')
		out = append(out, body[1:len(body)-1]...)
	}
	return append(out, '}'), nil
}
