package localtasks_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"

	"cloud.google.com/go/cloudtasks/apiv2/cloudtaskspb"
	"google.golang.org/grpc/status"

	"github.com/baton-run/baton/internal/localtasks"
)

func ExampleStart() {
	ctx := context.Background()
	worker := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Println("worker:", r.Header.Get("X-CloudTasks-TaskName"), "retry", r.Header.Get("X-CloudTasks-TaskRetryCount"))
	}))
	defer worker.Close()
	tasks, err := localtasks.Start(ctx, nil)
	if err != nil {
		panic(err)
	}
	defer tasks.Stop()
	queue := "projects/demo/locations/here/queues/background"
	c := tasks.Client() // the official client, as in production
	if _, err := c.CreateQueue(ctx, &cloudtaskspb.CreateQueueRequest{Parent: "projects/demo/locations/here", Queue: &cloudtaskspb.Queue{Name: queue}}); err != nil {
		panic(err)
	}
	task, err := c.CreateTask(ctx, &cloudtaskspb.CreateTaskRequest{Parent: queue, Task: &cloudtaskspb.Task{
		Name:        queue + "/tasks/call-1",
		MessageType: &cloudtaskspb.Task_HttpRequest{HttpRequest: &cloudtaskspb.HttpRequest{Url: worker.URL, Body: []byte("{}")}},
	}})
	if err != nil {
		panic(err)
	}
	done, err := tasks.Wait(ctx, localtasks.Is(task.Name, localtasks.Completed))
	if err != nil {
		panic(err)
	}
	fmt.Println(done.Kind, done.Status)
	_, err = c.CreateTask(ctx, &cloudtaskspb.CreateTaskRequest{Parent: queue, Task: task})
	fmt.Println("again:", status.Code(err))
	// Output:
	// worker: call-1 retry 0
	// completed 200
	// again: AlreadyExists
}
