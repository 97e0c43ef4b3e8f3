package localtasks

import (
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/cloudtasks/apiv2/cloudtaskspb"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/fieldmaskpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/baton-run/baton/internal/polltest"
)

// TestQueues: a queue gets Cloud Tasks' defaults for what it leaves unset,
// names are checked, UpdateQueue changes what its mask names (or creates),
// and ListQueues pages through the location's queues in name order.
func TestQueues(t *testing.T) {
	t.Parallel()
	s, err := Start(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	c, ctx := s.Client(), t.Context()
	got, err := c.CreateQueue(ctx, &cloudtaskspb.CreateQueueRequest{Parent: testLocation, Queue: &cloudtaskspb.Queue{
		Name: testQueue, RetryConfig: &cloudtaskspb.RetryConfig{MaxAttempts: 5},
	}})
	if err != nil {
		t.Fatal(err)
	}
	want := &cloudtaskspb.Queue{
		Name:       testQueue,
		RateLimits: &cloudtaskspb.RateLimits{MaxDispatchesPerSecond: 500, MaxBurstSize: 100, MaxConcurrentDispatches: 1000},
		RetryConfig: &cloudtaskspb.RetryConfig{MaxAttempts: 5, MaxRetryDuration: durationpb.New(0),
			MinBackoff: durationpb.New(100 * time.Millisecond), MaxBackoff: durationpb.New(time.Hour), MaxDoublings: 16},
		State: cloudtaskspb.Queue_RUNNING,
	}
	if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
		t.Errorf("CreateQueue (-want +got):\n%s", diff)
	}
	_, err = c.CreateQueue(ctx, &cloudtaskspb.CreateQueueRequest{Parent: testLocation, Queue: &cloudtaskspb.Queue{Name: testQueue}})
	wantCode(t, "CreateQueue of an existing queue", err, codes.AlreadyExists)
	for _, name := range []string{"projects/p/locations/l/queues/bad_id", testLocation + "/queues/", "queues/q", "projects/p/locations/other/queues/q"} {
		_, err = c.CreateQueue(ctx, &cloudtaskspb.CreateQueueRequest{Parent: testLocation, Queue: &cloudtaskspb.Queue{Name: name}})
		wantCode(t, "CreateQueue("+name+")", err, codes.InvalidArgument)
	}
	_, err = c.GetQueue(ctx, &cloudtaskspb.GetQueueRequest{Name: testLocation + "/queues/missing"})
	wantCode(t, "GetQueue of a missing queue", err, codes.NotFound)

	upd, err := c.UpdateQueue(ctx, &cloudtaskspb.UpdateQueueRequest{
		Queue: &cloudtaskspb.Queue{Name: testQueue, RateLimits: &cloudtaskspb.RateLimits{MaxConcurrentDispatches: 3},
			RetryConfig: &cloudtaskspb.RetryConfig{MaxAttempts: 9}},
		UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"rate_limits.max_concurrent_dispatches"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	want.RateLimits.MaxConcurrentDispatches = 3 // max_attempts stays: the mask does not name it
	if diff := cmp.Diff(want, upd, protocmp.Transform()); diff != "" {
		t.Errorf("UpdateQueue with a mask (-want +got):\n%s", diff)
	}
	_, err = c.UpdateQueue(ctx, &cloudtaskspb.UpdateQueueRequest{Queue: &cloudtaskspb.Queue{Name: testQueue},
		UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"state"}}})
	wantCode(t, "UpdateQueue of an output field", err, codes.InvalidArgument)
	_, err = c.UpdateQueue(ctx, &cloudtaskspb.UpdateQueueRequest{Queue: &cloudtaskspb.Queue{Name: testQueue,
		RetryConfig: &cloudtaskspb.RetryConfig{MinBackoff: durationpb.New(time.Minute), MaxBackoff: durationpb.New(time.Second)}}})
	wantCode(t, "UpdateQueue with min_backoff > max_backoff", err, codes.InvalidArgument)
	for _, id := range []string{"c", "a", "b"} {
		if _, err := c.UpdateQueue(ctx, &cloudtaskspb.UpdateQueueRequest{Queue: &cloudtaskspb.Queue{Name: testLocation + "/queues/" + id}}); err != nil {
			t.Fatalf("UpdateQueue creating %s: %v", id, err)
		}
	}
	var names []string
	for _, q := range all(t, c.ListQueues(ctx, &cloudtaskspb.ListQueuesRequest{Parent: testLocation, PageSize: 2}).Next) {
		names = append(names, strings.TrimPrefix(q.Name, testLocation+"/queues/"))
	}
	if diff := cmp.Diff([]string{"a", "b", "c", "work"}, names); diff != "" {
		t.Errorf("ListQueues (-want +got):\n%s", diff)
	}
}

