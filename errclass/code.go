package errclass

import "net/http"

// Code names a class of errors, as a client reads it: the "code" of an
// HTTP error body and of the live socket's error frame.
type Code string

// The codes, each with the HTTP status it is answered with (Codes).
const (
	InvalidRequest       Code = "invalid_request"
	UnknownAgent         Code = "unknown_agent"
	ActionNotOffered     Code = "action_not_offered"
	Unauthenticated      Code = "unauthenticated"
	WrongClient          Code = "wrong_client"
	Forbidden            Code = "forbidden"
	Blocked              Code = "blocked"
	NotFound             Code = "not_found"
	MethodNotAllowed     Code = "method_not_allowed"
	Busy                 Code = "busy"
	Live                 Code = "live"
	PendingCalls         Code = "pending_calls"
	AlreadyResolved      Code = "already_resolved"
	SurfaceGone          Code = "surface_gone"
	SurfaceWaits         Code = "surface_waits"
	Rewound              Code = "rewound"
	AlreadyTaken         Code = "already_taken"
	Expired              Code = "expired"
	ChatDeleted          Code = "chat_deleted"
	RateLimited          Code = "rate_limited"
	BudgetExhausted      Code = "budget_exhausted"
	LiveLimit            Code = "live_limit"
	ServiceCap           Code = "service_cap"
	TooLarge             Code = "too_large"
	UnsupportedMediaType Code = "unsupported_media_type"
	Unavailable          Code = "unavailable"
	LiveUnavailable      Code = "live_unavailable"
	Internal             Code = "internal"
	Unsupported          Code = "unsupported"
)

// Codes lists every code with its HTTP status, in the order
// docs/http-api.md lists them.
var Codes = []struct {
	Code   Code
	Status int
}{
	{InvalidRequest, http.StatusBadRequest},
	{UnknownAgent, http.StatusBadRequest},
	{ActionNotOffered, http.StatusBadRequest},
	{Unauthenticated, http.StatusUnauthorized},
	{WrongClient, http.StatusForbidden},
	{Forbidden, http.StatusForbidden},
	{Blocked, http.StatusForbidden},
	{NotFound, http.StatusNotFound},
	{MethodNotAllowed, http.StatusMethodNotAllowed},
	{Busy, http.StatusConflict},
	{Live, http.StatusConflict},
	{PendingCalls, http.StatusConflict},
	{AlreadyResolved, http.StatusConflict},
	{SurfaceGone, http.StatusConflict},
	{SurfaceWaits, http.StatusConflict},
	{Rewound, http.StatusConflict},
	{AlreadyTaken, http.StatusConflict},
	{Expired, http.StatusGone},
	{ChatDeleted, http.StatusGone},
	{TooLarge, http.StatusRequestEntityTooLarge},
	{UnsupportedMediaType, http.StatusUnsupportedMediaType},
	{RateLimited, http.StatusTooManyRequests},
	{BudgetExhausted, http.StatusTooManyRequests},
	{LiveLimit, http.StatusTooManyRequests},
	{ServiceCap, http.StatusTooManyRequests},
	{Internal, http.StatusInternalServerError},
	{Unsupported, http.StatusNotImplemented},
	{Unavailable, http.StatusServiceUnavailable},
	{LiveUnavailable, http.StatusServiceUnavailable},
}

// HTTPStatus is the status of code (500 for a code not listed).
func (c Code) HTTPStatus() int {
	for _, e := range Codes {
		if e.Code == c {
			return e.Status
		}
	}
	return http.StatusInternalServerError
}
