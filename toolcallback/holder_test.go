package toolcallback_test

import (
	"testing"

	"github.com/baton-run/baton/toolcallback"
)

// TestHolderYieldsTo: only a live segment yields, and only to a live
// segment of the same device.
func TestHolderYieldsTo(t *testing.T) {
	t.Parallel()
	liveA := toolcallback.Holder{Client: "tab-a", Live: true, ID: "1"}
	for _, tc := range []struct {
		name     string
		cur, new toolcallback.Holder
		want     bool
	}{
		{"same device, both live", liveA, toolcallback.Holder{Client: "tab-a", Live: true, ID: "2"}, true},
		{"another device", liveA, toolcallback.Holder{Client: "tab-b", Live: true, ID: "2"}, false},
		{"a turn of the same device", liveA, toolcallback.Holder{Client: "tab-a", ID: "2"}, false},
		{"a turn holds", toolcallback.Holder{Client: "tab-a", ID: "1"}, toolcallback.Holder{Client: "tab-a", Live: true, ID: "2"}, false},
		{"no device", toolcallback.Holder{Live: true, ID: "1"}, toolcallback.Holder{Live: true, ID: "2"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.cur.YieldsTo(tc.new); got != tc.want {
				t.Errorf("%+v.YieldsTo(%+v) = %v, want %v", tc.cur, tc.new, got, tc.want)
			}
		})
	}
}

// TestHolderString: a holder reads back as it was stored, a device id with
// a slash included; leases stored before the type hold the same form.
func TestHolderString(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		stored string
		want   toolcallback.Holder
	}{
		{"live:tab-a/0b1c", toolcallback.Holder{Client: "tab-a", Live: true, ID: "0b1c"}},
		{"tab/a/0b1c", toolcallback.Holder{Client: "tab/a", ID: "0b1c"}},
		{"sweeper/0b1c", toolcallback.Holder{Client: "sweeper", ID: "0b1c"}},
	} {
		got := toolcallback.ParseHolder(tc.stored)
		if got != tc.want || got.String() != tc.stored {
			t.Errorf("ParseHolder(%q) = %+v (String %q), want %+v", tc.stored, got, got.String(), tc.want)
		}
	}
}
