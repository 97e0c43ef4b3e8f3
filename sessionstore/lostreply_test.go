package sessionstore_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/adk/v2/platform"
	"google.golang.org/adk/v2/session"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/baton-run/baton/internal/firestoretest"
	"github.com/baton-run/baton/sessionstore"
)

// countedSession returns a service whose calls counter counts (and fails
// as told), with session "s" of user "u" created.
func countedSession(t *testing.T) (*sessionstore.Service, *firestoretest.Counter) {
	t.Helper()
	client, counter := firestoretest.NewCountingClient(t)
	svc := sessionstore.New(client, nil)
	if _, err := svc.Create(t.Context(), &session.CreateRequest{AppName: "app", UserID: "u", SessionID: "s"}); err != nil {
		t.Fatal(err)
	}
	return svc, counter
}

// TestLostCommitReply: an append whose commit was made but answered with
// an error (the emulator's Canceled or Unknown when a listener of the
// session closes meanwhile, a reply lost on the way) is an append made:
// the handle goes on from it, its claimed lease held. One that was not
// made still fails, and stores nothing.
func TestLostCommitReply(t *testing.T) {
	t.Parallel()
	// The client retries an unavailable commit by itself: the retry finds
	// the session as the first attempt left it (a conflict).
	replies := map[string]error{
		"cancelled":   status.Error(codes.Canceled, "call already cancelled"),
		"unknown":     status.Error(codes.Unknown, ""),
		"unavailable": status.Error(codes.Unavailable, "connection reset"),
	}
	for name, reply := range replies {
		retried := status.Code(reply) == codes.Unavailable
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			svc, counter := countedSession(t)
			sess := getSession(t, svc, "s")

			if !retried {
				// Not made: the append fails, and nothing is stored.
				counter.FailNext("/Commit", reply)
				if err := svc.AppendEvent(ctx, sess, textEvent("e0", "user", "lost")); err == nil {
					t.Fatal("an append whose commit was not made succeeded")
				}
				if n := getSession(t, svc, "s").Events().Len(); n != 0 {
					t.Fatalf("the store holds %d events after a commit that was not made, want 0", n)
				}
			}

			// Made, its reply lost: the claiming append succeeds.
			sess = getSession(t, svc, "s")
			claim, err := svc.ClaimLease(ctx, sess, "h", 10*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			counter.LoseNextReply("/Commit", reply)
			if err := svc.AppendEventWith(ctx, sess, textEvent("e1", "user", "hello"), sessionstore.AppendOptions{Claim: claim}); err != nil {
				t.Fatalf("append whose commit was made, its reply lost: %v, want nil", err)
			}
			if sess.HeldLease() == nil {
				t.Fatal("the handle does not hold the lease its append took")
			}
			// The handle is the session as stored: it appends again, and
			// releases the lease.
			counter.LoseNextReply("/Commit", reply)
			if err := svc.AppendEvent(ctx, sess, textEvent("e2", "agent", "hi")); err != nil {
				t.Fatalf("second append, its reply lost too: %v, want nil", err)
			}
			if err := svc.ReleaseSession(ctx, sess, sessionstore.ReleaseOptions{}); err != nil {
				t.Fatalf("release after the appends: %v", err)
			}
			if !sess.AsStored() {
				t.Error("the handle is not claimable after its release")
			}
			fresh := getSession(t, svc, "s")
			if n := fresh.Events().Len(); n != 2 {
				t.Errorf("the store holds %d events, want 2", n)
			}
			if _, err := svc.AcquireLease(ctx, sessionstore.LeaseRequest{App: "app", User: "u", SessionID: "s", Holder: "probe", TTL: time.Second}); err != nil {
				t.Errorf("the lease after the release: %v, want it free", err)
			}
		})
	}
}

