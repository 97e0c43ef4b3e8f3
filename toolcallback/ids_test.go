package toolcallback_test

import (
	"errors"
	"testing"

	"google.golang.org/genai"

	"github.com/baton-run/baton/sessionstore"
	"github.com/baton-run/baton/toolcallback"
)

// TestTeamChecksIDs: Team's methods are where ids enter; an invalid one is
// refused with ErrInvalidID before anything is read or written.
func TestTeamChecksIDs(t *testing.T) {
	t.Parallel()
	f := newTeamFixture(t)
	msg := genai.NewContentFromText("hi", genai.RoleUser)
	ok := toolcallback.Answer{Output: map[string]any{}}
	tests := []struct {
		name string
		call func() error
	}{
		{"turn, chat id", func() error {
			_, _, err := f.team.Turn(t.Context(), toolcallback.TurnRequest{UserID: "user-1", ChatID: "a/b", ClientID: "tab-a", Content: msg})
			return err
		}},
		{"turn, client id", func() error {
			_, _, err := f.team.Turn(t.Context(), toolcallback.TurnRequest{UserID: "user-1", ChatID: "chat", ClientID: "", Content: msg})
			return err
		}},
		{"answer, call id", func() error {
			_, err := f.team.Resume(t.Context(), toolcallback.ResumeRequest{UserID: "user-1", ChatID: "chat", CallID: "a/b", ClientID: "tab-a", Answer: ok})
			return err
		}},
		{"pending, user id", func() error {
			_, err := f.team.Pending(t.Context(), toolcallback.PendingRequest{UserID: "__x__", ChatID: "chat", ClientID: "tab-a", History: 10})
			return err
		}},
	}
	for _, tt := range tests {
		before := f.counter.Snapshot()
		if err := tt.call(); !errors.Is(err, sessionstore.ErrInvalidID) {
			t.Errorf("%s: error = %v, want ErrInvalidID", tt.name, err)
		}
		if ops := f.counter.Snapshot().Sub(before); ops.RoundTrips != 0 {
			t.Errorf("%s: %d Firestore round trips, want none", tt.name, ops.RoundTrips)
		}
	}
}
