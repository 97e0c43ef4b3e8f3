package uistream

import (
	"encoding/json"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/genai"

	"github.com/baton-run/baton/uistream/uistreamtest"
)

// TestEncoderBackground: a background call is shown to a page as the
// server's (provider-executed), its tool's placeholder response is not
// sent, its progress goes out as preliminary outputs of the call, and its
// answer, from the user's side, as the call's output; a progress report
// for a call the stream has not shown sends nothing.
func TestEncoderBackground(t *testing.T) {
	rec := httptest.NewRecorder()
	s := newSSEEncoder(rec, "msg-1")
	s.SetDevice("tab-1")
	kind := streamKinds(map[string]CallKind{"prepare_playlist": CallBackground})
	answer := streamResponseEvent(&genai.FunctionResponse{ID: "c1", Name: "prepare_playlist", Response: map[string]any{"tracks": []any{"rain"}}})
	answer.Author = "user"
	steps := []func() error{
		func() error { return s.Progress("c1", json.RawMessage(`"too early"`)) },
		func() error {
			return s.Event(streamCallEvent(&genai.FunctionCall{ID: "c1", Name: "prepare_playlist", Args: map[string]any{"mood": "calm"}}), kind)
		},
		func() error {
			return s.Event(streamResponseEvent(&genai.FunctionResponse{ID: "c1", Name: "prepare_playlist", Response: map[string]any{"status": "pending"}}), kind)
		},
		func() error { return s.Progress("c1", json.RawMessage(`{"done":1,"of":2}`)) },
		func() error { return s.Event(answer, kind) },
		s.Finish,
	}
	for i, step := range steps {
		if err := step(); err != nil {
			t.Fatalf("step %d error = %v", i, err)
		}
	}
	var got []map[string]any
	for _, c := range uistreamtest.Parse(t, rec.Body.String()) {
		if c["type"] == "tool-input-available" || c["type"] == "tool-output-available" || c["type"] == "tool-output-error" {
			got = append(got, c)
		}
	}
	want := []map[string]any{
		{"type": "tool-input-available", "toolCallId": "c1", "toolName": "prepare_playlist", "input": map[string]any{"mood": "calm"}, "providerExecuted": true},
		{"type": "tool-output-available", "toolCallId": "c1", "output": map[string]any{"done": 1.0, "of": 2.0}, "providerExecuted": true, "preliminary": true},
		{"type": "tool-output-available", "toolCallId": "c1", "output": map[string]any{"tracks": []any{"rain"}}, "providerExecuted": true},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("tool chunks (-want +got):\n%s", diff)
	}
}
