package sessionstore_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/baton-run/baton/sessionstore"
)

// TestFirestoreError: every gRPC code a caller acts on becomes the
// sentinel it means, found with errors.Is through any wrapping, and the
// original error stays in the chain; other errors pass unchanged.
func TestFirestoreError(t *testing.T) {
	t.Parallel()
	plain := errors.New("not a gRPC error")
	tests := []struct {
		name string
		err  error
		want error // nil: err comes back as it is
	}{
		{"not found", status.Error(codes.NotFound, "no document"), sessionstore.ErrNotFound},
		{"already exists", status.Error(codes.AlreadyExists, "document exists"), sessionstore.ErrAlreadyExists},
		{"failed precondition", status.Error(codes.FailedPrecondition, "update time mismatch"), sessionstore.ErrConflict},
		{"wrapped failed precondition", fmt.Errorf("commit: %w", status.Error(codes.FailedPrecondition, "x")), sessionstore.ErrConflict},
		{"unavailable", status.Error(codes.Unavailable, "down"), sessionstore.ErrUnavailable},
		{"deadline exceeded", status.Error(codes.DeadlineExceeded, "slow"), sessionstore.ErrUnavailable},
		{"resource exhausted", status.Error(codes.ResourceExhausted, "quota"), sessionstore.ErrUnavailable},
		{"document too large", status.Error(codes.InvalidArgument, "Document exceeds the maximum allowed size"), sessionstore.ErrTooLarge},
		{"cancelled", status.Error(codes.Canceled, "call already cancelled"), context.Canceled},
		{"unknown from the server", status.Error(codes.Unknown, ""), sessionstore.ErrUnavailable},
		{"missing index", status.Error(codes.FailedPrecondition, "The query requires an index"), nil},
		{"other invalid argument", status.Error(codes.InvalidArgument, "bad field path"), nil},
		{"not a gRPC error", plain, nil},
		{"nil", nil, nil},
	}
	sentinels := []error{sessionstore.ErrNotFound, sessionstore.ErrAlreadyExists, sessionstore.ErrConflict,
		sessionstore.ErrUnavailable, sessionstore.ErrTooLarge, context.Canceled}
	for _, tt := range tests {
		got := sessionstore.FirestoreError(tt.err)
		if tt.want == nil {
			if got != tt.err {
				t.Errorf("%s: FirestoreError(%v) = %v, want it unchanged", tt.name, tt.err, got)
			}
			continue
		}
		for _, s := range sentinels {
			if is := errors.Is(got, s); is != (s == tt.want) {
				t.Errorf("%s: errors.Is(FirestoreError(%v), %v) = %v, want %v", tt.name, tt.err, s, is, s == tt.want)
			}
		}
		if !errors.Is(got, tt.err) {
			t.Errorf("%s: FirestoreError(%v) = %v, which lost the original error", tt.name, tt.err, got)
		}
	}
}
