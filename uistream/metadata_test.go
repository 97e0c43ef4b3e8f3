package uistream

import (
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/baton-run/baton/uistream/uistreamtest"
)

// TestEncoderMetadata: message metadata goes in a message-metadata chunk
// where it is written, after the text streamed before it.
func TestEncoderMetadata(t *testing.T) {
	rec := httptest.NewRecorder()
	s := newSSEEncoder(rec, "msg-1")
	if err := s.Event(streamTextEvent("1, 2", true), nil); err != nil {
		t.Fatalf("Event() error = %v", err)
	}
	if err := s.Event(streamTextEvent("1, 2", false), nil); err != nil {
		t.Fatalf("Event() error = %v", err)
	}
	if err := s.Metadata(map[string]any{"stopped": true}); err != nil {
		t.Fatalf("Metadata() error = %v", err)
	}
	if err := s.Finish(); err != nil {
		t.Fatalf("Finish() error = %v", err)
	}
	chunks := uistreamtest.Parse(t, rec.Body.String())
	uistreamtest.Check(t, chunks)
	want := []map[string]any{
		{"type": "start", "messageId": "msg-1"},
		{"type": "start-step"},
		{"type": "text-start", "id": "text-1"},
		{"type": "text-delta", "id": "text-1", "delta": "1, 2"},
		{"type": "text-end", "id": "text-1"},
		{"type": "message-metadata", "messageMetadata": map[string]any{"stopped": true}},
		{"type": "finish-step"},
		{"type": "finish"},
		{"type": "[DONE]"},
	}
	if diff := cmp.Diff(want, chunks); diff != "" {
		t.Errorf("chunks mismatch (-want +got):\n%s", diff)
	}
}
