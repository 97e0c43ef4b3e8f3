package sessionstore

import (
	"context"
	"fmt"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// FirestoreError wraps err, as returned by the Firestore client, in the
// sentinel its gRPC code means, and returns any other error (nil included)
// as it is. It is the one place where gRPC codes are read: this package
// and the packages that keep documents beside the sessions (the
// pending-call ledger, the A2A task store) pass every Firestore error
// through it and branch with errors.Is.
//
//   - NotFound: ErrNotFound (the document does not exist)
//   - AlreadyExists: ErrAlreadyExists (a Create found the document)
//   - FailedPrecondition: ErrConflict (the document changed since the
//     update time a write was conditioned on), except a query's missing
//     index, which is a deployment fault and stays as it is
//   - Unavailable, DeadlineExceeded, ResourceExhausted, and Unknown from
//     the server: ErrUnavailable
//   - InvalidArgument for a document over Firestore's size limit:
//     ErrTooLarge
//   - Canceled: context.Canceled (the call was cancelled, by the caller or,
//     on the emulator, sometimes by the server: a commit it made all the
//     same, see mayHaveLanded)
func FirestoreError(err error) error {
	if err == nil {
		return nil
	}
	st := status.Convert(err)
	switch st.Code() {
	case codes.NotFound:
		return fmt.Errorf("%w: %w", ErrNotFound, err)
	case codes.AlreadyExists:
		return fmt.Errorf("%w: %w", ErrAlreadyExists, err)
	case codes.FailedPrecondition:
		if strings.Contains(st.Message(), "index") {
			return err
		}
		return fmt.Errorf("%w: %w", ErrConflict, err)
	case codes.Unavailable, codes.DeadlineExceeded, codes.ResourceExhausted:
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	case codes.InvalidArgument:
		if strings.Contains(st.Message(), "exceeds the maximum allowed size") {
			return fmt.Errorf("%w: %w", ErrTooLarge, err)
		}
	case codes.Canceled:
		return fmt.Errorf("%w: %w", context.Canceled, err)
	case codes.Unknown:
		if _, ok := status.FromError(err); ok {
			return fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
	}
	return err
}
