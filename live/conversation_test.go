package live_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/adk/v2/session"

	"github.com/baton-run/baton/live"
	"github.com/baton-run/baton/modeltest"
	"github.com/baton-run/baton/sessionstore"
	"github.com/baton-run/baton/toolcallback"
	"github.com/baton-run/baton/transcript"
)

// TestConversationStoresTheChat: what the user and the model say is
// stored as the chat's messages, with the ids the client was given (those
// GET /Chat/{chatId} gives them), and the model's resumption handle goes
// with the turn's last event; the segment holds the chat until it ends.
func TestConversationStoresTheChat(t *testing.T) {
	w := newWorld(t, &modeltest.LiveOptions{Script: []modeltest.Reply{modeltest.TextReply("Hello there.")}})
	in := w.instance(nil, nil, nil)
	conv, cl := in.open(t, chat, device)
	if r := cl.ready(); r.Resumed || len(r.Calls) != 0 || r.ChatID != chat || r.Agent != "assistant" {
		t.Fatalf("ready = %+v, want a new model session and no call", r)
	}
	if _, _, err := in.team.Turn(t.Context(), toolcallback.TurnRequest{UserID: user, ChatID: chat, ClientID: "tab-b", Content: genaiText("typed")}); !toolcallback.IsLive(err) {
		t.Fatalf("Turn() during the segment error = %v, want one IsLive reports", err)
	}
	if err := conv.Text("hi"); err != nil {
		t.Fatal(err)
	}
	said := cl.said(1)
	cl.turnsComplete(1)
	conv.Close()
	if reason, err := conv.Wait(); reason != live.EndClosed || err != nil {
		t.Fatalf("Wait() = %q, %v; want closed, nil", reason, err)
	}
	events := w.events(chat)
	if diff := cmp.Diff("user: hi\nassistant: Hello there.\n", storedLines(events)); diff != "" {
		t.Errorf("stored conversation (-want +got):\n%s", diff)
	}
	heard := cl.await("the user's words", 1, func(m live.Message) bool {
		tr, ok := m.(live.Transcript)
		return ok && tr.Role == "user" && tr.Final
	}).(live.Transcript)
	var userEv, modelEv *session.Event
	for _, ev := range events {
		switch {
		case transcript.StartsTurn(ev):
			userEv = ev
		case ev.Content != nil:
			modelEv = ev
		}
	}
	if userEv.ID != heard.MessageID || said.MessageID != userEv.InvocationID || modelEv.InvocationID != userEv.InvocationID {
		t.Errorf("ids: user event %s of turn %s, model event of turn %s; client saw user %s, assistant %s",
			userEv.ID, userEv.InvocationID, modelEv.InvocationID, heard.MessageID, said.MessageID)
	}
	if h, ok := modelEv.Actions.StateDelta["baton_live_handle"].(map[string]any); !ok || h["handle"] != w.model.Handles()[0] {
		t.Errorf("the turn's last event holds handle state %v, want %s", modelEv.Actions.StateDelta, w.model.Handles()[0])
	}
	sess, err := sessionstore.New(w.client, nil).Read(t.Context(), sessionstore.ReadRequest{App: "app", User: user, SessionID: chat + "~0"})
	if err != nil {
		t.Fatal(err)
	}
	if _, held := sess.LiveLease(t.Context()); held || !sess.LiveUntil().IsZero() {
		t.Errorf("after the end: lease held %v, liveUntil %v; want both cleared", held, sess.LiveUntil())
	}
}
