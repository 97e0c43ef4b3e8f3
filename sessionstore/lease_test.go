package sessionstore_test

import (
	"errors"
	"testing"
	"time"

	"google.golang.org/adk/v2/platform"
	"google.golang.org/adk/v2/session"

	"github.com/baton-run/baton/sessionstore"
)

func TestLease(t *testing.T) {
	t.Parallel()
	svc := newService(t)
	base := time.Now().Truncate(time.Second) // Firestore keeps microseconds
	at := func(d time.Duration) func() time.Time { return func() time.Time { return base.Add(d) } }
	ctx0 := platform.WithTimeProvider(t.Context(), at(0))
	if _, err := svc.Create(ctx0, &session.CreateRequest{AppName: "app", UserID: "u", SessionID: "s"}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.AcquireLease(ctx0, "app", "u", "missing", "a", time.Minute); !errors.Is(err, sessionstore.ErrNotFound) {
		t.Errorf("AcquireLease(missing session) error = %v, want ErrNotFound", err)
	}
	a, err := svc.AcquireLease(ctx0, "app", "u", "s", "holder-a", 10*time.Second)
	if err != nil {
		t.Fatalf("AcquireLease(a) error = %v", err)
	}
	// Holder a reads the session for its invocation, then stalls.
	got, err := svc.Get(ctx0, &session.GetRequest{AppName: "app", UserID: "u", SessionID: "s"})
	if err != nil {
		t.Fatal(err)
	}
	stalled := got.Session

	_, err = svc.AcquireLease(platform.WithTimeProvider(t.Context(), at(4*time.Second)), "app", "u", "s", "holder-b", time.Minute)
	var busy *sessionstore.BusyError
	if !errors.As(err, &busy) || !errors.Is(err, sessionstore.ErrBusy) || busy.RetryAfter != 6*time.Second {
		t.Fatalf("AcquireLease while held error = %v, want BusyError retry after 6s", err)
	}

	ctx11 := platform.WithTimeProvider(t.Context(), at(11*time.Second))
	b, err := svc.AcquireLease(ctx11, "app", "u", "s", "holder-b", time.Minute)
	if err != nil {
		t.Fatalf("AcquireLease after expiry error = %v, want a takeover", err)
	}
	if b.Fence != a.Fence+1 {
		t.Errorf("fence after takeover = %d, want %d", b.Fence, a.Fence+1)
	}
	if err := svc.AppendEvent(ctx11, stalled, &session.Event{ID: "late", Author: "assistant"}); !errors.Is(err, sessionstore.ErrConflict) {
		t.Errorf("stalled holder's AppendEvent error = %v, want ErrConflict", err)
	}
	// The stalled holder's release must not free b's lease.
	if err := svc.ReleaseLease(ctx11, a); err != nil {
		t.Fatalf("ReleaseLease(a) error = %v", err)
	}
	if _, err := svc.AcquireLease(ctx11, "app", "u", "s", "holder-c", time.Minute); !errors.Is(err, sessionstore.ErrBusy) {
		t.Errorf("AcquireLease after a stale release error = %v, want ErrBusy", err)
	}
	if err := svc.ReleaseLease(ctx11, b); err != nil {
		t.Fatalf("ReleaseLease(b) error = %v", err)
	}
	if _, err := svc.AcquireLease(ctx11, "app", "u", "s", "holder-c", time.Minute); err != nil {
		t.Errorf("AcquireLease after release error = %v, want nil", err)
	}
	final, err := svc.Get(ctx11, &session.GetRequest{AppName: "app", UserID: "u", SessionID: "s"})
	if err != nil {
		t.Fatal(err)
	}
	if n := final.Session.Events().Len(); n != 0 {
		t.Errorf("stored events = %d, want the stalled write rejected", n)
	}
}
