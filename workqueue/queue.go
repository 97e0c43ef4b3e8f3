package workqueue

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	cloudtasks "cloud.google.com/go/cloudtasks/apiv2"
	"cloud.google.com/go/cloudtasks/apiv2/cloudtaskspb"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	otelcodes "go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
)

var tracer = otel.Tracer("github.com/baton-run/baton/workqueue")

// Deadlines a task may carry: Cloud Tasks takes 15 seconds to 30 minutes
// for an HTTP task.
const (
	MinDeadline = 15 * time.Second
	MaxDeadline = 30 * time.Minute
)

// ErrInvalidTask: a delivery's body is not a task of this package.
var ErrInvalidTask = errors.New("invalid task")

// Config says where a Queue's tasks go.
type Config struct {
	// Queue is the queue's full name:
	// projects/PROJECT/locations/LOCATION/queues/QUEUE.
	Queue string
	// URL is where the tasks are delivered: the Work function.
	URL string
	// Invoker is the service account whose OIDC token each delivery
	// carries, for the audience Audience (default: URL).
	Invoker, Audience string
	// Deadline is how long a delivery may take before the queue counts it
	// failed and retries it: MinDeadline to MaxDeadline; default
	// MaxDeadline.
	Deadline time.Duration
}

// Queue creates and deletes the tasks of background calls.
type Queue struct {
	client *cloudtasks.Client
	cfg    Config
}

// New returns the queue cfg names, reached through client.
func New(client *cloudtasks.Client, cfg Config) (*Queue, error) {
	if cfg.Deadline == 0 {
		cfg.Deadline = MaxDeadline
	}
	if cfg.Audience == "" {
		cfg.Audience = cfg.URL
	}
	parts := strings.Split(cfg.Queue, "/")
	switch u, err := url.Parse(cfg.URL); {
	case len(parts) != 6 || parts[0] != "projects" || parts[2] != "locations" || parts[4] != "queues" || slices.Contains(parts, ""):
		return nil, fmt.Errorf("queue %q: want projects/PROJECT/locations/LOCATION/queues/QUEUE", cfg.Queue)
	case err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "":
		return nil, fmt.Errorf("worker URL %q: want an http(s) URL", cfg.URL)
	case cfg.Deadline < MinDeadline || cfg.Deadline > MaxDeadline:
		return nil, fmt.Errorf("dispatch deadline %s: want %s to %s", cfg.Deadline, MinDeadline, MaxDeadline)
	}
	return &Queue{client: client, cfg: cfg}, nil
}

// Deadline is how long a delivery may take before the queue retries it.
func (q *Queue) Deadline() time.Duration { return q.cfg.Deadline }

// Task names one background call's work: the call, and the session
// whose record holds it. It is what a delivery's body carries.
type Task struct {
	App     string `json:"app"`
	User    string `json:"user"`
	Session string `json:"session"`
	Call    string `json:"call"`
	// Step names one of several tasks of a call (a remote call's reply to
	// a question, its cancel); "" for the call's first. It only changes
	// the task's name: the worker decides what to do from the call's
	// record.
	Step string `json:"step,omitempty"`
}

// ID is the task's id within the queue: a hash of the call, so that the
// same call always makes the same task.
func (t Task) ID() string {
	b, _ := json.Marshal(t) // four strings always encode
	sum := sha256.Sum256(b)
	return "call-" + hex.EncodeToString(sum[:])
}

// TaskName is t's full name in q.
func (q *Queue) TaskName(t Task) string { return q.cfg.Queue + "/tasks/" + t.ID() }

// Decode reads the task a delivery's body carries.
func Decode(body []byte) (Task, error) {
	var t Task
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&t); err != nil {
		return Task{}, fmt.Errorf("%w: %w", ErrInvalidTask, err)
	}
	if t.App == "" || t.User == "" || t.Session == "" || t.Call == "" {
		return Task{}, fmt.Errorf("%w: app, user, session and call are required", ErrInvalidTask)
	}
	return t, nil
}

// Enqueue creates t's task, delivered at once. A task of that name that
// exists, or existed within the last hour or so, counts as created: it
// returns nil, and the work is not queued twice.
func (q *Queue) Enqueue(ctx context.Context, t Task) (err error) {
	ctx, span := tracer.Start(ctx, "baton.workqueue.enqueue", trace.WithAttributes(attribute.String("baton.call.id", t.Call)))
	defer func() { endSpan(span, err) }()
	body, err := json.Marshal(t)
	if err != nil {
		return fmt.Errorf("encode task of %q: %w", t.Call, err)
	}
	_, err = q.client.CreateTask(ctx, &cloudtaskspb.CreateTaskRequest{Parent: q.cfg.Queue, Task: &cloudtaskspb.Task{
		Name:             q.TaskName(t),
		DispatchDeadline: durationpb.New(q.cfg.Deadline),
		MessageType: &cloudtaskspb.Task_HttpRequest{HttpRequest: &cloudtaskspb.HttpRequest{
			Url:        q.cfg.URL,
			HttpMethod: cloudtaskspb.HttpMethod_POST,
			Headers:    map[string]string{"Content-Type": "application/json"},
			Body:       body,
			AuthorizationHeader: &cloudtaskspb.HttpRequest_OidcToken{OidcToken: &cloudtaskspb.OidcToken{
				ServiceAccountEmail: q.cfg.Invoker, Audience: q.cfg.Audience,
			}},
		}},
	}})
	if code(err) == codes.AlreadyExists {
		return nil
	}
	if err != nil {
		return fmt.Errorf("create task of %q: %w", t.Call, err)
	}
	return nil
}

// Delete deletes t's task, so that a call cancelled before its delivery
// is not delivered. A task already gone (delivered, deleted) is no error.
// A delivery under way finishes; the queue does not retry it.
func (q *Queue) Delete(ctx context.Context, t Task) (err error) {
	ctx, span := tracer.Start(ctx, "baton.workqueue.delete", trace.WithAttributes(attribute.String("baton.call.id", t.Call)))
	defer func() { endSpan(span, err) }()
	err = q.client.DeleteTask(ctx, &cloudtaskspb.DeleteTaskRequest{Name: q.TaskName(t)})
	if code(err) == codes.NotFound {
		return nil
	}
	if err != nil {
		return fmt.Errorf("delete task of %q: %w", t.Call, err)
	}
	return nil
}

// code is the gRPC code of an error of Cloud Tasks: the one place this
// package reads codes.
func code(err error) codes.Code {
	if err == nil {
		return codes.OK
	}
	s, _ := status.FromError(err)
	return s.Code()
}

func endSpan(span trace.Span, err error) {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(otelcodes.Error, err.Error())
	}
	span.End()
}
