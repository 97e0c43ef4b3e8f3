// Package localtasks serves the Cloud Tasks API (google.cloud.tasks.v2,
// gRPC) in process, for `go run ./local` and the tests: code that queues
// work talks to it through the official client (cloud.google.com/go/
// cloudtasks/apiv2), exactly as to the real service, and the server
// delivers each task to its HTTP target as Cloud Tasks would. It stores
// nothing in Firestore and needs no index: queues, tasks and name
// tombstones live in memory for the server's life.
//
// Why a server of our own: Cloud Tasks has no official emulator, and the
// project's rule is a real emulator where one exists, else an in-process
// server speaking the service's API (as internal/localgcs does for files).
// The Go emulators found were checked first: aertje/cloud-tasks-emulator
// (a standalone emulator whose recent versions also embed over bufconn) is
// not served by the module proxy here, and it has no way to give the OIDC
// signer, to deliver a task twice, to shorten waits or to watch outcomes,
// which are what Baton's tests need; nolanrsherman/gcpemulators keeps its
// state in MongoDB.
//
// Start listens on 127.0.0.1 (insecure gRPC) and returns a Server with a
// connected client (Client; ClientOptions and Addr for others). Served:
// CreateQueue, GetQueue, UpdateQueue (with or without an update mask; it
// creates a missing queue), ListQueues; CreateTask, GetTask, DeleteTask,
// ListTasks, RunTask, for HTTP targets (URL, method, headers, body, OIDC
// token). Every other method answers Unimplemented; App Engine tasks and
// OAuth tokens are refused (InvalidArgument).
//
// What it keeps of the real service, from the API's own documentation (the
// comments of cloudtaskspb, which are the proto's) and Cloud Tasks' pages:
//
//   - A task name is unique: creating a task whose name is live, or was
//     completed, exhausted or deleted less than Options.Tombstone ago (an
//     hour by default, as CreateTaskRequest.task documents for queues made
//     through the API), fails with AlreadyExists. A task without a name
//     gets one.
//   - schedule_time delays the first attempt (unset or past: now).
//   - Each attempt is one HTTP request with the task's method (POST by
//     default), URL, body and headers; User-Agent is Google-Cloud-Tasks,
//     Host, Content-Length and X-Google-*, X-AppEngine-*, X-CloudTasks-*
//     headers of the task are replaced (HttpRequest.headers). The service
//     headers are those of "Create HTTP Target tasks"
//     (https://cloud.google.com/tasks/docs/creating-http-target-tasks):
//     X-CloudTasks-QueueName and -TaskName (short ids), -TaskRetryCount
//     (earlier attempts), -TaskExecutionCount (earlier responses other than
//     5xx, as Firebase's TaskContext documents it), -TaskETA (the attempt's
//     schedule time in seconds since the epoch, microseconds after the
//     point), and on a retry -TaskPreviousResponse (the HTTP status of the
//     previous attempt, absent when it had none) and -TaskRetryReason.
//   - A task with an OIDC token gets "Authorization: Bearer" with a token
//     for its service account and its audience, or its URL when it names
//     none (OidcToken.audience); Options.Signer mints it. Issuer is a
//     Signer whose tokens google.golang.org/api/idtoken accepts given
//     Issuer.KeyClient, so a worker's production check can be tested end
//     to end.
//   - A 2xx response completes the task (it is deleted). Any other
//     response, no connection, or no response within dispatch_deadline
//     (10 min by default, refused outside [15 s, 30 min]) fails the
//     attempt, which is retried after the queue's backoff: min_backoff,
//     doubled max_doublings times, then growing linearly, at most
//     max_backoff (RetryConfig.max_doublings' example), until max_attempts
//     attempts (and max_retry_duration, when set) are spent; then the task
//     is deleted.
//   - A queue's unset settings get the defaults a queue shows in
//     "Configuring Cloud Tasks queues"
//     (https://cloud.google.com/tasks/docs/configuring-queues): 100
//     attempts, 0.1 s to 3600 s backoff, 16 doublings, 1000 concurrent
//     dispatches (enforced), 500 dispatches a second, a burst of 100.
//   - DeleteTask of a task being dispatched lets that attempt finish and
//     never retries the task. RunTask dispatches now, whatever the schedule,
//     the queue's limits or an attempt in flight.
//
// How it differs: it keeps no state across restarts; the rate
// (max_dispatches_per_second, max_burst_size) is stored, not enforced, and
// there is no system throttling, no Retry-After, no ramp-up and no 31-day
// task lifetime. A zero setting means the default, so max_doublings cannot
// be 0. Durations are not truncated to the second. The retry reason is
// this server's short text ("HTTP 503", "deadline exceeded", "no
// response"); the real value is undocumented (a third party's capture saw
// it empty for HTTP targets). The BASIC view leaves out the body, which
// the docs say only of App Engine bodies. Redirects are followed as Go's
// client follows them.
//
// For tests: Options.TimeScale multiplies every backoff and dispatch
// deadline the server waits for (0.01 turns 10 min into 6 s), while the
// tasks and headers keep the unscaled times; schedule times are not
// scaled. Options.Duplicate delivers each attempt twice at once, or a
// completed task's request once more: deliveries are at least once, and a
// worker must take a task's work once. Events yields what happened to
// every request (dispatched, completed, retrying, exhausted, dropped,
// cancelled), Wait waits for one, Stats counts creates and dispatches, so
// a test waits for the event it needs and never sleeps. The event log
// grows for the server's life. Stop closes the client and the listener,
// cancels the requests in flight and returns once the server's goroutines
// have ended.
package localtasks
