package sessionstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"google.golang.org/adk/v2/platform"
	"google.golang.org/adk/v2/session"

	"github.com/baton-run/baton/sessionstore"
)

// TestSessionTokens: each session counts the tokens its events reported on
// the current UTC day, a new day starting again; a user's day is the sum
// over the user's sessions, and a session deleted (Delete or PurgeSession)
// leaves its count of the day in the user's day document, so deleting a
// chat gives nothing back. A count of an earlier day is not carried.
func TestSessionTokens(t *testing.T) {
	t.Parallel()
	svc := newService(t)
	day1 := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	day2 := day1.Add(24 * time.Hour)
	on := func(at time.Time) context.Context {
		return platform.WithTimeProvider(t.Context(), func() time.Time { return at })
	}
	handles := map[string]*sessionstore.Session{}
	for _, k := range []struct{ user, id string }{{"u", "s1"}, {"u", "s2"}, {"u", "s3"}, {"v", "s1"}} {
		resp, err := svc.Create(on(day1), &session.CreateRequest{AppName: "app", UserID: k.user, SessionID: k.id})
		if err != nil {
			t.Fatal(err)
		}
		handles[k.user+"/"+k.id] = stored(t, resp.Session)
	}
	n := 0
	use := func(key string, tokens int64, at time.Time) {
		t.Helper()
		n++
		ev := textEvent(fmt.Sprint("e", n), "model", "ok")
		ev.Timestamp = at
		opts := sessionstore.AppendOptions{Tokens: sessionstore.TokenUse{N: tokens, At: at}}
		if err := svc.AppendEventWith(on(at), handles[key], ev, opts); err != nil {
			t.Fatal(err)
		}
	}
	want := func(what, user string, at time.Time, stored, deleted int64) {
		t.Helper()
		got, err := svc.SessionTokens(t.Context(), "app", user, at)
		if err != nil {
			t.Fatal(err)
		}
		docs, err := svc.ReadDocs(t.Context(), svc.DayTokensDoc("app", user, at))
		if err != nil {
			t.Fatal(err)
		}
		gone, err := sessionstore.DayTokens(docs[0])
		if err != nil {
			t.Fatal(err)
		}
		if got != stored || gone != deleted {
			t.Errorf("%s: %s's tokens on %s: sessions %d, deleted %d; want %d and %d", what, user, at.Format(time.DateOnly), got, gone, stored, deleted)
		}
	}

	use("u/s1", 100, day1)
	use("u/s1", 50, day1.Add(time.Hour))
	use("u/s2", 30, day1)
	use("u/s3", 5, day1)
	use("v/s1", 1000, day1)
	want("counted", "u", day1, 185, 0)
	want("another user", "v", day1, 1000, 0)

	// A handle read again goes on from the stored count.
	got, err := svc.Get(on(day1), &session.GetRequest{AppName: "app", UserID: "u", SessionID: "s1"})
	if err != nil {
		t.Fatal(err)
	}
	handles["u/s1"] = stored(t, got.Session)
	use("u/s1", 10, day1.Add(2*time.Hour))
	// The next day starts again.
	use("u/s2", 7, day2)
	want("s2 on the next day", "u", day1, 165, 0)
	want("the next day", "u", day2, 7, 0)

	if err := svc.Delete(on(day1), &session.DeleteRequest{AppName: "app", UserID: "u", SessionID: "s1"}); err != nil {
		t.Fatal(err)
	}
	want("s1 deleted", "u", day1, 5, 160)
	if _, err := svc.PurgeSession(on(day2), "app", "u", "s2"); err != nil {
		t.Fatal(err)
	}
	want("s2 purged", "u", day2, 0, 7)
	// s3 counted day 1's tokens: deleted on day 2, nothing is carried.
	if err := svc.Delete(on(day2), &session.DeleteRequest{AppName: "app", UserID: "u", SessionID: "s3"}); err != nil {
		t.Fatal(err)
	}
	want("s3 deleted a day later", "u", day1, 0, 160)
	want("s3 deleted a day later", "u", day2, 0, 7)
}
