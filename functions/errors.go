package functions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"strconv"

	"github.com/baton-run/baton/a2ui"
	"github.com/baton-run/baton/limits"
	"github.com/baton-run/baton/sessionstore"
	"github.com/baton-run/baton/toolcallback"
	"github.com/baton-run/baton/usechat"
)

// Errors of the HTTP layer itself; the libraries' sentinels map alongside.
var (
	errBadRequest      = usechat.ErrBadRequest
	errUnauthenticated = errors.New("unauthenticated")
	errForbidden       = errors.New("forbidden")
	errMethod          = errors.New("method not allowed")
	errMediaType       = usechat.ErrMediaType
	errBodyTooLarge    = errors.New("request body too large")
	errUnknownAgent    = errors.New("unknown agent")
	errStartupFailed   = errors.New("startup failed")
)

// maxRetryAfter caps the Retry-After of a busy session, in seconds.
const maxRetryAfter = 3

// apiError is the JSON body of every error response.
type apiError struct {
	Error apiErrorBody `json:"error"`
}

type apiErrorBody struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	// RetryAfterSeconds repeats the Retry-After header for clients that
	// cannot read headers (CORS without exposure).
	RetryAfterSeconds int        `json:"retryAfterSeconds,omitempty"`
	Calls             []callView `json:"calls,omitempty"`   // pending calls blocking a message
	Outcome           *callView  `json:"outcome,omitempty"` // the recorded outcome of an answered call
	KnownAgents       []string   `json:"knownAgents,omitempty"`
}

