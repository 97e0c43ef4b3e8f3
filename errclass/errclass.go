package errclass

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"time"

	"github.com/baton-run/baton/a2ui"
	"github.com/baton-run/baton/console"
	"github.com/baton-run/baton/feedback"
	"github.com/baton-run/baton/limits"
	"github.com/baton-run/baton/sessionstore"
	"github.com/baton-run/baton/toolcallback"
)

// Errors of a request itself, which the doors (functions, usechat,
// a2aserver, the live socket) wrap; the sentinels of Baton's parts are
// classified as they are.
var (
	// ErrBadRequest: the request is not one Baton takes (malformed JSON,
	// a member of the wrong type, a value out of bounds). Every decoder of
	// client input wraps it, or a sentinel of its own part.
	ErrBadRequest = errors.New("bad request")
	// ErrUnauthenticated: no acceptable credentials.
	ErrUnauthenticated = errors.New("unauthenticated")
	// ErrForbidden: credentials of a caller who may not do this.
	ErrForbidden = errors.New("forbidden")
	// ErrBlocked: the caller is a user the deployment's operators
	// blocked.
	ErrBlocked = errors.New("blocked")
	// ErrMethod: a method the route does not serve.
	ErrMethod = errors.New("method not allowed")
	// ErrMediaType: a body that is not application/json.
	ErrMediaType = errors.New("unsupported media type")
	// ErrBodyTooLarge: a body over its limit.
	ErrBodyTooLarge = errors.New("request body too large")
	// ErrUnavailable: a service Baton needs (token verification) cannot be
	// reached; Firestore's is sessionstore.ErrUnavailable.
	ErrUnavailable = errors.New("a backing service is unavailable")
	// ErrLiveOff: the deployment has no live model.
	ErrLiveOff = errors.New("live mode is not configured")
)

// LimitError: a request goes over one of the configured limits. Its text
// names the limit and the variable that sets it, and is shown as it is.
type LimitError struct {
	What  string // "the request body", "a file", …
	Limit int64
	Env   string
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("%s is over the limit of %d bytes (%s)", e.What, e.Limit, e.Env)
}

// Class is what an error means to a client.
type Class struct {
	Code Code
	// Message is safe to show: a server's fault says "internal error".
	Message string
	// RetryAfter, in whole seconds, says when the same request may
	// succeed; zero: not before something changes.
	RetryAfter time.Duration
	// Calls are the pending calls that block a message (PendingCalls).
	Calls []*toolcallback.Call
	// Outcome is the recorded answer of an answered call
	// (AlreadyResolved).
	Outcome *toolcallback.Call
	// KnownAgents are the agents a chat may switch to (UnknownAgent).
	KnownAgents []string
}

// HTTPStatus is the status an HTTP route answers the class with.
func (c Class) HTTPStatus() int { return c.Code.HTTPStatus() }

// Fault reports whether the class is the server's (a 5xx): the error's
// detail then goes to the log.
func (c Class) Fault() bool { return c.HTTPStatus() >= 500 }

// RetryAfterSeconds is RetryAfter in whole seconds (0: none).
func (c Class) RetryAfterSeconds() int { return int(c.RetryAfter / time.Second) }

// maxBusyRetry caps the retry of a busy chat: the lease lasts a whole
// invocation deadline, but most invocations end within seconds, so an
// early retry is suggested rather than the lease's worst case.
const maxBusyRetry = 3 * time.Second

// unavailableRetry is the retry of a backing service out of reach.
const unavailableRetry = 5 * time.Second

// Of classifies err. Errors that wrap several sentinels at once get the
// class of the first rule they match (rules).
func Of(err error) Class {
	if c, ok := typed(err); ok {
		return c
	}
	for _, r := range rules {
		for _, s := range r.errs {
			if errors.Is(err, s) {
				return r.class(err)
			}
		}
	}
	return Class{Code: Internal, Message: "internal error"}
}

// typed classifies the errors that carry what the client needs: limits,
// a busy chat, the calls blocking a message, an answered call's outcome,
// the known agents.
func typed(err error) (Class, bool) {
	var (
		limited  *limits.LimitError
		limit    *LimitError
		busy     *sessionstore.BusyError
		pending  *toolcallback.PendingCallsError
		resolved *toolcallback.AlreadyResolvedError
		unknown  *toolcallback.UnknownAgentError
		maxBytes *http.MaxBytesError
	)
	switch {
	case errors.As(err, &limited):
		return limitedClass(limited), true
	case errors.As(err, &limit):
		return Class{Code: TooLarge, Message: limit.Error()}, true
	case toolcallback.IsLive(err):
		// Before busy: a live segment holds the chat until its user ends it.
		return Class{Code: Live, Message: "a live conversation holds this chat: send text through it, or end it (DELETE /Chat/{chatId}/stream)"}, true
	case errors.As(err, &busy):
		return Class{Code: Busy, Message: "the session is busy with another request; retry later",
			RetryAfter: min(wholeSeconds(busy.RetryAfter), maxBusyRetry)}, true
	case errors.As(err, &pending):
		return Class{Code: PendingCalls, Message: "calls are waiting for an answer; answer them first", Calls: pending.Calls}, true
	case errors.As(err, &resolved):
		return Class{Code: AlreadyResolved, Message: "this call already has an answer", Outcome: resolved.Call}, true
	case errors.As(err, &unknown):
		return Class{Code: UnknownAgent, Message: err.Error(), KnownAgents: unknown.Known}, true
	case errors.As(err, &maxBytes):
		return Class{Code: TooLarge, Message: "the request body is too large"}, true
	}
	return Class{}, false
}

