package toolcallback

import (
	"errors"
	"fmt"
	"strings"

	"github.com/baton-run/baton/ledger"
)

// Sentinel errors returned by Team's methods. Callers test for them with
// errors.Is. A busy session is sessionstore.ErrBusy (a
// *sessionstore.BusyError says how long to wait); an invalid id is
// sessionstore.ErrInvalidID; a missing chat or session (another user's
// included) is sessionstore.ErrNotFound.
var (
	// ErrCallNotFound: no such call for this user. Another user's call is
	// not found either.
	ErrCallNotFound = ledger.ErrNotFound
	// ErrWrongClient: the call was started by another of the user's
	// clients, and its tool does not let any device answer.
	ErrWrongClient = errors.New("call belongs to another client")
	// ErrAlreadyResolved: the call has its answer already. The
	// *AlreadyResolvedError carries the recorded outcome.
	ErrAlreadyResolved = errors.New("call already resolved")
	// ErrExpired: the call expired, or was cancelled because the user moved
	// on, before this answer arrived.
	ErrExpired = errors.New("call expired or cancelled")
	// ErrAnswerTooLarge: the answer exceeds the size limit.
	ErrAnswerTooLarge = errors.New("answer too large")
	// ErrInvalidAnswer: the answer does not fit the call (an approval
	// decision for a browser tool, nothing set, several set).
	ErrInvalidAnswer = errors.New("invalid answer")
	// ErrMessageTaken: Turn found that the session already took a message
	// with the request's MessageID: the client sent it again.
	ErrMessageTaken = errors.New("message already taken")
	// ErrPendingCalls: a new message arrived while calls are pending and the
	// policy is PendingReject. The *PendingCallsError lists them.
	ErrPendingCalls = errors.New("calls are pending")
	// ErrChatDeleted: the chat was deleted (or is being deleted): a turn
	// or an answer to one of its calls comes too late. Reading the chat
	// finds nothing instead (sessionstore.ErrNotFound).
	ErrChatDeleted = errors.New("chat deleted")
	// ErrInvalidTitle: a chat's new title is empty, too long or not text.
	ErrInvalidTitle = errors.New("invalid title")
	// ErrDeletionPending: a deletion is under way and could not finish
	// within the request (something held the chat); the chat is gone for
	// every reader already, and the sweeper finishes it.
	ErrDeletionPending = errors.New("deletion under way")
)

// AlreadyResolvedError is returned when an answer arrives for a call that
// has one. Call holds the recorded outcome; Same reports whether the new
// answer is identical to the recorded one (a retry).
type AlreadyResolvedError struct {
	Call *Call
	Same bool
}

func (e *AlreadyResolvedError) Error() string {
	return fmt.Sprintf("call %q already %s", e.Call.ID, e.Call.Status)
}

func (e *AlreadyResolvedError) Is(target error) bool { return target == ErrAlreadyResolved }

// PendingCallsError lists the calls that block a new message under the
// PendingReject policy.
type PendingCallsError struct {
	Calls []*Call
}

func (e *PendingCallsError) Error() string {
	ids := make([]string, len(e.Calls))
	for i, c := range e.Calls {
		ids[i] = c.Tool + " (" + c.ID + ")"
	}
	return "calls are pending: " + strings.Join(ids, ", ")
}

func (e *PendingCallsError) Is(target error) bool { return target == ErrPendingCalls }
