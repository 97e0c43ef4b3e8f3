package sessionstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/adk/v2/platform"
	"google.golang.org/adk/v2/session"

	"github.com/baton-run/baton/sessionstore"
)

// TestSessionsLive: a live lease marks its session (liveUntil) with the
// commit that takes it, each renewal and AcquireLease with Live; the
// release removes the mark, and a holder that dies leaves one that passes
// with its lease. An ordinary lease marks nothing.
func TestSessionsLive(t *testing.T) {
	t.Parallel()
	svc := newService(t)
	base := time.Now().Truncate(time.Second)
	at := func(d time.Duration) context.Context {
		return platform.WithTimeProvider(t.Context(), func() time.Time { return base.Add(d) })
	}
	ttl := 10 * time.Second
	count := func(ctx context.Context) int64 {
		t.Helper()
		n, err := svc.SessionsLive(ctx, "app", "u", platform.Now(ctx))
		if err != nil {
			t.Fatalf("SessionsLive() error = %v", err)
		}
		return n
	}
	type step struct {
		name string
		run  func() error
		at   time.Duration // when the count is taken
		want int64
	}
	var claimed, acquired *sessionstore.Lease
	steps := []step{
		{"a live claim on a new session", func() error {
			sess, claim, err := svc.ClaimNewSession(at(0), &session.CreateRequest{AppName: "app", UserID: "u", SessionID: "live-1"}, nil, "live:tab", ttl)
			if err != nil {
				return err
			}
			claimed = claim.Live().Lease()
			return svc.AppendEventWith(at(0), sess, &session.Event{ID: "e1", Author: "assistant"}, sessionstore.AppendOptions{Claim: claim})
		}, 0, 1},
		{"an ordinary claim", func() error {
			sess, claim, err := svc.ClaimNewSession(at(0), &session.CreateRequest{AppName: "app", UserID: "u", SessionID: "text-1"}, nil, "tab", ttl)
			if err != nil {
				return err
			}
			return svc.AppendEventWith(at(0), sess, &session.Event{ID: "e1", Author: "assistant"}, sessionstore.AppendOptions{Claim: claim})
		}, 0, 1},
		{"an acquired live lease", func() error {
			if _, err := svc.Create(at(0), &session.CreateRequest{AppName: "app", UserID: "u", SessionID: "live-2"}); err != nil {
				return err
			}
			var err error
			acquired, err = svc.AcquireLease(at(0), sessionstore.LeaseRequest{App: "app", User: "u", SessionID: "live-2", Holder: "live:b", TTL: ttl, Live: true})
			return err
		}, 0, 2},
		{"the first mark passes unrenewed", func() error { return nil }, 10 * time.Second, 0},
		{"a renewal moves the mark", func() error { return svc.RenewLease(at(8*time.Second), claimed, ttl) }, 10 * time.Second, 1},
		{"a release removes it", func() error { return svc.ReleaseLease(at(9*time.Second), claimed) }, 10 * time.Second, 0},
	}
	for _, s := range steps {
		if err := s.run(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if got := count(at(s.at)); got != s.want {
			t.Errorf("%s: SessionsLive() = %d, want %d", s.name, got, s.want)
		}
	}
	sess, err := svc.Read(at(0), sessionstore.ReadRequest{App: "app", User: "u", SessionID: "live-2"})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(acquired.Expires(), sess.LiveUntil()); diff != "" {
		t.Errorf("LiveUntil() of the acquired session (-want +got):\n%s", diff)
	}
	if got := getSession(t, svc, "text-1").LiveUntil(); !got.IsZero() {
		t.Errorf("LiveUntil() of an ordinary session = %v, want zero", got)
	}
}
