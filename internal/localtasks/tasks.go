package localtasks

import (
	"context"
	"net/url"
	"strings"
	"time"

	"cloud.google.com/go/cloudtasks/apiv2/cloudtaskspb"
	"google.golang.org/adk/v2/platform"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// The documented bounds of an HTTP task.
const (
	defaultDeadline = 10 * time.Minute
	minDeadline     = 15 * time.Second
	maxDeadline     = 30 * time.Minute
	maxTaskSize     = 100 << 10
	maxURLLength    = 2083
)

// task is a stored task; Server.mu guards it.
type task struct {
	pb       *cloudtaskspb.Task // the FULL view, with the counts and attempts
	queue    *queue
	due      time.Time // when the scheduler may start its next attempt (scaled waits)
	inflight int       // attempts sent and not answered, duplicates aside
	gone     bool      // completed, exhausted or deleted: no longer in Server.tasks

	firstDispatch time.Time
	executions    int32  // responses other than 5xx, for X-CloudTasks-TaskExecutionCount
	previous      int    // the HTTP status of the latest response, 0 when the latest attempt had none
	reason        string // why the latest attempt failed
}

func (a *api) CreateTask(ctx context.Context, req *cloudtaskspb.CreateTaskRequest) (*cloudtaskspb.Task, error) {
	s := a.s
	if err := checkTask(req.GetTask(), s.opts.Signer != nil); err != nil {
		return nil, err
	}
	now := s.now()
	t := proto.Clone(req.GetTask()).(*cloudtaskspb.Task)
	if r := t.GetHttpRequest(); r.HttpMethod == cloudtaskspb.HttpMethod_HTTP_METHOD_UNSPECIFIED {
		r.HttpMethod = cloudtaskspb.HttpMethod_POST
	}
	if t.DispatchDeadline == nil {
		t.DispatchDeadline = durationpb.New(defaultDeadline)
	}
	if t.ScheduleTime == nil || t.ScheduleTime.AsTime().Before(now) {
		t.ScheduleTime = timestamppb.New(now)
	}
	t.ScheduleTime = timestamppb.New(t.ScheduleTime.AsTime().Truncate(time.Microsecond))
	t.CreateTime = timestamppb.New(now.Truncate(time.Second))
	t.DispatchCount, t.ResponseCount, t.FirstAttempt, t.LastAttempt = 0, 0, nil, nil

	s.mu.Lock()
	defer s.mu.Unlock()
	q := s.queues[req.GetParent()]
	if q == nil {
		return nil, status.Errorf(codes.NotFound, "queue %q not found", req.GetParent())
	}
	if t.Name == "" {
		t.Name = s.newTaskName(q.pb.Name)
	}
	id, ok := strings.CutPrefix(t.Name, q.pb.Name+"/tasks/")
	if !ok || !taskID.MatchString(id) {
		return nil, status.Errorf(codes.InvalidArgument, "task name %q is not %s/tasks/ID", t.Name, q.pb.Name)
	}
	if s.tasks[t.Name] != nil || s.tombstoned(t.Name, now) {
		return nil, status.Errorf(codes.AlreadyExists, "task %q exists or existed too recently", t.Name)
	}
	s.tasks[t.Name] = &task{pb: t, queue: q, due: t.ScheduleTime.AsTime()}
	s.stats.Creates++
	s.notify()
	return view(t, req.GetResponseView()), nil
}

// checkTask refuses what the server does not serve (App Engine tasks, OAuth
// tokens, OIDC tokens without a Signer) and what Cloud Tasks refuses.
func checkTask(t *cloudtaskspb.Task, canSign bool) error {
	if t.GetAppEngineHttpRequest() != nil {
		return status.Error(codes.InvalidArgument, "App Engine tasks are not served here: use an http_request")
	}
	r := t.GetHttpRequest()
	if r == nil {
		return status.Error(codes.InvalidArgument, "the task has no http_request")
	}
	u, err := url.Parse(r.GetUrl())
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || len(r.GetUrl()) > maxURLLength {
		return status.Errorf(codes.InvalidArgument, "url %q is not an http:// or https:// URL", r.GetUrl())
	}
	switch r.GetHttpMethod() {
	case cloudtaskspb.HttpMethod_HTTP_METHOD_UNSPECIFIED, cloudtaskspb.HttpMethod_POST, cloudtaskspb.HttpMethod_PUT, cloudtaskspb.HttpMethod_PATCH:
	default:
		if len(r.GetBody()) > 0 {
			return status.Errorf(codes.InvalidArgument, "a %v request has no body", r.GetHttpMethod())
		}
	}
	if r.GetOauthToken() != nil {
		return status.Error(codes.InvalidArgument, "OAuth tokens are not served here: use an OIDC token")
	}
	if o := r.GetOidcToken(); o != nil {
		if o.GetServiceAccountEmail() == "" {
			return status.Error(codes.InvalidArgument, "the OIDC token has no service account")
		}
		if !canSign {
			return status.Error(codes.FailedPrecondition, "the task asks for an OIDC token and the server has no Signer")
		}
	}
	if d := t.GetDispatchDeadline(); d != nil && (d.AsDuration() < minDeadline || d.AsDuration() > maxDeadline) {
		return status.Errorf(codes.InvalidArgument, "dispatch deadline %v is not within [%v, %v]", d.AsDuration(), minDeadline, maxDeadline)
	}
	if proto.Size(t) > maxTaskSize {
		return status.Errorf(codes.InvalidArgument, "the task has %d bytes, more than %d", proto.Size(t), maxTaskSize)
	}
	return nil
}

// newTaskName names a task created without a name.
func (s *Server) newTaskName(queue string) string {
	for {
		name := queue + "/tasks/" + strings.ReplaceAll(platform.NewUUID(s.base), "-", "")
		if s.tasks[name] == nil && s.tombstones[name].IsZero() {
			return name
		}
	}
}

// tombstoned reports whether name belonged to a task that finished or was
// deleted less than Options.Tombstone ago.
func (s *Server) tombstoned(name string, now time.Time) bool {
	until, ok := s.tombstones[name]
	if ok && !now.Before(until) {
		delete(s.tombstones, name)
		return false
	}
	return ok
}

// remove ends t: it leaves the queue and its name stays taken for
// Options.Tombstone.
func (s *Server) remove(t *task, now time.Time) {
	delete(s.tasks, t.pb.Name)
	t.gone = true
	s.tombstones[t.pb.Name] = now.Add(s.opts.Tombstone)
}

// live returns the task named name, which has not ended. Server.mu is held.
func (s *Server) live(name string) (*task, error) {
	t := s.tasks[name]
	if t == nil {
		return nil, status.Errorf(codes.NotFound, "task %q not found", name)
	}
	return t, nil
}

func (a *api) GetTask(ctx context.Context, req *cloudtaskspb.GetTaskRequest) (*cloudtaskspb.Task, error) {
	s := a.s
	s.mu.Lock()
	defer s.mu.Unlock()
	t, err := s.live(req.GetName())
	if err != nil {
		return nil, err
	}
	return view(t.pb, req.GetResponseView()), nil
}

// DeleteTask removes a task; an attempt in flight runs to its end, and the
// task is never tried again.
func (a *api) DeleteTask(ctx context.Context, req *cloudtaskspb.DeleteTaskRequest) (*emptypb.Empty, error) {
	s := a.s
	s.mu.Lock()
	defer s.mu.Unlock()
	t, err := s.live(req.GetName())
	if err != nil {
		return nil, err
	}
	s.remove(t, s.now())
	return &emptypb.Empty{}, nil
}

func (a *api) ListTasks(ctx context.Context, req *cloudtaskspb.ListTasksRequest) (*cloudtaskspb.ListTasksResponse, error) {
	s := a.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.queues[req.GetParent()] == nil {
		return nil, status.Errorf(codes.NotFound, "queue %q not found", req.GetParent())
	}
	names, next, err := page(s.tasks, req.GetParent()+"/tasks/", req.GetPageSize(), req.GetPageToken())
	if err != nil {
		return nil, err
	}
	resp := &cloudtaskspb.ListTasksResponse{NextPageToken: next}
	for _, name := range names {
		resp.Tasks = append(resp.Tasks, view(s.tasks[name].pb, req.GetResponseView()))
	}
	return resp, nil
}

// RunTask dispatches a task now, whatever its schedule, its queue's limits
// or its attempts in flight, and returns it as dispatched.
func (a *api) RunTask(ctx context.Context, req *cloudtaskspb.RunTaskRequest) (*cloudtaskspb.Task, error) {
	s := a.s
	s.mu.Lock()
	defer s.mu.Unlock()
	t, err := s.live(req.GetName())
	if err != nil {
		return nil, err
	}
	if !s.startAttempt(t, s.now()) {
		return nil, status.Error(codes.Unavailable, "the server is stopping")
	}
	return view(t.pb, req.GetResponseView()), nil
}

// view is a copy of t as the API returns it in view v: BASIC (the default)
// leaves out the body.
func view(t *cloudtaskspb.Task, v cloudtaskspb.Task_View) *cloudtaskspb.Task {
	c := proto.Clone(t).(*cloudtaskspb.Task)
	if v != cloudtaskspb.Task_FULL {
		v = cloudtaskspb.Task_BASIC
		c.GetHttpRequest().Body = nil
	}
	c.View = v
	return c
}
