package localtasks

import (
	"context"
	"regexp"
	"slices"
	"strings"
	"time"

	"cloud.google.com/go/cloudtasks/apiv2/cloudtaskspb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
)

// The API's resource names, as Task.name and Queue.name document them.
var (
	locationName = regexp.MustCompile(`^projects/[A-Za-z0-9:.-]+/locations/[A-Za-z0-9-]+$`)
	queueName    = regexp.MustCompile(`^(projects/[A-Za-z0-9:.-]+/locations/[A-Za-z0-9-]+)/queues/([A-Za-z0-9-]{1,100})$`)
	taskID       = regexp.MustCompile(`^[A-Za-z0-9_-]{1,500}$`)
)

// The defaults Cloud Tasks picks for a queue's unset (zero) settings, and
// the bounds it documents.
const (
	defaultDispatchesPerSecond = 500
	defaultConcurrent          = 1000
	defaultBurst               = 100
	maxConcurrent              = 5000
	defaultMaxAttempts         = 100
	defaultMinBackoff          = 100 * time.Millisecond
	defaultMaxBackoff          = time.Hour
	defaultMaxDoublings        = 16
)

// queue is a stored queue; Server.mu guards it.
type queue struct {
	pb      *cloudtaskspb.Queue // every setting filled (settle)
	running int                 // attempts in flight, duplicates aside
}

// api serves the Cloud Tasks gRPC API on a Server's state.
type api struct {
	cloudtaskspb.UnimplementedCloudTasksServer
	s *Server
}

var _ cloudtaskspb.CloudTasksServer = (*api)(nil)

func (a *api) CreateQueue(ctx context.Context, req *cloudtaskspb.CreateQueueRequest) (*cloudtaskspb.Queue, error) {
	if !locationName.MatchString(req.GetParent()) {
		return nil, status.Errorf(codes.InvalidArgument, "parent %q is not projects/P/locations/L", req.GetParent())
	}
	m := queueName.FindStringSubmatch(req.GetQueue().GetName())
	if m == nil || m[1] != req.GetParent() {
		return nil, status.Errorf(codes.InvalidArgument, "queue name %q is not %s/queues/ID", req.GetQueue().GetName(), req.GetParent())
	}
	q := proto.Clone(req.GetQueue()).(*cloudtaskspb.Queue)
	if err := settle(q); err != nil {
		return nil, err
	}
	s := a.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.queues[q.Name] != nil {
		return nil, status.Errorf(codes.AlreadyExists, "queue %q exists", q.Name)
	}
	s.queues[q.Name] = &queue{pb: q}
	return proto.Clone(q).(*cloudtaskspb.Queue), nil
}

func (a *api) GetQueue(ctx context.Context, req *cloudtaskspb.GetQueueRequest) (*cloudtaskspb.Queue, error) {
	s := a.s
	s.mu.Lock()
	defer s.mu.Unlock()
	q := s.queues[req.GetName()]
	if q == nil {
		return nil, status.Errorf(codes.NotFound, "queue %q not found", req.GetName())
	}
	return proto.Clone(q.pb).(*cloudtaskspb.Queue), nil
}

// UpdateQueue changes the settings the mask names (all of them without a
// mask), or creates the queue when it does not exist.
func (a *api) UpdateQueue(ctx context.Context, req *cloudtaskspb.UpdateQueueRequest) (*cloudtaskspb.Queue, error) {
	in := req.GetQueue()
	if queueName.FindStringSubmatch(in.GetName()) == nil {
		return nil, status.Errorf(codes.InvalidArgument, "queue name %q is not projects/P/locations/L/queues/ID", in.GetName())
	}
	s := a.s
	s.mu.Lock()
	defer s.mu.Unlock()
	var q *cloudtaskspb.Queue
	if old := s.queues[in.Name]; old != nil {
		q = proto.Clone(old.pb).(*cloudtaskspb.Queue)
		if err := applyMask(q, in, req.GetUpdateMask().GetPaths()); err != nil {
			return nil, err
		}
	} else {
		q = proto.Clone(in).(*cloudtaskspb.Queue)
	}
	if err := settle(q); err != nil {
		return nil, err
	}
	if old := s.queues[q.Name]; old != nil {
		old.pb = q
	} else {
		s.queues[q.Name] = &queue{pb: q}
	}
	s.notify() // a higher concurrency may let waiting tasks go
	return proto.Clone(q).(*cloudtaskspb.Queue), nil
}

func (a *api) ListQueues(ctx context.Context, req *cloudtaskspb.ListQueuesRequest) (*cloudtaskspb.ListQueuesResponse, error) {
	if !locationName.MatchString(req.GetParent()) {
		return nil, status.Errorf(codes.InvalidArgument, "parent %q is not projects/P/locations/L", req.GetParent())
	}
	if req.GetFilter() != "" {
		return nil, status.Error(codes.InvalidArgument, "queue filters are not served here")
	}
	s := a.s
	s.mu.Lock()
	defer s.mu.Unlock()
	names, next, err := page(s.queues, req.GetParent()+"/queues/", req.GetPageSize(), req.GetPageToken())
	if err != nil {
		return nil, err
	}
	resp := &cloudtaskspb.ListQueuesResponse{NextPageToken: next}
	for _, name := range names {
		resp.Queues = append(resp.Queues, proto.Clone(s.queues[name].pb).(*cloudtaskspb.Queue))
	}
	return resp, nil
}

