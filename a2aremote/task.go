package a2aremote

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
)

// State is a remote task's state, by A2A's names.
type State string

const (
	Submitted     State = "submitted"
	Working       State = "working"
	InputRequired State = "input-required"
	AuthRequired  State = "auth-required"
	Completed     State = "completed"
	Failed        State = "failed"
	Rejected      State = "rejected"
	Canceled      State = "canceled"
)

// Terminal reports whether a task in state s is over for good.
func (s State) Terminal() bool {
	return s == Completed || s == Failed || s == Rejected || s == Canceled
}

// Asks reports whether a task in state s waits for its caller's answer.
func (s State) Asks() bool { return s == InputRequired || s == AuthRequired }

func stateOf(s a2a.TaskState) State {
	switch s {
	case a2a.TaskStateWorking:
		return Working
	case a2a.TaskStateInputRequired:
		return InputRequired
	case a2a.TaskStateAuthRequired:
		return AuthRequired
	case a2a.TaskStateCompleted:
		return Completed
	case a2a.TaskStateFailed:
		return Failed
	case a2a.TaskStateRejected:
		return Rejected
	case a2a.TaskStateCanceled:
		return Canceled
	}
	return Submitted
}

// Part is one part of what a remote said: text, data, or a file (by URL,
// or its bytes).
type Part struct {
	Text      string         `json:"text,omitempty"`
	Data      any            `json:"data,omitempty"`
	URL       string         `json:"url,omitempty"`
	Raw       []byte         `json:"raw,omitempty"`
	Filename  string         `json:"filename,omitempty"`
	MediaType string         `json:"mediaType,omitempty"`
	Metadata  map[string]any `json:"metadata,omitempty"`
}

// Task is a remote task as the remote last described it.
type Task struct {
	ID, ContextID string
	State         State
	// At is the remote's time of the state; zero when it gives none.
	At time.Time
	// Message is the parts of the state's message (a working update's
	// line, a question, a failure's reason).
	Message []Part
	// Parts are the task's result: its artifacts' parts (for a remote
	// that answered with a message, that message's).
	Parts []Part
}

func taskOf(t *a2a.Task) *Task {
	out := &Task{ID: string(t.ID), ContextID: t.ContextID, State: stateOf(t.Status.State)}
	if t.Status.Timestamp != nil {
		out.At = *t.Status.Timestamp
	}
	if t.Status.Message != nil {
		out.Message = partsOf(t.Status.Message.Parts)
	}
	for _, a := range t.Artifacts {
		out.Parts = append(out.Parts, partsOf(a.Parts)...)
	}
	return out
}

func partsOf(parts a2a.ContentParts) []Part {
	var out []Part
	for _, p := range parts {
		if p == nil {
			continue
		}
		q := Part{Filename: p.Filename, MediaType: p.MediaType, Metadata: p.Metadata}
		switch c := p.Content.(type) {
		case a2a.Text:
			q.Text = string(c)
		case a2a.Data:
			q.Data = c.Value
		case a2a.URL:
			q.URL = string(c)
		case a2a.Raw:
			q.Raw = []byte(c)
		}
		out = append(out, q)
	}
	return out
}

// Text is the text of parts, joined by new lines.
func Text(parts []Part) string {
	var b strings.Builder
	for _, p := range parts {
		if p.Text == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		b.WriteString(p.Text)
	}
	return b.String()
}

// ErrInvalidNotification: a push notification's body is not an A2A task
// event.
var ErrInvalidNotification = errors.New("invalid push notification")

// Notified is what a push notification says of its task: its id, and its
// state when the event carries one. The notification only wakes the
// receiver: it reads the task from the remote (Get), so that what it
// records is the remote's word, never the body's.
type Notified struct {
	TaskID string
	State  State
}

// DecodeNotification reads a push notification's body: an A2A 1.0 stream
// response (a task, a status update or an artifact update), or the 0.3
// form, a task as it is.
func DecodeNotification(body []byte) (Notified, error) {
	var sr a2a.StreamResponse
	if err := json.Unmarshal(body, &sr); err == nil && sr.Event != nil {
		switch e := sr.Event.(type) {
		case *a2a.Task:
			return Notified{TaskID: string(e.ID), State: stateOf(e.Status.State)}, nil
		case *a2a.TaskStatusUpdateEvent:
			return Notified{TaskID: string(e.TaskID), State: stateOf(e.Status.State)}, nil
		case *a2a.TaskArtifactUpdateEvent:
			return Notified{TaskID: string(e.TaskID)}, nil
		}
	}
	var legacy struct {
		ID     string `json:"id"`
		TaskID string `json:"taskId"`
		Kind   string `json:"kind"`
	}
	if err := json.Unmarshal(body, &legacy); err != nil {
		return Notified{}, fmt.Errorf("%w: %w", ErrInvalidNotification, err)
	}
	id := legacy.TaskID
	if legacy.Kind == "task" || id == "" {
		id = legacy.ID
	}
	if id == "" {
		return Notified{}, fmt.Errorf("%w: no task id", ErrInvalidNotification)
	}
	return Notified{TaskID: id}, nil
}