// limitedClass is a turn refused for a limit, with the wait in whole
// seconds.
func limitedClass(e *limits.LimitError) Class {
	c := Class{Code: RateLimited, RetryAfter: wholeSeconds(e.RetryAfter),
		Message: fmt.Sprintf("too many turns: at most %d a minute per %s", e.Limit, e.Scope)}
	switch {
	case errors.Is(e, limits.ErrLiveSegments):
		c.Code, c.Message = LiveLimit, fmt.Sprintf("at most %d live conversations at once: end one first", e.Limit)
	case errors.Is(e, limits.ErrBudgetExhausted):
		c.Code, c.Message = BudgetExhausted, fmt.Sprintf("today's model token budget (%d) is used up; it renews at midnight UTC", e.Limit)
	case errors.Is(e, limits.ErrServiceBudget):
		c.Code, c.Message = ServiceCap, "this service has reached its limit of use for today: please try again after midnight UTC (answers to questions already asked still go through)"
	case errors.Is(e, limits.ErrNewAnonymous):
		c.Code, c.Message = ServiceCap, "this service is taking no more new guests today: sign in with an account, or try again after midnight UTC"
	}
	return c
}

// wholeSeconds rounds d up to whole seconds, at least one.
func wholeSeconds(d time.Duration) time.Duration {
	return max(time.Duration(math.Ceil(d.Seconds()))*time.Second, time.Second)
}

// rule classifies the errors that wrap one of errs.
type rule struct {
	errs  []error
	class func(err error) Class
}

// fixed is a class whose message does not depend on the error.
func fixed(code Code, message string) func(error) Class {
	return func(error) Class { return Class{Code: code, Message: message} }
}

// told is a class whose message is the error's text, after prefix: what
// the client sent wrong, in the words of the part that refused it.
func told(code Code, prefix string) func(error) Class {
	return func(err error) Class { return Class{Code: code, Message: prefix + err.Error()} }
}

// rules classify by sentinel, in order: the first whose sentinel an error
// wraps wins.
var rules = []rule{
	{[]error{ErrLiveOff}, fixed(LiveUnavailable, "live mode is not configured on this deployment")},
	{[]error{ErrBodyTooLarge}, fixed(TooLarge, "the request body is too large")},
	{[]error{toolcallback.ErrAnswerTooLarge, sessionstore.ErrTooLarge}, fixed(TooLarge, "the message or result is too large")},
	// Before invalid_request: a malformed identity (a user id that is no
	// valid id) wraps both, and is a credentials problem.
	{[]error{ErrUnauthenticated, toolcallback.ErrInvalidCallToken}, fixed(Unauthenticated, "missing or invalid credentials")},
	// Before invalid_request: an answer a form did not offer wraps both.
	{[]error{a2ui.ErrNotOffered}, told(ActionNotOffered, "")},
	{[]error{toolcallback.ErrSurfaceGone, a2ui.ErrNoSurface}, told(SurfaceGone, "the surface is no longer shown (deleted, replaced or taken back): ")},
	{[]error{a2ui.ErrSurfaceWaits}, told(SurfaceWaits, "this surface's action answers the call that showed it, not a new message: ")},
	{[]error{console.ErrUnsupported}, told(Unsupported, "")},
	{[]error{console.ErrBadInput}, told(InvalidRequest, "")},
	{[]error{ErrBadRequest, sessionstore.ErrInvalidID, toolcallback.ErrInvalidAnswer, a2ui.ErrInvalid, toolcallback.ErrInvalidTitle, feedback.ErrInvalid}, told(InvalidRequest, "")},
	{[]error{toolcallback.ErrChatDeleted}, fixed(ChatDeleted, "the chat was deleted")},
	{[]error{toolcallback.ErrMessageNotFound}, fixed(NotFound, "the chat has no such message")},
	{[]error{toolcallback.ErrRewound}, fixed(Rewound, "this message was taken back by an earlier regenerate or edit")},
	{[]error{toolcallback.ErrMessageTaken}, fixed(AlreadyTaken, "this request was served already")},
	{[]error{toolcallback.ErrCallNotFound, sessionstore.ErrNotFound}, fixed(NotFound, "no such session or call")},
	{[]error{toolcallback.ErrWrongClient}, fixed(WrongClient, "another tab or device started this call; only it may answer")},
	{[]error{ErrBlocked}, fixed(Blocked, "this account is blocked by the operators of this service; contact them if you think this is a mistake")},
	{[]error{ErrForbidden}, fixed(Forbidden, "not allowed")},
	{[]error{ErrMethod}, told(MethodNotAllowed, "")},
	{[]error{toolcallback.ErrExpired}, fixed(Expired, "the call expired or was cancelled before this answer arrived")},
	{[]error{ErrMediaType}, fixed(UnsupportedMediaType, "send Content-Type: application/json")},
	{[]error{sessionstore.ErrUnavailable, ErrUnavailable, context.DeadlineExceeded}, func(error) Class {
		return Class{Code: Unavailable, Message: "a backing service is unavailable; retry shortly", RetryAfter: unavailableRetry}
	}},
}
