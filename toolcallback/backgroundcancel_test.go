package toolcallback_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"cloud.google.com/go/cloudtasks/apiv2/cloudtaskspb"
	"cloud.google.com/go/firestore"
	"cloud.google.com/go/firestore/apiv1/firestorepb"
	"google.golang.org/adk/v2/platform"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/fieldmaskpb"

	"github.com/baton-run/baton/internal/firestoretest"
	"github.com/baton-run/baton/internal/localtasks"
	"github.com/baton-run/baton/internal/polltest"
	"github.com/baton-run/baton/sessionstore"
	"github.com/baton-run/baton/toolcallback"
)

// blockingWork is work that signals started once it runs and returns only
// when its context ends, with why: the test then knows the work ended.
func blockingWork(started chan<- struct{}, ended chan<- error) func(ctx context.Context, a playlistArgs) (playlistResult, error) {
	return func(ctx context.Context, a playlistArgs) (playlistResult, error) {
		started <- struct{}{}
		<-ctx.Done()
		ended <- context.Cause(ctx)
		return playlistResult{}, ctx.Err()
	}
}

// TestBackgroundStopAcrossInstances: a stop asked on another instance
// than the one whose worker runs the call ends the work's context within
// seconds, the model hears once that the call was stopped, the delivery
// records nothing, and the chat's next turn runs.
func TestBackgroundStopAcrossInstances(t *testing.T) {
	t.Parallel()
	f := newBGFixture(t, nil, nil, playlistCall, textReply("stopped it"))
	started, ended := make(chan struct{}, 1), make(chan error, 1)
	f.setWork(blockingWork(started, ended))
	if _, err := f.turnEvents("chat", "make me a playlist"); err != nil {
		t.Fatal(err)
	}
	await(t, started, "the work to start")
	otherClient, _ := firestoretest.Reopen(t, f.client)
	other := f.newInstanceOn(otherClient)
	asked := time.Now()
	report, err := other.Stop(t.Context(), "user-1", "chat", 0)
	if err != nil {
		t.Fatalf("Stop() error = %v", err)
	}
	if len(report.Cancelled) != 1 || report.Cancelled[0] != "c1" {
		t.Errorf("Stop() = %+v, want c1 cancelled", report)
	}
	cause := await(t, ended, "the work's context to end")
	t.Logf("the work's context ended %s after the stop was asked", time.Since(asked))
	if !strings.Contains(cause.Error(), "closed") {
		t.Errorf("the work's context ended with %v, want the call closed", cause)
	}
	got := f.responses("chat", "c1")
	if len(got) != 1 || !strings.Contains(toJSON(got[0]), "stopped") {
		t.Fatalf("responses to c1 = %v, want one saying it was stopped", got)
	}
	f.waitDone("chat", "c1") // the delivery is answered
	if got := f.responses("chat", "c1"); len(got) != 1 {
		t.Errorf("after the delivery ended, responses to c1 = %v, want still one", got)
	}
	if _, _, err := runTurn(t.Context(), other, textTurn("chat", "tab-1", "thanks")); err != nil {
		t.Fatalf("turn after the stop error = %v", err)
	}
}

// TestBackgroundExpiry: a call whose time runs out while its work runs is
// expired by the sweeper: the work's context ends, and the model hears
// the call had no result in time, once.
func TestBackgroundExpiry(t *testing.T) {
	t.Parallel()
	f := newBGFixture(t, nil, nil, playlistCall, echoReply)
	started, ended := make(chan struct{}, 1), make(chan error, 1)
	f.setWork(blockingWork(started, ended))
	if _, err := f.turnEvents("chat", "make me a playlist"); err != nil {
		t.Fatal(err)
	}
	await(t, started, "the work to start")
	report, err := f.team.Sweep(t.Context(), time.Now().Add(2*time.Hour))
	if err != nil || report.Expired != 1 || report.Resumed != 1 {
		t.Fatalf("Sweep() = %+v, %v; want c1 expired and its step resumed", report, err)
	}
	await(t, ended, "the work's context to end")
	got := f.responses("chat", "c1")
	if len(got) != 1 || !strings.Contains(toJSON(got[0]), "no result within 1h") {
		t.Fatalf("responses to c1 = %v, want one saying it had no result in time", got)
	}
	f.waitDone("chat", "c1")
	if got := f.responses("chat", "c1"); len(got) != 1 {
		t.Errorf("after the delivery ended, responses to c1 = %v, want still one", got)
	}
}

