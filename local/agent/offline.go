package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"regexp"
	"strconv"
	"strings"
	"time"

	"google.golang.org/adk/v2/model"
	"google.golang.org/genai"

	"github.com/baton-run/baton/modeltest"
)

// OfflineModelName is how the offline model names itself, in the page and
// the logs.
const OfflineModelName = "offline (deterministic rules, no network)"

// Offline is a model.LLM that needs no network: it reads the last message
// with a few regular expressions and answers with the tool calls Gemini
// would make, then words the tools' results. It stands in for Gemini in the
// local demo when no API key is configured, and in tests.
type Offline struct {
	// PieceDelay is the pause between streamed pieces, so that streaming
	// is visible in the demo page. Zero in tests.
	PieceDelay time.Duration
}

var _ model.LLM = Offline{}

// Name implements model.LLM.
func (Offline) Name() string { return OfflineModelName }

// GenerateContent implements model.LLM. When streaming it sends the text a
// few words at a time, then the whole response, as Gemini does. As Gemini
// 3 does, it signs the calls it makes and refuses (HTTP 400) a request
// whose current turn replays a call without its signature or with another
// model's (modeltest.CheckSignatures).
func (o Offline) GenerateContent(ctx context.Context, req *model.LLMRequest, stream bool) iter.Seq2[*model.LLMResponse, error] {
	if err := modeltest.CheckSignatures(OfflineModelName, req.Contents); err != nil {
		return func(yield func(*model.LLMResponse, error) bool) { yield(nil, err) }
	}
	if asksTitle(req) {
		return func(yield func(*model.LLMResponse, error) bool) {
			yield(&model.LLMResponse{Content: text(title(req.Contents)), TurnComplete: true, FinishReason: genai.FinishReasonStop,
				ModelVersion: OfflineModelName}, nil)
		}
	}
	content := modeltest.Sign(OfflineModelName, withTools(respond(req.Contents), req.Tools))
	delay := o.PieceDelay
	if slow(req.Contents) {
		delay = slowPieceDelay
	}
	var thought *genai.Part
	if c := req.Config; c != nil && c.ThinkingConfig != nil && c.ThinkingConfig.IncludeThoughts {
		thought = &genai.Part{Text: thinking(content), Thought: true}
	}
	return func(yield func(*model.LLMResponse, error) bool) {
		final := content
		if thought != nil {
			if stream && !yield(&model.LLMResponse{Content: &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{thought}}, Partial: true}, nil) {
				return
			}
			final = &genai.Content{Role: content.Role, Parts: append([]*genai.Part{thought}, content.Parts...)}
		}
		if stream && len(content.Parts) == 1 && content.Parts[0].Text != "" {
			words := strings.SplitAfter(content.Parts[0].Text, " ")
			for i := 0; i < len(words); i += 3 {
				if i > 0 && delay > 0 {
					select {
					case <-time.After(delay):
					case <-ctx.Done():
						yield(nil, ctx.Err())
						return
					}
				}
				chunk := strings.Join(words[i:min(i+3, len(words))], "")
				if !yield(&model.LLMResponse{Content: genai.NewContentFromText(chunk, genai.RoleModel), Partial: true}, nil) {
					return
				}
			}
		}
		yield(&model.LLMResponse{Content: final, TurnComplete: true, FinishReason: genai.FinishReasonStop, ModelVersion: OfflineModelName}, nil)
	}
}

// thinking is the offline model's thought summary for its answer: what
// it is about to do.
func thinking(content *genai.Content) string {
	var tools []string
	for _, p := range content.Parts {
		if p.FunctionCall != nil {
			tools = append(tools, p.FunctionCall.Name)
		}
	}
	if len(tools) > 0 {
		return "The message matches a rule for " + strings.Join(tools, " and ") + ", so I call it and word its result afterwards."
	}
	return "No tool is needed here: I answer in words."
}

// withTools keeps content to the tools the agent has (tools, by name, as
// ADK lists them in the request): a call of any other tool is dropped, and
// content with no call left says, in one line, what the agent lacks. A
// real model sees the declarations and does not call what is not there.
func withTools(content *genai.Content, tools map[string]any) *genai.Content {
	var kept []*genai.Part
	var missing []string
	for _, p := range content.Parts {
		if fc := p.FunctionCall; fc != nil {
			if _, ok := tools[fc.Name]; !ok {
				missing = append(missing, fc.Name)
				continue
			}
		}
		kept = append(kept, p)
	}
	if len(missing) == 0 {
		return content
	}
	if len(kept) == 0 {
		return text(fmt.Sprintf("I can't do that here: this agent has no %s tool. Another agent may have it.", strings.Join(missing, " or ")))
	}
	return &genai.Content{Role: content.Role, Parts: kept}
}

