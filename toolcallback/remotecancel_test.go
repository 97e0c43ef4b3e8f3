package toolcallback_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"cloud.google.com/go/firestore"
	"cloud.google.com/go/firestore/apiv1/firestorepb"

	"google.golang.org/adk/v2/platform"
	"google.golang.org/genai"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/baton-run/baton/internal/a2apeer"
	"github.com/baton-run/baton/internal/firestoretest"
	"github.com/baton-run/baton/internal/localtasks"
	"github.com/baton-run/baton/internal/polltest"
	"github.com/baton-run/baton/sessionstore"
	"github.com/baton-run/baton/toolcallback"
	"github.com/baton-run/baton/workqueue"
)

// startRemote runs the turn that makes the remote call c1 in chat and
// waits for the remote to be working on it, its send recorded; it returns
// the chat's session (the call's, which a rewind may leave).
func (f *remoteFixture) startRemote(chat string) string {
	f.t.Helper()
	if _, err := f.turnEvents(chat, "ask the events agent what is on tonight"); err != nil {
		f.t.Fatal(err)
	}
	polltest.Until(f.t, "the remote working, its send recorded", func() bool {
		c := f.record(chat, "c1")
		return c != nil && c.Remote.State == "working" && c.Remote.Sent == 1
	})
	return activeSession(f.t, f.sessions, chat)
}

// waitCancelled waits for the delivery of the task that cancels c1's
// remote task, of session sid, to be answered, and checks that the remote
// took one request to cancel it.
func (f *remoteFixture) waitCancelled(sid string) {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(f.t.Context(), 30*time.Second)
	defer cancel()
	name := f.queue.TaskName(workqueue.Task{App: "app", User: "user-1", Session: sid, Call: "c1", Step: "cancel"})
	if _, err := f.tasks.Wait(ctx, localtasks.Is(name, localtasks.Completed)); err != nil {
		f.t.Fatalf("waiting for the cancel's task: %v", err)
	}
	if n := f.peer.Cancelled(); n != 1 {
		f.t.Errorf("the remote was asked %d times to cancel its task, want once", n)
	}
}

// TestRemoteLostCancelRetried: a stop whose cancel the queue did not take
// (or whose closer died before queueing it) leaves the cancel "to be
// sent" on the call's record, written with its closing; the sweeper
// creates the cancel's task after the grace, the remote is asked to
// cancel once, and the record then leaves the sweeper.
func TestRemoteLostCancelRetried(t *testing.T) {
	t.Parallel()
	f := newRemoteFixture(t, a2apeer.Works, nil, eventsCall, echoReply)
	sid := f.startRemote("chat")
	f.setQueueFault(func(method string) error {
		if strings.HasSuffix(method, "/CreateTask") {
			return status.Error(codes.Unavailable, "queue unreachable")
		}
		return nil
	})
	report, err := f.team.Stop(t.Context(), "user-1", "chat", 0)
	if err != nil || len(report.Cancelled) != 1 {
		t.Fatalf("Stop() = %+v, %v; want c1 cancelled", report, err)
	}
	f.setQueueFault(nil)
	if got := f.responses("chat", "c1"); len(got) != 1 || !strings.Contains(toJSON(got), "stopped") {
		t.Fatalf("responses to c1 = %s, want the stop's", toJSON(got))
	}
	if n := f.peer.Cancelled(); n != 0 {
		t.Fatalf("the remote was asked to cancel %d times with the queue down", n)
	}
	if swept, err := f.team.Sweep(t.Context(), time.Now()); err != nil || swept.Enqueued != 0 {
		t.Fatalf("Sweep() within the grace = %+v, %v; want nothing enqueued", swept, err)
	}
	later := time.Now().Add(time.Minute)
	lctx := platform.WithTimeProvider(t.Context(), func() time.Time { return later })
	swept, err := f.team.Sweep(lctx, later)
	if err != nil || swept.Enqueued != 1 {
		t.Fatalf("Sweep() after the grace = %+v, %v; want the cancel of c1 enqueued", swept, err)
	}
	f.waitCancelled(sid)
	// Sent and recorded: the record left the sweeper.
	again, err := f.team.Sweep(lctx, later.Add(time.Hour))
	if err != nil || again != (toolcallback.SweepReport{}) {
		t.Errorf("Sweep() once the cancel was sent = %+v, %v; want nothing to do", again, err)
	}
	if n := f.peer.Cancelled(); n != 1 {
		t.Errorf("the remote was asked %d times to cancel its task, want once", n)
	}
	if got := f.responses("chat", "c1"); len(got) != 1 {
		t.Errorf("responses to c1 = %s, want the stop's alone", toJSON(got))
	}
}

