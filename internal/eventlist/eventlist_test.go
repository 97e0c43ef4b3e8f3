package eventlist_test

import (
	"slices"
	"testing"

	"google.golang.org/adk/v2/session"

	"github.com/baton-run/baton/internal/eventlist"
)

func TestList(t *testing.T) {
	t.Parallel()
	a, b := &session.Event{ID: "a"}, &session.Event{ID: "b"}
	l := eventlist.List{a, b}
	if got := slices.Collect(l.All()); !slices.Equal(got, []*session.Event{a, b}) {
		t.Errorf("All() = %v, want a, b", got)
	}
	if l.Len() != 2 || l.At(0) != a || l.At(1) != b {
		t.Errorf("Len(), At(0), At(1) = %d, %v, %v; want 2, a, b", l.Len(), l.At(0), l.At(1))
	}
	for _, i := range []int{-1, 2} {
		if got := l.At(i); got != nil {
			t.Errorf("At(%d) = %v, want nil", i, got)
		}
	}
	if got := eventlist.List(nil); got.Len() != 0 || got.At(0) != nil {
		t.Errorf("nil List: Len() = %d, At(0) = %v; want 0, nil", got.Len(), got.At(0))
	}
}