// respond decides the model's next content from the conversation.
func respond(contents []*genai.Content) *genai.Content {
	if len(contents) == 0 {
		return text(greeting)
	}
	last := contents[len(contents)-1]
	var responses []*genai.FunctionResponse
	var said []string
	for _, p := range last.Parts {
		if p.FunctionResponse != nil {
			responses = append(responses, p.FunctionResponse)
		}
		if p.Text != "" {
			said = append(said, p.Text)
		}
	}
	if files := received(last); len(responses) == 0 && files != "" {
		return text("I received " + files + ".")
	}
	if len(responses) > 0 && len(said) == 0 {
		var lines []string
		for _, r := range responses {
			lines = append(lines, describe(r))
		}
		if files := received(last); files != "" {
			// A response's files (a remote agent's) come beside it.
			lines = append(lines, "With it I received "+files+".")
		}
		return text(strings.Join(lines, " "))
	}
	return answer(strings.Join(said, " "), contents)
}

const greeting = "Hello! I'm the offline demo model. Try: \"change the music to track 2\", \"where am I?\", " +
	"\"what's the weather in Tokyo?\", \"book a table for 4\", \"what is 12*7?\", \"what time is it?\", " +
	"\"note: buy milk\" or \"show my notes\"."

var (
	reTrack    = regexp.MustCompile(`(?i)\b(?:music|track|song|bgm|play)\b.*?\b([1-9])\b`)
	reLocation = regexp.MustCompile(`(?i)\b(where am i|my location|locate me|where i am)\b`)
	reWeather  = regexp.MustCompile(`(?i)\bweather\b(?:.*?\b(?:in|for|at)\s+([\p{L}][\p{L} .'-]*))?`)
	reForm     = regexp.MustCompile(`(?i)\bform\b.*\btable\b|\btable\b.*\bform\b|\breservation form\b`)
	reTable    = regexp.MustCompile(`(?i)\b(?:book|reserve)\b.*?\btable\b(?:.*?\bfor\s+(\d+))?`)
	reTime     = regexp.MustCompile(`(?i)\bwhat(?:'s| is)? (?:the )?time\b|\bcurrent time\b|\btime is it\b`)
	reMath     = regexp.MustCompile(`^[\d\s+\-*/().×÷]+$`)
	reMathAsk  = regexp.MustCompile(`(?i)(?:what is|what's|calculate|compute)\s+([\d\s+\-*/().×÷]+?)\s*\??$`)
	reRecap    = regexp.MustCompile(`(?i)\bwhat did\b.*\b(do|did|say|happen)\b|\bwhat happened\b`)
	reRecord   = regexp.MustCompile(`\[[^\]]*\bcalled\b[^\]]*\]`)
	reSlow     = regexp.MustCompile(`(?i)\bcount slowly to (\d+)\b`)
	reNoteList = regexp.MustCompile(`(?i)\b(?:(?:show|list|read)(?: me)? (?:the |my )?notes|what are my notes|my notes\??$)`)
	reNoteClr  = regexp.MustCompile(`(?i)\b(?:clear|delete|forget|erase)\b(?: all)?(?: of)? (?:the |my )?notes\b`)
	reNoteAdd  = regexp.MustCompile(`(?i)^\s*(?:note|remember|take a note|add a note|write down)\b(?:\s+that)?[\s:,-]*(.+)$`)
	reEvents   = regexp.MustCompile(`(?i)\bevents agent\b|\bwhat(?:'s| is) on tonight\b`)
	rePeer     = regexp.MustCompile(`(?i)^\s*ask the other runner\b(?:\s+to\b)?[\s:,-]*(.+)$`)
	reTZ       = regexp.MustCompile(`(?i)\bin\s+(tokyo|london|paris|new york|sydney|berlin)\b`)
	rePlaylist = regexp.MustCompile(`(?i)\b(?:prepare|make|build|create)\b(?:\s+(?:me|a|an|the))*(?:\s+([\p{L}]+))?\s+playlist\b(?:.*?\b(\d+)\s+(?:songs|tracks)\b)?`)
)

var zones = map[string]string{
	"tokyo": "Asia/Tokyo", "london": "Europe/London", "paris": "Europe/Paris",
	"new york": "America/New_York", "sydney": "Australia/Sydney", "berlin": "Europe/Berlin",
}

