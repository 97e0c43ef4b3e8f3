package agent

import (
	"encoding/json"
	"strings"
	"testing"

	"google.golang.org/adk/v2/model"
	"google.golang.org/genai"
)

func TestOfflinePhrasings(t *testing.T) {
	tests := []struct {
		say      string
		wantTool string
		wantArgs string
	}{
		{"change the music to track 2", "change_bgm", `{"track":2}`},
		{"play song 3 please", "change_bgm", `{"track":3}`},
		{"where am I?", "get_location", `{}`},
		{"what's the weather in Tokyo?", "get_weather", `{"city":"Tokyo"}`},
		{"weather for New York", "get_weather", `{"city":"New York"}`},
		{"book a table for 4", "book_table", `{"name":"Guest","people":4,"time":"19:00"}`},
		{"what is 12*7?", "calculate", `{"expression":"12*7"}`},
		{"(1+2)*3", "calculate", `{"expression":"(1+2)*3"}`},
		{"what time is it?", "get_current_time", `{}`},
		{"what time is it in Tokyo", "get_current_time", `{"timezone":"Asia/Tokyo"}`},
		{"note: buy milk", "notes_add_note", `{"text":"buy milk"}`},
		{"remember that the table is at 7", "notes_add_note", `{"text":"the table is at 7"}`},
		{"show my notes", "notes_list_notes", `{}`},
		{"what are my notes?", "notes_list_notes", `{}`},
		{"clear my notes", "notes_clear_notes", `{}`},
		{"forget all notes", "notes_clear_notes", `{}`},
		{"prepare a calm playlist of 10 songs", "prepare_playlist", `{"mood":"calm","songs":10}`},
		{"make me a playlist", "prepare_playlist", `{"mood":""}`},
		{"ask the other runner what is 12*7 and what time is it?", "ask_peer", `{"message":"what is 12*7 and what time is it?"}`},
		{"ask the other runner to ask the other runner what's on tonight", "ask_peer", `{"message":"ask the other runner what's on tonight"}`},
		{"hello", "", ""},
	}
	for _, tc := range tests {
		got := respond([]*genai.Content{genai.NewContentFromText(tc.say, genai.RoleUser)})
		fc := got.Parts[0].FunctionCall
		if tc.wantTool == "" {
			if fc != nil || !strings.Contains(got.Parts[0].Text, "offline") {
				t.Errorf("%q: got %+v, want the greeting", tc.say, got.Parts[0])
			}
			continue
		}
		if fc == nil {
			t.Errorf("%q: answered %q, want a %s call", tc.say, got.Parts[0].Text, tc.wantTool)
			continue
		}
		args, _ := json.Marshal(fc.Args)
		if fc.Name != tc.wantTool || string(args) != tc.wantArgs {
			t.Errorf("%q: called %s(%s), want %s(%s)", tc.say, fc.Name, args, tc.wantTool, tc.wantArgs)
		}
	}
}

func TestOfflineWordsResults(t *testing.T) {
	tests := []struct {
		name string
		resp map[string]any
		want string
	}{
		{"change_bgm", map[string]any{"playing": float64(2)}, "now playing track 2"},
		{"calculate", map[string]any{"expression": "12*7", "result": float64(84)}, "12*7 = 84"},
		{"notes_add_note", map[string]any{"session": "ab12cd34", "notes": []any{"buy milk"}}, "Noted. Your notes (MCP session ab12cd34): buy milk."},
		{"notes_list_notes", map[string]any{"session": "ab12cd34", "notes": []any{}}, "No notes yet (MCP session ab12cd34)."},
		{"notes_clear_notes", map[string]any{"session": "ab12cd34", "notes": []any{}, "outcome": "all notes forgotten"}, "Notes: all notes forgotten. No notes yet (MCP session ab12cd34)."},
		{"book_table", map[string]any{"booked": true, "people": float64(6), "time": "19:00", "name": "Ada"}, "table for 6"},
		{"book_table", map[string]any{"error": "error tool \"book_table\" tool call rejected"}, "not approved, so I did not book"},
		{"book_table", map[string]any{"error": "a table is for 1 to 20 people, not 40"}, "I did not book the table: a table is for 1 to 20"},
		{"get_location", map[string]any{"error": "permission denied"}, "couldn't get your location: permission denied"},
		{"prepare_playlist", map[string]any{"mood": "calm", "tracks": []any{"Quiet Rain", "Blue Tides"}}, "Your calm playlist is ready: Quiet Rain, Blue Tides."},
		{"prepare_playlist", map[string]any{"error": "stopped: the user stopped the turn"}, "The playlist was not prepared: stopped"},
		{"ask_peer", map[string]any{"text": "12*7 = 84."}, "The other runner says: 12*7 = 84."},
		{"ask_peer", map[string]any{"error": "timed out"}, "The other runner could not answer: timed out."},
	}
	for _, tc := range tests {
		c := &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{{FunctionResponse: &genai.FunctionResponse{Name: tc.name, Response: tc.resp}}}}
		got := respond([]*genai.Content{c}).Parts[0].Text
		if !strings.Contains(got, tc.want) {
			t.Errorf("%s %v: said %q, want %q", tc.name, tc.resp, got, tc.want)
		}
	}
}