// status maps an error to its HTTP status, its code and a message safe to
// show the client. It is the only place that does; a 5xx never carries the
// error's text.
func status(err error) (int, apiErrorBody) {
	var (
		busy     *sessionstore.BusyError
		pending  *toolcallback.PendingCallsError
		resolved *toolcallback.AlreadyResolvedError
		maxBytes *http.MaxBytesError
		unknown  *toolcallback.UnknownAgentError
		limit    *usechat.LimitError
		limited  *limits.LimitError
	)
	switch {
	case errors.As(err, &limited):
		return limitedStatus(limited)
	case errors.As(err, &limit):
		return http.StatusRequestEntityTooLarge, apiErrorBody{Code: "too_large", Message: err.Error()}
	case toolcallback.IsLive(err):
		// Before busy: a live segment holds the chat until its user ends it.
		return http.StatusConflict, apiErrorBody{Code: "live", Message: "a live conversation holds this chat: send text through it, or end it (DELETE /Chat/{chatId}/stream)"}
	case errors.Is(err, errLiveOff):
		return http.StatusServiceUnavailable, apiErrorBody{Code: "live_unavailable", Message: "live mode is not configured on this deployment"}
	case errors.As(err, &busy):
		// The lease lasts a whole invocation deadline, but most invocations
		// end within seconds: suggest an early retry rather than the
		// lease's worst case.
		secs := min(int(math.Ceil(busy.RetryAfter.Seconds())), maxRetryAfter)
		secs = max(secs, 1)
		return http.StatusConflict, apiErrorBody{Code: "busy", Message: "the session is busy with another request; retry later", RetryAfterSeconds: secs}
	case errors.As(err, &pending):
		body := apiErrorBody{Code: "pending_calls", Message: "calls are waiting for an answer; answer them first"}
		for _, c := range pending.Calls {
			body.Calls = append(body.Calls, newCallView(c, ""))
		}
		return http.StatusConflict, body
	case errors.As(err, &resolved):
		v := newCallView(resolved.Call, "")
		return http.StatusConflict, apiErrorBody{Code: "already_resolved", Message: "this call already has an answer", Outcome: &v}
	case errors.As(err, &unknown):
		return http.StatusBadRequest, apiErrorBody{Code: "unknown_agent", Message: err.Error(), KnownAgents: unknown.Known}
	case errors.As(err, &maxBytes), errors.Is(err, errBodyTooLarge):
		return http.StatusRequestEntityTooLarge, apiErrorBody{Code: "too_large", Message: "the request body is too large"}
	case errors.Is(err, toolcallback.ErrAnswerTooLarge), errors.Is(err, sessionstore.ErrTooLarge):
		return http.StatusRequestEntityTooLarge, apiErrorBody{Code: "too_large", Message: "the message or result is too large"}
	// Before invalid_request: a malformed identity (a user id that is no
	// valid id) wraps both, and is a credentials problem.
	case errors.Is(err, errUnauthenticated), errors.Is(err, errInvalidIDToken), errors.Is(err, toolcallback.ErrInvalidCallToken):
		return http.StatusUnauthorized, apiErrorBody{Code: "unauthenticated", Message: "missing or invalid credentials"}
	case errors.Is(err, a2ui.ErrNotOffered):
		return http.StatusBadRequest, apiErrorBody{Code: "action_not_offered", Message: err.Error()}
	case errors.Is(err, toolcallback.ErrSurfaceGone), errors.Is(err, a2ui.ErrNoSurface):
		return http.StatusConflict, apiErrorBody{Code: "surface_gone", Message: "the surface is no longer shown (deleted, replaced or taken back): " + err.Error()}
	case errors.Is(err, a2ui.ErrSurfaceWaits):
		return http.StatusConflict, apiErrorBody{Code: "surface_waits", Message: "this surface's action answers the call that showed it, not a new message: " + err.Error()}
	case errors.Is(err, errBadRequest), errors.Is(err, sessionstore.ErrInvalidID), errors.Is(err, toolcallback.ErrInvalidAnswer), errors.Is(err, a2ui.ErrInvalid):
		return http.StatusBadRequest, apiErrorBody{Code: "invalid_request", Message: err.Error()}
	case errors.Is(err, toolcallback.ErrMessageNotFound):
		return http.StatusNotFound, apiErrorBody{Code: "not_found", Message: "the chat has no such message"}
	case errors.Is(err, toolcallback.ErrRewound):
		return http.StatusConflict, apiErrorBody{Code: "rewound", Message: "this message was taken back by an earlier regenerate or edit"}
	case errors.Is(err, toolcallback.ErrMessageTaken):
		return http.StatusConflict, apiErrorBody{Code: "already_taken", Message: "this request was served already"}
	case errors.Is(err, toolcallback.ErrCallNotFound), errors.Is(err, sessionstore.ErrNotFound):
		return http.StatusNotFound, apiErrorBody{Code: "not_found", Message: "no such session or call"}
	case errors.Is(err, toolcallback.ErrWrongClient):
		return http.StatusForbidden, apiErrorBody{Code: "wrong_client", Message: "another tab or device started this call; only it may answer"}
	case errors.Is(err, errForbidden):
		return http.StatusForbidden, apiErrorBody{Code: "forbidden", Message: "not allowed"}
	case errors.Is(err, errMethod):
		return http.StatusMethodNotAllowed, apiErrorBody{Code: "method_not_allowed", Message: err.Error()}
	case errors.Is(err, toolcallback.ErrExpired):
		return http.StatusGone, apiErrorBody{Code: "expired", Message: "the call expired or was cancelled before this answer arrived"}
	case errors.Is(err, errMediaType):
		return http.StatusUnsupportedMediaType, apiErrorBody{Code: "unsupported_media_type", Message: "send Content-Type: application/json"}
	case errors.Is(err, sessionstore.ErrUnavailable), errors.Is(err, errAuthUnavailable), errors.Is(err, context.DeadlineExceeded):
		return http.StatusServiceUnavailable, apiErrorBody{Code: "unavailable", Message: "a backing service is unavailable; retry shortly", RetryAfterSeconds: 5}
	}
	return http.StatusInternalServerError, apiErrorBody{Code: "internal", Message: "internal error"}
}

// writeError answers err as JSON, with Retry-After where it applies, and
// logs the detail of server errors.
func writeError(w http.ResponseWriter, r *http.Request, log *slog.Logger, err error) {
	code, body := status(err)
	if code >= 500 {
		log.ErrorContext(r.Context(), "request failed", "error", err.Error())
	}
	if body.RetryAfterSeconds > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(body.RetryAfterSeconds))
	}
	writeJSON(w, code, apiError{Error: body})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// startupFailed answers requests reaching an instance whose server could not
// be built.
func startupFailed(w http.ResponseWriter, r *http.Request, err error) {
	log := NewLogger(nil)
	log.ErrorContext(r.Context(), "instance startup failed", "error", err.Error())
	writeError(w, r, slog.New(slog.DiscardHandler), fmt.Errorf("%w: %w", errStartupFailed, err))
}
