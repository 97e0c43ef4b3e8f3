package functions

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/baton-run/baton/sessionstore"
	"github.com/baton-run/baton/usechat"
)

// NewLogger returns the JSON logger the functions use, writing to w
// (stderr when nil), with "severity" and "message" instead of slog's
// "level" and "msg", as Cloud Logging reads them.
func NewLogger(w io.Writer) *slog.Logger {
	if w == nil {
		w = os.Stderr
	}
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) > 0 {
				return a
			}
			switch a.Key {
			case slog.MessageKey:
				a.Key = "message"
			case slog.LevelKey:
				a.Key = "severity"
				switch lvl := a.Value.Any().(slog.Level); {
				case lvl >= slog.LevelError:
					a.Value = slog.StringValue("ERROR")
				case lvl >= slog.LevelWarn:
					a.Value = slog.StringValue("WARNING")
				case lvl >= slog.LevelInfo:
					a.Value = slog.StringValue("INFO")
				default:
					a.Value = slog.StringValue("DEBUG")
				}
			}
			return a
		},
	}))
}

// requestLogger adds the request's trace, span and execution ids, as Cloud
// Logging correlates them. The trace is the request span's (see
// startRequestSpan), so logs and spans name the same one.
func requestLogger(log *slog.Logger, project string, r *http.Request) *slog.Logger {
	if sc := trace.SpanContextFromContext(r.Context()); sc.IsValid() && project != "" {
		log = log.With("logging.googleapis.com/trace", "projects/"+project+"/traces/"+sc.TraceID().String(),
			"logging.googleapis.com/spanId", sc.SpanID().String(),
			"logging.googleapis.com/trace_sampled", sc.IsSampled())
	}
	if id := r.Header.Get("Function-Execution-Id"); id != "" {
		log = log.With("executionId", id)
	}
	return log
}

// recorder notes the status a handler wrote; Unwrap keeps Flush working
// through http.ResponseController.
type recorder struct {
	http.ResponseWriter
	status int
}

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

func (r *recorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// Hijack hands the connection over (a WebSocket upgrade, live.go), noting
// the switch of protocols as the status.
func (r *recorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, rw, err := http.NewResponseController(r.ResponseWriter).Hijack()
	if err == nil && r.status == 0 {
		r.status = http.StatusSwitchingProtocols
	}
	return conn, rw, err
}

// clientStatus is the status the log and the metrics give a request
// answered with status: 499 (a client that went away, as proxies name it)
// for a failure of a request its client cancelled (a closed tab, a
// reload), which no server fault caused and no 5xx alert or error log
// should count.
//
// client is the request's own context, not one wrap derives from it: the
// function's timeout is cancelled when the handler returns, before the
// request is logged and counted.
func clientStatus(client context.Context, status int) int {
	if status >= 500 && errors.Is(client.Err(), context.Canceled) {
		return 499
	}
	return status
}

// endpoint is a handler that returns its error for the wrapper to answer.
type endpoint func(w http.ResponseWriter, r *http.Request, log *slog.Logger) error

// wrap adds to an endpoint what every function does: panic recovery, one
// log line per request, CORS, the method check and the error mapping.
func (s *Server) wrap(name string, methods []string, h endpoint) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		ctx, span := startRequestSpan(r, name)
		r = r.WithContext(ctx)
		client := r.Context()
		log := requestLogger(s.log, s.cfg.Project, r).With("function", name)
		rec := &recorder{ResponseWriter: w}
		defer func() {
			if p := recover(); p != nil {
				log.ErrorContext(r.Context(), "panic", "panic", fmt.Sprint(p))
				if rec.status == 0 {
					writeError(rec, r, slog.New(slog.DiscardHandler), fmt.Errorf("panic: %v", p))
				}
			}
			status := clientStatus(client, rec.status)
			level := slog.LevelInfo
			if status >= 500 {
				level = slog.LevelError
			}
			log.Log(r.Context(), level, "request", "method", r.Method, "path", r.URL.Path,
				"status", status, "latencyMs", time.Since(start).Milliseconds())
			countRequest(r.Context(), name, r.Method, status, time.Since(start))
			endRequestSpan(span, rec.status)
		}()
		if !s.cors(rec, r, methods) {
			return
		}
		if !slices.Contains(methods, r.Method) {
			rec.Header().Set("Allow", strings.Join(append(slices.Clone(methods), http.MethodOptions), ", "))
			writeError(rec, r, log, fmt.Errorf("%w: use %s", errMethod, strings.Join(methods, " or ")))
			return
		}
		if timeout := s.timeout(name); timeout > 0 {
			// Bounds the work before the stream starts; a detached
			// invocation keeps its own deadline.
			ctx, cancel := context.WithTimeout(r.Context(), timeout)
			defer cancel()
			r = r.WithContext(ctx)
		}
		if err := h(rec, r, log); err != nil {
			if rec.status != 0 {
				log.WarnContext(r.Context(), "error after the response started", "error", err.Error())
				return
			}
			writeError(rec, r, log, err)
		}
	})
}