// TestLostReplyOfNewChat: the commit that creates a chat with its session
// and claims the lease, made but answered with an error, is made: the
// handle holds the lease and appends on.
func TestLostReplyOfNewChat(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	client, counter := firestoretest.NewCountingClient(t)
	svc := sessionstore.New(client, nil)
	chat := &sessionstore.Chat{App: "app", UserID: "u", ID: "c", Agent: "a", SessionID: "c~0"}
	sess, claim, err := svc.ClaimNewSession(ctx, &session.CreateRequest{AppName: "app", UserID: "u", SessionID: "c~0"}, chat, "holder", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	// An unavailable reply is retried by the client, whose retry finds
	// the documents created.
	counter.LoseNextReply("/Commit", status.Error(codes.Unavailable, "connection reset"))
	if err := svc.AppendEventWith(ctx, sess, textEvent("m1", "user", "hello"), sessionstore.AppendOptions{Claim: claim}); err != nil {
		t.Fatalf("creating append, its reply lost: %v, want nil", err)
	}
	if err := svc.AppendEvent(ctx, sess, textEvent("m2", "model", "hi")); err != nil {
		t.Fatalf("second append under the lease: %v", err)
	}
	if err := svc.ReleaseSession(ctx, sess, sessionstore.ReleaseOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := svc.ReadChat(ctx, sessionstore.ChatRead{App: "app", User: "u", ChatID: "c", SessionID: "c~0"})
	if err != nil || got.Chat == nil || got.Session == nil || got.Chat.SessionID != "c~0" || got.Session.Events().Len() != 2 {
		t.Fatalf("ReadChat = %+v, %v; want the chat and its session with two events", got, err)
	}
}

// TestLostReplyOfRenewal: a lease renewal that was stored, its reply lost,
// is a renewal made: the lease is not taken for lost, and renews on.
func TestLostReplyOfRenewal(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	svc, counter := countedSession(t)
	l, err := svc.AcquireLease(ctx, sessionstore.LeaseRequest{App: "app", User: "u", SessionID: "s", Holder: "h", TTL: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	for _, reply := range []error{status.Error(codes.Canceled, "call already cancelled"), status.Error(codes.Unavailable, "reset")} {
		counter.LoseNextReply("/Commit", reply)
		if err := svc.RenewLease(ctx, l, 10*time.Second); err != nil {
			t.Fatalf("renewal stored, its reply lost (%v): %v, want nil", reply, err)
		}
	}
	if err := svc.RenewLease(ctx, l, 10*time.Second); err != nil {
		t.Fatalf("renewal after them: %v", err)
	}
	select {
	case <-l.Lost():
		t.Fatal("the lease reads as lost")
	default:
	}
}

// TestLostReplyOfAcquire: a lease taken, its reply lost, is a lease held,
// not a session busy with it until its term runs out.
func TestLostReplyOfAcquire(t *testing.T) {
	t.Parallel()
	for name, reply := range map[string]error{
		"cancelled":   status.Error(codes.Canceled, "call already cancelled"),
		"unavailable": status.Error(codes.Unavailable, "connection reset"),
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			svc, counter := countedSession(t)
			counter.LoseNextReply("/Commit", reply)
			l, err := svc.AcquireLease(ctx, sessionstore.LeaseRequest{App: "app", User: "u", SessionID: "s", Holder: "h", TTL: 10 * time.Second})
			if err != nil {
				t.Fatalf("acquire stored, its reply lost: %v, want the lease", err)
			}
			if err := svc.RenewLease(ctx, l, 10*time.Second); err != nil {
				t.Fatalf("renewing the lease: %v", err)
			}
			if err := svc.ReleaseLease(ctx, l); err != nil {
				t.Fatal(err)
			}
			if _, err := svc.AcquireLease(ctx, sessionstore.LeaseRequest{App: "app", User: "u", SessionID: "s", Holder: "other", TTL: time.Second}); err != nil {
				t.Errorf("the lease after its release: %v, want it free", err)
			}
		})
	}
}

// TestLostReplyThenTakeover: an append stored, its reply lost, whose lease
// is taken over before the append reads the session back, is not taken
// for made: the holder is fenced out, as any holder taken over is.
func TestLostReplyThenTakeover(t *testing.T) {
	t.Parallel()
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(d time.Duration) context.Context {
		return platform.WithTimeProvider(t.Context(), func() time.Time { return base.Add(d) })
	}
	svc, counter := countedSession(t)
	a, err := svc.AcquireLease(at(0), sessionstore.LeaseRequest{App: "app", User: "u", SessionID: "s", Holder: "holder-a", TTL: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	underA := at(0)
	got, err := readUnder(underA, svc, a)
	if err != nil {
		t.Fatal(err)
	}
	// Once the commit is sent, the next read (the append's read back) is
	// preceded by b's takeover of the expired lease.
	var committed, tookOver atomic.Bool
	counter.SetHook(func(method string, _ any) error {
		switch {
		case strings.HasSuffix(method, "/Commit"):
			committed.Store(true)
		case strings.HasSuffix(method, "/BatchGetDocuments") && committed.Load() && tookOver.CompareAndSwap(false, true):
			if _, err := svc.AcquireLease(at(19*time.Second), sessionstore.LeaseRequest{App: "app", User: "u", SessionID: "s", Holder: "holder-b", TTL: time.Minute}); err != nil {
				t.Errorf("b's takeover: %v", err)
			}
		}
		return nil
	})
	counter.LoseNextReply("/Commit", status.Error(codes.Canceled, "call already cancelled"))
	err = svc.AppendEvent(underA, got, textEvent("e1", "agent", "stored, reply lost"))
	counter.SetHook(nil)
	if !tookOver.Load() {
		t.Fatal("the append did not read the session back after its commit")
	}
	if err == nil {
		t.Error("an append whose lease was taken over before it read the session back was taken for made")
	}
	if err := svc.AppendEvent(underA, got, textEvent("e2", "agent", "late")); !errors.Is(err, sessionstore.ErrLeaseLost) {
		t.Errorf("the next append of the holder taken over: %v, want ErrLeaseLost", err)
	}
}
