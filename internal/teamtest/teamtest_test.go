package teamtest_test

import (
	"slices"
	"strings"
	"testing"

	"google.golang.org/genai"

	"github.com/baton-run/baton/internal/firestoretest"
	"github.com/baton-run/baton/internal/teamtest"
	"github.com/baton-run/baton/modeltest"
	"github.com/baton-run/baton/toolcallback"
)

func TestMain(m *testing.M) { firestoretest.Main(m) }

// TestWorldTools: the world's default agent has the demo tools as the doc
// says: change_bgm waits for the tab that started the turn, get_location
// for any of the user's tabs, book_table for an approval, after which it
// runs once; get_weather answers at once; a collected resume holds what
// the model then said.
func TestWorldTools(t *testing.T) {
	t.Parallel()
	w := teamtest.New(t, nil,
		modeltest.CallReply(modeltest.Call("w1", "get_weather", map[string]any{"city": "Oslo"})), modeltest.EchoReply,
		modeltest.CallReply(modeltest.Call("c1", "change_bgm", map[string]any{"track": 2}), modeltest.Call("l1", "get_location", nil)),
		modeltest.EchoReply,
		modeltest.CallReply(modeltest.Call("b1", "book_table", map[string]any{"people": 4})), modeltest.EchoReply,
	)
	ctx := t.Context()
	events, _, err := teamtest.Turn(ctx, w.Team, teamtest.TextTurn("ada", "chat", "tab-a", "weather in Oslo?"))
	if got := teamtest.FinalText(events); err != nil || !strings.Contains(got, `get_weather={"forecast":"sunny in Oslo"}`) {
		t.Fatalf("weather turn = %q, %v; want the forecast for Oslo", got, err)
	}

	if _, _, err := teamtest.Turn(ctx, w.Team, teamtest.TextTurn("ada", "chat", "tab-a", "music, and where am I?")); err != nil {
		t.Fatal(err)
	}
	if got := toolsOf(w.Pending("ada", "chat", "tab-a")); !slices.Equal(got, []string{"change_bgm", "get_location"}) {
		t.Errorf("tab-a may answer %v; want change_bgm and get_location", got)
	}
	if got := toolsOf(w.Pending("ada", "chat", "tab-b")); !slices.Equal(got, []string{"get_location"}) {
		t.Errorf("tab-b may answer %v; want get_location only", got)
	}
	for _, a := range []struct{ id, client string }{{"l1", "tab-b"}, {"c1", "tab-a"}} {
		res, events, err := teamtest.Resume(ctx, w.Team, toolcallback.ResumeRequest{UserID: "ada", ChatID: "chat", CallID: a.id, ClientID: a.client,
			Answer: toolcallback.Answer{Output: map[string]any{"ok": a.id}}})
		if err != nil {
			t.Fatalf("Resume(%s) error = %v", a.id, err)
		}
		if a.id == "c1" && (res.Invocation == nil || !strings.Contains(teamtest.FinalText(events), `change_bgm={"ok":"c1"}`)) {
			t.Errorf("the step's last answer resumed %q; want the model to see both answers", teamtest.FinalText(events))
		}
	}

	if _, _, err := teamtest.Turn(ctx, w.Team, teamtest.TextTurn("ada", "chat", "tab-a", "book for 4")); err != nil {
		t.Fatal(err)
	}
	approval := w.Pending("ada", "chat", "tab-a")
	if len(approval) != 1 || approval[0].Kind != toolcallback.KindApproval || w.Tools.Booked.Load() != 0 {
		t.Fatalf("Pending() = %+v with %d bookings; want one approval, nothing booked yet", approval, w.Tools.Booked.Load())
	}
	yes := true
	_, events, err = teamtest.Resume(ctx, w.Team, toolcallback.ResumeRequest{UserID: "ada", ChatID: "chat", CallID: approval[0].ID, ClientID: "tab-a",
		Answer: toolcallback.Answer{Approved: &yes}})
	if err != nil || !strings.Contains(teamtest.FinalText(events), `book_table={"booked":true,"people":4}`) {
		t.Fatalf("approved booking = %q, %v; want it booked", teamtest.FinalText(events), err)
	}
	if got, _ := w.Tools.BookArgs.Load().(teamtest.TableArgs); w.Tools.Booked.Load() != 1 || got.People != 4 {
		t.Errorf("book_table ran %d times, last with %+v; want once, for 4", w.Tools.Booked.Load(), got)
	}
}

func toolsOf(calls []*toolcallback.Call) []string {
	var out []string
	for _, c := range calls {
		out = append(out, c.Tool)
	}
	slices.Sort(out)
	return out
}

// TestWorldInstances: a reopened instance is another process on the same
// project: it sees the chat the first one stored, and its Firestore calls
// are counted apart; an instance on the first client shares its counter.
func TestWorldInstances(t *testing.T) {
	t.Parallel()
	w := teamtest.New(t, nil, modeltest.TextReply("one"), modeltest.TextReply("two"), modeltest.TextReply("three"))
	if _, _, err := teamtest.Turn(t.Context(), w.Team, teamtest.TextTurn("ada", "chat", "tab-a", "hi")); err != nil {
		t.Fatal(err)
	}
	before := w.Counter.Snapshot()
	other := w.Reopen()
	if _, _, err := teamtest.Turn(t.Context(), other.Team, teamtest.TextTurn("ada", "chat", "tab-a", "again")); err != nil {
		t.Fatal(err)
	}
	if got := w.Counter.Snapshot().Sub(before); got.RoundTrips != 0 {
		t.Errorf("the reopened instance's turn counted %+v on the first client; want nothing", got)
	}
	if other.Counter.RoundTrips() == 0 {
		t.Error("the reopened instance's counter saw no round trip")
	}
	if got := teamtest.FinalText(w.History("ada", "chat")); got != "two" {
		t.Errorf("the first instance reads %q last; want the other's answer", got)
	}
	same := w.NewInstance(nil, nil)
	if _, _, err := teamtest.Turn(t.Context(), same.Team, teamtest.TextTurn("ada", "chat", "tab-a", "and again")); err != nil {
		t.Fatal(err)
	}
	if same.Counter != w.Counter || w.Counter.Snapshot().Sub(before).RoundTrips == 0 {
		t.Error("an instance on the first client does not share its counter")
	}
}

// TestWorldFiles: with Options.Files, a team keeps a message's inline
// file in the world's bucket, not in the session.
func TestWorldFiles(t *testing.T) {
	t.Parallel()
	w := teamtest.New(t, &teamtest.Options{Files: true}, modeltest.TextReply("a fine cat"))
	msg := genai.NewContentFromParts([]*genai.Part{genai.NewPartFromText("look"), genai.NewPartFromBytes([]byte("not really a png"), "image/png")}, genai.RoleUser)
	if _, _, err := teamtest.Turn(t.Context(), w.Team, toolcallback.TurnRequest{UserID: "ada", ChatID: "chat", ClientID: "tab-a", Content: msg}); err != nil {
		t.Fatal(err)
	}
	names, err := w.GCS.Objects(t.Context(), teamtest.App+"/")
	if err != nil || len(names) != 1 {
		t.Fatalf("bucket holds %v, %v; want the message's file", names, err)
	}
	for _, ev := range w.History("ada", "chat") {
		if ev.Content == nil {
			continue
		}
		for _, p := range ev.Content.Parts {
			if p.InlineData != nil {
				t.Errorf("stored event %s holds the file inline", ev.ID)
			}
		}
	}
}
