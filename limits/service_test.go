package limits_test

import (
	"errors"
	"testing"
	"time"

	"github.com/baton-run/baton/limits"
	"github.com/baton-run/baton/sessionstore"
)

// TestServiceTokenCap: the deployment's tokens of the day, counted in
// shards by many users' responses, refuse every user's next turn once
// they reach the cap, until the UTC day ends; an instance that found the
// cap reached refuses without reading again.
func TestServiceTokenCap(t *testing.T) {
	s := newStore(t)
	capped := limits.Limits{ServiceTokensPerDay: 1000}
	var writes []sessionstore.Write
	for range 4 {
		writes = append(writes, s.counter.TokensWrite(300, base)...)
	}
	writes = append(writes, s.counter.TokensWrite(0, base)...) // nothing
	if len(writes) != 4 {
		t.Fatalf("%d writes for four counts and a zero, want 4", len(writes))
	}
	if _, err := s.commit(writes[:3]); err != nil {
		t.Fatal(err)
	}
	if err := s.meter("alice", capped, base.Add(time.Minute)).CheckBudget(); err != nil {
		t.Errorf("turn at 900 of 1000 tokens = %v, want it to go on", err)
	}
	if _, err := s.commit(writes[3:]); err != nil {
		t.Fatal(err)
	}
	err := s.meter("bob", capped, base.Add(time.Minute)).CheckBudget()
	var limited *limits.LimitError
	if !errors.As(err, &limited) || !errors.Is(err, limits.ErrServiceBudget) || limited.Scope != "service" {
		t.Fatalf("turn at 1200 of 1000 tokens = %v, want ErrServiceBudget", err)
	}
	if limited.RetryAfter != 14*time.Hour-time.Minute {
		t.Errorf("RetryAfter = %s, want until midnight UTC", limited.RetryAfter)
	}
	if err := s.meter("carol", capped, base.Add(2*time.Minute)).Check(nil); !errors.Is(err, limits.ErrServiceBudget) {
		t.Errorf("Check after the cap was found reached = %v, want a refusal without a read", err)
	}
	if err := s.meter("carol", capped, base.Add(24*time.Hour)).CheckBudget(); err != nil {
		t.Errorf("turn the next day = %v, want it to go on", err)
	}
	usage, err := s.counter.ServiceUsage(t.Context(), base)
	if err != nil || usage.Tokens != 1200 {
		t.Errorf("ServiceUsage = %+v, %v; want 1200 tokens", usage, err)
	}
}

// TestNewAnonymousCap: anonymous users signed in today are admitted with
// their first turn while the day's count is below the cap; an admitted
// user goes on past it; a new one is refused, and so writes nothing.
func TestNewAnonymousCap(t *testing.T) {
	s := newStore(t)
	guest := limits.Limits{NewAnonymousPerDay: 2}
	admit := func(user string) error {
		t.Helper()
		m := s.meter(user, guest, base)
		if err := m.CheckBudget(); err != nil {
			return err
		}
		at, err := s.commit(m.Writes())
		if err != nil {
			t.Fatalf("admit %s: %v", user, err)
		}
		m.Committed(at)
		return nil
	}
	for _, u := range []string{"g1", "g2"} {
		if err := admit(u); err != nil {
			t.Fatalf("first turn of %s = %v", u, err)
		}
	}
	if err := admit("g3"); !errors.Is(err, limits.ErrNewAnonymous) {
		t.Errorf("first turn of a third guest = %v, want ErrNewAnonymous", err)
	}
	other := limits.NewCounter(s.sessions, "app") // another instance: reads the mark
	r := other.Begin(t.Context(), "g1", guest, base.Add(time.Minute))
	docs, err := s.sessions.ReadDocs(t.Context(), r.Docs()...)
	if err != nil {
		t.Fatal(err)
	}
	m, err := r.Meter(docs)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.CheckBudget(); err != nil {
		t.Errorf("an admitted guest's next turn = %v, want it to go on", err)
	}
	if w := m.Writes(); len(w) != 0 {
		t.Errorf("an admitted guest's turn writes %d documents for the cap, want 0", len(w))
	}
	usage, err := s.counter.ServiceUsage(t.Context(), base)
	if err != nil || usage.NewAnonymous != 2 {
		t.Errorf("ServiceUsage = %+v, %v; want 2 new anonymous users", usage, err)
	}
}