func TestOfflineRecap(t *testing.T) {
	history := []*genai.Content{
		genai.NewContentFromText("[dj called change_bgm(track=2): ok]", genai.RoleUser),
		genai.NewContentFromText("what did the DJ just do?", genai.RoleUser),
	}
	if got := respond(history).Parts[0].Text; !strings.Contains(got, "change_bgm(track=2)") {
		t.Errorf("recap = %q, want the migrated record", got)
	}
}

func TestOfflineStreams(t *testing.T) {
	req := &model.LLMRequest{Contents: []*genai.Content{genai.NewContentFromText("hello", genai.RoleUser)}}
	var partial strings.Builder
	var final string
	for resp, err := range (Offline{}).GenerateContent(t.Context(), req, true) {
		if err != nil {
			t.Fatal(err)
		}
		if resp.Partial {
			partial.WriteString(resp.Content.Parts[0].Text)
		} else {
			final = resp.Content.Parts[0].Text
		}
	}
	if partial.String() != final || final == "" {
		t.Errorf("streamed %q, final %q: want the same text", partial.String(), final)
	}
}

func TestEvaluate(t *testing.T) {
	tests := []struct {
		expr    string
		want    float64
		wantErr bool
	}{
		{"12*7", 84, false},
		{"1 + 2 * 3", 7, false},
		{"(1+2)*3", 9, false},
		{"-4 / 2", -2, false},
		{"2.5*4", 10, false},
		{"1/0", 0, true},
		{"2+", 0, true},
		{"(((", 0, true},
		{"3 4", 0, true},
		{strings.Repeat("(", 100) + "1" + strings.Repeat(")", 100), 0, true},
	}
	for _, tc := range tests {
		got, err := evaluate(tc.expr)
		if (err != nil) != tc.wantErr || (!tc.wantErr && got != tc.want) {
			t.Errorf("evaluate(%q) = %v, %v; want %v (error %v)", tc.expr, got, err, tc.want, tc.wantErr)
		}
	}
}

// TestPickLeavesNoSpareCapacity: an agent's Tools slice must have no room
// to grow. ADK v2.2.0 appends each invocation's toolset tools to it, so
// with spare capacity two chats running at once write their MCP tools into
// one array (the race detector caught it in the browser scenarios).
func TestPickLeavesNoSpareCapacity(t *testing.T) {
	tools, err := Tools()
	if err != nil {
		t.Fatal(err)
	}
	got := pick(tools, "get_weather", "calculate", "get_current_time", "get_location", "book_table")
	if len(got) != 5 || cap(got) != len(got) {
		t.Errorf("pick = %d tools with capacity %d, want 5 with no spare capacity", len(got), cap(got))
	}
}

// TestOfflineFile: the offline model says what file it received, so a
// browser scenario sees that the model got the bytes.
func TestOfflineFile(t *testing.T) {
	c := &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{genai.NewPartFromText("look"), genai.NewPartFromBytes([]byte("\x89PNG"), "image/png")}}
	if got := respond([]*genai.Content{c}).Parts[0].Text; got != "I received a file of 4 bytes (image/png)." {
		t.Errorf("answered %q, want the file's size and type", got)
	}
}

// TestOfflineThoughts: asked for thought summaries, the offline model
// streams one first, as a thought part, and keeps it before its answer in
// the final response; not asked, it gives none.
func TestOfflineThoughts(t *testing.T) {
	for _, ask := range []bool{true, false} {
		req := &model.LLMRequest{Contents: []*genai.Content{genai.NewContentFromText("what is 12*7?", genai.RoleUser)},
			Config: &genai.GenerateContentConfig{ThinkingConfig: &genai.ThinkingConfig{IncludeThoughts: ask}}, Tools: map[string]any{"calculate": nil}}
		var responses []*model.LLMResponse
		for resp, err := range (Offline{}).GenerateContent(t.Context(), req, true) {
			if err != nil {
				t.Fatal(err)
			}
			responses = append(responses, resp)
		}
		first, final := responses[0], responses[len(responses)-1]
		gotThought := first.Partial && first.Content.Parts[0].Thought && final.Content.Parts[0].Thought
		if gotThought != ask {
			t.Errorf("IncludeThoughts %v: streamed thought first and kept = %v", ask, gotThought)
		}
		if fc := final.Content.Parts[len(final.Content.Parts)-1].FunctionCall; fc == nil || fc.Name != "calculate" {
			t.Errorf("IncludeThoughts %v: final response %+v, want the calculate call last", ask, final.Content.Parts)
		}
	}
}
