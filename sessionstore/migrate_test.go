package sessionstore_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/session"
	"google.golang.org/genai"

	"github.com/baton-run/baton/internal/eventlist"
	"github.com/baton-run/baton/sessionstore"
)

func TestMigrateHistory(t *testing.T) {
	t.Parallel()
	svc := newService(t)
	ctx := t.Context()
	created, err := svc.Create(ctx, &session.CreateRequest{AppName: "app", UserID: "u", SessionID: "old"})
	if err != nil {
		t.Fatal(err)
	}
	ts := time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)
	events := []*session.Event{
		{ID: "1", Author: "user", Timestamp: ts, LLMResponse: model.LLMResponse{Content: genai.NewContentFromText("play track 2", genai.RoleUser)}},
		{ID: "2", Author: "dj", Timestamp: ts.Add(time.Second), LLMResponse: model.LLMResponse{Content: &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{
			{Text: "thinking…", Thought: true},
			{FunctionCall: &genai.FunctionCall{ID: "c1", Name: "change_bgm", Args: map[string]any{"track": float64(2)}}},
			{FunctionCall: &genai.FunctionCall{ID: "c2", Name: "get_location", Args: map[string]any{}}},
		}}}},
		{ID: "3", Author: "dj", Timestamp: ts.Add(2 * time.Second), LLMResponse: model.LLMResponse{Content: &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{
			{FunctionResponse: &genai.FunctionResponse{ID: "c1", Name: "change_bgm", Response: map[string]any{"status": "pending"}}},
		}}}},
		{ID: "4", Author: "user", Timestamp: ts.Add(3 * time.Second), LLMResponse: model.LLMResponse{Content: &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{
			{FunctionResponse: &genai.FunctionResponse{ID: "c1", Name: "change_bgm", Response: map[string]any{"playing": float64(2)}}},
		}}}},
		{ID: "5", Author: "dj", Timestamp: ts.Add(4 * time.Second), LLMResponse: model.LLMResponse{Content: genai.NewContentFromText("Track 2 is on.", genai.RoleModel)}},
		{ID: "6", Author: "dj", Timestamp: ts.Add(5 * time.Second), LLMResponse: model.LLMResponse{Partial: true, Content: genai.NewContentFromText("Tra", genai.RoleModel)}},
	}
	for _, e := range events {
		if err := svc.AppendEvent(ctx, created.Session, e); err != nil {
			t.Fatal(err)
		}
	}
	at := ts.Add(time.Minute)
	got := sessionstore.MigrateHistory(ctx, created.Session.Events(), sessionstore.Migration{
		From: "dj", To: "concierge", At: at, Outcome: map[string]string{"c2": "cancelled"},
		Args: map[string]map[string]any{"c1": {"track": float64(3)}}, Approved: map[string]bool{"c1": true},
	})
	want := []string{
		"user/user: play track 2",
		"concierge/model: [dj called change_bgm(track=3): {\"playing\":2}]\n[dj called get_location(): cancelled]",
		"concierge/model: Track 2 is on.",
	}
	if diff := cmp.Diff(want, migratedLines(got)); diff != "" {
		t.Errorf("migrated history (-want +got):\n%s", diff)
	}
	if !got[0].Timestamp.Equal(ts) {
		t.Errorf("migrated timestamp = %v, want the original %v", got[0].Timestamp, ts)
	}

	// Stored and read back, the events say which switch moved them and
	// hold their records in structured form.
	moved, err := svc.CreateWithEvents(ctx, &session.CreateRequest{AppName: "app", UserID: "u", SessionID: "new"}, got)
	if err != nil {
		t.Fatal(err)
	}
	approved := true
	wantRecords := [][]sessionstore.MovedCall{nil, {
		{Part: 0, Agent: "dj", CallID: "c1", Tool: "change_bgm", Args: map[string]any{"track": float64(3)}, Result: map[string]any{"playing": float64(2)}, Approved: &approved},
		{Part: 1, Agent: "dj", CallID: "c2", Tool: "get_location", Args: map[string]any{}, Outcome: "cancelled"},
	}, nil}
	checkMigrated := func(events session.Events, want sessionstore.Switch, wantRecords [][]sessionstore.MovedCall) {
		t.Helper()
		i := 0
		for ev := range events.All() {
			sw, records, ok := sessionstore.MovedBy(ev)
			if !ok || sw.From != want.From || sw.To != want.To || !sw.At.Equal(want.At) {
				t.Errorf("event %d: MovedBy() = %+v, %v, want %+v", i, sw, ok, want)
			}
			if i < len(wantRecords) {
				if diff := cmp.Diff(wantRecords[i], records); diff != "" {
					t.Errorf("event %d: records (-want +got):\n%s", i, diff)
				}
			}
			i++
		}
	}
	checkMigrated(moved.Session.Events(), sessionstore.Switch{From: "dj", To: "concierge", At: at}, wantRecords)

	// Moved again, the events keep the first switch's mark and their
	// records; the new agent's own events get the second switch's.
	if err := svc.AppendEvent(ctx, moved.Session, &session.Event{ID: "7", Author: "concierge", Timestamp: ts.Add(2 * time.Minute),
		LLMResponse: model.LLMResponse{Content: genai.NewContentFromText("Anything else?", genai.RoleModel)}}); err != nil {
		t.Fatal(err)
	}
	again := sessionstore.MigrateHistory(ctx, moved.Session.Events(), sessionstore.Migration{From: "concierge", To: "dj", At: at.Add(time.Hour)})
	if diff := cmp.Diff(append(strings.Split(strings.ReplaceAll(strings.Join(want, "\n---\n"), "concierge/", "dj/"), "\n---\n"), "dj/model: Anything else?"), migratedLines(again)); diff != "" {
		t.Errorf("history moved twice (-want +got):\n%s", diff)
	}
	first := []*session.Event{again[0], again[1], again[2]}
	checkMigrated(eventlist.List(first), sessionstore.Switch{From: "dj", To: "concierge", At: at}, wantRecords)
	checkMigrated(eventlist.List(again[3:]), sessionstore.Switch{From: "concierge", To: "dj", At: at.Add(time.Hour)}, nil)
}