// slowPieceDelay paces "count slowly to N", a turn long enough to reload
// the page in the middle of it.
const slowPieceDelay = 700 * time.Millisecond

// maxSlowCount bounds "count slowly to N": about 84 s of streaming, room
// for a browser scenario to reload in the middle on a loaded machine.
const maxSlowCount = 360

// slow reports whether the last user message asks to count slowly.
func slow(contents []*genai.Content) bool {
	if len(contents) == 0 {
		return false
	}
	for _, p := range contents[len(contents)-1].Parts {
		if reSlow.MatchString(p.Text) {
			return true
		}
	}
	return false
}

// answer maps a user message to tool calls or a text. A message that asks
// for two things ("change the music to track 3 and tell me where I am")
// gets both calls in one model step, as Gemini makes parallel calls.
func answer(msg string, history []*genai.Content) *genai.Content {
	msg = strings.TrimSpace(msg)
	if m := rePeer.FindStringSubmatch(msg); m != nil {
		// First, whole: the question may hold anything, another delegation too.
		return call("ask_peer", map[string]any{"message": strings.TrimSpace(m[1])})
	}
	if first, second, ok := strings.Cut(msg, " and "); ok {
		a, b := answer(first, history), answer(second, history)
		if a.Parts[0].FunctionCall != nil && b.Parts[0].FunctionCall != nil {
			return &genai.Content{Role: genai.RoleModel, Parts: append(a.Parts, b.Parts...)}
		}
	}
	switch {
	case reSlow.MatchString(msg):
		n, _ := strconv.Atoi(reSlow.FindStringSubmatch(msg)[1])
		nums := make([]string, 0, min(n, maxSlowCount))
		for i := 1; i <= min(n, maxSlowCount); i++ {
			nums = append(nums, strconv.Itoa(i))
		}
		return text("Counting: " + strings.Join(nums, ", ") + ". Done counting.")
	case reRecap.MatchString(msg):
		return text(recap(history))
	case reNoteClr.MatchString(msg):
		return call("notes_clear_notes", map[string]any{})
	case reNoteList.MatchString(msg):
		return call("notes_list_notes", map[string]any{})
	case reNoteAdd.MatchString(msg):
		return call("notes_add_note", map[string]any{"text": strings.TrimSpace(reNoteAdd.FindStringSubmatch(msg)[1])})
	case reEvents.MatchString(msg):
		return call("ask_events", map[string]any{"message": "What is on tonight?"})
	case rePlaylist.MatchString(msg):
		m := rePlaylist.FindStringSubmatch(msg)
		args := map[string]any{"mood": strings.ToLower(m[1])}
		if m[2] != "" {
			args["songs"], _ = strconv.Atoi(m[2])
		}
		return call("prepare_playlist", args)
	case reLocation.MatchString(msg):
		return call("get_location", map[string]any{})
	case reForm.MatchString(msg):
		return call("show_surface", map[string]any{"messages": reservationForm(formID(history)), "wait": true})
	case reTable.MatchString(msg):
		people := 2
		if m := reTable.FindStringSubmatch(msg); m[1] != "" {
			people, _ = strconv.Atoi(m[1])
		}
		return call("book_table", map[string]any{"people": people, "time": "19:00", "name": "Guest"})
	case reWeather.MatchString(msg):
		city := "London"
		if m := reWeather.FindStringSubmatch(msg); strings.TrimSpace(m[1]) != "" {
			city = strings.TrimRight(strings.TrimSpace(m[1]), "?.! ")
		}
		return call("get_weather", map[string]any{"city": city})
	case reTime.MatchString(msg):
		args := map[string]any{}
		if m := reTZ.FindStringSubmatch(msg); m != nil {
			args["timezone"] = zones[strings.ToLower(m[1])]
		}
		return call("get_current_time", args)
	case reTrack.MatchString(msg):
		track, _ := strconv.Atoi(reTrack.FindStringSubmatch(msg)[1])
		return call("change_bgm", map[string]any{"track": track})
	case reMathAsk.MatchString(msg):
		return call("calculate", map[string]any{"expression": strings.TrimSpace(reMathAsk.FindStringSubmatch(msg)[1])})
	case reMath.MatchString(msg) && strings.ContainsAny(msg, "+-*/×÷"):
		return call("calculate", map[string]any{"expression": msg})
	}
	return text(greeting)
}

