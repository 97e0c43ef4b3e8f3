package calltoken_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/baton-run/baton/calltoken"
)

func TestSignVerify(t *testing.T) {
	t.Parallel()
	key := []byte("k")
	now := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	tok, err := calltoken.Sign(key, calltoken.For("c1", "s1", "ada", []byte(`{"b":2,"a":1}`), now.Add(time.Hour)))
	if err != nil {
		t.Fatal(err)
	}
	c, err := calltoken.Verify(key, tok, now)
	if err != nil || c.Call != "c1" || c.Session != "s1" || c.User != "ada" {
		t.Fatalf("Verify = %+v, %v; want the call it names", c, err)
	}
	if !c.Binds([]byte(`{"a":1,"b":2.0}`)) || c.Binds([]byte(`{"a":1,"b":3}`)) {
		t.Error("Binds does not hold the arguments in canonical form: same map in another order and spelling, or other values")
	}
	tests := []struct {
		name  string
		key   string
		token string
		at    time.Time
	}{
		{"expired", "k", tok, now.Add(time.Hour)},
		{"another key", "other", tok, now},
		{"tampered claims", "k", "x" + tok, now},
		{"no signature", "k", strings.Split(tok, ".")[0], now},
		{"too long", "k", strings.Repeat("a", 5000), now},
		{"no key", "", tok, now},
	}
	for _, tt := range tests {
		if _, err := calltoken.Verify([]byte(tt.key), tt.token, tt.at); !errors.Is(err, calltoken.ErrInvalid) {
			t.Errorf("%s: Verify error = %v, want ErrInvalid", tt.name, err)
		}
	}
	if _, err := calltoken.Sign(nil, calltoken.For("c1", "s1", "ada", nil, now)); err == nil {
		t.Error("Sign without a key succeeded")
	}
}
