package localtasks

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"cloud.google.com/go/cloudtasks/apiv2/cloudtaskspb"
	rpcstatus "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// The headers Cloud Tasks sets on each request to an HTTP target.
const (
	headerQueue            = "X-CloudTasks-QueueName"
	headerTask             = "X-CloudTasks-TaskName"
	headerRetryCount       = "X-CloudTasks-TaskRetryCount"
	headerExecutionCount   = "X-CloudTasks-TaskExecutionCount"
	headerETA              = "X-CloudTasks-TaskETA"
	headerPreviousResponse = "X-CloudTasks-TaskPreviousResponse"
	headerRetryReason      = "X-CloudTasks-TaskRetryReason"
	userAgent              = "Google-Cloud-Tasks"
)

// attempt is one request of a task, fixed when it starts.
type attempt struct {
	task       *task
	name       string
	req        *cloudtaskspb.HttpRequest
	retryCount int32
	executions int32
	eta        time.Time
	previous   int
	reason     string
	deadline   time.Duration // as the server waits (scaled)
	duplicate  bool
}

// response is what became of an attempt's request.
type response struct {
	status    int   // 0 without a response
	err       error // why there was no response
	cancelled bool  // by Stop
}

// schedule starts the attempts of due tasks until the server stops, waking
// when the next task falls due or when notify says something changed.
func (s *Server) schedule() {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		s.mu.Lock()
		now := s.now()
		next := s.startDue(now)
		s.mu.Unlock()
		wait := time.Hour
		if !next.IsZero() {
			wait = next.Sub(now)
		}
		timer.Reset(wait)
		select {
		case <-s.base.Done():
			return
		case <-s.wake:
		case <-timer.C:
		}
	}
}

// startDue starts every due task its queue has room for, earliest first,
// forgets expired tombstones, and returns when the next task falls due
// (zero: none waits). Server.mu is held.
func (s *Server) startDue(now time.Time) time.Time {
	for name, until := range s.tombstones {
		if !now.Before(until) {
			delete(s.tombstones, name)
		}
	}
	var due []*task
	var next time.Time
	for _, t := range s.tasks {
		switch {
		case t.inflight > 0:
		case t.due.After(now):
			if next.IsZero() || t.due.Before(next) {
				next = t.due
			}
		default:
			due = append(due, t)
		}
	}
	slices.SortFunc(due, func(a, b *task) int {
		return cmp.Or(a.due.Compare(b.due), strings.Compare(a.pb.Name, b.pb.Name))
	})
	for _, t := range due {
		if t.queue.running < int(t.queue.pb.RateLimits.GetMaxConcurrentDispatches()) {
			s.startAttempt(t, now)
		}
	}
	return next
}

// startAttempt sends t's next attempt (and its duplicate, if asked) from a
// goroutine of its own; false when the server is stopping. Server.mu is
// held.
func (s *Server) startAttempt(t *task, now time.Time) bool {
	if s.stopped {
		return false
	}
	pb := t.pb
	a := attempt{
		task: t, name: pb.Name, req: proto.Clone(pb.GetHttpRequest()).(*cloudtaskspb.HttpRequest),
		retryCount: pb.DispatchCount, executions: t.executions, eta: pb.ScheduleTime.AsTime(),
		previous: t.previous, reason: t.reason, deadline: max(s.scaled(pb.DispatchDeadline.AsDuration()), time.Millisecond),
	}
	t.inflight++
	t.queue.running++
	pb.DispatchCount++
	pb.LastAttempt = &cloudtaskspb.Attempt{ScheduleTime: pb.ScheduleTime, DispatchTime: timestamppb.New(now)}
	if pb.FirstAttempt == nil {
		pb.FirstAttempt = &cloudtaskspb.Attempt{DispatchTime: timestamppb.New(now)}
		t.firstDispatch = now
	}
	s.send(a, now)
	if s.opts.Duplicate == DuplicateConcurrently {
		s.sendDuplicate(a, now)
	}
	return true
}

// send records a's dispatch and sends it. Server.mu is held.
func (s *Server) send(a attempt, now time.Time) {
	s.stats.Dispatches++
	s.record(Event{At: now, Kind: Dispatched, Task: a.name, RetryCount: a.retryCount, Duplicate: a.duplicate})
	s.wg.Go(func() { s.finish(a, s.deliver(a)) })
}

