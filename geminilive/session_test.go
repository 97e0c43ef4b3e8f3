package geminilive_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/genai"

	"github.com/baton-run/baton/geminilive"
	"github.com/baton-run/baton/internal/polltest"
	"github.com/baton-run/baton/modeltest"
)

// open starts a driver session on the stand-in.
func open(t *testing.T, s *modeltest.LiveServer, cfg geminilive.Config) *geminilive.Session {
	t.Helper()
	client, err := genai.NewClient(context.Background(), s.ClientConfig())
	if err != nil {
		t.Fatal(err)
	}
	cfg.Client, cfg.Model = client, liveModel
	if cfg.Setup == nil {
		cfg.Setup = &genai.LiveConnectConfig{ResponseModalities: []genai.Modality{genai.ModalityText}}
	}
	sess, err := geminilive.Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sess.Close() })
	return sess
}

// until reads events until one of kind, and returns those read.
func until(t *testing.T, sess *geminilive.Session, kind geminilive.Kind) []geminilive.Event {
	t.Helper()
	var evs []geminilive.Event
	timeout := time.After(10 * time.Second)
	for {
		select {
		case ev, ok := <-sess.Events():
			if !ok {
				t.Fatalf("session ended waiting for kind %d: %v", kind, sess.Err())
			}
			evs = append(evs, ev)
			if ev.Kind == kind {
				return evs
			}
		case <-timeout:
			t.Fatalf("after 10 s, still waiting for an event of kind %d", kind)
		}
	}
}

func texts(evs []geminilive.Event) string {
	var b strings.Builder
	for _, ev := range evs {
		if ev.Kind == geminilive.Text {
			b.WriteString(ev.Text)
		}
	}
	return b.String()
}

func history(contents ...*genai.Content) func(context.Context) ([]*genai.Content, error) {
	return func(context.Context) ([]*genai.Content, error) { return contents, nil }
}

var earlier = []*genai.Content{genai.NewContentFromText("hi", genai.RoleUser), genai.NewContentFromText("hello", genai.RoleModel)}

// A new model session gets the history as context: no turn of its own,
// no continue turn (compare TestADKAppendsContinueTurn); usage reaches the
// caller (compare TestADKDropsUsage).
func TestSessionSeedsHistory(t *testing.T) {
	s := modeltest.NewLiveServer(&modeltest.LiveOptions{T: t, Script: []modeltest.Reply{modeltest.EchoReply}})
	defer s.Close()
	sess := open(t, s, geminilive.Config{History: history(earlier...)})
	if ev := until(t, sess, geminilive.Connected); ev[0].Resumed {
		t.Fatal("first connection resumed, want a seeded one")
	}
	if err := sess.SendText("what's up?"); err != nil {
		t.Fatal(err)
	}
	evs := until(t, sess, geminilive.TurnComplete)
	if got := texts(evs); got != "saw text=what's up?" {
		t.Fatalf("answer %q", got)
	}
	if u := evs[len(evs)-2]; u.Kind != geminilive.Usage || u.Usage.TotalTokenCount == 0 {
		t.Fatalf("event before turnComplete: %+v, want the turn's usage", u)
	}
	want := modeltest.DumpContents(append(earlier[:2:2], genai.NewContentFromText("what's up?", genai.RoleUser), genai.NewContentFromText("saw text=what's up?", genai.RoleModel)))
	if diff := cmp.Diff(want, modeltest.DumpContents(s.Conn(0).Seen())); diff != "" {
		t.Fatalf("model's view (-want +got):\n%s", diff)
	}
}

// Audio streams while tool responses go out, on one writer: no panic, no
// garbled frame (compare TestADKConcurrentWritePanics).
func TestSessionAudioDuringToolResponses(t *testing.T) {
	s := modeltest.NewLiveServer(&modeltest.LiveOptions{T: t, Repeat: modeltest.CallReply(modeltest.Call("", "ping", nil))})
	defer s.Close()
	sess := open(t, s, geminilive.Config{})
	stop := make(chan struct{})
	streamed := make(chan struct{})
	go func() { // a microphone at 20 times real time
		defer close(streamed)
		frame := modeltest.Silence(20*time.Millisecond, modeltest.InputRate)
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				_ = sess.SendAudio(frame)
			}
		}
	}()
	if err := sess.SendText("go"); err != nil {
		t.Fatal(err)
	}
	const rounds, frames = 50, 100 // answers, and audio frames among them
	for i := 0; i < rounds || s.Conn(0).Count("realtimeInput") < frames; i++ {
		call := until(t, sess, geminilive.ToolCall)
		fc := call[len(call)-1].Calls[0]
		if err := sess.Deliver(&genai.FunctionResponse{ID: fc.ID, Name: fc.Name, Response: map[string]any{"pong": true}}); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	<-streamed
	c := s.Conn(0)
	if n := len(s.Conns()); n != 1 || c.CloseCode() != 0 {
		t.Fatalf("%d connections, first closed with %d; want one, open", n, c.CloseCode())
	}
	if n := c.Count("toolResponse"); n < rounds-1 || len(c.Orphans()) != 0 {
		t.Fatalf("%d tool responses (%d orphans), want at least %d and none", n, len(c.Orphans()), rounds-1)
	}
}

