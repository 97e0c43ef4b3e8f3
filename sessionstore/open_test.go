package sessionstore_test

import (
	"errors"
	"testing"
	"time"

	"google.golang.org/adk/v2/platform"
	"google.golang.org/adk/v2/session"
	"google.golang.org/genai"

	"github.com/baton-run/baton/sessionstore"
)

func textEvent(id, author, text string) *session.Event {
	ev := session.NewEvent(nil, "inv-"+id)
	ev.ID, ev.Author = id, author
	ev.Content = genai.NewContentFromText(text, genai.RoleUser)
	return ev
}

// TestClaimLease: a lease taken by an append holds only if the
// session is as the handle read it. A handle whose history went stale (an
// append, or a lease taken, after the read) writes nothing and reads as
// busy; once taken, the lease fences like AcquireLease's: a holder that
// stalls past its term and is taken over cannot append again.
func TestClaimLease(t *testing.T) {
	t.Parallel()
	svc := newService(t)
	base := time.Now().Truncate(time.Second)
	at := func(d time.Duration) func() time.Time { return func() time.Time { return base.Add(d) } }
	ctx0 := platform.WithTimeProvider(t.Context(), at(0))
	if _, err := svc.Create(ctx0, &session.CreateRequest{AppName: "app", UserID: "u", SessionID: "s"}); err != nil {
		t.Fatal(err)
	}
	get := func() *sessionstore.Session {
		t.Helper()
		got, err := svc.Read(ctx0, sessionstore.ReadRequest{App: "app", User: "u", SessionID: "s", Shared: true})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	tests := []struct {
		name  string
		stale func(t *testing.T) // what happens between the read and the take
	}{
		{"an append after the read", func(t *testing.T) {
			if err := svc.AppendEvent(ctx0, get(), textEvent("other", "user", "meanwhile")); err != nil {
				t.Fatal(err)
			}
		}},
		{"a lease taken after the read", func(t *testing.T) {
			l, err := svc.AcquireLease(ctx0, sessionstore.LeaseRequest{App: "app", User: "u", SessionID: "s", Holder: "other", TTL: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			if err := svc.ReleaseLease(ctx0, l); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		stale := get()
		claim, err := svc.ClaimLease(ctx0, stale, "late", 10*time.Second)
		if err != nil {
			t.Fatalf("%s: ClaimLease error = %v", tt.name, err)
		}
		tt.stale(t)
		before := get().Events().Len()
		err = svc.AppendEventWith(ctx0, stale, textEvent("stale-"+tt.name, "user", "from a stale read"), sessionstore.AppendOptions{Claim: claim})
		if !errors.Is(err, sessionstore.ErrBusy) {
			t.Errorf("%s: append taking the lease error = %v, want ErrBusy", tt.name, err)
		}
		if n := get().Events().Len(); n != before {
			t.Errorf("%s: stored events = %d, want %d: a stale handle must write nothing", tt.name, n, before)
		}
	}

	// A fresh read takes the lease with its append; a live lease is busy.
	a := get()
	claim, err := svc.ClaimLease(ctx0, a, "holder-a", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	lease := claim.Lease()
	if err := svc.AppendEventWith(ctx0, a, textEvent("msg", "user", "hello"), sessionstore.AppendOptions{Claim: claim}); err != nil {
		t.Fatalf("append taking the lease error = %v", err)
	}
	if _, err := svc.ClaimLease(platform.WithTimeProvider(t.Context(), at(5*time.Second)), get(), "holder-b", 10*time.Second); !errors.Is(err, sessionstore.ErrBusy) {
		t.Errorf("ClaimLease while held error = %v, want ErrBusy", err)
	}
	// Holder a stalls past its term; b takes the session over.
	ctx11 := platform.WithTimeProvider(t.Context(), at(11*time.Second))
	b, err := svc.AcquireLease(ctx11, sessionstore.LeaseRequest{App: "app", User: "u", SessionID: "s", Holder: "holder-b", TTL: time.Minute})
	if err != nil {
		t.Fatalf("AcquireLease after expiry error = %v", err)
	}
	if b.Fence != lease.Fence+1 {
		t.Errorf("fence after takeover = %d, want %d", b.Fence, lease.Fence+1)
	}
	if err := svc.AppendEvent(ctx11, a, textEvent("late", "model", "answer")); !errors.Is(err, sessionstore.ErrLeaseLost) {
		t.Errorf("stalled holder's append error = %v, want ErrLeaseLost", err)
	}
	if err := svc.ReleaseLease(ctx11, lease); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.AcquireLease(ctx11, sessionstore.LeaseRequest{App: "app", User: "u", SessionID: "s", Holder: "holder-c", TTL: time.Minute}); !errors.Is(err, sessionstore.ErrBusy) {
		t.Errorf("AcquireLease after the stalled holder's release error = %v, want ErrBusy (b still holds it)", err)
	}
}

// TestClaimNewSession: the first append through a handle from
// ClaimNewSession stores the chat, the session, its lease and the event in
// one commit; if the session exists by then, it writes nothing.
func TestClaimNewSession(t *testing.T) {
	t.Parallel()
	svc := newService(t)
	ctx := t.Context()
	chat := &sessionstore.Chat{App: "app", UserID: "u", ID: "c", Agent: "a", SessionID: "c~0"}
	sess, claim, err := svc.ClaimNewSession(ctx, &session.CreateRequest{AppName: "app", UserID: "u", SessionID: "c~0"}, chat, "holder", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.GetChat(ctx, "app", "u", "c"); !errors.Is(err, sessionstore.ErrNotFound) {
		t.Errorf("GetChat before the append error = %v, want ErrNotFound: nothing is stored yet", err)
	}
	lease := claim.Lease()
	if err := svc.AppendEventWith(ctx, sess, textEvent("m1", "user", "hello"), sessionstore.AppendOptions{Claim: claim}); err != nil {
		t.Fatalf("first append error = %v", err)
	}
	got, err := svc.ReadChat(ctx, sessionstore.ChatRead{App: "app", User: "u", ChatID: "c", SessionID: "c~0"})
	if err != nil || got.Chat == nil || got.Session == nil || got.Chat.SessionID != "c~0" || got.Session.Events().Len() != 1 {
		t.Fatalf("ReadChat = %+v, %v; want the chat and its session with one event", got, err)
	}
	if _, err := svc.AcquireLease(ctx, sessionstore.LeaseRequest{App: "app", User: "u", SessionID: "c~0", Holder: "other", TTL: time.Second}); !errors.Is(err, sessionstore.ErrBusy) {
		t.Errorf("AcquireLease after the creating append error = %v, want ErrBusy: the append took the lease", err)
	}
	if err := svc.AppendEvent(ctx, sess, textEvent("m2", "model", "hi")); err != nil {
		t.Errorf("second append under the lease error = %v", err)
	}
	if err := svc.ReleaseLease(ctx, lease); err != nil {
		t.Fatal(err)
	}

	again, againClaim, err := svc.ClaimNewSession(ctx, &session.CreateRequest{AppName: "app", UserID: "u", SessionID: "c~0"}, chat, "late", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.AppendEventWith(ctx, again, textEvent("m3", "user", "again"), sessionstore.AppendOptions{Claim: againClaim}); !errors.Is(err, sessionstore.ErrBusy) {
		t.Errorf("creating append of an existing session error = %v, want ErrBusy", err)
	}
	if got, _ = svc.ReadChat(ctx, sessionstore.ChatRead{App: "app", User: "u", ChatID: "c", SessionID: "c~0"}); got == nil || got.Session == nil || got.Session.Events().Len() != 2 {
		t.Errorf("after the refused create: %+v, want the session with the 2 events stored before", got)
	}
}