// TestBackgroundRegenerate: a regenerate that takes the call back ends
// its work; the regenerated turn's new call runs in its place.
func TestBackgroundRegenerate(t *testing.T) {
	t.Parallel()
	second := callReply(call("c2", "prepare_playlist", map[string]any{"mood": "bright", "songs": 1}))
	f := newBGFixture(t, nil, nil, playlistCall, second, echoReply)
	started, ended := make(chan struct{}, 1), make(chan error, 1)
	f.setWork(blockingWork(started, ended))
	if _, err := f.turnEvents("chat", "make me a playlist"); err != nil {
		t.Fatal(err)
	}
	await(t, started, "the work to start")
	f.setWork(nil)
	// A claim that races another write of the session is refused as busy,
	// and a client retries it (seen once under a heavy load).
	polltest.Until(t, "the regenerate to be taken", func() bool {
		_, err := runRewind(t.Context(), f.team, toolcallback.RewindRequest{UserID: "user-1", ChatID: "chat", ClientID: "tab-1"})
		if errors.Is(err, sessionstore.ErrBusy) {
			t.Logf("Rewind() error = %v; retried", err)
			return false
		}
		if err != nil {
			t.Fatalf("Rewind() error = %v", err)
		}
		return true
	})
	await(t, ended, "the first work's context to end")
	f.waitTask("chat", "c2", localtasks.Completed)
	if got := f.responses("chat", "c2"); len(got) != 1 || !strings.Contains(toJSON(got[0]), "bright-1") {
		t.Errorf("responses to c2 = %v, want the second playlist", got)
	}
	if got := f.responses("chat", "c1"); len(got) != 0 {
		t.Errorf("responses to c1 in the chat as it now is = %v, want none (taken back)", got)
	}
}

// TestBackgroundNewMessage: under the cancel policy a new message cancels
// the running call (its work ends, the model hears why before the
// message); under the reject policy it is refused while the work runs.
func TestBackgroundNewMessage(t *testing.T) {
	t.Parallel()
	t.Run("cancel", func(t *testing.T) {
		t.Parallel()
		f := newBGFixture(t, nil, nil, playlistCall, echoReply)
		started, ended := make(chan struct{}, 1), make(chan error, 1)
		f.setWork(blockingWork(started, ended))
		if _, err := f.turnEvents("chat", "make me a playlist"); err != nil {
			t.Fatal(err)
		}
		await(t, started, "the work to start")
		if _, err := f.turnEvents("chat", "never mind"); err != nil {
			t.Fatalf("new message error = %v", err)
		}
		await(t, ended, "the work's context to end")
		if got := f.responses("chat", "c1"); len(got) != 1 || !strings.Contains(toJSON(got[0]), "cancelled") {
			t.Errorf("responses to c1 = %v, want one saying it was cancelled", got)
		}
	})
	t.Run("reject", func(t *testing.T) {
		t.Parallel()
		f := newBGFixture(t, &toolcallback.Options{PendingPolicy: toolcallback.PendingReject}, nil, playlistCall, echoReply)
		started, release := make(chan struct{}, 1), make(chan struct{})
		f.setWork(func(ctx context.Context, a playlistArgs) (playlistResult, error) {
			started <- struct{}{}
			<-release
			return playlistResult{Tracks: []string{"one"}}, nil
		})
		if _, err := f.turnEvents("chat", "make me a playlist"); err != nil {
			t.Fatal(err)
		}
		await(t, started, "the work to start")
		_, err := f.turnEvents("chat", "are you done?")
		var pending *toolcallback.PendingCallsError
		if !errors.As(err, &pending) || len(pending.Calls) != 1 || pending.Calls[0].ID != "c1" {
			t.Errorf("message while the work runs error = %v, want PendingCallsError for c1", err)
		}
		close(release)
		f.waitTask("chat", "c1", localtasks.Completed)
		if got := f.responses("chat", "c1"); len(got) != 1 || !strings.Contains(toJSON(got[0]), "one") {
			t.Errorf("responses to c1 = %v, want the playlist", got)
		}
	})
}

var _ = platform.Now