// recap answers "what did … do?" from the conversation: the textual
// records of tool calls a migrated history carries, and the calls made in
// this conversation.
func recap(history []*genai.Content) string {
	var facts []string
	for _, c := range history {
		for _, p := range c.Parts {
			if p.Text != "" {
				facts = append(facts, reRecord.FindAllString(p.Text, -1)...)
			}
			if p.FunctionCall != nil {
				args, _ := json.Marshal(p.FunctionCall.Args)
				facts = append(facts, fmt.Sprintf("%s(%s)", p.FunctionCall.Name, args))
			}
		}
	}
	if len(facts) == 0 {
		return "Nothing yet: no tool has been used in this conversation."
	}
	return "Here is what happened so far: " + strings.Join(facts, "; ") + "."
}

// describe words a tool's result.
func describe(r *genai.FunctionResponse) string {
	resp := r.Response
	if e, ok := resp["error"]; ok {
		switch {
		case r.Name == "book_table" && strings.Contains(fmt.Sprint(e), "rejected"):
			return "The booking was not approved, so I did not book the table."
		case r.Name == "book_table":
			return fmt.Sprintf("I did not book the table: %v.", e)
		case r.Name == "get_location":
			return fmt.Sprintf("I couldn't get your location: %v.", e)
		case r.Name == "prepare_playlist":
			return fmt.Sprintf("The playlist was not prepared: %v.", e)
		case r.Name == "ask_events":
			return fmt.Sprintf("The events agent could not answer: %v.", e)
		case r.Name == "ask_peer":
			return fmt.Sprintf("The other runner could not answer: %v.", e)
		}
		return fmt.Sprintf("%s failed: %v.", r.Name, e)
	}
	switch r.Name {
	case "change_bgm":
		return fmt.Sprintf("Done: now playing track %v.", num(resp["playing"]))
	case "get_location":
		return fmt.Sprintf("You are at latitude %v, longitude %v.", resp["latitude"], resp["longitude"])
	case "get_weather":
		return fmt.Sprintf("It's %v and %v°C in %v.", resp["conditions"], num(resp["temperature"]), resp["city"])
	case "calculate":
		return fmt.Sprintf("%v = %v.", resp["expression"], num(resp["result"]))
	case "get_current_time":
		return fmt.Sprintf("It is %v (%v), %v.", resp["time"], resp["timezone"], resp["date"])
	case "book_table":
		return fmt.Sprintf("Booked: a table for %v at %v under the name %v.", num(resp["people"]), resp["time"], resp["name"])
	case "prepare_playlist":
		var tracks []string
		if list, ok := resp["tracks"].([]any); ok {
			for _, t := range list {
				tracks = append(tracks, fmt.Sprint(t))
			}
		}
		return fmt.Sprintf("Your %v playlist is ready: %s.", resp["mood"], strings.Join(tracks, ", "))
	case "ask_events":
		return fmt.Sprintf("The events agent says: %v", resp["text"])
	case "ask_peer":
		return fmt.Sprintf("The other runner says: %v", resp["text"])
	case "show_surface":
		return describeSurface(resp)
	case "notes_add_note", "notes_list_notes":
		return describeNotes(r.Name, resp)
	case "notes_clear_notes":
		return fmt.Sprintf("Notes: %v. %s", resp["outcome"], describeNotes(r.Name, resp))
	}
	b, _ := json.Marshal(resp)
	return fmt.Sprintf("%s returned %s.", r.Name, b)
}

// num prints whole numbers without a decimal point.
func num(v any) any {
	if f, ok := v.(float64); ok && f == float64(int64(f)) {
		return int64(f)
	}
	return v
}

func text(s string) *genai.Content { return genai.NewContentFromText(s, genai.RoleModel) }

func call(name string, args map[string]any) *genai.Content {
	return &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{{FunctionCall: &genai.FunctionCall{Name: name, Args: args}}}}
}

// describeNotes words a notes tool's result, naming the MCP session that
// keeps them.
func describeNotes(name string, resp map[string]any) string {
	var notes []string
	if list, ok := resp["notes"].([]any); ok {
		for _, n := range list {
			notes = append(notes, fmt.Sprint(n))
		}
	}
	head := "Your notes"
	if name == "notes_add_note" {
		head = "Noted. Your notes"
	}
	if len(notes) == 0 {
		return fmt.Sprintf("No notes yet (MCP session %v).", resp["session"])
	}
	return fmt.Sprintf("%s (MCP session %v): %s.", head, resp["session"], strings.Join(notes, "; "))
}

