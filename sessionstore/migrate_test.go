package sessionstore_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/session"
	"google.golang.org/genai"

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
	got := sessionstore.MigrateHistory(ctx, created.Session.Events(), "concierge", map[string]string{"c2": "cancelled"})
	var lines []string
	for _, e := range got {
		lines = append(lines, e.Author+"/"+string(e.Content.Role)+": "+e.Content.Parts[0].Text)
	}
	want := []string{
		"user/user: play track 2",
		"concierge/model: [dj called change_bgm(track=2): {\"playing\":2}]\n[dj called get_location(): cancelled]",
		"concierge/model: Track 2 is on.",
	}
	if strings.Join(lines, "\n---\n") != strings.Join(want, "\n---\n") {
		t.Errorf("migrated history:\n%s\nwant:\n%s", strings.Join(lines, "\n---\n"), strings.Join(want, "\n---\n"))
	}
	if !got[0].Timestamp.Equal(ts) {
		t.Errorf("migrated timestamp = %v, want the original %v", got[0].Timestamp, ts)
	}
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
	chunks, err := svc.SessionRef("app", "u", "s").Collection("events").Documents(ctx).GetAll()
	if err != nil || len(chunks) < 2 {
		t.Errorf("history stored in %d sealed chunks (%v), want several", len(chunks), err)
	}
}
