package localtasks

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"cloud.google.com/go/cloudtasks/apiv2/cloudtaskspb"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"
)

func TestBackoff(t *testing.T) {
	t.Parallel()
	// RetryConfig.max_doublings' own example: 10s, 300s, 3 doublings.
	documented := &cloudtaskspb.RetryConfig{MinBackoff: durationpb.New(10 * time.Second), MaxBackoff: durationpb.New(300 * time.Second), MaxDoublings: 3}
	defaults := &cloudtaskspb.Queue{}
	if err := settle(defaults); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		config *cloudtaskspb.RetryConfig
		want   []time.Duration // after the 1st, 2nd, ... failed attempt
	}{
		{"documented example", documented, []time.Duration{10 * time.Second, 20 * time.Second, 40 * time.Second, 80 * time.Second,
			160 * time.Second, 240 * time.Second, 300 * time.Second, 300 * time.Second}},
		{"defaults", defaults.RetryConfig, []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond}},
		{"no doubling left", &cloudtaskspb.RetryConfig{MinBackoff: durationpb.New(time.Second), MaxBackoff: durationpb.New(time.Hour), MaxDoublings: 1},
			[]time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 6 * time.Second}},
	}
	for _, tt := range tests {
		var got []time.Duration
		for n := range len(tt.want) {
			got = append(got, backoff(tt.config, int32(n+1)))
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s: backoff (-want +got):\n%s", tt.name, diff)
		}
	}
	if got := backoff(defaults.RetryConfig, 100); got != time.Hour {
		t.Errorf("backoff after 100 attempts = %v, want max_backoff", got)
	}
}

func schedule(at time.Time) func(*cloudtaskspb.Task) {
	return func(task *cloudtaskspb.Task) { task.ScheduleTime = timestamppb.New(at) }
}

// eta is the X-CloudTasks-TaskETA of a schedule time.
func eta(at time.Time) string { return fmt.Sprintf("%d.%06d", at.Unix(), at.Nanosecond()/1000) }

// TestScheduleTime: a task is not dispatched before its schedule time, and
// its request carries the headers Cloud Tasks sets, its own and its body.
func TestScheduleTime(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil, nil, nil)
	at := time.Now().Add(200 * time.Millisecond).Truncate(time.Microsecond)
	name := f.create(t, "later", schedule(at))
	dispatched := f.wait(t, name, Dispatched)
	f.wait(t, name, Completed)
	got := f.worker.deliveries("later")
	if len(got) != 1 {
		t.Fatalf("deliveries = %d, want 1", len(got))
	}
	if dispatched.At.Before(at) || got[0].at.Before(at) {
		t.Errorf("dispatched at %v, received at %v; want not before %v", dispatched.At, got[0].at, at)
	}
	h := got[0].header
	wantHeaders := map[string]string{
		headerQueue: "work", headerTask: "later", headerRetryCount: "0", headerExecutionCount: "0", headerETA: eta(at),
		"User-Agent": userAgent, "Content-Type": "application/json",
	}
	for k, want := range wantHeaders {
		if h.Get(k) != want {
			t.Errorf("header %s = %q, want %q", k, h.Get(k), want)
		}
	}
	for _, k := range []string{headerPreviousResponse, headerRetryReason, "Authorization"} {
		if _, ok := h[k]; ok {
			t.Errorf("first attempt has header %s = %q, want none", k, h.Get(k))
		}
	}
	if string(got[0].body) != `{"call":"c1"}` {
		t.Errorf("body = %q, want the task's", got[0].body)
	}
}

