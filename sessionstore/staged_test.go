package sessionstore_test

import (
	"errors"
	"testing"
	"time"

	"google.golang.org/adk/v2/session"

	"github.com/baton-run/baton/sessionstore"
)

// TestStagedTurn follows one warm turn through the store: a handle left
// claimable by the previous turn's release claims the lease with a staged
// message, which its readers see at once and the store only once
// committed; the reply is staged too and stored with the release in one
// commit, after which the handle is claimable again and matches a fresh
// read.
func TestStagedTurn(t *testing.T) {
	t.Parallel()
	svc := newService(t)
	ctx := t.Context()
	if _, err := svc.Create(ctx, &session.CreateRequest{AppName: "app", UserID: "u", SessionID: "s"}); err != nil {
		t.Fatal(err)
	}
	warm := getSession(t, svc, "s")
	for turn := range 2 {
		if !warm.AsStored() {
			t.Fatalf("turn %d: the handle is not claimable", turn)
		}
		claim, err := svc.ClaimLease(ctx, warm, "h", 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		msg := textEvent("m"+string(rune('0'+turn)), "user", "hello")
		msg.Actions.StateDelta = map[string]any{"last": turn, "temp:scratch": 1}
		st, err := svc.StageEvent(warm, msg, sessionstore.AppendOptions{Claim: claim})
		if err != nil {
			t.Fatal(err)
		}
		if n, stored := warm.Events().Len(), getSession(t, svc, "s").Events().Len(); n != stored+1 {
			t.Errorf("turn %d: handle shows %d events, store %d: want the staged one shown, not stored", turn, n, stored)
		}
		if v, err := warm.State().Get("last"); err != nil || v != turn {
			t.Errorf("turn %d: staged state last = %v, %v", turn, v, err)
		}
		if err := st.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := svc.StageEvent(warm, textEvent("r"+string(rune('0'+turn)), "agent", "hi"), sessionstore.AppendOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := svc.ReleaseSession(ctx, warm, sessionstore.ReleaseOptions{}); err != nil {
			t.Fatal(err)
		}
		fresh := getSession(t, svc, "s")
		if a, b := warm.Events().Len(), fresh.Events().Len(); a != b || b != 2*(turn+1) {
			t.Errorf("turn %d: handle has %d events, store %d, want %d", turn, a, b, 2*(turn+1))
		}
		if _, err := warm.State().Get("temp:scratch"); err == nil {
			t.Errorf("turn %d: temp: state outlived the release", turn)
		}
		// Free: anyone may take the lease now.
		l, err := svc.AcquireLease(ctx, sessionstore.LeaseRequest{App: "app", User: "u", SessionID: "s", Holder: "probe", TTL: time.Second})
		if err != nil {
			t.Fatalf("turn %d: lease after the release: %v", turn, err)
		}
		if err := svc.ReleaseLease(ctx, l); err != nil {
			t.Fatal(err)
		}
		warm = getSession(t, svc, "s") // the probe wrote: only a fresh read is current
	}
}

// TestStagedClaimLost: a warm handle another writer overtook fails its
// staged claim as busy, stores nothing, and fails every later append.
func TestStagedClaimLost(t *testing.T) {
	t.Parallel()
	svc := newService(t)
	ctx := t.Context()
	if _, err := svc.Create(ctx, &session.CreateRequest{AppName: "app", UserID: "u", SessionID: "s"}); err != nil {
		t.Fatal(err)
	}
	got, err := svc.Get(ctx, &session.GetRequest{AppName: "app", UserID: "u", SessionID: "s"})
	if err != nil {
		t.Fatal(err)
	}
	stale := stored(t, got.Session)
	other, _ := svc.Get(ctx, &session.GetRequest{AppName: "app", UserID: "u", SessionID: "s"})
	if err := svc.AppendEvent(ctx, other.Session, textEvent("o", "user", "elsewhere")); err != nil {
		t.Fatal(err)
	}
	claim, err := svc.ClaimLease(ctx, stale, "h", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	st, err := svc.StageEvent(stale, textEvent("m", "user", "late"), sessionstore.AppendOptions{Claim: claim})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Commit(ctx); !errors.Is(err, sessionstore.ErrBusy) {
		t.Fatalf("staged claim on a stale handle: %v, want ErrBusy", err)
	}
	if err := svc.AppendEvent(ctx, stale, textEvent("r", "agent", "reply")); err == nil {
		t.Error("an append after a failed staged event succeeded")
	}
	if stale.AsStored() {
		t.Error("a handle with a failed staged event is claimable")
	}
	fresh, _ := svc.Get(ctx, &session.GetRequest{AppName: "app", UserID: "u", SessionID: "s"})
	if n := fresh.Session.Events().Len(); n != 1 {
		t.Errorf("store holds %d events, want 1 (the other writer's)", n)
	}
}