// rewindRemote takes the latest turn of chat back (edit, when set,
// replaces its message), retrying while the chat is busy as a client
// does.
func (f *remoteFixture) rewindRemote(chat string, edit *genai.Content) {
	f.t.Helper()
	polltest.Until(f.t, "the rewind to be taken", func() bool {
		_, err := runRewind(f.t.Context(), f.team, toolcallback.RewindRequest{UserID: "user-1", ChatID: chat, ClientID: "tab-1", Content: edit})
		if errors.Is(err, sessionstore.ErrBusy) {
			f.t.Logf("Rewind() error = %v; retried", err)
			return false
		}
		if err != nil {
			f.t.Fatalf("Rewind() error = %v", err)
		}
		return true
	})
}

// TestRemoteRewind: a regenerate, and an edit, that take a running remote
// call back cancel its remote task once (tasks/cancel), the call leaves
// the chat as it now is, and the turn runs again with the model.
func TestRemoteRewind(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		edit *genai.Content
		want string
	}{
		{"regenerate", nil, "what is on tonight"},
		{"edit", genai.NewContentFromText("never mind, what time is it?", genai.RoleUser), "what time is it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newRemoteFixture(t, a2apeer.Works, nil, eventsCall, echoReply)
			sid := f.startRemote("chat")
			f.rewindRemote("chat", tc.edit)
			f.waitCancelled(sid)
			if got := f.responses("chat", "c1"); len(got) != 0 {
				t.Errorf("responses to c1 in the chat as it now is = %s, want none (taken back)", toJSON(got))
			}
			if holdsCall(f.history("chat"), "c1") {
				t.Error("the chat as it now is still holds c1")
			}
			if text := finalText(f.history("chat")); !strings.Contains(text, tc.want) {
				t.Errorf("the turn run again answered %q, want the model's reply to %q", text, tc.want)
			}
			if c := f.record("chat", "c1"); c != nil {
				t.Errorf("c1 is still open after the rewind: %+v", c)
			}
		})
	}
}

// TestRemoteExpiry: a remote call whose Timeout runs out while the remote
// works is expired by the sweeper: the model hears once that it had no
// result in time, and the remote task is cancelled once.
func TestRemoteExpiry(t *testing.T) {
	t.Parallel()
	f := newRemoteFixture(t, a2apeer.Works, nil, eventsCall, echoReply)
	sid := f.startRemote("chat")
	later := time.Now().Add(2 * time.Hour)
	report, err := f.team.Sweep(platform.WithTimeProvider(t.Context(), func() time.Time { return later }), later)
	if err != nil || report.Expired != 1 || report.Resumed != 1 {
		t.Fatalf("Sweep() = %+v, %v; want c1 expired and its step resumed", report, err)
	}
	f.waitCancelled(sid)
	got := f.responses("chat", "c1")
	if len(got) != 1 || !strings.Contains(toJSON(got[0]), "no result within 1h") {
		t.Fatalf("responses to c1 = %s, want one saying it had no result in time", toJSON(got))
	}
	if text := finalText(f.history("chat")); !strings.Contains(text, "no result within 1h") {
		t.Errorf("the model's answer %q does not read the expiry", text)
	}
}

// TestRemoteAnswerRacesAWrite: a remote's terminal state whose answer
// finds the record changed under it twice (a notification or a reply
// recorded meanwhile; seen in TestRemoteAgentAsks under load) is applied
// to the record as it then is: the call is answered once and the agent
// resumed, rather than the remote's last state dropped until a poll.
func TestRemoteAnswerRacesAWrite(t *testing.T) {
	t.Parallel()
	f := newRemoteFixture(t, a2apeer.Works, nil, eventsCall, echoReply)
	f.startRemote("chat")
	other, _ := firestoretest.Reopen(t, f.client)
	const racedAnswers = 2
	var raced atomic.Int32
	f.counter.SetHook(func(method string, req any) error {
		commit, _ := req.(*firestorepb.CommitRequest)
		for _, w := range commit.GetWrites() {
			name := w.GetUpdate().GetName()
			if !strings.HasSuffix(name, "/calls/c1") || !containsPath(w.GetUpdateMask().GetFieldPaths(), "answer") {
				continue
			}
			n := raced.Add(1)
			if n > racedAnswers {
				continue
			}
			// Another writer gets there first (with a value of its own:
			// a write that changes nothing leaves the version as it was).
			_, path, _ := strings.Cut(name, "/documents/")
			if _, err := other.Doc(path).Update(t.Context(), []firestore.Update{{Path: "hint", Value: fmt.Sprint("raced ", n)}}); err != nil {
				t.Errorf("the racing write: %v", err)
			}
		}
		return nil
	})
	f.peer.Release()
	got := f.waitResponse("chat", "c1")
	if !strings.Contains(toJSON(got), "jazz at the Blue Room") {
		t.Errorf("response = %s, want the remote's result", toJSON(got))
	}
	if n := raced.Load(); n <= racedAnswers {
		t.Errorf("the answer was tried %d times, want %d lost to the racing write and one that took", n, racedAnswers)
	}
	if n := len(f.responses("chat", "c1")); n != 1 {
		t.Errorf("%d responses to c1, want one", n)
	}
}