// TestRetries: a failed attempt is retried after the queue's backoff
// (scaled by Options.TimeScale, reported unscaled) until max_attempts; each
// attempt's headers count the retries and the responses other than 5xx,
// and a retry says the previous response and why it is a retry.
func TestRetries(t *testing.T) {
	t.Parallel()
	statuses := []int{503, 404, 500}
	answer := func(r *http.Request, _ delivery) int {
		n, _ := strconv.Atoi(r.Header.Get(headerRetryCount))
		return statuses[n]
	}
	retry := &cloudtaskspb.RetryConfig{MaxAttempts: 3, MinBackoff: durationpb.New(time.Second), MaxBackoff: durationpb.New(10 * time.Second), MaxDoublings: 1}
	f := newFixture(t, &Options{TimeScale: 0.01}, retry, answer)
	name := f.create(t, "flaky", nil)
	f.wait(t, name, Exhausted)

	var kinds []Kind
	var retries []Event
	var dispatches []Event
	for _, e := range f.events(name) {
		kinds = append(kinds, e.Kind)
		switch e.Kind {
		case Retrying:
			retries = append(retries, e)
		case Dispatched:
			dispatches = append(dispatches, e)
		}
	}
	if diff := cmp.Diff([]Kind{Dispatched, Retrying, Dispatched, Retrying, Dispatched, Exhausted}, kinds); diff != "" {
		t.Fatalf("events (-want +got):\n%s", diff)
	}
	for i, want := range []time.Duration{time.Second, 2 * time.Second} {
		if got := retries[i].Next.Sub(retries[i].At); got != want {
			t.Errorf("retry %d scheduled %v after the failure, want %v", i+1, got, want)
		}
		if waited := dispatches[i+1].At.Sub(retries[i].At); waited < want/100 {
			t.Errorf("retry %d dispatched %v after the failure, want at least %v (scaled)", i+1, waited, want/100)
		}
	}
	got := f.worker.deliveries("flaky")
	if len(got) != 3 {
		t.Fatalf("deliveries = %d, want 3", len(got))
	}
	keys := []string{headerRetryCount, headerExecutionCount, headerPreviousResponse, headerRetryReason, headerETA}
	want := [][]string{
		{"0", "0", "", "", got[0].header.Get(headerETA)},
		{"1", "0", "503", "HTTP 503", eta(retries[0].Next)},
		{"2", "1", "404", "HTTP 404", eta(retries[1].Next)},
	}
	var headers [][]string
	for _, d := range got {
		var row []string
		for _, k := range keys {
			row = append(row, d.header.Get(k))
		}
		headers = append(headers, row)
	}
	if diff := cmp.Diff(want, headers); diff != "" {
		t.Errorf("headers %v per attempt (-want +got):\n%s", keys, diff)
	}
	_, err := f.client.GetTask(t.Context(), &cloudtaskspb.GetTaskRequest{Name: name})
	wantCode(t, "GetTask of an exhausted task", err, codes.NotFound)
	_, err = f.client.CreateTask(t.Context(), f.request("flaky", nil))
	wantCode(t, "CreateTask of an exhausted task's name", err, codes.AlreadyExists)
}

// TestDeadline: a request unanswered within the task's dispatch deadline
// is a failed attempt, retried with no previous response. (Under load a
// retry may miss its 150 ms deadline too: attempts are unlimited, and every
// retry the worker sees must say so.)
func TestDeadline(t *testing.T) {
	t.Parallel()
	var blocked atomic.Bool
	answer := func(r *http.Request, _ delivery) int {
		if blocked.CompareAndSwap(false, true) {
			<-r.Context().Done() // the server gives up at the deadline
		}
		return http.StatusOK
	}
	f := newFixture(t, &Options{TimeScale: 0.01}, &cloudtaskspb.RetryConfig{MaxAttempts: -1}, answer)
	name := f.create(t, "slow", deadline(15*time.Second))
	f.wait(t, name, Completed)
	first, failed := f.wait(t, name, Dispatched), f.wait(t, name, Retrying)
	if !errors.Is(failed.Err, context.DeadlineExceeded) || failed.Status != 0 {
		t.Errorf("first attempt = %+v, want a deadline error and no status", failed)
	}
	if waited := failed.At.Sub(first.At); waited < 150*time.Millisecond {
		t.Errorf("deadline passed after %v, want 15s scaled to 150ms", waited)
	}
	got := f.worker.deliveries("slow")
	if len(got) < 2 {
		t.Fatalf("deliveries = %d, want a retry", len(got))
	}
	for _, d := range got[1:] {
		h := d.header
		if h.Get(headerRetryCount) == "0" || h.Get(headerExecutionCount) != "0" || h.Get(headerRetryReason) != "deadline exceeded" || h.Get(headerPreviousResponse) != "" {
			t.Errorf("retry headers = %v, want a retry, no execution, reason deadline exceeded, no previous response", h)
		}
	}
}