// TestBackgroundStopDeletesWaitingTask: a call stopped while its task
// waits in the queue (here, in the backoff after a failed attempt) has
// its task deleted, so the queue never delivers it again; the model
// hears once that it was stopped.
func TestBackgroundStopDeletesWaitingTask(t *testing.T) {
	t.Parallel()
	f := newBGFixture(t, nil, &localtasks.Options{TimeScale: 1}, playlistCall, textReply("stopped it"))
	if _, err := f.tasks.Client().UpdateQueue(t.Context(), &cloudtaskspb.UpdateQueueRequest{
		Queue: &cloudtaskspb.Queue{Name: bgQueue, RetryConfig: &cloudtaskspb.RetryConfig{MaxAttempts: 10,
			MinBackoff: durationpb.New(time.Hour), MaxBackoff: durationpb.New(time.Hour)}},
		UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"retry_config"}},
	}); err != nil {
		t.Fatal(err)
	}
	f.setWork(func(ctx context.Context, a playlistArgs) (playlistResult, error) {
		return playlistResult{}, toolcallback.Retryable(errBusy)
	})
	if _, err := f.turnEvents("chat", "make me a playlist"); err != nil {
		t.Fatal(err)
	}
	f.waitTask("chat", "c1", localtasks.Retrying) // the next attempt is an hour away
	name := f.taskName("chat", "c1")
	if _, err := f.tasks.Client().GetTask(t.Context(), &cloudtaskspb.GetTaskRequest{Name: name}); err != nil {
		t.Fatalf("GetTask() before the stop error = %v, want the task waiting", err)
	}
	if _, err := f.team.Stop(t.Context(), "user-1", "chat", 0); err != nil {
		t.Fatalf("Stop() error = %v", err)
	}
	if _, err := f.tasks.Client().GetTask(t.Context(), &cloudtaskspb.GetTaskRequest{Name: name}); status.Code(err) != codes.NotFound {
		t.Errorf("GetTask() after the stop error = %v, want NotFound: the waiting task deleted", err)
	}
	got := f.responses("chat", "c1")
	if len(got) != 1 || !strings.Contains(toJSON(got[0]), "stopped") {
		t.Errorf("responses to c1 = %v, want one saying it was stopped", got)
	}
	if n := f.runs.Load(); n != 1 {
		t.Errorf("the work ran %d times, want once", n)
	}
}

// TestBackgroundCancelRacesHold: a new message whose cancel of a running
// background call races a write of the call's attempt (its hold renewed,
// its progress: the record changes and stays pending) cancels it all the
// same: the work's context ends, and the model hears once that it was
// cancelled.
func TestBackgroundCancelRacesHold(t *testing.T) {
	t.Parallel()
	f := newBGFixture(t, nil, nil, playlistCall, echoReply)
	started, ended := make(chan struct{}, 1), make(chan error, 1)
	f.setWork(blockingWork(started, ended))
	if _, err := f.turnEvents("chat", "make me a playlist"); err != nil {
		t.Fatal(err)
	}
	await(t, started, "the work to start")
	// Right before the cancel's commit, the attempt's hold is renewed (by
	// another client, as the worker's instance would).
	other, _ := firestoretest.Reopen(t, f.client)
	record := other.Doc(f.sessions.SessionDoc("app", "user-1", activeSession(t, f.sessions, "chat")).Child("calls", "c1").Path())
	var raced atomic.Bool
	f.counter.SetHook(func(method string, req any) error {
		commit, _ := req.(*firestorepb.CommitRequest)
		for _, w := range commit.GetWrites() {
			if strings.HasSuffix(w.GetUpdate().GetName(), "/calls/c1") && containsPath(w.GetUpdateMask().GetFieldPaths(), "status") &&
				raced.CompareAndSwap(false, true) {
				if _, err := record.Update(t.Context(), []firestore.Update{{Path: "work.heldUntil", Value: time.Now().Add(time.Minute)}}); err != nil {
					t.Errorf("renew the hold: %v", err)
				}
			}
		}
		return nil
	})
	if _, err := f.turnEvents("chat", "never mind"); err != nil {
		t.Fatalf("new message error = %v", err)
	}
	if !raced.Load() {
		t.Fatal("the cancel was never committed")
	}
	await(t, ended, "the work's context to end")
	if got := f.responses("chat", "c1"); len(got) != 1 || !strings.Contains(toJSON(got[0]), "cancelled") {
		t.Errorf("responses to c1 = %v, want one saying it was cancelled", got)
	}
	snap, err := record.Get(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if st, _ := snap.DataAt("status"); st != string(toolcallback.StatusCancelled) {
		t.Errorf("c1's record is %v, want cancelled", st)
	}
}
