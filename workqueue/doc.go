// Package workqueue is the queue that carries a background call's work
// to its worker: Google Cloud Tasks, through its official Go client
// (cloud.google.com/go/cloudtasks/apiv2). A Queue creates one HTTP task
// per call, aimed at the deployment's Work function with an OIDC token
// of the worker's service account, and deletes it when the call is
// cancelled before its delivery; Decode reads a delivery's body back.
//
// It stores nothing in Firestore: the call's state is its ledger record
// (package ledger), which the worker changes first writer wins.
//
// # Why Cloud Tasks
//
// A task's name is derived from its call (TaskName: a hash of the call's
// app, user, session and id), and Cloud Tasks refuses a second task of a
// name it has, or had within about an hour, with AlreadyExists: the
// repair of an enqueue a crash left undone (the sweeper's, the next
// request's) may create the task again without the work being queued
// twice, and Enqueue counts AlreadyExists as done. A hashed name also
// spreads the names, as Cloud Tasks advises for named tasks. Each task
// carries its dispatch deadline (15 s to 30 min; Pub/Sub's push must be
// answered within its 600 s acknowledgement deadline); the queue retries a
// failed delivery with exponential backoff up to its maximum attempts,
// backs off more on 429 and 503 and honours Retry-After; DeleteTask
// removes a task not yet delivered; and an HTTP task can carry a
// Google-signed OIDC token for a Cloud Run service, which the worker
// checks. Cloud Tasks has no emulator: locally and in tests an
// in-process server speaks its gRPC API (internal/localtasks), and this
// package talks to it through the same client.
//
// Deliveries are at least once: a task may be delivered twice, and a
// delivery may come after its call was settled. The worker
// (toolcallback.Team.Work) makes each delivery change the record once.
package workqueue
