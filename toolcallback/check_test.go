package toolcallback_test

import (
	"errors"
	"testing"

	"github.com/baton-run/baton/toolcallback"
	"github.com/baton-run/baton/userinput"
)

// TestCheckAnswer: an answer of the wrong shape for its call is
// toolcallback.ErrInvalidAnswer before anything is read or written.
func TestCheckAnswer(t *testing.T) {
	yes := true
	question := &userinput.Request{Requests: map[string]any{"q1": map[string]any{"method": "elicitation/create",
		"params": map[string]any{"mode": "form", "message": "Delete?", "requestedSchema": map[string]any{"type": "object"}}}}, Round: 1}
	tests := []struct {
		name string
		call *toolcallback.Call
		a    toolcallback.Answer
		ok   bool
	}{
		{"a browser call's output", &toolcallback.Call{Kind: toolcallback.KindBrowser}, toolcallback.Answer{Output: map[string]any{"playing": 2}}, true},
		{"a browser call's error", &toolcallback.Call{Kind: toolcallback.KindBrowser}, toolcallback.Answer{Error: "no speakers"}, true},
		{"a decision for a browser call", &toolcallback.Call{Kind: toolcallback.KindBrowser}, toolcallback.Answer{Approved: &yes}, false},
		{"an approval's decision", &toolcallback.Call{Kind: toolcallback.KindApproval}, toolcallback.Answer{Approved: &yes}, true},
		{"an output for an approval", &toolcallback.Call{Kind: toolcallback.KindApproval}, toolcallback.Answer{Output: map[string]any{}}, false},
		{"responses to a question", &toolcallback.Call{Kind: toolcallback.KindInput, Input: question},
			toolcallback.Answer{Output: map[string]any{"responses": map[string]any{"q1": map[string]any{"action": "decline"}}}}, true},
		{"anything else to a question", &toolcallback.Call{Kind: toolcallback.KindInput, Input: question}, toolcallback.Answer{Output: map[string]any{"yes": true}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := toolcallback.CheckAnswer(tt.call, tt.a)
			if tt.ok != (err == nil) || (err != nil && !errors.Is(err, toolcallback.ErrInvalidAnswer)) {
				t.Errorf("CheckAnswer(%+v) error = %v, want ok %v or toolcallback.ErrInvalidAnswer", tt.a, err, tt.ok)
			}
		})
	}
}
