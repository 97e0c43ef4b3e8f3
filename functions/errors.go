package functions

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/baton-run/baton/errclass"
)

// Errors of the HTTP layer itself are errclass's, which every door wraps;
// the libraries' sentinels are classified as they are.
var (
	errBadRequest      = errclass.ErrBadRequest
	errUnauthenticated = errclass.ErrUnauthenticated
	errForbidden       = errclass.ErrForbidden
	errMethod          = errclass.ErrMethod
	errMediaType       = errclass.ErrMediaType
	errBodyTooLarge    = errclass.ErrBodyTooLarge
	errStartupFailed   = errors.New("startup failed")
)

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

// status is how the HTTP routes (Baton's own and useChat's) answer err:
// the status of its class (errclass.Of, which decides what an error
// means), and the class as the JSON body. A 5xx never carries the error's
// text.
func status(err error) (int, apiErrorBody) {
	c := errclass.Of(err)
	body := apiErrorBody{Code: string(c.Code), Message: c.Message, RetryAfterSeconds: c.RetryAfterSeconds(), KnownAgents: c.KnownAgents}
	for _, call := range c.Calls {
		body.Calls = append(body.Calls, newCallView(call, ""))
	}
	if c.Outcome != nil {
		v := newCallView(c.Outcome, "")
		body.Outcome = &v
	}
	return c.HTTPStatus(), body
}

// writeError answers err as JSON, with Retry-After where it applies, and
// logs the detail of server errors; a failure because the client went
// away is logged as information (clientStatus).
func writeError(w http.ResponseWriter, r *http.Request, log *slog.Logger, err error) {
	code, body := status(err)
	switch {
	case clientStatus(r.Context(), code) != code:
		log.InfoContext(r.Context(), "request ended: the client went away", "error", err.Error())
	case code >= 500:
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
