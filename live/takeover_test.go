package live_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/baton-run/baton/internal/polltest"
	"github.com/baton-run/baton/live"
	"github.com/baton-run/baton/modeltest"
	"github.com/baton-run/baton/toolcallback"
)

// takeoverLease is the lease term in the takeover tests: long enough that
// a test waiting it out would fail polltest's bound.
const takeoverLease = time.Minute

// TestSameDeviceTakesOver: the instance holding a device's live segment
// dies (issue 47 item 11). The device's next socket, on another instance,
// takes the chat over at once, though the dead holder's lease has most of
// its minute left: the lease's fence stops the dead holder from writing
// after. Another device is refused (live), the same device's first try
// is not.
func TestSameDeviceTakesOver(t *testing.T) {
	w := newWorld(t, &modeltest.LiveOptions{Repeat: modeltest.EchoReply})
	doomed := w.mortalWith(takeoverLease)
	conv, cl := doomed.open(t, chat, device)
	if err := conv.Text("hi"); err != nil {
		t.Fatal(err)
	}
	cl.turnsComplete(1)
	polltest.Until(t, "the answer stored", func() bool { return strings.Contains(storedLines(w.events(chat)), "saw text=hi") })
	doomed.kill(conv)

	next := w.instance(nil, &toolcallback.Options{LeaseTTL: takeoverLease}, nil)
	if _, err := next.runner.Open(t.Context(), live.Request{UserID: user, ChatID: chat, DeviceID: "another-tab"}, newClient(t)); !toolcallback.IsLive(err) {
		t.Fatalf("Open() from another device: %v, want refused as live", err)
	}
	conv, cl = next.open(t, chat, device)
	cl.ready()
	if err := conv.Text("still there?"); err != nil {
		t.Fatal(err)
	}
	if said := cl.said(1); said.Text != "saw text=still there?" {
		t.Fatalf("the model said %q", said.Text)
	}
	conv.Close()
	if _, err := conv.Wait(); err != nil {
		t.Fatalf("the conversation that took over: %v", err)
	}
	want := "user: hi\nassistant: saw text=hi\nuser: still there?\nassistant: saw text=still there?\n"
	if diff := cmp.Diff(want, storedLines(w.events(chat))); diff != "" {
		t.Fatalf("stored (-want +got):\n%s", diff)
	}
	checkTextTurn(t, w, next)
}

// BenchmarkTakeover measures issue 47 item 11's figure: from a device's
// socket opening on another instance, after the instance that held its
// live segment died, to the conversation being ready. The dead holder's
// lease has a minute left.
//
//	go run ./internal/emulator/withemulator go test -bench Takeover -run '^$' -benchtime 10x ./live
func BenchmarkTakeover(b *testing.B) {
	w := newWorld(b, &modeltest.LiveOptions{Repeat: modeltest.EchoReply})
	next := w.instance(nil, &toolcallback.Options{LeaseTTL: takeoverLease}, nil)
	for i := range b.N {
		b.StopTimer()
		chatID := fmt.Sprintf("%s-%d", chat, i)
		doomed := w.mortalWith(takeoverLease)
		conv, cl := doomed.open(b, chatID, device)
		if err := conv.Text("hi"); err != nil {
			b.Fatal(err)
		}
		cl.turnsComplete(1)
		doomed.kill(conv)
		b.StartTimer()
		conv, cl = next.open(b, chatID, device)
		cl.ready()
		b.StopTimer()
		conv.Close()
	}
}
