package toolcallback

import "github.com/baton-run/baton/ledger"

// Status is where a paused call stands (see package ledger).
type Status = ledger.Status

const (
	StatusPending   = ledger.StatusPending
	StatusResolved  = ledger.StatusResolved
	StatusExpired   = ledger.StatusExpired
	StatusCancelled = ledger.StatusCancelled
)

// Call is a paused call as the ledger records it.
type Call = ledger.Call

// Answer is the result of a paused call. Exactly one of Output, Error and
// Approved is set.
type Answer = ledger.Answer
