package a2aserver

// Errors over A2A. What an error means is errclass's; this file is A2A's
// table of what each class is answered with: a JSON-RPC error, whose data
// carries Baton's code (and when to retry), as the HTTP routes' bodies do.
// Once a task has taken a message (a2a-go stores it in the task's history
// before the execution starts), a refusal is the task's state instead: it
// stays input-required with the reason as a part marked validation_error,
// or fails (executor.settle).

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/errordetails"

	"github.com/baton-run/baton/errclass"
)

// rpcErrors is the JSON-RPC error of each class: a request Baton cannot
// take is invalid params (-32602), a chat that cannot take it now a server
// error (-32000, with the retry in its data), a caller without credentials
// unauthenticated (-31401), one without the right unauthorized (-31403),
// and the server's fault an internal error (-32603).
var rpcErrors = map[errclass.Code]error{
	errclass.InvalidRequest:       a2a.ErrInvalidParams,
	errclass.UnknownAgent:         a2a.ErrInvalidParams,
	errclass.ActionNotOffered:     a2a.ErrInvalidParams,
	errclass.Unauthenticated:      a2a.ErrUnauthenticated,
	errclass.WrongClient:          a2a.ErrUnauthorized,
	errclass.Forbidden:            a2a.ErrUnauthorized,
	errclass.Blocked:              a2a.ErrUnauthorized,
	errclass.NotFound:             a2a.ErrInvalidParams,
	errclass.MethodNotAllowed:     a2a.ErrInvalidRequest,
	errclass.Busy:                 a2a.ErrServerError,
	errclass.Live:                 a2a.ErrServerError,
	errclass.PendingCalls:         a2a.ErrInvalidParams,
	errclass.AlreadyResolved:      a2a.ErrInvalidParams,
	errclass.SurfaceGone:          a2a.ErrInvalidParams,
	errclass.SurfaceWaits:         a2a.ErrInvalidParams,
	errclass.Rewound:              a2a.ErrInvalidParams,
	errclass.AlreadyTaken:         a2a.ErrInvalidParams,
	errclass.Expired:              a2a.ErrInvalidParams,
	errclass.ChatDeleted:          a2a.ErrInvalidParams,
	errclass.TooLarge:             a2a.ErrInvalidRequest,
	errclass.UnsupportedMediaType: a2a.ErrInvalidRequest,
	errclass.RateLimited:          a2a.ErrServerError,
	errclass.BudgetExhausted:      a2a.ErrServerError,
	errclass.LiveLimit:            a2a.ErrServerError,
	errclass.ServiceCap:           a2a.ErrServerError,
	errclass.Internal:             a2a.ErrInternalError,
	errclass.Unsupported:          a2a.ErrUnsupportedOperation,
	errclass.Unavailable:          a2a.ErrServerError,
	errclass.LiveUnavailable:      a2a.ErrUnsupportedOperation,
}

// rpcCodes are the JSON-RPC codes of the errors rpcErrors names (as a2a-go
// writes them), for the answers written before a2a-go reads a request
// and for the table in docs/http-api.md.
var rpcCodes = map[error]int{
	a2a.ErrParseError: -32700, a2a.ErrInvalidRequest: -32600, a2a.ErrInvalidParams: -32602,
	a2a.ErrInternalError: -32603, a2a.ErrServerError: -32000, a2a.ErrUnsupportedOperation: -32004,
	a2a.ErrUnauthenticated: -31401, a2a.ErrUnauthorized: -31403,
}

// RPCCode is the JSON-RPC error code A2A answers a class with.
func RPCCode(c errclass.Code) int { return rpcCodes[rpcErrorOf(c)] }

func rpcErrorOf(c errclass.Code) error {
	if e, ok := rpcErrors[c]; ok {
		return e
	}
	return a2a.ErrInternalError
}

// errorData is the data of a JSON-RPC error: Baton's code of its class,
// and when to retry.
func errorData(c errclass.Class) map[string]any {
	d := map[string]any{"code": string(c.Code)}
	if s := c.RetryAfterSeconds(); s > 0 {
		d["retryAfterSeconds"] = s
	}
	return d
}

// rpcError is err as an A2A caller reads it: the JSON-RPC error of its
// class, the class's message, and its data.
func rpcError(err error) error {
	c := errclass.Of(err)
	return a2a.NewError(rpcErrorOf(c.Code), c.Message).WithDetails(errorData(c))
}

// writeRPCError answers err before a2a-go has read the request, with the
// HTTP status of its class.
func writeRPCError(w http.ResponseWriter, err error) {
	c := errclass.Of(err)
	if s := c.RetryAfterSeconds(); s > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(s))
	}
	if c.Code == errclass.Unauthenticated {
		w.Header().Set("WWW-Authenticate", "Bearer")
	}
	kind := rpcErrorOf(c.Code)
	writeRPC(w, c.HTTPStatus(), map[string]any{"code": rpcCodes[kind], "message": kind.Error() + ": " + c.Message, "data": []any{errordetails.NewFromStruct(errorData(c))}})
}

// writeRPC writes a JSON-RPC error response without an id.
func writeRPC(w http.ResponseWriter, status int, e map[string]any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": nil, "error": e})
}