// TestUnreachable: a target that refuses the connection fails the attempt.
func TestUnreachable(t *testing.T) {
	t.Parallel()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	lis.Close()
	f := newFixture(t, nil, &cloudtaskspb.RetryConfig{MaxAttempts: 1}, nil)
	name := f.create(t, "", func(task *cloudtaskspb.Task) { task.GetHttpRequest().Url = "http://" + addr + "/work" })
	if e := f.wait(t, name, Exhausted); e.Err == nil || e.Status != 0 {
		t.Errorf("attempt = %+v, want a connection error", e)
	}
}

// blocking answers the task named blocker only when released, telling
// entered when it arrives; every other task at once.
type blocking struct {
	entered chan struct{}
	release chan int
}

func newBlocking() *blocking {
	return &blocking{entered: make(chan struct{}, 1), release: make(chan int, 1)}
}

func (b *blocking) answer(r *http.Request, _ delivery) int {
	if r.Header.Get(headerTask) != "blocker" {
		return http.StatusOK
	}
	b.entered <- struct{}{}
	select {
	case code := <-b.release:
		return code
	case <-r.Context().Done():
		return http.StatusServiceUnavailable
	}
}

// TestConcurrencyLimit: a queue never has more attempts in flight than its
// max_concurrent_dispatches; a task waiting for room goes when one frees.
// (The tasks of another queue are dispatched meanwhile: the scheduler
// starts due tasks earliest first, so once that later task was dispatched,
// the waiting ones would have been too had the limit let them.)
func TestConcurrencyLimit(t *testing.T) {
	t.Parallel()
	b := newBlocking()
	f := newFixture(t, nil, nil, b.answer)
	ctx := t.Context()
	_, err := f.client.UpdateQueue(ctx, &cloudtaskspb.UpdateQueueRequest{Queue: &cloudtaskspb.Queue{
		Name: f.queue, RateLimits: &cloudtaskspb.RateLimits{MaxConcurrentDispatches: 1},
	}})
	if err != nil {
		t.Fatal(err)
	}
	blocker := f.create(t, "blocker", nil)
	<-b.entered
	waiting := []string{f.create(t, "second", nil), f.create(t, "third", nil)}
	other := *f
	other.queue = testLocation + "/queues/other"
	if _, err := f.client.CreateQueue(ctx, &cloudtaskspb.CreateQueueRequest{Parent: testLocation, Queue: &cloudtaskspb.Queue{Name: other.queue}}); err != nil {
		t.Fatal(err)
	}
	f.wait(t, other.create(t, "elsewhere", nil), Dispatched)
	for _, name := range waiting {
		if ev := f.events(name); len(ev) != 0 {
			t.Errorf("%s while the queue is full: events %+v, want none", name, ev)
		}
	}
	b.release <- http.StatusOK
	f.wait(t, blocker, Completed)
	for _, name := range waiting {
		f.wait(t, name, Completed)
	}
	if _, err := f.client.GetTask(ctx, &cloudtaskspb.GetTaskRequest{Name: waiting[0]}); err == nil {
		t.Error("GetTask of a completed task succeeded, want NotFound")
	}
}