// applyMask copies into q the settings of in that paths name; no paths
// means all the settings a caller may set.
func applyMask(q, in *cloudtaskspb.Queue, paths []string) error {
	if len(paths) == 0 {
		paths = []string{"rate_limits", "retry_config", "stackdriver_logging_config"}
	}
	if q.RateLimits == nil {
		q.RateLimits = &cloudtaskspb.RateLimits{}
	}
	if q.RetryConfig == nil {
		q.RetryConfig = &cloudtaskspb.RetryConfig{}
	}
	r, c := in.GetRateLimits(), in.GetRetryConfig()
	for _, p := range paths {
		switch p {
		case "rate_limits":
			q.RateLimits = r
		case "rate_limits.max_dispatches_per_second":
			q.RateLimits.MaxDispatchesPerSecond = r.GetMaxDispatchesPerSecond()
		case "rate_limits.max_concurrent_dispatches":
			q.RateLimits.MaxConcurrentDispatches = r.GetMaxConcurrentDispatches()
		case "retry_config":
			q.RetryConfig = c
		case "retry_config.max_attempts":
			q.RetryConfig.MaxAttempts = c.GetMaxAttempts()
		case "retry_config.max_retry_duration":
			q.RetryConfig.MaxRetryDuration = c.GetMaxRetryDuration()
		case "retry_config.min_backoff":
			q.RetryConfig.MinBackoff = c.GetMinBackoff()
		case "retry_config.max_backoff":
			q.RetryConfig.MaxBackoff = c.GetMaxBackoff()
		case "retry_config.max_doublings":
			q.RetryConfig.MaxDoublings = c.GetMaxDoublings()
		case "stackdriver_logging_config":
			q.StackdriverLoggingConfig = in.GetStackdriverLoggingConfig()
		default:
			return status.Errorf(codes.InvalidArgument, "update mask path %q is not served here", p)
		}
	}
	return nil
}

// settle fills q's unset settings with Cloud Tasks' defaults and checks the
// rest against the documented bounds. A zero value counts as unset, as
// proto3 cannot tell them apart.
func settle(q *cloudtaskspb.Queue) error {
	if q.GetAppEngineRoutingOverride() != nil {
		return status.Error(codes.InvalidArgument, "App Engine routing is not served here")
	}
	if q.RateLimits == nil {
		q.RateLimits = &cloudtaskspb.RateLimits{}
	}
	r := q.RateLimits
	if r.MaxDispatchesPerSecond == 0 {
		r.MaxDispatchesPerSecond = defaultDispatchesPerSecond
	}
	if r.MaxConcurrentDispatches == 0 {
		r.MaxConcurrentDispatches = defaultConcurrent
	}
	r.MaxBurstSize = defaultBurst
	if r.MaxDispatchesPerSecond < 0 || r.MaxDispatchesPerSecond > defaultDispatchesPerSecond ||
		r.MaxConcurrentDispatches < 0 || r.MaxConcurrentDispatches > maxConcurrent {
		return status.Errorf(codes.InvalidArgument, "rate limits %v out of range", r)
	}
	if q.RetryConfig == nil {
		q.RetryConfig = &cloudtaskspb.RetryConfig{}
	}
	c := q.RetryConfig
	if c.MaxAttempts == 0 {
		c.MaxAttempts = defaultMaxAttempts
	}
	if c.MaxDoublings == 0 {
		c.MaxDoublings = defaultMaxDoublings
	}
	c.MinBackoff = orDefault(c.MinBackoff, defaultMinBackoff)
	c.MaxBackoff = orDefault(c.MaxBackoff, defaultMaxBackoff)
	c.MaxRetryDuration = orDefault(c.MaxRetryDuration, 0)
	if c.MaxAttempts < -1 || c.MaxDoublings < 0 || c.MaxRetryDuration.AsDuration() < 0 ||
		c.MinBackoff.AsDuration() < 0 || c.MinBackoff.AsDuration() > c.MaxBackoff.AsDuration() {
		return status.Errorf(codes.InvalidArgument, "retry config %v out of range", c)
	}
	q.State = cloudtaskspb.Queue_RUNNING
	return nil
}

func orDefault(d *durationpb.Duration, def time.Duration) *durationpb.Duration {
	if d == nil || d.AsDuration() == 0 {
		return durationpb.New(def)
	}
	return d
}

// maxPage is the largest page the API returns, and the size of an
// unspecified one.
const maxPage = 1000

// page returns, in name order, the keys of m under prefix that come after
// token (the last name of the page before), at most size, with the token
// of the next page (empty on the last).
func page[V any](m map[string]V, prefix string, size int32, token string) ([]string, string, error) {
	if size < 0 {
		return nil, "", status.Errorf(codes.InvalidArgument, "page size %d", size)
	}
	if size == 0 || size > maxPage {
		size = maxPage
	}
	var names []string
	for name := range m {
		if strings.HasPrefix(name, prefix) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	start, _ := slices.BinarySearch(names, token)
	if start < len(names) && names[start] == token {
		start++
	}
	names = names[start:]
	if len(names) <= int(size) {
		return names, "", nil
	}
	names = names[:size]
	return names, names[len(names)-1], nil
}