// sendDuplicate sends a's request once more. Server.mu is held.
func (s *Server) sendDuplicate(a attempt, now time.Time) {
	if s.stopped {
		return
	}
	a.duplicate = true
	s.stats.Duplicates++
	s.send(a, now)
}

// deliver makes a's HTTP request and waits for its response, at most a's
// deadline.
func (s *Server) deliver(a attempt) response {
	ctx, cancel := context.WithTimeout(s.base, a.deadline)
	defer cancel()
	req, err := s.request(ctx, a)
	if err != nil {
		return response{err: err}
	}
	resp, err := s.http.Do(req)
	if err != nil {
		if s.base.Err() != nil {
			return response{err: err, cancelled: true}
		}
		if errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("%w: no response within the dispatch deadline", context.DeadlineExceeded)
		}
		return response{err: err}
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	return response{status: resp.StatusCode}
}

// request is a's HTTP request: the task's method, URL, body and headers,
// with the headers Cloud Tasks sets or replaces.
func (s *Server) request(ctx context.Context, a attempt) (*http.Request, error) {
	method := a.req.GetHttpMethod().String()
	var body io.Reader
	if len(a.req.GetBody()) > 0 {
		body = bytes.NewReader(a.req.GetBody())
	}
	req, err := http.NewRequestWithContext(ctx, method, a.req.GetUrl(), body)
	if err != nil {
		return nil, fmt.Errorf("task %s: %w", a.name, err)
	}
	for k, v := range a.req.GetHeaders() {
		if !reserved(http.CanonicalHeaderKey(k)) {
			req.Header.Set(k, v)
		}
	}
	h := req.Header
	h.Set("User-Agent", userAgent)
	h.Set(headerQueue, path.Base(path.Dir(path.Dir(a.name))))
	h.Set(headerTask, path.Base(a.name))
	h.Set(headerRetryCount, strconv.Itoa(int(a.retryCount)))
	h.Set(headerExecutionCount, strconv.Itoa(int(a.executions)))
	h.Set(headerETA, fmt.Sprintf("%d.%06d", a.eta.Unix(), a.eta.Nanosecond()/1000))
	if a.retryCount > 0 {
		if a.previous != 0 {
			h.Set(headerPreviousResponse, strconv.Itoa(a.previous))
		}
		h.Set(headerRetryReason, a.reason)
	}
	if o := a.req.GetOidcToken(); o != nil {
		token, err := s.opts.Signer(ctx, o.GetServiceAccountEmail(), cmp.Or(o.GetAudience(), a.req.GetUrl()))
		if err != nil {
			return nil, fmt.Errorf("task %s: oidc token: %w", a.name, err)
		}
		h.Set("Authorization", "Bearer "+token)
	}
	return req, nil
}

// reserved says whether Cloud Tasks computes or drops header k (canonical)
// whatever the task says.
func reserved(k string) bool {
	switch k {
	case "Host", "Content-Length", "User-Agent":
		return true
	}
	return strings.HasPrefix(k, "X-Google-") || strings.HasPrefix(k, "X-Appengine-") || strings.HasPrefix(k, "X-Cloudtasks-")
}

// finish applies r to a's task: a 2xx completes it, a failure schedules the
// next attempt after the queue's backoff or, with no attempt left, ends it.
// The response of a duplicate, or of an attempt whose task has gone,
// changes nothing.
func (s *Server) finish(a attempt, r response) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	ev := Event{At: now, Task: a.name, RetryCount: a.retryCount, Duplicate: a.duplicate, Status: r.status, Err: r.err}
	switch {
	case r.cancelled:
		ev.Kind = Cancelled
	case a.duplicate:
		ev.Kind = Dropped
	}
	if !a.duplicate {
		t := a.task
		t.inflight--
		t.queue.running--
		s.notify()
		if !r.cancelled {
			s.noteResponse(t, now, r)
			ev.Kind, ev.Next = s.decide(t, now, r)
		}
	}
	s.record(ev)
	if ev.Kind == Completed && s.opts.Duplicate == DuplicateAfterCompletion {
		s.sendDuplicate(a, now)
	}
	if r.err != nil || r.status/100 != 2 {
		s.opts.Logger.Debug("localtasks: attempt failed", "task", a.name, "retry", a.retryCount, "status", r.status, "err", r.err, "outcome", ev.Kind)
	}
}

