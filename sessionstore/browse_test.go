package sessionstore_test

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/adk/v2/platform"
	"google.golang.org/adk/v2/session"

	"github.com/baton-run/baton/sessionstore"
)

// TestSessionsByLease: running, live and stuck sessions across users, a
// page at a time, and one user's; a released lease is none of them.
func TestSessionsByLease(t *testing.T) {
	svc := newService(t)
	base := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	ctx := platform.WithTimeProvider(t.Context(), func() time.Time { return base })
	create := func(user, id string) {
		t.Helper()
		if _, err := svc.Create(ctx, &session.CreateRequest{AppName: "app", UserID: user, SessionID: id}); err != nil {
			t.Fatal(err)
		}
	}
	lease := func(user, id string, ttl time.Duration, live bool) *sessionstore.Lease {
		t.Helper()
		l, err := svc.AcquireLease(ctx, sessionstore.LeaseRequest{App: "app", User: user, SessionID: id, Holder: "h-" + id, TTL: ttl, Live: live})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	for _, s := range []struct{ user, id string }{{"u", "run1"}, {"v", "run2"}, {"u", "live"}, {"u", "dead"}, {"v", "done"}, {"u", "never"}} {
		create(s.user, s.id)
	}
	lease("u", "run1", time.Minute, false)
	lease("v", "run2", 2*time.Minute, false)
	lease("u", "live", 3*time.Minute, true)
	lease("u", "dead", -time.Hour, false) // its holder died an hour ago
	if err := svc.ReleaseLease(ctx, lease("v", "done", time.Minute, false)); err != nil {
		t.Fatal(err)
	}
	page := func(f sessionstore.SessionFilter) [][]string {
		t.Helper()
		f.App, f.Now = "app", base
		var pages [][]string
		for range 5 {
			rows, next, err := svc.SessionsByLease(t.Context(), f)
			if err != nil {
				t.Fatalf("SessionsByLease(%+v): %v", f, err)
			}
			ids := []string{}
			for _, r := range rows {
				ids = append(ids, r.ID)
			}
			pages = append(pages, ids)
			if next == "" {
				break
			}
			f.Cursor = next
		}
		return pages
	}
	tests := []struct {
		name string
		f    sessionstore.SessionFilter
		want [][]string
	}{
		{"running, pages of two", sessionstore.SessionFilter{State: sessionstore.LeaseRunning, Limit: 2}, [][]string{{"run1", "run2"}, {"live"}}},
		{"live", sessionstore.SessionFilter{State: sessionstore.LeaseLive, Limit: 10}, [][]string{{"live"}}},
		{"stuck for ten minutes", sessionstore.SessionFilter{State: sessionstore.LeaseStuck, Before: base.Add(-10 * time.Minute), Limit: 10}, [][]string{{"dead"}}},
		{"stuck for two hours", sessionstore.SessionFilter{State: sessionstore.LeaseStuck, Before: base.Add(-2 * time.Hour), Limit: 10}, [][]string{{}}},
		{"one user running", sessionstore.SessionFilter{State: sessionstore.LeaseRunning, User: "v", Limit: 10}, [][]string{{"run2"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, page(tt.f)); diff != "" {
				t.Errorf("pages (-want +got):\n%s", diff)
			}
		})
	}
	if _, _, err := svc.SessionsByLease(t.Context(), sessionstore.SessionFilter{App: "app", Limit: 10, Cursor: "bm9wZQ"}); !errors.Is(err, sessionstore.ErrBadCursor) {
		t.Errorf("a forged cursor = %v, want ErrBadCursor", err)
	}
	if _, _, err := svc.SessionsByLease(t.Context(), sessionstore.SessionFilter{App: "app", Limit: 0}); err == nil {
		t.Error("a page of 0 sessions was not refused")
	}
}

// TestChatsBrowse: a user's chats by last activity, and chats whose
// cleanup is overdue across users.
func TestChatsBrowse(t *testing.T) {
	svc := newService(t)
	base := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	due := base.Add(-time.Hour)
	for i, c := range []*sessionstore.Chat{
		{App: "app", UserID: "u", ID: "old", SessionID: "old~0", LastActivity: base.Add(-2 * time.Hour)},
		{App: "app", UserID: "u", ID: "new", SessionID: "new~0", LastActivity: base},
		{App: "app", UserID: "v", ID: "half", SessionID: "half~1", LastActivity: base, CleanupAt: &due},
	} {
		c.Created = base.Add(time.Duration(i) * time.Second)
		if err := svc.CreateChat(t.Context(), c); err != nil {
			t.Fatal(err)
		}
	}
	ids := func(chats []*sessionstore.Chat) []string {
		out := []string{}
		for _, c := range chats {
			out = append(out, c.ID)
		}
		return out
	}
	got, next, err := svc.Chats(t.Context(), sessionstore.ChatFilter{App: "app", User: "u", Limit: 1})
	if err != nil || next == "" {
		t.Fatalf("Chats page 1 = %v, %q, %v", ids(got), next, err)
	}
	more, _, err := svc.Chats(t.Context(), sessionstore.ChatFilter{App: "app", User: "u", Limit: 1, Cursor: next})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"new", "old"}, append(ids(got), ids(more)...)); diff != "" {
		t.Errorf("a user's chats (-want +got):\n%s", diff)
	}
	half, _, err := svc.Chats(t.Context(), sessionstore.ChatFilter{App: "app", CleanupBefore: base.Add(-10 * time.Minute), Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"half"}, ids(half)); diff != "" {
		t.Errorf("overdue cleanups (-want +got):\n%s", diff)
	}
	if _, _, err := svc.Chats(t.Context(), sessionstore.ChatFilter{App: "app", Limit: 10}); err == nil {
		t.Error("all chats of every user by activity were listed; want a refusal")
	}
}