// TestDeleteBeforeDispatch: a task deleted before its dispatch is never
// sent. It waits behind a blocker (max_concurrent_dispatches 1), and a task
// created after it is dispatched in its stead when the blocker ends.
func TestDeleteBeforeDispatch(t *testing.T) {
	t.Parallel()
	b := newBlocking()
	f := newFixture(t, nil, nil, b.answer)
	_, err := f.client.UpdateQueue(t.Context(), &cloudtaskspb.UpdateQueueRequest{Queue: &cloudtaskspb.Queue{
		Name: f.queue, RateLimits: &cloudtaskspb.RateLimits{MaxConcurrentDispatches: 1},
	}})
	if err != nil {
		t.Fatal(err)
	}
	f.create(t, "blocker", nil)
	<-b.entered
	doomed := f.create(t, "doomed", nil)
	if err := f.client.DeleteTask(t.Context(), &cloudtaskspb.DeleteTaskRequest{Name: doomed}); err != nil {
		t.Fatal(err)
	}
	after := f.create(t, "sentinel", nil)
	b.release <- http.StatusOK
	f.wait(t, after, Completed)
	if ev, got := f.events(doomed), f.worker.deliveries("doomed"); len(ev) != 0 || len(got) != 0 {
		t.Errorf("deleted task: events %+v, %d deliveries; want none", ev, len(got))
	}
}

// TestDeleteDuringDispatch: deleting a task whose attempt is in flight lets
// the attempt end and never retries the task, whatever its answer.
func TestDeleteDuringDispatch(t *testing.T) {
	t.Parallel()
	b := newBlocking()
	f := newFixture(t, &Options{TimeScale: 0.01}, nil, b.answer) // a retry would be due 1 ms after the failure
	name := f.create(t, "blocker", nil)
	<-b.entered
	ctx := t.Context()
	if err := f.client.DeleteTask(ctx, &cloudtaskspb.DeleteTaskRequest{Name: name}); err != nil {
		t.Fatal(err)
	}
	_, err := f.client.GetTask(ctx, &cloudtaskspb.GetTaskRequest{Name: name})
	wantCode(t, "GetTask of a deleted task", err, codes.NotFound)
	b.release <- http.StatusServiceUnavailable
	e := f.wait(t, name, Dropped)
	if e.Status != http.StatusServiceUnavailable {
		t.Errorf("the attempt in flight ended %+v, want its 503 dropped", e)
	}
	// Due after the retry would be: dispatched after it, had it been kept.
	f.wait(t, f.create(t, "sentinel", schedule(e.At.Add(5*time.Millisecond))), Completed)
	if got := len(f.worker.deliveries("blocker")); got != 1 {
		t.Errorf("deleted task delivered %d times, want once", got)
	}
	var kinds []Kind
	for _, e := range f.events(name) {
		kinds = append(kinds, e.Kind)
	}
	if diff := cmp.Diff([]Kind{Dispatched, Dropped}, kinds); diff != "" {
		t.Errorf("events of the deleted task (-want +got):\n%s", diff)
	}
}

// TestDuplicates: Options.Duplicate delivers a task twice, at once or
// after it completed, with the same headers; the duplicate's answer
// changes nothing.
func TestDuplicates(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		mode Duplication
	}{
		{"concurrently", DuplicateConcurrently},
		{"after completion", DuplicateAfterCompletion},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			both := make(chan struct{})
			var arrived atomic.Int32
			answer := func(r *http.Request, _ delivery) int {
				if tt.mode != DuplicateConcurrently {
					return http.StatusOK
				}
				if arrived.Add(1) == 2 {
					close(both)
				}
				select { // each waits for the other: they are in flight together
				case <-both:
					return http.StatusOK
				case <-r.Context().Done():
					return http.StatusServiceUnavailable
				}
			}
			f := newFixture(t, &Options{Duplicate: tt.mode}, nil, answer)
			name := f.create(t, "twice", nil)
			f.wait(t, name, Completed)
			dup := f.waitFor(t, "the duplicate's answer", func(e Event) bool { return e.Task == name && e.Duplicate && e.Kind == Dropped })
			if dup.Status != http.StatusOK {
				t.Errorf("duplicate's answer = %+v, want 200, dropped", dup)
			}
			got := f.worker.deliveries("twice")
			if len(got) != 2 {
				t.Fatalf("deliveries = %d, want 2", len(got))
			}
			for _, k := range []string{headerTask, headerRetryCount, headerExecutionCount, headerETA} {
				if got[0].header.Get(k) != got[1].header.Get(k) {
					t.Errorf("header %s: %q then %q, want the same", k, got[0].header.Get(k), got[1].header.Get(k))
				}
			}
			var kinds []string
			for _, e := range f.events(name) {
				kinds = append(kinds, fmt.Sprintf("%v duplicate=%v", e.Kind, e.Duplicate))
			}
			if tt.mode == DuplicateAfterCompletion {
				want := []string{"dispatched duplicate=false", "completed duplicate=false", "dispatched duplicate=true", "dropped duplicate=true"}
				if diff := cmp.Diff(want, kinds); diff != "" {
					t.Errorf("events (-want +got):\n%s", diff)
				}
			}
			if st := f.s.Stats(); st.Dispatches != 2 || st.Duplicates != 1 {
				t.Errorf("Stats() = %+v, want 2 dispatches, 1 duplicate", st)
			}
		})
	}
}