// decide ends t or schedules its next attempt after response r, and says
// which. Server.mu is held.
func (s *Server) decide(t *task, now time.Time, r response) (Kind, time.Time) {
	switch {
	case t.gone:
		return Dropped, time.Time{}
	case r.err == nil && r.status/100 == 2:
		s.remove(t, now)
		return Completed, time.Time{}
	case s.exhausted(t, now):
		s.remove(t, now)
		return Exhausted, time.Time{}
	}
	delay := backoff(t.queue.pb.RetryConfig, t.pb.DispatchCount)
	next := now.Add(delay)
	t.pb.ScheduleTime = timestamppb.New(next)
	t.due = now.Add(s.scaled(delay))
	return Retrying, next
}

// noteResponse records r as t's latest attempt's outcome. Server.mu is held.
func (s *Server) noteResponse(t *task, now time.Time, r response) {
	if la := t.pb.LastAttempt; la != nil {
		la.ResponseTime = timestamppb.New(now)
		la.ResponseStatus = rpcStatus(r)
	}
	t.previous = r.status
	if r.status != 0 {
		t.pb.ResponseCount++
		if r.status < 500 {
			t.executions++
		}
	}
	switch {
	case errors.Is(r.err, context.DeadlineExceeded):
		t.reason = "deadline exceeded"
	case r.err != nil:
		t.reason = "no response"
	default:
		t.reason = "HTTP " + strconv.Itoa(r.status)
	}
}

// exhausted says whether t, which just failed, has no attempt left: it was
// attempted max_attempts times and, when the queue sets one, its
// max_retry_duration (scaled) has passed since its first attempt.
func (s *Server) exhausted(t *task, now time.Time) bool {
	c := t.queue.pb.RetryConfig
	window := c.GetMaxRetryDuration().AsDuration()
	attempts := c.GetMaxAttempts() >= 0 && t.pb.DispatchCount >= c.GetMaxAttempts()
	if c.GetMaxAttempts() == -1 {
		attempts = window > 0
	}
	return attempts && (window == 0 || now.Sub(t.firstDispatch) >= s.scaled(window))
}

// backoff is the wait before the next attempt of a task attempted attempts
// times: min_backoff, doubled max_doublings times, then growing by the last
// doubled value each retry, never more than max_backoff (RetryConfig's
// max_doublings documents 10s, 20s, 40s, 80s, 160s, 240s, 300s, 300s for
// 10s, 300s and 3 doublings).
func backoff(c *cloudtaskspb.RetryConfig, attempts int32) time.Duration {
	lo, hi := c.GetMinBackoff().AsDuration(), c.GetMaxBackoff().AsDuration()
	retry := int64(attempts) - 1
	doublings := min(retry, int64(c.GetMaxDoublings()))
	delay := lo
	for range doublings {
		if delay >= hi {
			return hi
		}
		delay *= 2
	}
	if linear := retry - doublings; linear > 0 && delay > 0 {
		if int64((hi-delay)/delay) < linear {
			return hi
		}
		delay += delay * time.Duration(linear)
	}
	return min(max(delay, lo), hi)
}

// rpcStatus is r as Attempt.response_status: the HTTP status's gRPC code,
// or why no response came.
func rpcStatus(r response) *rpcstatus.Status {
	switch {
	case errors.Is(r.err, context.DeadlineExceeded):
		return &rpcstatus.Status{Code: int32(codes.DeadlineExceeded), Message: r.err.Error()}
	case r.err != nil:
		return &rpcstatus.Status{Code: int32(codes.Unavailable), Message: r.err.Error()}
	}
	return &rpcstatus.Status{Code: int32(httpCode(r.status)), Message: http.StatusText(r.status)}
}

// httpCode maps an HTTP status to a gRPC code as google.rpc.Code documents.
func httpCode(status int) codes.Code {
	switch status {
	case 400:
		return codes.InvalidArgument
	case 401:
		return codes.Unauthenticated
	case 403:
		return codes.PermissionDenied
	case 404:
		return codes.NotFound
	case 409:
		return codes.Aborted
	case 429:
		return codes.ResourceExhausted
	case 499:
		return codes.Canceled
	case 501:
		return codes.Unimplemented
	case 503:
		return codes.Unavailable
	case 504:
		return codes.DeadlineExceeded
	}
	switch status / 100 {
	case 2:
		return codes.OK
	case 4:
		return codes.FailedPrecondition
	case 5:
		return codes.Internal
	}
	return codes.Unknown
}
