package devserver

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"cloud.google.com/go/cloudtasks/apiv2/cloudtaskspb"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/baton-run/baton/internal/localtasks"
)

// The background calls' queue of the local runner: the Cloud Tasks API
// served in process (internal/localtasks), delivering to this runner's
// Work function with OIDC tokens signed by a key of its own, which the
// Work function's token check is given (ServerOptions.SchedulerKeys).
const (
	localLocation = "projects/baton-local/locations/local"
	localQueue    = localLocation + "/queues/work"
	localInvoker  = "tasks@baton-local.iam.gserviceaccount.com"
)

// localWork is the local runner's queue.
type localWork struct {
	server *localtasks.Server
	keys   *http.Client // serves the issuer's key, as Google's key server would
}

// startWork starts the queue, delivering to url (the Work function), and
// sets the configuration that names it.
func startWork(ctx context.Context, env *environment, url string) (*localWork, error) {
	issuer, err := localtasks.NewIssuer()
	if err != nil {
		return nil, err
	}
	server, err := localtasks.Start(ctx, &localtasks.Options{Signer: issuer.Sign})
	if err != nil {
		return nil, err
	}
	// Retries as infra/terraform's queue makes them, sooner.
	_, err = server.Client().CreateQueue(ctx, &cloudtaskspb.CreateQueueRequest{Parent: localLocation, Queue: &cloudtaskspb.Queue{
		Name: localQueue,
		RetryConfig: &cloudtaskspb.RetryConfig{MaxAttempts: 10, MinBackoff: durationpb.New(durationSeconds(1)),
			MaxBackoff: durationpb.New(durationSeconds(30)), MaxDoublings: 5},
	}})
	if err != nil {
		server.Stop()
		return nil, fmt.Errorf("local queue: %w", err)
	}
	for k, v := range map[string]string{"BATON_WORK_QUEUE": localQueue, "BATON_WORK_URL": url, "BATON_WORK_INVOKER": localInvoker} {
		if _, set := env.lookup(k); !set {
			env.overrides[k] = v
		}
	}
	return &localWork{server: server, keys: issuer.KeyClient()}, nil
}

func (w *localWork) stop() { w.server.Stop() }

func durationSeconds(n int) time.Duration { return time.Duration(n) * time.Second }