// The session crosses goAway, Gemini's 1011 and a lost connection with the
// latest handle, sending no history again (compare
// TestADKResendsHistoryWithHandle and TestADKResumableCloses).
func TestSessionReconnects(t *testing.T) {
	for _, tc := range []struct {
		name string
		end  func(*modeltest.LiveConn)
	}{
		{"goAway", func(c *modeltest.LiveConn) { c.GoAway(time.Minute) }},
		{"1011 at the connection limit", func(c *modeltest.LiveConn) { c.CloseWith(1011, "Deadline expired before operation could complete.") }},
		{"lost connection", (*modeltest.LiveConn).Drop},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := modeltest.NewLiveServer(&modeltest.LiveOptions{T: t, Repeat: modeltest.EchoReply})
			defer s.Close()
			sess := open(t, s, geminilive.Config{History: history(earlier...)})
			if err := sess.SendText("one"); err != nil {
				t.Fatal(err)
			}
			until(t, sess, geminilive.Handle) // after the turn
			tc.end(s.Conn(0))
			if ev := until(t, sess, geminilive.Connected); !ev[len(ev)-1].Resumed {
				t.Fatal("reconnected without the handle")
			}
			if err := sess.SendText("two"); err != nil {
				t.Fatal(err)
			}
			if got := texts(until(t, sess, geminilive.TurnComplete)); got != "saw text=two" {
				t.Fatalf("answer after the reconnect %q", got)
			}
			if n := s.Conn(1).Count("clientContent"); n != 1 {
				t.Fatalf("resumed connection got %d clientContent frames, want only the new turn", n)
			}
			if seen := modeltest.DumpContents(s.Conn(1).Seen()); strings.Count(seen, `text("hi")`) != 1 {
				t.Fatalf("resumed model saw the history other than once:\n%s", seen)
			}
		})
	}
}

// A call made after the latest handle, answered after a reconnect, reaches
// the resumed model once, as a call-and-response pair: the model session
// the handle restores never saw the call, and would drop a toolResponse.
func TestSessionDeliversAcrossResume(t *testing.T) {
	s := modeltest.NewLiveServer(&modeltest.LiveOptions{T: t, Script: []modeltest.Reply{
		modeltest.TextReply("Hello."), modeltest.CallReply(modeltest.Call("", "get_location", nil)), modeltest.EchoReply,
	}})
	defer s.Close()
	sess := open(t, s, geminilive.Config{})
	if err := sess.SendText("hi"); err != nil {
		t.Fatal(err)
	}
	until(t, sess, geminilive.Handle)
	if err := sess.SendText("where am I?"); err != nil {
		t.Fatal(err)
	}
	evs := until(t, sess, geminilive.ToolCall)
	fc := evs[len(evs)-1].Calls[0]
	s.Conn(0).GoAway(time.Minute)
	until(t, sess, geminilive.Connected)
	if err := sess.Deliver(&genai.FunctionResponse{ID: fc.ID, Name: fc.Name, Response: map[string]any{"city": "Paris"}}); err != nil {
		t.Fatal(err)
	}
	if got := texts(until(t, sess, geminilive.TurnComplete)); got != `saw get_location={"city":"Paris"}` {
		t.Fatalf("answer %q", got)
	}
	c := s.Conn(1)
	if c.Count("toolResponse") != 0 || len(c.Orphans()) != 0 {
		t.Fatalf("resumed model got %d toolResponse frames, %d orphans; want the pair instead", c.Count("toolResponse"), len(c.Orphans()))
	}
	if seen := modeltest.DumpContents(c.Seen()); strings.Count(seen, "call("+fc.ID) != 1 || strings.Count(seen, "response("+fc.ID) != 1 {
		t.Fatalf("resumed model's view, want the call and its response once:\n%s", seen)
	}
	if err := sess.Deliver(&genai.FunctionResponse{ID: fc.ID, Name: fc.Name, Response: map[string]any{"again": true}}); !errors.Is(err, geminilive.ErrNotPending) {
		t.Fatalf("second Deliver: %v, want ErrNotPending", err)
	}
}