// TestCreateTaskRefusals: what Cloud Tasks refuses, and what this server
// does not serve, fails CreateTask with the code the real service gives.
func TestCreateTaskRefusals(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil, nil, nil)
	withRequest := func(mutate func(*cloudtaskspb.HttpRequest)) func(*cloudtaskspb.Task) {
		return func(task *cloudtaskspb.Task) { mutate(task.GetHttpRequest()) }
	}
	tests := []struct {
		name   string
		id     string
		mutate func(*cloudtaskspb.Task)
		parent string
		want   codes.Code
	}{
		{name: "missing queue", parent: testLocation + "/queues/missing", want: codes.NotFound},
		{name: "bad task id", id: "not/an/id", want: codes.InvalidArgument},
		{name: "deadline under 15s", mutate: deadline(14 * time.Second), want: codes.InvalidArgument},
		{name: "deadline over 30 min", mutate: deadline(31 * time.Minute), want: codes.InvalidArgument},
		{name: "no URL scheme", mutate: withRequest(func(r *cloudtaskspb.HttpRequest) { r.Url = "localhost/work" }), want: codes.InvalidArgument},
		{name: "body on GET", mutate: withRequest(func(r *cloudtaskspb.HttpRequest) { r.HttpMethod = cloudtaskspb.HttpMethod_GET }), want: codes.InvalidArgument},
		{name: "OAuth token", mutate: withRequest(func(r *cloudtaskspb.HttpRequest) {
			r.AuthorizationHeader = &cloudtaskspb.HttpRequest_OauthToken{OauthToken: &cloudtaskspb.OAuthToken{ServiceAccountEmail: "w@p.iam.gserviceaccount.com"}}
		}), want: codes.InvalidArgument},
		{name: "OIDC token without a Signer", mutate: withRequest(func(r *cloudtaskspb.HttpRequest) {
			r.AuthorizationHeader = &cloudtaskspb.HttpRequest_OidcToken{OidcToken: &cloudtaskspb.OidcToken{ServiceAccountEmail: "w@p.iam.gserviceaccount.com"}}
		}), want: codes.FailedPrecondition},
		{name: "over 100 KB", mutate: withRequest(func(r *cloudtaskspb.HttpRequest) { r.Body = make([]byte, 101<<10) }), want: codes.InvalidArgument},
		{name: "App Engine task", mutate: func(task *cloudtaskspb.Task) {
			task.MessageType = &cloudtaskspb.Task_AppEngineHttpRequest{AppEngineHttpRequest: &cloudtaskspb.AppEngineHttpRequest{RelativeUri: "/"}}
		}, want: codes.InvalidArgument},
	}
	for _, tt := range tests {
		req := f.request(tt.id, tt.mutate)
		if tt.parent != "" {
			req.Parent = tt.parent
		}
		_, err := f.client.CreateTask(t.Context(), req)
		wantCode(t, tt.name, err, tt.want)
	}
	if st := f.s.Stats(); st.Creates != 0 {
		t.Errorf("Stats().Creates = %d after refusals only, want 0", st.Creates)
	}
}

