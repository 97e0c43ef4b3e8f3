package live_test

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/baton-run/baton/internal/firestoretest"
	"github.com/baton-run/baton/internal/polltest"
	"github.com/baton-run/baton/live"
	"github.com/baton-run/baton/modeltest"
	"github.com/baton-run/baton/toolcallback"
	"github.com/baton-run/baton/transcript"
)

// resumeLease is the lease term of the instances that take over from a
// dead one: the chat is free that long after the death.
const resumeLease = 2 * time.Second

// mortal is an instance whose process can die: after kill, every call of
// its Firestore client fails, and its conversation stops where it is
// (nothing more is written, the lease is left to run out).
type mortal struct {
	*instance
	dead atomic.Bool
}

func (w *world) mortal() *mortal { return w.mortalWith(resumeLease) }

// mortalWith is a mortal instance whose leases last ttl.
func (w *world) mortalWith(ttl time.Duration) *mortal {
	client, counter := firestoretest.Reopen(w.t, w.client)
	m := &mortal{}
	counter.SetHook(func(string, any) error {
		if m.dead.Load() {
			return status.Error(codes.Canceled, "process killed")
		}
		return nil
	})
	m.instance = w.instance(client, &toolcallback.Options{LeaseTTL: ttl}, nil)
	return m
}

// kill kills the process mid-conversation.
func (m *mortal) kill(conv *live.Conversation) {
	m.dead.Store(true)
	conv.Close() // its writes fail: nothing is stored, nothing released
}

// openWhenFree opens a conversation once the dead holder's lease has run
// out.
func (in *instance) openWhenFree(t *testing.T) (*live.Conversation, *client) {
	t.Helper()
	var conv *live.Conversation
	cl := newClient(t)
	polltest.Until(t, "the dead holder's lease to run out", func() bool {
		var err error
		conv, err = in.runner.Open(t.Context(), live.Request{UserID: user, ChatID: chat, DeviceID: device}, cl)
		if err != nil && !toolcallback.IsLive(err) {
			t.Fatalf("Open() error = %v", err)
		}
		return err == nil
	})
	t.Cleanup(conv.Close)
	return conv, cl
}

// TestHolderDies: the instance holding a live segment dies with a browser
// call pending. The device's new socket, on another instance, resumes the
// model session from the stored handle (the model is sent no history
// again) or, the handle forgotten, a new model session seeded with the
// stored conversation; the call is shown again, its answer reaches the
// model once, and the stored transcript stays valid for the text model.
func TestHolderDies(t *testing.T) {
	for _, tc := range []struct {
		name   string
		forget bool
	}{{"resumed by handle", false}, {"handle forgotten", true}} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, &modeltest.LiveOptions{Script: []modeltest.Reply{
				modeltest.TextReply("Hello."), modeltest.CallReply(modeltest.Call("", "change_bgm", map[string]any{"track": 3})), modeltest.EchoReply,
			}})
			doomed := w.mortal()
			conv, cl := doomed.open(t, chat, device)
			if err := conv.Text("hi"); err != nil {
				t.Fatal(err)
			}
			cl.turnsComplete(1)
			if err := conv.Text("play track 3"); err != nil {
				t.Fatal(err)
			}
			call := cl.toolCall(1)
			cl.turnsComplete(2)
			polltest.Until(t, "the handle issued with the call waiting to be stored", func() bool {
				hs := w.model.Handles()
				return len(hs) == 2 && storedHandle(w, chat) == hs[1]
			})
			doomed.kill(conv)
			if tc.forget {
				w.model.Forget()
			}

			next := w.instance(nil, &toolcallback.Options{LeaseTTL: resumeLease}, nil)
			conv, cl = next.openWhenFree(t)
			ready := cl.ready()
			if ready.Resumed == tc.forget || len(ready.Calls) != 1 || ready.Calls[0].ToolCallID != call.ToolCallID {
				t.Fatalf("ready = %+v, want resumed %v and the call %s shown", ready, !tc.forget, call.ToolCallID)
			}
			conns := w.model.Conns()
			model := conns[len(conns)-1]
			if tc.forget {
				polltest.Until(t, "the seeded history", func() bool { return len(model.Seen()) > 0 })
				if seen := modeltest.DumpContents(model.Seen()); !strings.Contains(seen, `text("hi")`) || strings.Contains(seen, "change_bgm") {
					t.Fatalf("the new model session was seeded with:\n%s\nwant the conversation without the waiting call", seen)
				}
			} else if n := model.Count("clientContent"); n != 0 {
				t.Fatalf("the resumed model session was sent %d clientContent frames, want no history again", n)
			}
			if err := conv.Answer(t.Context(), live.Answer{ToolCallID: call.ToolCallID, Output: map[string]any{"playing": 3}}); err != nil {
				t.Fatal(err)
			}
			if said := cl.said(1); said.Text != `saw change_bgm={"playing":3}` {
				t.Fatalf("the model said %q after the answer", said.Text)
			}
			conv.Close()
			seen := modeltest.DumpContents(model.Seen())
			if strings.Count(seen, "call("+call.ToolCallID) != 1 || strings.Count(seen, "response("+call.ToolCallID) != 1 || strings.Count(seen, `text("hi")`) != 1 {
				t.Errorf("the model's view, want the call, its answer and each message once:\n%s", seen)
			}
			if len(model.Orphans()) != 0 {
				t.Errorf("the model dropped %d responses", len(model.Orphans()))
			}
			checkTextTurn(t, w, next)
		})
	}
}