// migratedLines writes events as author/role: text, joining text parts
// with newlines.
func migratedLines(events []*session.Event) []string {
	var lines []string
	for _, e := range events {
		var texts []string
		for _, p := range e.Content.Parts {
			texts = append(texts, p.Text)
		}
		lines = append(lines, e.Author+"/"+string(e.Content.Role)+": "+strings.Join(texts, "\n"))
	}
	return lines
}

// TestCreateWithEvents builds a session whose history spans several sealed
// chunks in one write, and keeps appending to it.
func TestCreateWithEvents(t *testing.T) {
	t.Parallel()
	svc := newService(t)
	ctx := t.Context()
	text := strings.Repeat("z", 150_000)
	var events []*session.Event
	for i := range 20 { // ~3 MB
		events = append(events, &session.Event{ID: fmt.Sprint(i), Author: "user", Timestamp: time.Unix(int64(1000+i), 0).UTC(),
			LLMResponse: model.LLMResponse{Content: genai.NewContentFromText(text, genai.RoleUser)}})
	}
	created, err := svc.CreateWithEvents(ctx, &session.CreateRequest{AppName: "app", UserID: "u", SessionID: "s",
		State: map[string]any{"k": "v", "temp:t": 1}}, events)
	if err != nil {
		t.Fatalf("CreateWithEvents() error = %v", err)
	}
	if n := created.Session.Events().Len(); n != 20 {
		t.Fatalf("created session has %d events, want 20", n)
	}
	if _, err := svc.CreateWithEvents(ctx, &session.CreateRequest{AppName: "app", UserID: "u", SessionID: "s"}, nil); err == nil {
		t.Error("CreateWithEvents() over an existing session succeeded")
	}
	if err := svc.AppendEvent(ctx, created.Session, &session.Event{ID: "20", Author: "user", Timestamp: time.Unix(2000, 0).UTC()}); err != nil {
		t.Fatalf("AppendEvent() after CreateWithEvents error = %v", err)
	}
	got, err := svc.Get(ctx, &session.GetRequest{AppName: "app", UserID: "u", SessionID: "s"})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for e := range got.Session.Events().All() {
		ids = append(ids, e.ID)
	}
	if strings.Join(ids, ",") != "0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20" {
		t.Errorf("events = %v", ids)
	}
	if v, _ := got.Session.State().Get("k"); v != "v" {
		t.Errorf("state k = %v, want v", v)
	}
	if _, err := got.Session.State().Get("temp:t"); err == nil {
		t.Error("temp: state was stored")
	}
	chunks, err := svc.Client().Doc(svc.SessionDoc("app", "u", "s").Path()).Collection("events").Documents(ctx).GetAll()
	if err != nil || len(chunks) < 2 {
		t.Errorf("history stored in %d sealed chunks (%v), want several", len(chunks), err)
	}
}
