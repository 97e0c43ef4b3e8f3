package localtasks

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	cloudtasks "cloud.google.com/go/cloudtasks/apiv2"
	"cloud.google.com/go/cloudtasks/apiv2/cloudtaskspb"
	"google.golang.org/api/iterator"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
)

const (
	testLocation = "projects/test-project/locations/here"
	testQueue    = testLocation + "/queues/work"
)

// fixture is a server with one queue and a worker that records what it is
// sent and answers as the test says.
type fixture struct {
	s      *Server
	client *cloudtasks.Client
	queue  string
	worker *worker
}

// delivery is one request the worker received.
type delivery struct {
	at     time.Time
	header http.Header
	body   []byte
}

// worker is the tasks' HTTP target. answer decides each response (nil:
// 200); it may block, on its request's context for instance.
type worker struct {
	srv    *httptest.Server
	answer func(r *http.Request, d delivery) int

	mu  sync.Mutex
	got []delivery
}

func (w *worker) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	d := delivery{at: time.Now(), header: r.Header.Clone(), body: body}
	w.mu.Lock()
	w.got = append(w.got, d)
	w.mu.Unlock()
	code := http.StatusOK
	if w.answer != nil {
		code = w.answer(r, d)
	}
	rw.WriteHeader(code)
}

// deliveries returns what the worker received for the task with short name
// id, in order.
func (w *worker) deliveries(id string) []delivery {
	w.mu.Lock()
	defer w.mu.Unlock()
	var got []delivery
	for _, d := range w.got {
		if d.header.Get(headerTask) == id {
			got = append(got, d)
		}
	}
	return got
}

// newFixture starts a server with opts, a queue with the given retry
// config (nil: defaults) and a worker answering with answer.
func newFixture(t *testing.T, opts *Options, retry *cloudtaskspb.RetryConfig, answer func(*http.Request, delivery) int) *fixture {
	t.Helper()
	w := &worker{answer: answer}
	w.srv = httptest.NewServer(w)
	t.Cleanup(w.srv.Close)
	s, err := Start(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop) // before the worker closes: Stop cancels what it waits for
	f := &fixture{s: s, client: s.Client(), queue: testQueue, worker: w}
	_, err = f.client.CreateQueue(t.Context(), &cloudtaskspb.CreateQueueRequest{
		Parent: testLocation, Queue: &cloudtaskspb.Queue{Name: testQueue, RetryConfig: retry},
	})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// create creates a task for the worker's path with the given short name
// ("" for a generated one), changed by mutate, and returns its full name.
func (f *fixture) create(t *testing.T, id string, mutate func(*cloudtaskspb.Task)) string {
	t.Helper()
	task, err := f.client.CreateTask(t.Context(), f.request(id, mutate))
	if err != nil {
		t.Fatalf("CreateTask(%q) error = %v", id, err)
	}
	return task.GetName()
}

func (f *fixture) request(id string, mutate func(*cloudtaskspb.Task)) *cloudtaskspb.CreateTaskRequest {
	task := &cloudtaskspb.Task{MessageType: &cloudtaskspb.Task_HttpRequest{HttpRequest: &cloudtaskspb.HttpRequest{
		Url: f.worker.srv.URL + "/work", Body: []byte(`{"call":"c1"}`),
		Headers: map[string]string{"Content-Type": "application/json"},
	}}}
	if id != "" {
		task.Name = f.queue + "/tasks/" + id
	}
	if mutate != nil {
		mutate(task)
	}
	return &cloudtaskspb.CreateTaskRequest{Parent: f.queue, Task: task}
}

// wait returns the first event of task of kind k, failing t after a bound.
func (f *fixture) wait(t *testing.T, task string, k Kind) Event {
	t.Helper()
	return f.waitFor(t, fmt.Sprintf("%s of %s", k, task), Is(task, k))
}

// waitFor returns the first event match accepts, failing t after a bound.
func (f *fixture) waitFor(t *testing.T, what string, match func(Event) bool) Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	e, err := f.s.Wait(ctx, match)
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
	return e
}

// events returns the events so far of task.
func (f *fixture) events(task string) []Event {
	f.s.mu.Lock()
	defer f.s.mu.Unlock()
	var got []Event
	for _, e := range f.s.events {
		if e.Task == task {
			got = append(got, e)
		}
	}
	return got
}

func wantCode(t *testing.T, what string, err error, want codes.Code) {
	t.Helper()
	if got := status.Code(err); got != want {
		t.Errorf("%s error = %v, want code %v", what, err, want)
	}
}

func deadline(d time.Duration) func(*cloudtaskspb.Task) {
	return func(task *cloudtaskspb.Task) { task.DispatchDeadline = durationpb.New(d) }
}

// all drains a client's list iterator.
func all[T any](t *testing.T, next func() (T, error)) []T {
	t.Helper()
	var got []T
	for {
		v, err := next()
		if errors.Is(err, iterator.Done) {
			return got
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, v)
	}
}
