package sessionstore_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/adk/v2/platform"
	"google.golang.org/adk/v2/session"

	"github.com/baton-run/baton/internal/firestoretest"
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
	if _, err := svc.AcquireLease(ctx0, sessionstore.LeaseRequest{App: "app", User: "u", SessionID: "missing", Holder: "a", TTL: time.Minute}); !errors.Is(err, sessionstore.ErrNotFound) {
		t.Errorf("AcquireLease(missing session) error = %v, want ErrNotFound", err)
	}
	a, err := svc.AcquireLease(ctx0, sessionstore.LeaseRequest{App: "app", User: "u", SessionID: "s", Holder: "holder-a", TTL: 10 * time.Second})
	if err != nil {
		t.Fatalf("AcquireLease(a) error = %v", err)
	}
	// Holder a reads the session for its invocation, then stalls.
	got, err := svc.Get(ctx0, &session.GetRequest{AppName: "app", UserID: "u", SessionID: "s"})
	if err != nil {
		t.Fatal(err)
	}
	stalled := got.Session

	_, err = svc.AcquireLease(platform.WithTimeProvider(t.Context(), at(4*time.Second)), sessionstore.LeaseRequest{App: "app", User: "u", SessionID: "s", Holder: "holder-b", TTL: time.Minute})
	var busy *sessionstore.BusyError
	if !errors.As(err, &busy) || !errors.Is(err, sessionstore.ErrBusy) || busy.RetryAfter != 6*time.Second {
		t.Fatalf("AcquireLease while held error = %v, want BusyError retry after 6s", err)
	}

	ctx11 := platform.WithTimeProvider(t.Context(), at(11*time.Second))
	b, err := svc.AcquireLease(ctx11, sessionstore.LeaseRequest{App: "app", User: "u", SessionID: "s", Holder: "holder-b", TTL: time.Minute})
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
	if _, err := svc.AcquireLease(ctx11, sessionstore.LeaseRequest{App: "app", User: "u", SessionID: "s", Holder: "holder-c", TTL: time.Minute}); !errors.Is(err, sessionstore.ErrBusy) {
		t.Errorf("AcquireLease after a stale release error = %v, want ErrBusy", err)
	}
	if err := svc.ReleaseLease(ctx11, b); err != nil {
		t.Fatalf("ReleaseLease(b) error = %v", err)
	}
	if _, err := svc.AcquireLease(ctx11, sessionstore.LeaseRequest{App: "app", User: "u", SessionID: "s", Holder: "holder-c", TTL: time.Minute}); err != nil {
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

func TestLeaseRenewal(t *testing.T) {
	t.Parallel()
	svc := newService(t)
	base := time.Now().Truncate(time.Second)
	at := func(d time.Duration) context.Context {
		return platform.WithTimeProvider(t.Context(), func() time.Time { return base.Add(d) })
	}
	if _, err := svc.Create(at(0), &session.CreateRequest{AppName: "app", UserID: "u", SessionID: "s"}); err != nil {
		t.Fatal(err)
	}
	a, err := svc.AcquireLease(at(0), sessionstore.LeaseRequest{App: "app", User: "u", SessionID: "s", Holder: "holder-a", TTL: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	underA := at(0)
	got, err := readUnder(underA, svc, a)
	if err != nil {
		t.Fatalf("Get under the lease error = %v", err)
	}
	// Renewing writes the session document; the holder's own handle must
	// still append.
	if err := svc.RenewLease(at(8*time.Second), a, 10*time.Second); err != nil {
		t.Fatalf("RenewLease error = %v", err)
	}
	if want := base.Add(18 * time.Second); !a.Expires().Equal(want) {
		t.Errorf("Expires after renewal = %v, want %v", a.Expires(), want)
	}
	if err := svc.AppendEvent(underA, got, &session.Event{ID: "e1", Author: "assistant"}); err != nil {
		t.Fatalf("AppendEvent after renewal error = %v, want nil", err)
	}
	if _, err := svc.AcquireLease(at(12*time.Second), sessionstore.LeaseRequest{App: "app", User: "u", SessionID: "s", Holder: "holder-b", TTL: time.Minute}); !errors.Is(err, sessionstore.ErrBusy) {
		t.Fatalf("AcquireLease before the renewed expiry error = %v, want ErrBusy", err)
	}
	// a stalls past its expiry and b takes over.
	b, err := svc.AcquireLease(at(19*time.Second), sessionstore.LeaseRequest{App: "app", User: "u", SessionID: "s", Holder: "holder-b", TTL: time.Minute})
	if err != nil {
		t.Fatalf("AcquireLease after expiry error = %v", err)
	}
	if err := svc.RenewLease(at(19*time.Second), a, 10*time.Second); !errors.Is(err, sessionstore.ErrLeaseLost) {
		t.Errorf("stalled RenewLease error = %v, want ErrLeaseLost", err)
	}
	if err := svc.AppendEvent(underA, got, &session.Event{ID: "late", Author: "assistant"}); !errors.Is(err, sessionstore.ErrLeaseLost) {
		t.Errorf("stalled AppendEvent error = %v, want ErrLeaseLost", err)
	}
	if _, err := readUnder(underA, svc, a); !errors.Is(err, sessionstore.ErrLeaseLost) {
		t.Errorf("stalled Get under the lease error = %v, want ErrLeaseLost", err)
	}
	select {
	case <-a.Lost():
	default:
		t.Error("a.Lost() not closed after the takeover was seen")
	}
	underB := at(19 * time.Second)
	fresh, err := readUnder(underB, svc, b)
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.AppendEvent(underB, fresh, &session.Event{ID: "e2", Author: "assistant"}); err != nil {
		t.Fatalf("new holder's AppendEvent error = %v", err)
	}
	// A second handle of b's, read before b's append, must not overwrite it.
	if err := svc.AppendEvent(underB, fresh, &session.Event{ID: "e3", Author: "assistant"}); err != nil {
		t.Fatalf("second AppendEvent through the same handle error = %v", err)
	}
	if err := svc.ReleaseLease(at(20*time.Second), b); err != nil {
		t.Fatal(err)
	}
	final, err := svc.Get(at(20*time.Second), &session.GetRequest{AppName: "app", UserID: "u", SessionID: "s"})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for ev := range final.Session.Events().All() {
		ids = append(ids, ev.ID)
	}
	if diff := cmp.Diff([]string{"e1", "e2", "e3"}, ids); diff != "" {
		t.Errorf("stored events (-want +got):\n%s", diff)
	}
}

func TestStaleHandleUnderLease(t *testing.T) {
	t.Parallel()
	svc := newService(t)
	ctx := t.Context()
	if _, err := svc.Create(ctx, &session.CreateRequest{AppName: "app", UserID: "u", SessionID: "s"}); err != nil {
		t.Fatal(err)
	}
	l, err := svc.AcquireLease(ctx, sessionstore.LeaseRequest{App: "app", User: "u", SessionID: "s", Holder: "h", TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	first, err := readUnder(ctx, svc, l)
	if err != nil {
		t.Fatal(err)
	}
	second, err := readUnder(ctx, svc, l)
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.AppendEvent(ctx, first, &session.Event{ID: "e1", Author: "assistant"}); err != nil {
		t.Fatal(err)
	}
	if err := svc.AppendEvent(ctx, second, &session.Event{ID: "e2", Author: "assistant"}); !errors.Is(err, sessionstore.ErrConflict) || errors.Is(err, sessionstore.ErrLeaseLost) {
		t.Errorf("AppendEvent through a handle read before the holder's last append error = %v, want ErrConflict (not ErrLeaseLost)", err)
	}
}

func TestKeepLease(t *testing.T) {
	t.Parallel()
	svc := newService(t)
	ctx := t.Context()
	if _, err := svc.Create(ctx, &session.CreateRequest{AppName: "app", UserID: "u", SessionID: "s"}); err != nil {
		t.Fatal(err)
	}
	const ttl = 900 * time.Millisecond
	l, err := svc.AcquireLease(ctx, sessionstore.LeaseRequest{App: "app", User: "u", SessionID: "s", Holder: "h", TTL: ttl})
	if err != nil {
		t.Fatal(err)
	}
	stop := svc.KeepLease(ctx, l, ttl)
	time.Sleep(3 * ttl)
	if _, err := svc.AcquireLease(ctx, sessionstore.LeaseRequest{App: "app", User: "u", SessionID: "s", Holder: "other", TTL: ttl}); !errors.Is(err, sessionstore.ErrBusy) {
		t.Errorf("AcquireLease of a kept lease after 3 terms error = %v, want ErrBusy", err)
	}
	stop()
	// A holder that stops renewing (as a dead one does) frees the session
	// within one term.
	time.Sleep(ttl + 100*time.Millisecond)
	if _, err := svc.AcquireLease(ctx, sessionstore.LeaseRequest{App: "app", User: "u", SessionID: "s", Holder: "other", TTL: ttl}); err != nil {
		t.Errorf("AcquireLease one term after renewals stopped error = %v, want nil", err)
	}
	select {
	case <-l.Lost():
		t.Error("Lost() closed although the lease was only let go")
	default:
	}
}

// TestKeepLeaseStopLetsRenewalFinish: stopping the renewals while one is
// in flight waits for it instead of cancelling it (a cancelled commit may
// still be applied, and the holder's next conditional write would then
// read as a lost lease): the renewal lands, and the holder's next append
// and release succeed.
func TestKeepLeaseStopLetsRenewalFinish(t *testing.T) {
	t.Parallel()
	client, counter := firestoretest.NewCountingClient(t)
	svc := sessionstore.New(client, nil)
	ctx := t.Context()
	if _, err := svc.Create(ctx, &session.CreateRequest{AppName: "app", UserID: "u", SessionID: "s"}); err != nil {
		t.Fatal(err)
	}
	const ttl = 600 * time.Millisecond
	l, err := svc.AcquireLease(ctx, sessionstore.LeaseRequest{App: "app", User: "u", SessionID: "s", Holder: "h", TTL: ttl})
	if err != nil {
		t.Fatal(err)
	}
	held, err := readUnder(ctx, svc, l)
	if err != nil {
		t.Fatal(err)
	}
	acquired := l.Expires()
	inFlight, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	counter.SetHook(func(method string, _ any) error {
		if strings.HasSuffix(method, "/Commit") {
			once.Do(func() { close(inFlight); <-release }) // the first renewal
		}
		return nil
	})
	stop := svc.KeepLease(ctx, l, ttl)
	<-inFlight
	stopped := make(chan struct{})
	go func() { stop(); close(stopped) }()
	close(release)
	<-stopped
	counter.SetHook(nil)
	if !l.Expires().After(acquired) {
		t.Error("the renewal in flight when the renewals stopped did not land")
	}
	if err := svc.AppendEvent(ctx, held, textEvent("e1", "user", "after the renewals")); err != nil {
		t.Fatalf("append after stopping the renewals: %v", err)
	}
	if err := svc.ReleaseSession(ctx, held, sessionstore.ReleaseOptions{}); err != nil {
		t.Fatalf("release after stopping the renewals: %v", err)
	}
	if !held.AsStored() {
		t.Error("the handle is not current after its release")
	}
}

// readUnder reads the session of the lease l under it.
func readUnder(ctx context.Context, svc *sessionstore.Service, l *sessionstore.Lease) (*sessionstore.Session, error) {
	return svc.Read(ctx, sessionstore.ReadRequest{App: l.App, User: l.User, SessionID: l.SessionID, Shared: true, Lease: l})
}

// TestLeaseTakeOver: a request whose TakeOver accepts the holder of a live
// lease takes it over; the fence then refuses the former holder's renewal.
// One that does not accept it is refused as busy.
func TestLeaseTakeOver(t *testing.T) {
	t.Parallel()
	svc := newService(t)
	ctx := t.Context()
	if _, err := svc.Create(ctx, &session.CreateRequest{AppName: "app", UserID: "u", SessionID: "s"}); err != nil {
		t.Fatal(err)
	}
	req := func(holder string, takeOver func(string) bool) sessionstore.LeaseRequest {
		return sessionstore.LeaseRequest{App: "app", User: "u", SessionID: "s", Holder: holder, TTL: time.Minute, TakeOver: takeOver}
	}
	a, err := svc.AcquireLease(ctx, req("holder-a", nil))
	if err != nil {
		t.Fatal(err)
	}
	var asked []string
	refuse := func(h string) bool { asked = append(asked, h); return false }
	if _, err := svc.AcquireLease(ctx, req("holder-b", refuse)); !errors.Is(err, sessionstore.ErrBusy) {
		t.Fatalf("AcquireLease refused by TakeOver: error = %v, want ErrBusy", err)
	}
	if diff := cmp.Diff([]string{"holder-a"}, asked); diff != "" {
		t.Errorf("TakeOver asked about (-want +got):\n%s", diff)
	}
	b, err := svc.AcquireLease(ctx, req("holder-b", func(h string) bool { return h == "holder-a" }))
	if err != nil {
		t.Fatalf("AcquireLease taking over: %v", err)
	}
	if b.Fence != a.Fence+1 {
		t.Errorf("fence after the takeover %d, want %d", b.Fence, a.Fence+1)
	}
	if err := svc.RenewLease(ctx, a, time.Minute); !errors.Is(err, sessionstore.ErrLeaseLost) {
		t.Errorf("RenewLease by the former holder: error = %v, want ErrLeaseLost", err)
	}
}
