package geminilive_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/genai"

	"github.com/baton-run/baton/geminilive"
	"github.com/baton-run/baton/internal/polltest"
	"github.com/baton-run/baton/modeltest"
)

// locationSetup declares get_location NON_BLOCKING, as live mode declares
// every tool.
func locationSetup() *genai.LiveConnectConfig {
	return &genai.LiveConnectConfig{ResponseModalities: []genai.Modality{genai.ModalityText}, Tools: []*genai.Tool{{
		FunctionDeclarations: []*genai.FunctionDeclaration{{Name: "get_location", Behavior: genai.BehaviorNonBlocking}},
	}}}
}

// isToolCall and isTurnEnd tell server frames apart for endAt.
func isToolCall(m *genai.LiveServerMessage) bool { return m.ToolCall != nil }
func isTurnEnd(m *genai.LiveServerMessage) bool {
	return m.ServerContent != nil && m.ServerContent.TurnComplete
}

// endAt returns an AfterFrame lever that ends the first connection with
// end after its n-th frame matching match.
func endAt(n int, match func(*genai.LiveServerMessage) bool, end func(*modeltest.LiveConn)) func(*modeltest.LiveConn, *genai.LiveServerMessage) {
	seen := 0
	return func(c *modeltest.LiveConn, m *genai.LiveServerMessage) {
		if c.Index() != 0 || !match(m) {
			return
		}
		if seen++; seen == n {
			end(c)
		}
	}
}

// A connection resumed from the latest handle after a goAway, a 1011 close
// or a drop is sent what its model session took after that handle, so the
// model's context is the conversation so far: issue 47 item 9. Gemini
// issues no handle while a call is in flight (HoldHandles), and none
// between a turn's end and a 1011 close right after it.
func TestSessionResumeReplaysSinceHandle(t *testing.T) {
	for _, tc := range []struct {
		name string
		// n-th frame of conn 0 after which it ends, and how
		n     int
		match func(*genai.LiveServerMessage) bool
		end   func(*modeltest.LiveConn)
	}{
		{"goAway while a call is in flight", 1, isToolCall, func(c *modeltest.LiveConn) { c.GoAway(time.Minute) }},
		{"1011 after the turn, before its handle", 2, isTurnEnd, func(c *modeltest.LiveConn) { c.CloseWith(1011, "Deadline expired before operation could complete.") }},
		{"dropped after the turn, before its handle", 2, isTurnEnd, (*modeltest.LiveConn).Drop},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := modeltest.NewLiveServer(&modeltest.LiveOptions{T: t, HoldHandles: true, AfterFrame: endAt(tc.n, tc.match, tc.end), Script: []modeltest.Reply{
				modeltest.EchoReply, modeltest.CallReply(modeltest.Call("", "get_location", nil)), modeltest.EchoReply,
			}})
			defer s.Close()
			sess := open(t, s, geminilive.Config{Setup: locationSetup()})
			until(t, sess, geminilive.Connected)
			if err := sess.SendText("k one"); err != nil {
				t.Fatal(err)
			}
			until(t, sess, geminilive.Handle)
			if err := sess.SendText("where am I"); err != nil {
				t.Fatal(err)
			}
			evs := until(t, sess, geminilive.ToolCall)
			fc := evs[len(evs)-1].Calls[0]
			if ev := until(t, sess, geminilive.Connected); !ev[len(ev)-1].Resumed {
				t.Fatal("reconnected without the handle")
			}
			if err := sess.Deliver(&genai.FunctionResponse{ID: fc.ID, Name: fc.Name, Response: map[string]any{"city": "Paris"}}); err != nil {
				t.Fatal(err)
			}
			if got := texts(until(t, sess, geminilive.TurnComplete)); got != `saw get_location={"city":"Paris"}` {
				t.Fatalf("answer after the reconnect %q", got)
			}
			old, resumed := s.Conn(0), s.Conn(1)
			if resumed.Resumed() != s.Handles()[0] {
				t.Fatalf("resumed from %q, want the handle of the first turn %q", resumed.Resumed(), s.Handles()[0])
			}
			want := append(old.Seen(),
				&genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{{FunctionResponse: &genai.FunctionResponse{ID: fc.ID, Name: fc.Name, Response: map[string]any{"city": "Paris"}}}}},
				genai.NewContentFromText(`saw get_location={"city":"Paris"}`, genai.RoleModel))
			if diff := cmp.Diff(modeltest.DumpContents(want), modeltest.DumpContents(resumed.Seen())); diff != "" {
				t.Fatalf("the resumed model's context, want what the first connection's model had seen, then the answer (-want +got):\n%s", diff)
			}
			if n := len(resumed.Orphans()); n != 0 {
				t.Fatalf("the resumed model dropped %d responses", n)
			}
		})
	}
}

