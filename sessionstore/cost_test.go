package sessionstore_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/session"
	"google.golang.org/genai"

	"github.com/baton-run/baton/internal/firestoretest"
	"github.com/baton-run/baton/sessionstore"
)

// kilobyteEvent is an event whose stored form is about 1 KB.
func kilobyteEvent(i int, delta map[string]any) *session.Event {
	return &session.Event{ID: fmt.Sprintf("e%d", i), Author: "user", InvocationID: "inv",
		Actions:     session.EventActions{StateDelta: delta},
		LLMResponse: model.LLMResponse{Content: genai.NewContentFromText(strings.Repeat("lorem ipsum ", 70), "user")}}
}

// TestCostBounds holds the storage to its budget: Get on 1,000 events of
// about 1 KB looks up at most 6 documents (found or not: Firestore bills
// both) in at most 2 round trips, and an append costs 1 round trip and at
// most 3 writes.
func TestCostBounds(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	client, counter := firestoretest.NewCountingClient(t)
	svc := sessionstore.New(client, nil)
	created, err := svc.Create(ctx, &session.CreateRequest{AppName: "app", UserID: "u", SessionID: "s",
		State: map[string]any{"app:theme": "dark", "user:name": "Ada", "topic": "music"}})
	if err != nil {
		t.Fatal(err)
	}
	worst := firestoretest.Ops{}
	for i := range 1000 {
		var delta map[string]any
		switch i % 50 {
		case 0:
			delta = map[string]any{"user:seen": i}
		case 1:
			delta = map[string]any{"app:count": i, "topic": fmt.Sprint(i)}
		}
		before := counter.Snapshot()
		if err := svc.AppendEvent(ctx, created.Session, kilobyteEvent(i, delta)); err != nil {
			t.Fatalf("AppendEvent(%d) error = %v", i, err)
		}
		ops := counter.Snapshot().Sub(before)
		worst.RoundTrips = max(worst.RoundTrips, ops.RoundTrips)
		worst.Writes = max(worst.Writes, ops.Writes)
	}
	if worst.RoundTrips > 1 || worst.Writes > 3 {
		t.Errorf("worst AppendEvent cost: %d round trips, %d writes; want at most 1 and 3", worst.RoundTrips, worst.Writes)
	}

	before := counter.Snapshot()
	got, err := sessionstore.New(client, nil).Get(ctx, &session.GetRequest{AppName: "app", UserID: "u", SessionID: "s"})
	if err != nil {
		t.Fatal(err)
	}
	ops := counter.Snapshot().Sub(before)
	if got.Session.Events().Len() != 1000 {
		t.Fatalf("Get() returned %d events, want 1000", got.Session.Events().Len())
	}
	if ops.Lookups() > 6 || ops.RoundTrips > 2 {
		t.Errorf("Get() of 1,000 events looked up %d documents (%d missing) in %d round trips; want at most 6 in 2", ops.Lookups(), ops.Missing, ops.RoundTrips)
	}
	if v, _ := got.Session.State().Get("user:name"); v != "Ada" {
		t.Errorf("state user:name = %v, want Ada", v)
	}
}

// TestReadScopedCost: Read without Shared looks up the session document
// alone, where Get also looks up the app and user state documents, missing
// or not; an append through its handle still stores app: and user: state.
func TestReadScopedCost(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	client, counter := firestoretest.NewCountingClient(t)
	svc := sessionstore.New(client, nil)
	if _, err := svc.Create(ctx, &session.CreateRequest{AppName: "app", UserID: "u", SessionID: "s",
		State: map[string]any{"topic": "music"}}); err != nil {
		t.Fatal(err)
	}
	req := &session.GetRequest{AppName: "app", UserID: "u", SessionID: "s"}
	scopedReq := sessionstore.ReadRequest{App: "app", User: "u", SessionID: "s"}
	before := counter.Snapshot()
	if _, err := svc.Get(ctx, req); err != nil {
		t.Fatal(err)
	}
	if got, want := counter.Snapshot().Sub(before), (firestoretest.Ops{RoundTrips: 1, Reads: 1, Missing: 2}); got != want {
		t.Errorf("Get() with no app or user state: ops = %+v, want %+v", got, want)
	}

	before = counter.Snapshot()
	scoped, err := svc.Read(ctx, scopedReq)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := counter.Snapshot().Sub(before), (firestoretest.Ops{RoundTrips: 1, Reads: 1}); got != want {
		t.Errorf("Read() without Shared: ops = %+v, want %+v", got, want)
	}
	if v, _ := scoped.State().Get("topic"); v != "music" {
		t.Errorf("Read() without Shared: state topic = %v, want music", v)
	}
	if err := svc.AppendEvent(ctx, scoped, &session.Event{ID: "e1", Author: "user",
		Actions: session.EventActions{StateDelta: map[string]any{"user:name": "Ada", "app:theme": "dark", "topic": "food"}}}); err != nil {
		t.Fatalf("AppendEvent(scoped handle) error = %v", err)
	}
	got, err := svc.Get(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]any{"user:name": "Ada", "app:theme": "dark", "topic": "food"} {
		if v, _ := got.Session.State().Get(k); v != want {
			t.Errorf("Get() after append through a scoped handle: state %s = %v, want %v", k, v, want)
		}
	}
	again, err := svc.Read(ctx, scopedReq)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := again.State().Get("user:name"); !errors.Is(err, session.ErrStateKeyNotExist) {
		t.Errorf("Read() without Shared: state user:name error = %v, want ErrStateKeyNotExist", err)
	}
}