// A later holder resumes with the stored handle and the ledger's pending
// call; the answer reaches the model once. A refused handle falls back to
// the stored history.
func TestSessionLaterHolder(t *testing.T) {
	s := modeltest.NewLiveServer(&modeltest.LiveOptions{T: t, Repeat: modeltest.EchoReply})
	defer s.Close()
	first := open(t, s, geminilive.Config{History: history(earlier...)})
	if err := first.SendText("remember 7"); err != nil {
		t.Fatal(err)
	}
	handle := until(t, first, geminilive.Handle)
	stored := handle[len(handle)-1].Handle
	_ = first.Close() // the instance dies

	pending := &genai.FunctionCall{ID: "call-earlier", Name: "get_location"}
	later := open(t, s, geminilive.Config{Handle: stored, Pending: []*genai.FunctionCall{pending}})
	if ev := until(t, later, geminilive.Connected); !ev[0].Resumed {
		t.Fatal("later holder did not resume")
	}
	if err := later.Deliver(&genai.FunctionResponse{ID: pending.ID, Name: pending.Name, Response: map[string]any{"city": "Oslo"}}); err != nil {
		t.Fatal(err)
	}
	if got := texts(until(t, later, geminilive.TurnComplete)); got != `saw get_location={"city":"Oslo"}` {
		t.Fatalf("answer %q", got)
	}
	if seen := modeltest.DumpContents(s.Conn(1).Seen()); !strings.Contains(seen, "remember 7") || strings.Count(seen, `text("hi")`) != 1 {
		t.Fatalf("later holder's model view:\n%s", seen)
	}

	s.Forget()
	reseeded := open(t, s, geminilive.Config{Handle: stored, History: history(earlier...)})
	if ev := until(t, reseeded, geminilive.Connected); ev[0].Resumed {
		t.Fatal("resumed with a forgotten handle")
	}
	polltest.Until(t, "the seeded history", func() bool { return len(s.Conn(3).Seen()) == 2 })
}

// A later holder resumes a handle issued while a NON_BLOCKING call waited:
// the model session holds the call, so its answer goes as a toolResponse
// (Known), and the model sees the call and its response once each; had it
// gone as a pair (Pending), the model would see the call twice.
func TestSessionLaterHolderKnownCall(t *testing.T) {
	s := modeltest.NewLiveServer(&modeltest.LiveOptions{T: t, Script: []modeltest.Reply{
		modeltest.CallReply(modeltest.Call("", "get_location", nil)), modeltest.EchoReply,
	}})
	defer s.Close()
	setup := &genai.LiveConnectConfig{ResponseModalities: []genai.Modality{genai.ModalityText}, Tools: []*genai.Tool{{
		FunctionDeclarations: []*genai.FunctionDeclaration{{Name: "get_location", Behavior: genai.BehaviorNonBlocking}},
	}}}
	first := open(t, s, geminilive.Config{Setup: setup})
	if err := first.SendText("where am I?"); err != nil {
		t.Fatal(err)
	}
	evs := until(t, first, geminilive.ToolCall)
	fc := evs[len(evs)-1].Calls[0]
	handle := until(t, first, geminilive.Handle) // issued with the call waiting
	_ = first.Close()

	later := open(t, s, geminilive.Config{Setup: setup, Handle: handle[len(handle)-1].Handle, Known: []*genai.FunctionCall{fc}})
	if ev := until(t, later, geminilive.Connected); !ev[0].Resumed {
		t.Fatal("later holder did not resume")
	}
	if err := later.Deliver(&genai.FunctionResponse{ID: fc.ID, Name: fc.Name, Response: map[string]any{"city": "Oslo"}}); err != nil {
		t.Fatal(err)
	}
	if got := texts(until(t, later, geminilive.TurnComplete)); got != `saw get_location={"city":"Oslo"}` {
		t.Fatalf("answer %q", got)
	}
	c := s.Conn(1)
	if c.Count("toolResponse") != 1 || len(c.Orphans()) != 0 {
		t.Fatalf("resumed model got %d toolResponse frames, %d orphans; want one, none", c.Count("toolResponse"), len(c.Orphans()))
	}
	if seen := modeltest.DumpContents(c.Seen()); strings.Count(seen, "call("+fc.ID) != 1 || strings.Count(seen, "response("+fc.ID) != 1 {
		t.Fatalf("resumed model's view, want the call and its response once:\n%s", seen)
	}
}