// TestTaskViews: a created task has its defaults (POST, a 10 min deadline,
// now as its schedule); the BASIC view, the default, leaves out the body;
// ListTasks lists the queue's live tasks in pages; a task without a name
// gets one.
func TestTaskViews(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil, nil, nil)
	ctx := t.Context()
	later := timestamppb.New(time.Now().Add(time.Hour).Truncate(time.Microsecond))
	var names []string
	for range 3 {
		names = append(names, f.create(t, "", func(task *cloudtaskspb.Task) { task.ScheduleTime = later }))
	}
	if names[0] == names[1] || !strings.HasPrefix(names[0], f.queue+"/tasks/") {
		t.Fatalf("generated names %q, want distinct names under the queue", names)
	}
	full, err := f.client.GetTask(ctx, &cloudtaskspb.GetTaskRequest{Name: names[0], ResponseView: cloudtaskspb.Task_FULL})
	if err != nil {
		t.Fatal(err)
	}
	r := full.GetHttpRequest()
	if r.HttpMethod != cloudtaskspb.HttpMethod_POST || string(r.Body) != `{"call":"c1"}` || full.DispatchDeadline.AsDuration() != 10*time.Minute ||
		!full.ScheduleTime.AsTime().Equal(later.AsTime()) || full.View != cloudtaskspb.Task_FULL {
		t.Errorf("GetTask(FULL) = %v, want POST, the body, a 10m deadline, the schedule time", full)
	}
	basic, err := f.client.GetTask(ctx, &cloudtaskspb.GetTaskRequest{Name: names[0]})
	if err != nil || basic.GetHttpRequest().Body != nil || basic.View != cloudtaskspb.Task_BASIC {
		t.Errorf("GetTask(default view) = %v, %v; want the BASIC view, without the body", basic, err)
	}
	var listed []string
	for _, task := range all(t, f.client.ListTasks(ctx, &cloudtaskspb.ListTasksRequest{Parent: f.queue, PageSize: 2}).Next) {
		listed = append(listed, task.Name)
	}
	if len(listed) != 3 {
		t.Errorf("ListTasks = %q, want the 3 tasks", listed)
	}
	_, err = f.client.GetTask(ctx, &cloudtaskspb.GetTaskRequest{Name: f.queue + "/tasks/missing"})
	wantCode(t, "GetTask of a missing task", err, codes.NotFound)
	_, err = f.client.PauseQueue(ctx, &cloudtaskspb.PauseQueueRequest{Name: f.queue})
	wantCode(t, "PauseQueue", err, codes.Unimplemented)
}

// TestDedup: a task's name cannot be used again while the task lives, nor
// for Options.Tombstone after it completed or was deleted.
func TestDedup(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil, nil, nil)
	ctx := t.Context()
	done := f.create(t, "call-1", nil)
	_, err := f.client.CreateTask(ctx, f.request("call-1", nil))
	wantCode(t, "CreateTask of a live name", err, codes.AlreadyExists)
	f.wait(t, done, Completed)
	_, err = f.client.CreateTask(ctx, f.request("call-1", nil))
	wantCode(t, "CreateTask of a completed task's name", err, codes.AlreadyExists)

	deleted := f.create(t, "call-2", func(task *cloudtaskspb.Task) { task.ScheduleTime = timestamppb.New(time.Now().Add(time.Hour)) })
	if err := f.client.DeleteTask(ctx, &cloudtaskspb.DeleteTaskRequest{Name: deleted}); err != nil {
		t.Fatal(err)
	}
	_, err = f.client.CreateTask(ctx, f.request("call-2", nil))
	wantCode(t, "CreateTask of a deleted task's name", err, codes.AlreadyExists)
	err = f.client.DeleteTask(ctx, &cloudtaskspb.DeleteTaskRequest{Name: deleted})
	wantCode(t, "DeleteTask of a deleted task", err, codes.NotFound)
	if got := len(f.worker.deliveries("call-1")); got != 1 {
		t.Errorf("call-1 delivered %d times, want 1", got)
	}
	if st := f.s.Stats(); st.Creates != 2 || st.Dispatches != 1 {
		t.Errorf("Stats() = %+v, want 2 creates and 1 dispatch", st)
	}
}

// TestTombstoneExpires: once Options.Tombstone has passed, the name is free.
func TestTombstoneExpires(t *testing.T) {
	t.Parallel()
	f := newFixture(t, &Options{Tombstone: time.Millisecond}, nil, nil)
	f.wait(t, f.create(t, "call-1", nil), Completed)
	polltest.Until(t, "the name to be free again", func() bool {
		_, err := f.client.CreateTask(t.Context(), f.request("call-1", nil))
		if err != nil && status.Code(err) != codes.AlreadyExists {
			t.Fatalf("CreateTask within the tombstone error = %v, want AlreadyExists", err)
		}
		return err == nil
	})
	if got := f.s.Stats().Creates; got != 2 {
		t.Errorf("Stats().Creates = %d, want 2", got)
	}
}