// TestRunTask: RunTask dispatches a task now, whatever its schedule time.
func TestRunTask(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil, nil, nil)
	name := f.create(t, "manual", schedule(time.Now().Add(time.Hour)))
	task, err := f.client.RunTask(t.Context(), &cloudtaskspb.RunTaskRequest{Name: name})
	if err != nil || task.DispatchCount != 1 || task.LastAttempt.GetDispatchTime() == nil {
		t.Fatalf("RunTask = %v, %v; want the task dispatched once", task, err)
	}
	f.wait(t, name, Completed)
	_, err = f.client.RunTask(t.Context(), &cloudtaskspb.RunTaskRequest{Name: name})
	wantCode(t, "RunTask of a completed task", err, codes.NotFound)
}

// TestStop: Stop cancels the requests in flight, closes the listener and
// returns once none of the server's goroutines is left.
func TestStop(t *testing.T) { // not parallel: it looks for the server's goroutines
	entered, cancelled := make(chan string, 2), make(chan string, 2)
	answer := func(r *http.Request, _ delivery) int {
		entered <- r.Header.Get(headerTask)
		<-r.Context().Done()
		cancelled <- r.Header.Get(headerTask)
		return http.StatusOK
	}
	f := newFixture(t, nil, nil, answer)
	names := []string{f.create(t, "a", nil), f.create(t, "b", nil)}
	<-entered
	<-entered
	stopped := make(chan struct{})
	go func() {
		f.s.Stop()
		close(stopped)
	}()
	select {
	case <-stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("Stop did not return")
	}
	for range names {
		select {
		case <-cancelled:
		case <-t.Context().Done():
			t.Fatal("a request in flight was not cancelled")
		}
	}
	for _, name := range names {
		if e := f.wait(t, name, Cancelled); e.Err == nil {
			t.Errorf("cancelled attempt %+v has no error", e)
		}
	}
	if _, err := f.s.Wait(t.Context(), Is(names[0], Completed)); !errors.Is(err, ErrStopped) {
		t.Errorf("Wait after Stop error = %v, want ErrStopped", err)
	}
	if conn, err := net.Dial("tcp", f.s.Addr()); err == nil {
		conn.Close()
		t.Error("the listener still accepts after Stop")
	}
	if left := serverGoroutines(); len(left) > 0 {
		t.Errorf("goroutines left after Stop:\n%s", strings.Join(left, "\n\n"))
	}
}

// serverGoroutines returns the stacks of the goroutines running the
// server's code.
func serverGoroutines() []string {
	buf := make([]byte, 1<<16)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var left []string
	for g := range strings.SplitSeq(string(buf), "\n\n") {
		if strings.Contains(g, "localtasks.(*Server)") || strings.Contains(g, "localtasks.(*api)") || strings.Contains(g, "localtasks.Start") {
			left = append(left, g)
		}
	}
	return left
}
