package toolcallback

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"google.golang.org/adk/v2/session"

	"github.com/baton-run/baton/sessionstore"
)

// TestWarmChatsBounded serves 10,000 chats, each leaving a session of
// about 8 kB, through one instance's copies: they never hold more chats or
// bytes than the limits, the most recently used stay, and the heap does
// not grow with the number of chats served.
func TestWarmChatsBounded(t *testing.T) {
	t.Parallel()
	svc := sessionstore.New(nil, nil)
	handle := func(chat string) (*sessionstore.Chat, *sessionstore.Session) {
		notes := strings.Repeat("n", 8<<10) + chat // a string of its own
		sess, _, err := svc.ClaimNewSession(t.Context(), &session.CreateRequest{AppName: "app", UserID: "u", SessionID: chat,
			State: map[string]any{"notes": notes}}, nil, "h", time.Second)
		if err != nil {
			t.Fatal(err)
		}
		return &sessionstore.Chat{App: "app", UserID: "u", ID: chat, SessionID: chat}, sess
	}
	for _, lim := range []struct{ chats, bytes int }{{1000, 32 << 20}, {100_000, 2 << 20}} {
		w := newWarmChats(lim.chats, lim.bytes)
		var before runtime.MemStats
		for i := range 10_000 {
			if i == 5_000 {
				runtime.GC()
				runtime.ReadMemStats(&before)
			}
			w.put(handle(fmt.Sprintf("chat-%d", i)))
			if n, b := w.size(); n > lim.chats || b > lim.bytes {
				t.Fatalf("limits %+v: after %d chats the copies hold %d chats, %d bytes", lim, i+1, n, b)
			}
		}
		var after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&after)
		n, b := w.size()
		t.Logf("limits %+v: %d chats, %d bytes kept; heap %d MB after 5,000 chats, %d MB after 10,000", lim, n, b, before.HeapAlloc>>20, after.HeapAlloc>>20)
		if n == 0 {
			t.Fatalf("limits %+v: nothing kept", lim)
		}
		if _, sess := w.take("u", "chat-9999"); sess == nil {
			t.Errorf("limits %+v: the latest chat was evicted", lim)
		}
		if _, sess := w.take("u", "chat-0"); sess != nil {
			t.Errorf("limits %+v: the oldest chat is still kept", lim)
		}
		// A generous margin over the kept bytes: the heap holds the
		// copies, not every chat served (10,000 × 8 kB = 80 MB).
		if grew := int64(after.HeapAlloc) - int64(before.HeapAlloc); grew > 3*int64(lim.bytes) {
			t.Errorf("limits %+v: the heap grew by %d MB between 5,000 and 10,000 chats", lim, grew>>20)
		}
	}
}

// TestWarmChatsTakeIsExclusive: a copy taken by a turn is no longer there
// for another, and a session larger than the byte limit is not kept.
func TestWarmChatsTakeIsExclusive(t *testing.T) {
	t.Parallel()
	svc := sessionstore.New(nil, nil)
	sess, _, err := svc.ClaimNewSession(t.Context(), &session.CreateRequest{AppName: "app", UserID: "u", SessionID: "s",
		State: map[string]any{"notes": strings.Repeat("n", 4<<10)}}, nil, "h", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	chat := &sessionstore.Chat{App: "app", UserID: "u", ID: "c", SessionID: "s"}
	w := newWarmChats(10, 1<<20)
	w.put(chat, sess)
	if _, got := w.take("u", "c"); got != sess {
		t.Fatal("the copy put is not taken")
	}
	if _, got := w.take("u", "c"); got != nil {
		t.Error("a copy was taken twice")
	}
	small := newWarmChats(10, 1<<10)
	small.put(chat, sess)
	if n, _ := small.size(); n != 0 {
		t.Errorf("a 4 kB session was kept under a 1 kB limit")
	}
}
