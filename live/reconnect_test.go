package live_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/genai"

	"github.com/baton-run/baton/internal/polltest"
	"github.com/baton-run/baton/live"
	"github.com/baton-run/baton/modeltest"
)

// TestResumedModelKnowsTheChat: issue 47 item 9, through a conversation.
// "hi" is answered and a handle issued; "play track 3" is answered with a
// browser call, and Gemini issues no handle while it is in flight; then
// the model's connection ends (a goAway, a 1011, a drop). The connection
// resumed from the handle must hold what the chat stored: once the call
// is answered, the model's context is the stored conversation, line for
// line.
func TestResumedModelKnowsTheChat(t *testing.T) {
	for _, tc := range []struct {
		name string
		end  func(*modeltest.LiveConn)
	}{
		{"goAway", func(c *modeltest.LiveConn) { c.GoAway(time.Minute) }},
		{"1011", func(c *modeltest.LiveConn) { c.CloseWith(1011, "Deadline expired before operation could complete.") }},
		{"dropped", (*modeltest.LiveConn).Drop},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, &modeltest.LiveOptions{HoldHandles: true, Script: []modeltest.Reply{
				modeltest.EchoReply, modeltest.CallReply(modeltest.Call("", "change_bgm", map[string]any{"track": 3})), modeltest.EchoReply,
			}, AfterFrame: func(c *modeltest.LiveConn, m *genai.LiveServerMessage) {
				if c.Index() == 0 && m.ServerContent != nil && m.ServerContent.TurnComplete && c.Count("toolCall") == 1 {
					tc.end(c)
				}
			}})
			in := w.instance(nil, nil, nil)
			conv, cl := in.open(t, chat, device)
			if err := conv.Text("hi"); err != nil {
				t.Fatal(err)
			}
			cl.turnsComplete(1)
			if err := conv.Text("play track 3"); err != nil {
				t.Fatal(err)
			}
			call := cl.toolCall(1)
			polltest.Until(t, "the model's connection to be replaced", func() bool { return len(w.model.Conns()) == 2 })
			if err := conv.Answer(t.Context(), live.Answer{ToolCallID: call.ToolCallID, Output: map[string]any{"playing": 3}}); err != nil {
				t.Fatal(err)
			}
			if said := cl.said(2); said.Text != `saw change_bgm={"playing":3}` {
				t.Fatalf("the model said %q after the answer", said.Text)
			}
			conv.Close()
			resumed := w.model.Conn(1)
			if resumed.Resumed() == "" {
				t.Fatal("the second connection did not resume from the handle")
			}
			if diff := cmp.Diff(storedLines(w.events(chat)), seenLines(resumed.Seen())); diff != "" {
				t.Errorf("the resumed model's context against the stored conversation (-stored +model):\n%s", diff)
			}
		})
	}
}

// seenLines is what a model saw in storedLines' form.
func seenLines(contents []*genai.Content) string {
	var b strings.Builder
	for _, c := range contents {
		who := "user"
		if c.Role == genai.RoleModel {
			who = "assistant"
		}
		for _, p := range c.Parts {
			switch {
			case p.Text != "":
				fmt.Fprintf(&b, "%s: %s\n", who, p.Text)
			case p.FunctionCall != nil:
				fmt.Fprintf(&b, "%s: call %s\n", who, p.FunctionCall.Name)
			case p.FunctionResponse != nil:
				r, _ := json.Marshal(p.FunctionResponse.Response)
				fmt.Fprintf(&b, "%s: response %s %s\n", who, p.FunctionResponse.Name, r)
			}
		}
	}
	return b.String()
}

// TestGoAwayBeforeHandle: the model's connection ends after a turn's
// turnComplete and before the handle that turn would bring (a goAway with
// no time left), so there is no handle to resume from: the new model
// session is seeded with what the old one had (its seed and what it took
// since), not with the stored conversation, which may not hold the turn
// yet (its last event waits for the handle to be stored with it). Its
// context is the stored conversation, line for line; it once lacked the
// turn.
func TestGoAwayBeforeHandle(t *testing.T) {
	w := newWorld(t, &modeltest.LiveOptions{Repeat: modeltest.EchoReply,
		AfterFrame: func(c *modeltest.LiveConn, m *genai.LiveServerMessage) {
			if c.Index() == 0 && m.ServerContent != nil && m.ServerContent.TurnComplete {
				// Before the turn's handle, which the stand-in sends next:
				// the connection ends first, and the handle never comes.
				c.GoAway(time.Minute)
				c.CloseWith(modeltest.CloseDeadline, "Deadline expired before operation could complete.")
			}
		}})
	in := w.instance(nil, nil, nil)
	conv, cl := in.open(t, chat, device)
	if err := conv.Text("one"); err != nil {
		t.Fatal(err)
	}
	cl.turnsComplete(1)
	polltest.Until(t, "the model's connection to be replaced", func() bool { return len(w.model.Conns()) == 2 })
	if err := conv.Text("two"); err != nil {
		t.Fatal(err)
	}
	if said := cl.said(2); said.Text != "saw text=two" {
		t.Fatalf("after the reconnect the model said %q", said.Text)
	}
	conv.Close()
	if _, err := conv.Wait(); err != nil {
		t.Fatal(err)
	}
	seeded := w.model.Conn(1)
	if seeded.Resumed() != "" {
		t.Fatalf("the second connection resumed %q, want a seeded one (no handle was issued)", seeded.Resumed())
	}
	if diff := cmp.Diff(storedLines(w.events(chat)), seenLines(seeded.Seen())); diff != "" {
		t.Errorf("the seeded model's context against the stored conversation (-stored +model):\n%s", diff)
	}
}