// timeout is how long a function may work on a request before its stream
// starts. Sweep waits for the invocations it resumes, so it gets one
// invocation deadline more; it starts no resume it could not finish. A2A
// streams and blocking sends follow an execution, so they get the same;
// and Account, whose export and deletion grow with the account.
func (s *Server) timeout(name string) time.Duration {
	if (name == NameSweep || name == NameA2A || name == NameAccount) && s.cfg.RequestTimeout > 0 {
		return s.cfg.RequestTimeout + s.cfg.InvocationTimeout
	}
	return s.cfg.RequestTimeout
}

// cors sets CORS headers for allowed origins and answers preflights. It
// returns false when the request has been answered.
//
// An origin listed by name may also send credentials. The functions
// authenticate by the Authorization header and set no cookie; the one
// cookie a browser holds for them is Cloud Run's session-affinity cookie,
// which a page on another origin sends only in credentials mode, and only
// if the answer allows it. "*" never allows credentials: any page could
// then send them.
func (s *Server) cors(w http.ResponseWriter, r *http.Request, methods []string) bool {
	origin := r.Header.Get("Origin")
	named := origin != "" && slices.Contains(s.cfg.AllowedOrigins, origin)
	allowed := named || (origin != "" && slices.Contains(s.cfg.AllowedOrigins, "*"))
	if allowed {
		h := w.Header()
		h.Set("Access-Control-Allow-Origin", origin)
		h.Add("Vary", "Origin")
		h.Set("Access-Control-Expose-Headers", "Retry-After, "+usechat.LiveHeader)
		if named {
			h.Set("Access-Control-Allow-Credentials", "true")
		}
	}
	if r.Method != http.MethodOptions || r.Header.Get("Access-Control-Request-Method") == "" {
		return true
	}
	if !allowed {
		w.WriteHeader(http.StatusForbidden)
		return false
	}
	h := w.Header()
	h.Set("Access-Control-Allow-Methods", strings.Join(append(slices.Clone(methods), http.MethodOptions), ", "))
	h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, Accept, X-Baton-User, X-Baton-Device, X-Baton-Wait, X-Baton-Seen")
	h.Set("Access-Control-Max-Age", "600")
	w.WriteHeader(http.StatusNoContent)
	return false
}

// decodeJSON reads a JSON request body into v within the body limit
// (usechat.DecodeJSON: JSON content type, no unknown fields, nothing after
// the value, nothing the decoder would not keep as written). Every
// function decodes its body here.
func (s *Server) decodeJSON(w http.ResponseWriter, r *http.Request, v any) error {
	return usechat.DecodeJSON(w, r, s.cfg.MaxBodyBytes, v)
}

// identity says who sent a request.
type identity interface {
	userID(ctx context.Context, r *http.Request) (string, error)
	// caller is userID with the kind of identity, which sets the
	// caller's turn limits (limits.go).
	caller(ctx context.Context, r *http.Request) (caller, error)
}

func bearer(r *http.Request) (string, bool) {
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" {
		return "", false
	}
	return strings.TrimSpace(token), true
}

// devIdentity takes the user from the X-Baton-User header. Only the local
// runner enables it; ConfigFromEnv refuses it on Cloud Run.
type devIdentity struct{}

func (devIdentity) userID(_ context.Context, r *http.Request) (string, error) {
	user := r.Header.Get("X-Baton-User")
	if user == "" {
		return "", fmt.Errorf("%w: development identity mode needs an X-Baton-User header", errUnauthenticated)
	}
	if err := sessionstore.ValidateID("user id", user); err != nil {
		return "", fmt.Errorf("%w: %w", errUnauthenticated, err)
	}
	return user, nil
}
