package functions

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	cloudtasks "cloud.google.com/go/cloudtasks/apiv2"

	"github.com/baton-run/baton/toolcallback"
	"github.com/baton-run/baton/workqueue"
)

// maxTaskBytes bounds a delivery's body: a task names a call, nothing more.
const maxTaskBytes = 16 << 10

// workMargin is what an attempt leaves of the delivery's deadline, beside
// the resumed agent's InvocationTimeout, to record its result.
const workMargin = 30 * time.Second

// workIdentity checks the OIDC token Cloud Tasks sends with each delivery
// to Work: a Google-signed token (serviceIdentity) for the worker's
// audience and service account. Anyone else is refused: 401 without a
// valid token, 403 for another account.
type workIdentity struct {
	service  *serviceIdentity
	audience string
	invoker  string
}

func (w *workIdentity) check(ctx context.Context, r *http.Request) error {
	if w == nil || w.audience == "" || w.invoker == "" {
		return fmt.Errorf("%w: BATON_WORK_AUDIENCE and BATON_WORK_INVOKER are not configured", errUnauthenticated)
	}
	raw, ok := bearer(r)
	if !ok {
		return fmt.Errorf("%w: no bearer token", errUnauthenticated)
	}
	_, err := w.service.email(ctx, raw, w.audience, []string{w.invoker})
	return err
}

// newWorkIdentity is the check of the queue's tokens, nil without a
// queue. It applies in every identity mode: the local runner's queue
// signs its tokens with a key of its own, served through keys.
func newWorkIdentity(ctx context.Context, cfg Config, keys *http.Client) (*workIdentity, error) {
	if cfg.WorkQueue == "" {
		return nil, nil
	}
	service, err := newServiceIdentity(ctx, keys)
	if err != nil {
		return nil, err
	}
	return &workIdentity{service: service, audience: cmp.Or(cfg.WorkAudience, cfg.WorkURL), invoker: cfg.WorkInvoker}, nil
}

// newQueue is the queue of background calls the configuration names, nil
// when it names none; client, when set, is the Cloud Tasks client to use
// (the local runner's and the tests' in-process server).
func newQueue(ctx context.Context, cfg Config, client *cloudtasks.Client) (*workqueue.Queue, error) {
	if cfg.WorkQueue == "" {
		return nil, nil
	}
	if client == nil {
		var err error
		if client, err = cloudtasks.NewClient(ctx); err != nil {
			return nil, fmt.Errorf("cloud tasks: %w", err)
		}
	}
	return workqueue.New(client, workqueue.Config{Queue: cfg.WorkQueue, URL: cfg.WorkURL, Invoker: cfg.WorkInvoker,
		Audience: cfg.WorkAudience, Deadline: cfg.WorkDeadline})
}

// workReply is Work's answer to the queue.
type workReply struct {
	Outcome string `json:"outcome"`
}

// work runs a delivery of a background call's work: POST /Work, from
// Cloud Tasks only. The answer tells the queue what to do: 200
// acknowledges (the work is done, or there is none to do), 429 with
// Retry-After leaves the call to the attempt that holds it (delivered
// again after the hold: if that attempt died, this one runs then), 503
// retries a failed attempt after the queue's backoff. The request lasts
// as long as the work and the agent it resumes: on Cloud Run an instance
// has its CPU only while a request is in flight.
func (s *Server) work(w http.ResponseWriter, r *http.Request, log *slog.Logger) error {
	if err := s.workCheck.check(r.Context(), r); err != nil {
		return err
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxTaskBytes))
	if err != nil {
		return fmt.Errorf("%w: %w", errBadRequest, err)
	}
	task, err := workqueue.Decode(body)
	if err != nil {
		return fmt.Errorf("%w: %w", errBadRequest, err)
	}
	if task.App != s.team.App() {
		return fmt.Errorf("%w: a task of app %q, this deployment serves %q", errBadRequest, task.App, s.team.App())
	}
	// The attempt's own bound: the queue's deadline, less the time to
	// record the result and run the resumed agent.
	deadline := time.Now().Add(s.cfg.WorkDeadline - s.cfg.InvocationTimeout - workMargin)
	out, err := s.team.Work(r.Context(), toolcallback.WorkRequest{UserID: task.User, SessionID: task.Session, CallID: task.Call, Step: task.Step,
		Deadline: deadline})
	if err != nil {
		return err
	}
	if out.Invocation != nil {
		if err := out.Invocation.Wait(); err != nil {
			log.WarnContext(r.Context(), "agent resumed with a background call's result", "call", task.Call, "error", err)
		}
	}
	log.InfoContext(r.Context(), "work", "call", task.Call, "session", task.Session, "outcome", out.What,
		"retryCount", r.Header.Get("X-CloudTasks-TaskRetryCount"))
	switch {
	case out.Retry && out.RetryAfter > 0:
		w.Header().Set("Retry-After", strconv.Itoa(int(out.RetryAfter.Round(time.Second).Seconds())+1))
		writeJSON(w, http.StatusTooManyRequests, workReply{Outcome: out.What})
	case out.Retry:
		writeJSON(w, http.StatusServiceUnavailable, workReply{Outcome: out.What})
	default:
		writeJSON(w, http.StatusOK, workReply{Outcome: out.What})
	}
	return nil
}
