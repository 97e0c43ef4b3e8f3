package errclass

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/baton-run/baton/a2ui"
	"github.com/baton-run/baton/feedback"
	"github.com/baton-run/baton/limits"
	"github.com/baton-run/baton/sessionstore"
	"github.com/baton-run/baton/toolcallback"
)

// TestOf: each kind of error a request ends with gets its class; an error
// wrapping several sentinels gets the one the rules put first.
func TestOf(t *testing.T) {
	call := &toolcallback.Call{ID: "c1"}
	tests := []struct {
		name  string
		err   error
		code  Code
		retry time.Duration
		msg   string // "" checks nothing
	}{
		{name: "a decoder's error", err: fmt.Errorf("%w: messages must be an array", ErrBadRequest), code: InvalidRequest, msg: "bad request: messages must be an array"},
		{name: "an invalid id", err: fmt.Errorf("chat id: %w", sessionstore.ErrInvalidID), code: InvalidRequest},
		{name: "a malformed identity", err: fmt.Errorf("%w: %w", ErrUnauthenticated, sessionstore.ErrInvalidID), code: Unauthenticated, msg: "missing or invalid credentials"},
		{name: "an action a form did not offer", err: fmt.Errorf("%w: %w", toolcallback.ErrInvalidAnswer, a2ui.ErrNotOffered), code: ActionNotOffered},
		{name: "an action not A2UI", err: &a2ui.ValidationError{Problems: []string{"action: not JSON"}}, code: InvalidRequest},
		{name: "a surface gone", err: fmt.Errorf("%w: %w", toolcallback.ErrSurfaceGone, a2ui.ErrNoSurface), code: SurfaceGone},
		{name: "a form's action as a message", err: a2ui.ErrSurfaceWaits, code: SurfaceWaits},
		{name: "a chat held by a live segment", err: &sessionstore.BusyError{Holder: toolcallback.Holder{Client: "tab", Live: true, ID: "x"}.String(), RetryAfter: 8 * time.Second}, code: Live},
		{name: "a busy chat", err: fmt.Errorf("turn: %w", &sessionstore.BusyError{RetryAfter: 8 * time.Second}), code: Busy, retry: 3 * time.Second},
		{name: "a chat busy briefly", err: &sessionstore.BusyError{RetryAfter: 100 * time.Millisecond}, code: Busy, retry: time.Second},
		{name: "a rate limit", err: &limits.LimitError{Err: limits.ErrRateLimited, Scope: "user", Limit: 10, RetryAfter: 1500 * time.Millisecond},
			code: RateLimited, retry: 2 * time.Second, msg: "too many turns: at most 10 a minute per user"},
		{name: "a token budget", err: &limits.LimitError{Err: limits.ErrBudgetExhausted, Limit: 5, RetryAfter: time.Hour}, code: BudgetExhausted, retry: time.Hour},
		{name: "live segments", err: &limits.LimitError{Err: limits.ErrLiveSegments, Limit: 2, RetryAfter: time.Minute}, code: LiveLimit, retry: time.Minute},
		{name: "a body over its limit", err: &http.MaxBytesError{Limit: 10}, code: TooLarge},
		{name: "a named limit", err: &LimitError{What: "a file", Limit: 8, Env: "BATON_MAX_FILE_BYTES"}, code: TooLarge, msg: "a file is over the limit of 8 bytes (BATON_MAX_FILE_BYTES)"},
		{name: "a message too large to store", err: sessionstore.ErrTooLarge, code: TooLarge},
		{name: "pending calls", err: &toolcallback.PendingCallsError{Calls: []*toolcallback.Call{call}}, code: PendingCalls},
		{name: "an answered call", err: &toolcallback.AlreadyResolvedError{Call: call}, code: AlreadyResolved},
		{name: "an unknown agent", err: &toolcallback.UnknownAgentError{Name: "x", Known: []string{"a"}}, code: UnknownAgent},
		{name: "another user's chat", err: sessionstore.ErrNotFound, code: NotFound, msg: "no such session or call"},
		{name: "a message to rewind not found", err: toolcallback.ErrMessageNotFound, code: NotFound, msg: "the chat has no such message"},
		{name: "another tab's call", err: toolcallback.ErrWrongClient, code: WrongClient},
		{name: "an expired call", err: toolcallback.ErrExpired, code: Expired},
		{name: "a deleted chat", err: toolcallback.ErrChatDeleted, code: ChatDeleted},
		{name: "a bad title", err: toolcallback.ErrInvalidTitle, code: InvalidRequest},
		{name: "a bad rating", err: feedback.ErrInvalid, code: InvalidRequest},
		{name: "Firestore out of reach", err: fmt.Errorf("read: %w", sessionstore.ErrUnavailable), code: Unavailable, retry: 5 * time.Second},
		{name: "a deadline", err: context.DeadlineExceeded, code: Unavailable, retry: 5 * time.Second},
		{name: "no live model", err: ErrLiveOff, code: LiveUnavailable},
		{name: "anything else", err: errors.New("disk on fire"), code: Internal, msg: "internal error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Of(tt.err)
			if c.Code != tt.code || c.RetryAfter != tt.retry {
				t.Errorf("Of(%v) = %s, retry %v; want %s, retry %v", tt.err, c.Code, c.RetryAfter, tt.code, tt.retry)
			}
			if tt.msg != "" && c.Message != tt.msg {
				t.Errorf("Of(%v).Message = %q, want %q", tt.err, c.Message, tt.msg)
			}
			if c.Fault() != (tt.code == Internal || tt.code == Unavailable || tt.code == LiveUnavailable) {
				t.Errorf("Of(%v).Fault() = %v", tt.err, c.Fault())
			}
		})
	}
}

// TestFaultSaysNothing: the server's fault never shows its detail.
func TestFaultSaysNothing(t *testing.T) {
	c := Of(fmt.Errorf("commit: %w", errors.New("secret path /baton/app/u1")))
	if c.Message != "internal error" || c.HTTPStatus() != http.StatusInternalServerError {
		t.Errorf("Of = %+v, want 500 internal error", c)
	}
}

// TestCodes: every code has one status, and every class Of gives is
// listed.
func TestCodes(t *testing.T) {
	seen := map[Code]bool{}
	for _, e := range Codes {
		if seen[e.Code] {
			t.Errorf("code %s listed twice", e.Code)
		}
		seen[e.Code] = true
		if e.Status < 400 || e.Status > 599 {
			t.Errorf("code %s has status %d", e.Code, e.Status)
		}
	}
	var got []Code
	for _, r := range rules {
		got = append(got, r.class(errors.New("x")).Code)
	}
	for _, c := range append(got, InvalidRequest, Internal) {
		if !seen[c] {
			t.Errorf("code %s is not listed in Codes", c)
		}
	}
}