// storedHandle is the resumption handle the chat's session state holds.
func storedHandle(w *world, chatID string) string {
	events := w.events(chatID)
	handle := ""
	for _, ev := range events {
		if h, ok := ev.Actions.StateDelta["baton_live_handle"].(map[string]any); ok {
			handle, _ = h["handle"].(string)
		}
	}
	return handle
}

// checkTextTurn runs a text turn on the chat: the strict text model
// refuses a transcript with an unpaired call; and no user message is
// stored twice.
func checkTextTurn(t *testing.T, w *world, in *instance) {
	t.Helper()
	w.text.Script = append(w.text.Script, modeltest.TextReply("Still here."))
	inv, _, err := in.team.Turn(t.Context(), toolcallback.TurnRequest{UserID: user, ChatID: chat, ClientID: device, Content: genaiText("are you there?")})
	if err != nil {
		t.Fatalf("text turn after the segment: %v", err)
	}
	for _, err := range inv.Events() {
		if err != nil {
			t.Fatalf("text turn after the segment: %v", err)
		}
	}
	if w.text.Calls() != 1 {
		t.Fatalf("the text model was called %d times, want once", w.text.Calls())
	}
	seen := map[string]int{}
	for _, ev := range w.events(chat) {
		if transcript.StartsTurn(ev) {
			seen[ev.Content.Parts[0].Text]++
		}
	}
	for text, n := range seen {
		if n > 1 {
			t.Errorf("the user's message %q is stored %d times", text, n)
		}
	}
}

// TestTextTurnAfterSegment: a text turn made after a segment ended is
// known to the chat's next segment: the model session the stored handle
// would resume never heard it, so the next segment seeds a new one with
// the stored conversation, text turn included. Without the text turn the
// handle resumes.
func TestTextTurnAfterSegment(t *testing.T) {
	for _, tc := range []struct {
		name     string
		textTurn bool
	}{{"text turn between", true}, {"nothing between", false}} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, &modeltest.LiveOptions{Script: []modeltest.Reply{modeltest.TextReply("Hello."), modeltest.EchoReply}})
			in := w.instance(nil, nil, nil)
			conv, cl := in.open(t, chat, device)
			if err := conv.Text("hi"); err != nil {
				t.Fatal(err)
			}
			cl.turnsComplete(1)
			polltest.Until(t, "the handle stored", func() bool {
				hs := w.model.Handles()
				return len(hs) == 1 && storedHandle(w, chat) == hs[0]
			})
			conv.Close()
			if _, err := conv.Wait(); err != nil {
				t.Fatal(err)
			}
			if tc.textTurn {
				checkTextTurn(t, w, in)
			}
			conv, cl = in.open(t, chat, device)
			if ready := cl.ready(); ready.Resumed == tc.textTurn {
				t.Fatalf("ready = %+v, want resumed %v", ready, !tc.textTurn)
			}
			conns := w.model.Conns()
			model := conns[len(conns)-1]
			if !tc.textTurn {
				if n := model.Count("clientContent"); n != 0 {
					t.Fatalf("the resumed model session was sent %d clientContent frames, want no history again", n)
				}
				return
			}
			polltest.Until(t, "the seeded history", func() bool { return len(model.Seen()) > 0 })
			if seen := modeltest.DumpContents(model.Seen()); !strings.Contains(seen, `text("are you there?")`) || !strings.Contains(seen, `text("Still here.")`) {
				t.Fatalf("the new model session was seeded with:\n%s\nwant the text turn in it", seen)
			}
		})
	}
}