// received describes the files a message hands the model ("" for none):
// Baton gives the model a file's bytes, whatever the session stores.
func received(c *genai.Content) string {
	var files []string
	for _, p := range c.Parts {
		if b := p.InlineData; b != nil {
			files = append(files, fmt.Sprintf("a file of %d bytes (%s)", len(b.Data), b.MIMEType))
		}
	}
	return strings.Join(files, " and ")
}

// formID is the surface id of the next reservation form in a conversation
// (history): "reservation" for the first, then "reservation-2" and so on.
// A surface is created once while it is shown, so each drawing of the form
// gets an id of its own, as a model reading A2UI's rules would give it.
func formID(history []*genai.Content) string {
	n := 0
	for _, c := range history {
		for _, p := range c.Parts {
			if p.FunctionCall != nil && p.FunctionCall.Name == "show_surface" {
				n++
			}
		}
	}
	if n == 0 {
		return "reservation"
	}
	return fmt.Sprintf("reservation-%d", n+1)
}

// reservationForm is the A2UI surface (id) the offline model shows for a
// table reservation: a date, a party size, a name and a Reserve button
// whose action carries the three. Each field is required, with A2UI's own
// checks: the renderer says what is missing and keeps Reserve disabled
// until all three are filled, and Baton refuses an answer that leaves one
// empty (a2ui.CheckAnswer).
func reservationForm(id string) []any {
	required := func(path, message string) []any {
		return []any{map[string]any{"condition": map[string]any{"call": "required", "args": map[string]any{"value": map[string]any{"path": path}}},
			"message": message}}
	}
	field := func(id, label, path, message string) map[string]any {
		return map[string]any{"id": id, "component": "TextField", "label": label, "value": map[string]any{"path": path},
			"checks": required(path, message)}
	}
	filled := func(paths ...string) map[string]any {
		values := make([]any, 0, len(paths))
		for _, p := range paths {
			values = append(values, map[string]any{"call": "required", "args": map[string]any{"value": map[string]any{"path": p}}})
		}
		return map[string]any{"call": "and", "args": map[string]any{"values": values}}
	}
	return []any{
		map[string]any{"version": "v0.9", "createSurface": map[string]any{"surfaceId": id,
			"catalogId": "https://a2ui.org/specification/v0_9/catalogs/basic/catalog.json"}},
		map[string]any{"version": "v0.9", "updateComponents": map[string]any{"surfaceId": id, "components": []any{
			map[string]any{"id": "root", "component": "Card", "child": "form"},
			map[string]any{"id": "form", "component": "Column", "children": []any{"title", "date", "people", "name", "reserve"}},
			map[string]any{"id": "title", "component": "Text", "text": "Reserve a table", "variant": "h3"},
			map[string]any{"id": "date", "component": "DateTimeInput", "label": "Date", "value": map[string]any{"path": "/reservation/date"},
				"enableDate": true, "checks": required("/reservation/date", "Pick a date")},
			field("people", "Party size", "/reservation/people", "Say how many people"),
			field("name", "Name", "/reservation/name", "Give a name for the booking"),
			map[string]any{"id": "reserve_label", "component": "Text", "text": "Reserve"},
			map[string]any{"id": "reserve", "component": "Button", "child": "reserve_label", "variant": "primary",
				"checks": []any{map[string]any{"condition": filled("/reservation/date", "/reservation/people", "/reservation/name"),
					"message": "Fill in the date, the party size and the name"}},
				"action": map[string]any{"event": map[string]any{"name": "reserve", "context": map[string]any{
					"date": map[string]any{"path": "/reservation/date"}, "people": map[string]any{"path": "/reservation/people"},
					"name": map[string]any{"path": "/reservation/name"}}}}},
		}}},
		map[string]any{"version": "v0.9", "updateDataModel": map[string]any{"surfaceId": id, "path": "/reservation",
			"value": map[string]any{"date": "", "people": "2", "name": "Guest"}}},
	}
}

// describeSurface words what the surface tool returned: the action a
// person took on the reservation form, or that a surface was shown.
func describeSurface(resp map[string]any) string {
	action, _ := resp["action"].(map[string]any)
	if action == nil {
		return "Here it is."
	}
	ctx, _ := action["context"].(map[string]any)
	date := fmt.Sprint(ctx["date"])
	if date == "" || date == "<nil>" {
		date = "the date you pick"
	}
	return fmt.Sprintf("Booked: a table for %v on %v under the name %v.", ctx["people"], date, ctx["name"])
}
