package live_test

import (
	"errors"
	"testing"
	"time"

	"github.com/baton-run/baton/internal/polltest"
	"github.com/baton-run/baton/limits"
	"github.com/baton-run/baton/live"
	"github.com/baton-run/baton/modeltest"
	"github.com/baton-run/baton/toolcallback"
)

// TestGoAwayCrossed: the model's goAway, then its close at the connection
// limit, are crossed with the latest handle: the client sees only
// "reconnecting", and the conversation goes on where it was.
func TestGoAwayCrossed(t *testing.T) {
	w := newWorld(t, &modeltest.LiveOptions{Repeat: modeltest.EchoReply})
	in := w.instance(nil, nil, nil)
	conv, cl := in.open(t, chat, device)
	if err := conv.Text("one"); err != nil {
		t.Fatal(err)
	}
	cl.turnsComplete(1)
	first := w.model.Conn(0)
	// The stand-in issues the turn's handle just after its turnComplete: a
	// goAway sent before it (a busy machine) crosses no handle, and the
	// segment rightly seeds the new connection instead.
	polltest.Until(t, "the turn's handle to be issued", func() bool { return first.Count("sessionResumptionUpdate") == 1 })
	first.GoAway(50 * time.Millisecond)
	cl.await("reconnecting", 1, func(m live.Message) bool { s, ok := m.(live.Signal); return ok && s.Type == "reconnecting" })
	<-first.Done()
	if err := conv.Text("two"); err != nil {
		t.Fatal(err)
	}
	if said := cl.said(2); said.Text != "saw text=two" {
		t.Fatalf("after the reconnect the model said %q", said.Text)
	}
	conv.Close()
	if reason, err := conv.Wait(); reason != live.EndClosed || err != nil {
		t.Errorf("Wait() = %q, %v; want closed, nil", reason, err)
	}
	second := w.model.Conn(1)
	if second == nil || second.Resumed() == "" || second.Count("clientContent") != 1 {
		t.Fatalf("the second connection resumed %q with %d clientContent frames; want the handle and the new turn only", second.Resumed(), second.Count("clientContent"))
	}
	for _, m := range cl.messages() {
		if s, ok := m.(live.Signal); ok && s.Type != "reconnecting" && s.Type != "turn-complete" {
			t.Errorf("the client was sent %q", s.Type)
		}
		if _, ok := m.(live.Error); ok {
			t.Errorf("the client was sent an error: %+v", m)
		}
	}
}

// TestStopFromAnotherTab: a stop asked for the chat from another tab (any
// instance) ends the conversation and frees the chat.
func TestStopFromAnotherTab(t *testing.T) {
	w := newWorld(t, &modeltest.LiveOptions{Repeat: modeltest.EchoReply})
	in := w.instance(nil, nil, nil)
	conv, cl := in.open(t, chat, device)
	cl.ready()
	report, err := w.instance(nil, nil, nil).team.Stop(t.Context(), user, chat, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if reason, err := conv.Wait(); reason != live.EndStopped || err != nil {
		t.Errorf("Wait() = %q, %v; want stopped, nil", reason, err)
	}
	if !report.Running || !report.Ended {
		t.Errorf("Stop() = %+v, want a running segment that ended", report)
	}
	// The chat is free: another segment opens at once.
	again, _ := in.open(t, chat, "tab-b")
	again.Close()
}

// TestLimits: a live segment is held to the turn rate when it opens, to the
// number of segments a user may hold at once, and to the token budget as
// its model turns use it.
func TestLimits(t *testing.T) {
	t.Run("rate", func(t *testing.T) {
		w := newWorld(t, &modeltest.LiveOptions{Repeat: modeltest.EchoReply})
		in := w.instance(nil, nil, nil)
		l := limits.Limits{UserTurnsPerMinute: 1}
		conv, err := in.runner.Open(t.Context(), live.Request{UserID: user, ChatID: chat, DeviceID: device, Limits: l}, newClient(t))
		if err != nil {
			t.Fatal(err)
		}
		conv.Close()
		_, err = in.runner.Open(t.Context(), live.Request{UserID: user, ChatID: "chat-2", DeviceID: device, Limits: l}, newClient(t))
		if !errors.Is(err, limits.ErrRateLimited) {
			t.Errorf("second Open() within the minute error = %v, want ErrRateLimited", err)
		}
		if n := len(w.model.Conns()); n != 1 {
			t.Errorf("the model saw %d connections, want only the first segment's", n)
		}
	})
	t.Run("segments per user", func(t *testing.T) {
		w := newWorld(t, &modeltest.LiveOptions{Repeat: modeltest.EchoReply})
		in := w.instance(nil, nil, nil)
		l := limits.Limits{LiveSegmentsPerUser: 2}
		open := func(chatID string) (*live.Conversation, error) {
			return in.runner.Open(t.Context(), live.Request{UserID: user, ChatID: chatID, DeviceID: device, Limits: l}, newClient(t))
		}
		var convs []*live.Conversation
		for _, id := range []string{"a", "b"} {
			c, err := open(id)
			if err != nil {
				t.Fatal(err)
			}
			convs = append(convs, c)
		}
		if _, err := open("c"); !errors.Is(err, limits.ErrLiveSegments) {
			t.Fatalf("a third segment: Open() error = %v, want ErrLiveSegments", err)
		}
		convs[0].Close()
		c, err := open("c")
		if err != nil {
			t.Fatalf("a third segment once one ended: Open() error = %v", err)
		}
		c.Close()
		convs[1].Close()
	})
	t.Run("budget", func(t *testing.T) {
		w := newWorld(t, &modeltest.LiveOptions{Repeat: modeltest.EchoReply})
		in := w.instance(nil, &toolcallback.Options{CountTokens: true}, nil)
		l := limits.Limits{UserTokensPerDay: 10}
		cl := newClient(t)
		conv, err := in.runner.Open(t.Context(), live.Request{UserID: user, ChatID: chat, DeviceID: device, Limits: l}, cl)
		if err != nil {
			t.Fatal(err)
		}
		if err := conv.Text("tell me a long story about the sea"); err != nil {
			t.Fatal(err)
		}
		if reason, err := conv.Wait(); reason != live.EndClosed || !errors.Is(err, limits.ErrBudgetExhausted) {
			t.Fatalf("Wait() = %q, %v; want closed, the budget exhausted", reason, err)
		}
		_, err = in.runner.Open(t.Context(), live.Request{UserID: user, ChatID: chat, DeviceID: device, Limits: l}, newClient(t))
		if !errors.Is(err, limits.ErrBudgetExhausted) {
			t.Errorf("Open() after the budget was used error = %v, want ErrBudgetExhausted", err)
		}
	})
}
