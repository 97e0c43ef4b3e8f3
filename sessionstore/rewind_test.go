package sessionstore_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/firestore"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/platform"
	"google.golang.org/adk/v2/session"
	"google.golang.org/genai"

	"github.com/baton-run/baton/sessionstore"
)

// rewindFixture stores three invocations: inv1 (a=1, k="x"), inv2 (a=2,
// b=3, user:u=1) and inv3, two events each.
func rewindFixture(t *testing.T, svc *sessionstore.Service) {
	t.Helper()
	ctx := t.Context()
	created, err := svc.Create(ctx, &session.CreateRequest{AppName: "app", UserID: "u", SessionID: "s"})
	if err != nil {
		t.Fatal(err)
	}
	sess := created.Session
	deltas := map[string]map[string]any{
		"inv1": {"a": 1.0, "k": "x"},
		"inv2": {"a": 2.0, "b": 3.0, "user:u": 1.0},
	}
	for _, inv := range []string{"inv1", "inv2", "inv3"} {
		for _, author := range []string{"user", "agent"} {
			ev := session.NewEvent(ctx, inv)
			ev.ID = inv + "-" + author
			ev.Author = author
			ev.Content = genai.NewContentFromText(ev.ID, genai.RoleUser)
			if author == "user" {
				ev.Actions.StateDelta = deltas[inv]
			}
			if err := svc.AppendEvent(ctx, sess, ev); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func eventIDs(events []*session.Event) []string {
	ids := []string{}
	for _, ev := range events {
		if _, ok := sessionstore.RewindMarkOf(ev); ok {
			ids = append(ids, "mark")
			continue
		}
		ids = append(ids, ev.ID)
	}
	return ids
}

// leased reads the session whole under a fresh lease.
func leased(t *testing.T, svc *sessionstore.Service) (*sessionstore.Session, *sessionstore.Lease) {
	t.Helper()
	l, err := svc.AcquireLease(t.Context(), sessionstore.LeaseRequest{App: "app", User: "u", SessionID: "s", Holder: "h", TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	got, err := readUnder(t.Context(), svc, l)
	if err != nil {
		t.Fatal(err)
	}
	return got, l
}

func TestRewindLeavesRewoundEventsOut(t *testing.T) {
	t.Parallel()
	svc := newService(t)
	ctx := t.Context()
	rewindFixture(t, svc)
	sess, l := leased(t, svc)
	if _, err := svc.RewindSession(ctx, sess, "agent", sessionstore.RewindMark{Before: "unknown"}, sessionstore.AppendOptions{}); !errors.Is(err, sessionstore.ErrNotFound) {
		t.Errorf("RewindSession(unknown invocation) error = %v, want ErrNotFound", err)
	}
	mark, err := svc.RewindSession(ctx, sess, "agent", sessionstore.RewindMark{Before: "inv2", Request: "r1"}, sessionstore.AppendOptions{})
	if err != nil {
		t.Fatalf("RewindSession() error = %v", err)
	}
	if r, ok := sessionstore.RewindMarkOf(mark); !ok || r != (sessionstore.RewindMark{Before: "inv2", Request: "r1"}) {
		t.Errorf("RewindOf(mark) = %+v, %v", r, ok)
	}
	wantKept := []string{"inv1-user", "inv1-agent", "mark"}
	wantRewound := []string{"inv2-user", "inv2-agent", "inv3-user", "inv3-agent"}
	wantState := map[string]any{"a": 1.0, "k": "x", "user:u": 1.0}
	check := func(name string, sess *sessionstore.Session) {
		t.Helper()
		if diff := cmp.Diff(wantKept, eventIDs(collect(sess.Events()))); diff != "" {
			t.Errorf("%s: events (-want +got):\n%s", name, diff)
		}
		if diff := cmp.Diff(wantRewound, eventIDs(sess.Rewound())); diff != "" {
			t.Errorf("%s: Rewound (-want +got):\n%s", name, diff)
		}
		state := map[string]any{}
		for k, v := range sess.State().All() {
			state[k] = v
		}
		if diff := cmp.Diff(wantState, state); diff != "" {
			t.Errorf("%s: state (-want +got):\n%s", name, diff)
		}
	}
	check("handle", sess)
	got, err := svc.Get(ctx, &session.GetRequest{AppName: "app", UserID: "u", SessionID: "s"})
	if err != nil {
		t.Fatal(err)
	}
	check("Get", stored(t, got.Session))

	// A window that does not reach the rewound invocation's first event
	// still leaves out what the mark rewound.
	recent, err := svc.Get(ctx, &session.GetRequest{AppName: "app", UserID: "u", SessionID: "s", NumRecentEvents: 3})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"mark"}, eventIDs(collect(recent.Session.Events()))); diff != "" {
		t.Errorf("Get(3 recent): events (-want +got):\n%s", diff)
	}
	// A later turn, then a rewind before inv1: both marks compose.
	ev := session.NewEvent(ctx, "inv4")
	ev.ID, ev.Author, ev.Content = "inv4-user", "user", genai.NewContentFromText("4", genai.RoleUser)
	ev.Actions.StateDelta = map[string]any{"a": 4.0}
	if err := svc.AppendEvent(ctx, sess, ev); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.RewindSession(ctx, sess, "agent", sessionstore.RewindMark{Before: "inv4"}, sessionstore.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	wantKept = []string{"inv1-user", "inv1-agent", "mark", "mark"}
	wantRewound = append(wantRewound, "inv4-user")
	check("handle after a second rewind", sess)
	if _, err := svc.RewindSession(ctx, sess, "agent", sessionstore.RewindMark{Before: "inv1"}, sessionstore.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	wantKept, wantState = []string{"mark"}, map[string]any{"user:u": 1.0}
	wantRewound = []string{"inv1-user", "inv1-agent", "inv2-user", "inv2-agent", "inv3-user", "inv3-agent", "mark", "inv4-user", "mark"}
	got, err = svc.Get(ctx, &session.GetRequest{AppName: "app", UserID: "u", SessionID: "s"})
	if err != nil {
		t.Fatal(err)
	}
	check("Get after a rewind to the start", stored(t, got.Session))
	if err := svc.ReleaseLease(ctx, l); err != nil {
		t.Fatal(err)
	}
	// Last: a watch's end cancels its listener, which the emulator may
	// report on a call made right after.
	for c, err := range svc.Watch(ctx, "app", "u", "s", 0) {
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(wantKept, eventIDs(c.Events)); diff != "" {
			t.Errorf("Watch's first change (-want +got):\n%s", diff)
		}
		break
	}
}

// TestRewindUpdateConflict: a document beside the session that changed
// since it was read fails the rewind with ErrConflict, writing nothing,
// and the lease is still held.
func TestRewindUpdateConflict(t *testing.T) {
	t.Parallel()
	svc := newService(t)
	ctx := t.Context()
	rewindFixture(t, svc)
	sess, l := leased(t, svc)
	besideName := svc.SessionDoc("app", "u", "s").Child("calls", "c1")
	beside := svc.Client().Doc(besideName.Path())
	wr, err := beside.Create(ctx, map[string]any{"status": "pending"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := beside.Update(ctx, []firestore.Update{{Path: "status", Value: "resolved"}}); err != nil {
		t.Fatal(err)
	}
	cancel := func(since time.Time) sessionstore.Write {
		return sessionstore.Update(besideName, since, firestore.Update{Path: "status", Value: "cancelled"})
	}
	opts := sessionstore.AppendOptions{Writes: []sessionstore.Write{cancel(wr.UpdateTime)}}
	if _, err := svc.RewindSession(ctx, sess, "agent", sessionstore.RewindMark{Before: "inv2"}, opts); !errors.Is(err, sessionstore.ErrConflict) || errors.Is(err, sessionstore.ErrLeaseLost) {
		t.Fatalf("RewindSession(stale beside document) error = %v, want ErrConflict", err)
	}
	select {
	case <-l.Lost():
		t.Fatal("the lease was marked lost")
	default:
	}
	if diff := cmp.Diff([]string{"inv1-user", "inv1-agent", "inv2-user", "inv2-agent", "inv3-user", "inv3-agent"}, eventIDs(collect(sess.Events()))); diff != "" {
		t.Errorf("handle after a failed rewind (-want +got):\n%s", diff)
	}
	// Read again, the rewind goes through on the same lease.
	got, err := readUnder(ctx, svc, l)
	if err != nil {
		t.Fatal(err)
	}
	snap, err := beside.Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	opts.Writes = []sessionstore.Write{cancel(snap.UpdateTime)}
	if _, err := svc.RewindSession(ctx, got, "agent", sessionstore.RewindMark{Before: "inv2"}, opts); err != nil {
		t.Fatalf("RewindSession() after reading again error = %v", err)
	}
	if snap, err = beside.Get(ctx); err != nil || snap.Data()["status"] != "cancelled" {
		t.Errorf("beside document after the rewind = %v, %v; want status cancelled", snap.Data(), err)
	}
}

// TestRewindIntoSealedChunks: a mark rewinds events that were sealed into
// chunk documents, and reads with a window of recent events or a time
// bound leave them out as a whole read does.
func TestRewindIntoSealedChunks(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	svc := newService(t)
	created, err := svc.Create(ctx, &session.CreateRequest{AppName: "app", UserID: "u", SessionID: "s"})
	if err != nil {
		t.Fatal(err)
	}
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	text := strings.Repeat("x", 200_000)
	for i := range 12 { // ~2.4 MB: three chunks; invocation i/3 holds events 3k..3k+2
		ev := &session.Event{ID: fmt.Sprint(i), InvocationID: fmt.Sprint("inv", i/3), Author: "user",
			Timestamp: base.Add(time.Duration(i) * time.Second), LLMResponse: model.LLMResponse{Content: genai.NewContentFromText(text, "user")}}
		if err := svc.AppendEvent(ctx, created.Session, ev); err != nil {
			t.Fatalf("AppendEvent(%d) error = %v", i, err)
		}
	}
	sess, _ := leased(t, svc)
	if _, err := svc.RewindSession(platform.WithTimeProvider(ctx, func() time.Time { return base.Add(time.Minute) }),
		sess, "agent", sessionstore.RewindMark{Before: "inv1"}, sessionstore.AppendOptions{}); err != nil {
		t.Fatalf("RewindSession() error = %v", err)
	}
	for _, tc := range []struct {
		name    string
		req     session.GetRequest
		wantIDs string
	}{
		{"all", session.GetRequest{}, "0 1 2 mark"},
		{"recent 4", session.GetRequest{NumRecentEvents: 4}, "mark"},
		{"after 1s", session.GetRequest{After: base.Add(time.Second)}, "1 2 mark"},
	} {
		req := tc.req
		req.AppName, req.UserID, req.SessionID = "app", "u", "s"
		got, err := svc.Get(ctx, &req)
		if err != nil {
			t.Fatalf("%s: Get() error = %v", tc.name, err)
		}
		if diff := cmp.Diff(tc.wantIDs, strings.Join(eventIDs(collect(got.Session.Events())), " ")); diff != "" {
			t.Errorf("%s: event ids (-want +got):\n%s", tc.name, diff)
		}
	}
}