// secondTurnHeld opens a session whose model answered "one" and holds its
// answer to "two" (Gate) until the test sends on gate.
func secondTurnHeld(t *testing.T) (*modeltest.LiveServer, *geminilive.Session, chan<- struct{}) {
	t.Helper()
	gate := make(chan struct{}, 4)
	s := modeltest.NewLiveServer(&modeltest.LiveOptions{T: t, Repeat: modeltest.EchoReply, Gate: gate})
	t.Cleanup(s.Close)
	sess := open(t, s, geminilive.Config{})
	gate <- struct{}{}
	if err := sess.SendText("one"); err != nil {
		t.Fatal(err)
	}
	until(t, sess, geminilive.Handle)
	if err := sess.SendText("two"); err != nil {
		t.Fatal(err)
	}
	polltest.Until(t, "the model to read the second turn", func() bool { return s.Conn(0).Count("clientContent") == 2 })
	return s, sess, gate
}

// A turn written before the goAway, which the model has not answered yet,
// is answered on the connection it was written to: the session leaves it
// only once the model is idle (issue 47 item 10: it left at once, and the
// answer was lost with the connection). A turn written after the goAway
// goes to the next connection.
func TestSessionGoAwayKeepsConnectionForAnswer(t *testing.T) {
	s, sess, gate := secondTurnHeld(t)
	old := s.Conn(0)
	// The model holds the answer (Gate) while it says goAway.
	old.Send(&genai.LiveServerMessage{GoAway: &genai.LiveServerGoAway{TimeLeft: time.Minute}})
	until(t, sess, geminilive.GoAway)
	gate <- struct{}{}
	if got := texts(until(t, sess, geminilive.TurnComplete)); got != "saw text=two" {
		t.Fatalf("answer to the turn written before the goAway %q", got)
	}
	until(t, sess, geminilive.Connected)
	if n := old.Count("turnComplete"); n != 2 {
		t.Fatalf("the connection that said goAway completed %d turns, want 2 (the answer came on it)", n)
	}
	next := s.Conn(1)
	polltest.Until(t, "the next connection to hold the conversation", func() bool { return len(next.Seen()) == len(old.Seen()) })
	if diff := cmp.Diff(modeltest.DumpContents(old.Seen()), modeltest.DumpContents(next.Seen())); diff != "" {
		t.Fatalf("the next connection's context (-want +got):\n%s", diff)
	}

	// A turn after the goAway: the old connection is not written to.
	old2 := s.Conn(1)
	before := old2.Count("clientContent")
	old2.Send(&genai.LiveServerMessage{GoAway: &genai.LiveServerGoAway{TimeLeft: time.Minute}})
	until(t, sess, geminilive.GoAway)
	if err := sess.SendText("three"); err != nil {
		t.Fatal(err)
	}
	gate <- struct{}{}
	if got := texts(until(t, sess, geminilive.TurnComplete)); got != "saw text=three" {
		t.Fatalf("answer to the turn written after the goAway %q", got)
	}
	if n := old2.Count("clientContent") - before; n != 0 {
		t.Fatalf("the connection that said goAway was written %d turns, want none", n)
	}
	if seen := modeltest.DumpContents(s.Conn(2).Seen()); strings.Count(seen, `text("three")`) != 1 {
		t.Fatalf("the connection after the second goAway, want the turn once:\n%s", seen)
	}
}

// A turn the model never answered before its connection dropped is
// replayed to the resumed model session, which answers it.
func TestSessionReplayAsksForUnansweredTurn(t *testing.T) {
	s, sess, gate := secondTurnHeld(t)
	old := s.Conn(0)
	old.Drop()
	until(t, sess, geminilive.Connected)
	gate <- struct{}{} // one for the dropped connection's turn, which goes nowhere
	gate <- struct{}{} // and one for the resumed one's
	if got := texts(until(t, sess, geminilive.TurnComplete)); got != "saw text=two" {
		t.Fatalf("answer to the turn the dropped connection took %q", got)
	}
	if seen := modeltest.DumpContents(s.Conn(1).Seen()); seen != modeltest.DumpContents([]*genai.Content{
		genai.NewContentFromText("one", genai.RoleUser), genai.NewContentFromText("saw text=one", genai.RoleModel),
		genai.NewContentFromText("two", genai.RoleUser), genai.NewContentFromText("saw text=two", genai.RoleModel),
	}) {
		t.Fatalf("the resumed model's context:\n%s", seen)
	}
}
