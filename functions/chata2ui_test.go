package functions

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/functiontool"
	"google.golang.org/genai"

	"github.com/baton-run/baton/a2ui"
	"github.com/baton-run/baton/internal/webcore"
	"github.com/baton-run/baton/modeltest"
	"github.com/baton-run/baton/toolcallback"
)

// surfaceFixture is an httpFixture whose agent draws with show_surface.
func surfaceFixture(t *testing.T, script ...modeltest.Reply) *httpFixture {
	t.Helper()
	return newHTTPFixtureWith(t, func(f *httpFixture, _ *ServerOptions) { surfaceMembers(t, f) }, nil, script...)
}

// surfaceMembers makes f's agents draw: "assistant" with show_surface and
// menu (a card drawn from Go), "other" with show_surface.
func surfaceMembers(t *testing.T, f *httpFixture) {
	t.Helper()
	{
		surface := f.world.Tools.Surface
		catalog, err := a2ui.BasicCatalog()
		if err != nil {
			t.Fatal(err)
		}
		// menu shows a card from Go.
		menu, err := functiontool.New(functiontool.Config{Name: "menu", Description: "shows the menu"},
			func(ctx agent.Context, _ struct{}) (map[string]any, error) {
				var msgs []a2ui.Message
				if err := json.Unmarshal([]byte(cardJSON), &msgs); err != nil {
					return nil, err
				}
				return map[string]any{"shown": true}, toolcallback.ShowSurface(ctx, catalog, msgs...)
			})
		if err != nil {
			t.Fatal(err)
		}
		f.members = []toolcallback.Member{
			f.world.Member(llmagent.Config{Name: "assistant", Model: f.model, Tools: []tool.Tool{surface, menu}}),
			f.world.Member(llmagent.Config{Name: "other", Model: f.model, Tools: []tool.Tool{surface}}),
		}
	}
}

const catalogID = `"catalogId":"https://a2ui.org/specification/v0_9/catalogs/basic/catalog.json"`

// The messages tests draw with: a card (surface "card") whose button
// offers the event "more" with a fixed topic and a typed note, and a form
// (surface "booking") whose Book button sends a date and a name.
const (
	// cardDraw creates the card and draws its components.
	cardDraw = `{"version":"v0.9","createSurface":{"surfaceId":"card",` + catalogID + `}},
	{"version":"v0.9","updateComponents":{"surfaceId":"card","components":[
		{"id":"root","component":"Column","children":["title","more"]},
		{"id":"title","component":"Text","text":{"path":"/title"}},
		{"id":"more_text","component":"Text","text":"More"},
		{"id":"more","component":"Button","child":"more_text","action":{"event":{"name":"more","context":{"topic":"menu","note":{"path":"/note"}}}}}]}}`
	cardJSON       = `[` + cardDraw + `,{"version":"v0.9","updateDataModel":{"surfaceId":"card","path":"/title","value":"Specials"}}]`
	cardUpdateJSON = `[{"version":"v0.9","updateDataModel":{"surfaceId":"card","path":"/title","value":"Specials of the day"}}]`
	cardDeleteJSON = `[{"version":"v0.9","deleteSurface":{"surfaceId":"card"}}]`
	formJSON       = `[{"version":"v0.9","createSurface":{"surfaceId":"booking",` + catalogID + `}},
	{"version":"v0.9","updateComponents":{"surfaceId":"booking","components":[
		{"id":"root","component":"Column","children":["date","name","book"]},
		{"id":"date","component":"DateTimeInput","label":"Date","value":{"path":"/b/date"},"enableDate":true},
		{"id":"name","component":"TextField","label":"Name","value":{"path":"/b/name"}},
		{"id":"book_text","component":"Text","text":"Book"},
		{"id":"book","component":"Button","child":"book_text","action":{"event":{"name":"book","context":{"date":{"path":"/b/date"},"name":{"path":"/b/name"}}}}}]}},
	{"version":"v0.9","updateDataModel":{"surfaceId":"booking","path":"/b","value":{"date":"","name":"Guest"}}}]`
)

func decodeJSONValue(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("json.Unmarshal(%s) error = %v", s, err)
	}
	return v
}

// showReply is the model calling show_surface (call id) with messages.
func showReply(t *testing.T, id, messages string, wait bool) modeltest.Reply {
	return modeltest.CallReply(modeltest.Call(id, "show_surface", map[string]any{"messages": decodeJSONValue(t, messages), "wait": wait}))
}

// surfaceParts returns the data-a2ui chunks or parts among parts, by
// surface id: {"messages", "callId"?} as decoded JSON.
func surfaceParts(parts []map[string]any) map[string]any {
	out := map[string]any{}
	for _, p := range parts {
		if p["type"] == "data-a2ui" {
			d, _ := p["data"].(map[string]any)
			out[p["id"].(string)] = d
		}
	}
	return out
}

// surfaceData is the data of a data-a2ui part drawing surface id with
// messages (JSON), waited on by callID ("" for none).
func surfaceData(t *testing.T, id, messages, callID string) map[string]any {
	d := map[string]any{"surfaceId": id, "messages": decodeJSONValue(t, messages)}
	if callID != "" {
		d["callId"] = callID
	}
	return d
}

// cardAs is the card's full redraw with its title.
func cardAs(title string) string {
	return `[` + cardDraw + `,{"version":"v0.9","updateDataModel":{"surfaceId":"card","path":"/","value":{"title":"` + title + `"}}}]`
}

// TestChatSurfaceStored: a surface shown, updated in a later turn and
// deleted in a third. Each turn's stream carries it as it then is, in
// full; the history shows it once, in the message that showed it first,
// as it last was; a replay of the last turn shows the latest too. A call
// whose messages are refused reaches the model as an error and the client
// as no surface.
func TestChatSurfaceStored(t *testing.T) {
	t.Parallel()
	var refusal string
	f := surfaceFixture(t,
		showReply(t, "s1", cardJSON, false), modeltest.TextReply("here"),
		showReply(t, "s2", cardUpdateJSON, false), modeltest.TextReply("updated"),
		showReply(t, "bad", `[{"version":"v0.9","updateComponents":{"surfaceId":"nowhere","components":[{"id":"root","component":"Divider"}]}}]`, false),
		func(req *model.LLMRequest) *genai.Content {
			last := req.Contents[len(req.Contents)-1]
			if fr := last.Parts[0].FunctionResponse; fr != nil {
				refusal, _ = fr.Response["error"].(string)
			}
			return genai.NewContentFromText("sorry", genai.RoleModel)
		},
		showReply(t, "s3", cardDeleteJSON, false), modeltest.TextReply("gone"),
	)
	var page []map[string]any
	turn := func(id, text string) (string, map[string]any) {
		page = append(page, userMessage(id, text))
		chunks := f.stream(f.chat("ada", chatBody("chat1", "tab-a", page...)))
		return chunksOfType(chunks, "start")[0]["messageId"].(string), surfaceParts(chunks)
	}
	deleted := `[{"version":"v0.9","deleteSurface":{"surfaceId":"card"}}]`
	first, got := turn("u1", "show the card")
	if diff := cmp.Diff(map[string]any{"card": surfaceData(t, "card", cardAs("Specials"), "")}, got); diff != "" {
		t.Errorf("turn 1's data-a2ui (-want +got):\n%s", diff)
	}
	history := func(want string) {
		t.Helper()
		var where []string
		for _, m := range f.messages("ada", "chat1").Messages {
			for id, d := range surfaceParts(m.Parts) {
				where = append(where, m.ID+":"+id)
				if diff := cmp.Diff(surfaceData(t, "card", want, ""), d); diff != "" {
					t.Errorf("history's data-a2ui (-want +got):\n%s", diff)
				}
			}
		}
		if diff := cmp.Diff([]string{first + ":card"}, where); diff != "" {
			t.Errorf("history's surfaces, by message (-want +got):\n%s", diff)
		}
	}
	history(cardAs("Specials"))
	if _, got = turn("u2", "update it"); !cmp.Equal(got, map[string]any{"card": surfaceData(t, "card", cardAs("Specials of the day"), "")}) {
		t.Errorf("turn 2's data-a2ui = %v, want the whole card as updated", got)
	}
	history(cardAs("Specials of the day"))

	if _, got = turn("u3", "draw nonsense"); len(got) != 0 {
		t.Errorf("a refused call's turn sent data-a2ui parts %v, want none", got)
	}
	if !strings.Contains(refusal, `surface "nowhere" is not shown`) {
		t.Errorf("the model read %q, want the refusal naming the surface", refusal)
	}
	history(cardAs("Specials of the day"))

	if _, got = turn("u4", "delete it"); !cmp.Equal(got, map[string]any{"card": surfaceData(t, "card", deleted, "")}) {
		t.Errorf("turn 4's data-a2ui = %v, want the deleteSurface", got)
	}
	history(deleted)
	// The same message sent again replays its turn, surfaces included.
	replay := surfaceParts(f.stream(f.chat("ada", chatBody("chat1", "tab-a", page...))))
	if diff := cmp.Diff(map[string]any{"card": surfaceData(t, "card", deleted, "")}, replay); diff != "" {
		t.Errorf("replay's data-a2ui (-want +got):\n%s", diff)
	}
}

// actionMessage is a user message sending an action on a surface, as the
// page sends it for a card.
func actionMessage(id, action string) map[string]any {
	var a any
	_ = json.Unmarshal([]byte(action), &a)
	return map[string]any{"id": id, "role": "user", "parts": []any{
		map[string]any{"type": "data-a2ui-action", "data": map[string]any{"version": "v0.9", "action": a}}}}
}

const moreAction = `{"name":"more","surfaceId":"card","sourceComponentId":"more","timestamp":"2026-12-01T10:11:12Z","context":{"topic":"menu","note":"vegan"}}`

// TestChatCardAction: an action on a card is a user message the model
// reads as text, shown again by the history as the action; an action the
// card did not offer is 400, one on a deleted card or a form 409, and
// nothing of them is stored or run.
func TestChatCardAction(t *testing.T) {
	t.Parallel()
	var read string
	f := surfaceFixture(t,
		showReply(t, "s1", cardJSON, false), modeltest.TextReply("here"),
		func(req *model.LLMRequest) *genai.Content {
			read = req.Contents[len(req.Contents)-1].Parts[0].Text
			return genai.NewContentFromText("vegan menu", genai.RoleModel)
		},
		showReply(t, "f1", formJSON, true),
	)
	f.stream(f.chat("ada", chatBody("chat1", "tab-a", userMessage("u1", "show the card"))))
	refused := []struct {
		name, action string
		status       int
		code         string
	}{
		{"a field not offered", `{"name":"more","surfaceId":"card","sourceComponentId":"more","timestamp":"2026-12-01T10:11:12Z","context":{"price":1}}`,
			http.StatusBadRequest, "action_not_offered"},
		{"a fixed value changed", strings.Replace(moreAction, `"menu"`, `"wine"`, 1), http.StatusBadRequest, "action_not_offered"},
		{"no such surface", strings.Replace(moreAction, `"surfaceId":"card"`, `"surfaceId":"other"`, 1), http.StatusConflict, "surface_gone"},
		{"not an action", `{"name":"more"}`, http.StatusBadRequest, "invalid_request"},
	}
	calls := f.model.Calls()
	for _, tt := range refused {
		before := f.counter.Snapshot()
		resp := f.chat("ada", chatBody("chat1", "tab-a", actionMessage("a-"+tt.name, tt.action)))
		if e := errorOf(t, resp); resp.StatusCode != tt.status || e.Code != tt.code {
			t.Errorf("%s: status %d %+v, want %d %s", tt.name, resp.StatusCode, e, tt.status, tt.code)
		}
		if w := f.counter.Snapshot().Sub(before).Writes; w != 0 {
			t.Errorf("%s: wrote %d documents, want none", tt.name, w)
		}
	}
	if n := f.model.Calls(); n != calls {
		t.Errorf("refused actions called the model %d times", n-calls)
	}

	if got := text(f.stream(f.chat("ada", chatBody("chat1", "tab-a", actionMessage("a1", moreAction))))); got != "vegan menu" {
		t.Errorf("the action's turn answered %q", got)
	}
	if !strings.HasPrefix(read, "A2UI action from the user: ") || !strings.Contains(read, `"note":"vegan"`) {
		t.Errorf("the model read %q, want the action and its context", read)
	}
	msgs := f.messages("ada", "chat1").Messages
	var sent any
	for _, m := range msgs {
		if m.ID == "a1" {
			sent = m.Parts
		}
	}
	want := []map[string]any{{"type": "data-a2ui-action", "data": map[string]any{"version": "v0.9", "action": decodeJSONValue(t, moreAction)}}}
	if diff := cmp.Diff(decodeJSONValue(t, mustJSON(t, want)), decodeJSONValue(t, mustJSON(t, sent))); diff != "" {
		t.Errorf("history's action message parts (-want +got):\n%s", diff)
	}

	// A form's action answers its call: as a new message it is refused.
	f.stream(f.chat("ada", chatBody("chat1", "tab-a", userMessage("u2", "a form"))))
	resp := f.chat("ada", chatBody("chat1", "tab-a", actionMessage("a2", bookAction("Ada"))))
	if e := errorOf(t, resp); resp.StatusCode != http.StatusConflict || e.Code != "surface_waits" {
		t.Errorf("a form's action as a message: status %d %+v, want 409 surface_waits", resp.StatusCode, e)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

func bookAction(name string) string {
	return `{"name":"book","surfaceId":"booking","sourceComponentId":"book","timestamp":"2026-12-01T10:11:12Z","context":{"date":"2026-12-24","name":"` + name + `"}}`
}

// formAnswer is the assistant message of a turn paused on form call id,
// as useChat holds it after addToolOutput({output: {action}}).
func formAnswer(t *testing.T, messageID, callID, action string) map[string]any {
	return map[string]any{"id": messageID, "role": "assistant", "parts": []any{
		map[string]any{"type": "step-start"},
		map[string]any{"type": "tool-show_surface", "toolCallId": callID, "state": "output-available",
			"input": map[string]any{}, "output": map[string]any{"action": decodeJSONValue(t, action)}},
	}}
}

// formChat starts chat1 paused on form call f1 of tab-a and returns the
// fixture, the page's messages and the turn's message id.
func formChat(t *testing.T, script ...modeltest.Reply) (*httpFixture, []map[string]any, string) {
	t.Helper()
	f := surfaceFixture(t, append([]modeltest.Reply{showReply(t, "f1", formJSON, true)}, script...)...)
	page := []map[string]any{userMessage("u1", "a form")}
	chunks := f.stream(f.chat("ada", chatBody("chat1", "tab-a", page...)))
	inputs := chunksOfType(chunks, "tool-input-available")
	if len(inputs) != 1 || inputs[0]["toolCallId"] != "f1" || inputs[0]["providerExecuted"] != nil {
		t.Fatalf("tool-input-available = %v, want form call f1, for the page", inputs)
	}
	if d, _ := surfaceParts(chunks)["booking"].(map[string]any); d["callId"] != "f1" {
		t.Fatalf("data-a2ui = %v, want the form waited on by f1", surfaceParts(chunks))
	}
	return f, page, chunksOfType(chunks, "start")[0]["messageId"].(string)
}

// TestChatFormAnsweredOnce: 20 copies of a form's action, sent at once to
// two instances, resume the agent once; the others get the turn as
// recorded. A reload shows the form with its call open, then answered
// with the values it was sent with; an action with a field the form did
// not offer is 400 and runs nothing.
func TestChatFormAnsweredOnce(t *testing.T) {
	t.Parallel()
	f, page, turn := formChat(t, modeltest.EchoReply)
	form := func() (map[string]any, map[string]any) {
		t.Helper()
		var surface, call map[string]any
		for _, m := range f.messages("ada", "chat1").Messages {
			for _, p := range m.Parts {
				switch {
				case p["type"] == "data-a2ui":
					surface = p
				case p["type"] == "tool-show_surface":
					call = p
				}
			}
		}
		return surface, call
	}
	surface, call := form()
	if d := surface["data"].(map[string]any); d["callId"] != "f1" || call["state"] != "input-available" || call["providerExecuted"] != false {
		t.Errorf("history of the open form: surface %v, call %v; want callId f1 and a call the page answers", d, call)
	}
	bad := strings.Replace(bookAction("Ada"), `"name":"Ada"`, `"name":"Ada","price":0`, 1)
	resp := f.chat("ada", chatBody("chat1", "tab-a", append(page, formAnswer(t, turn, "f1", bad))...))
	if e := errorOf(t, resp); resp.StatusCode != http.StatusBadRequest || e.Code != "action_not_offered" {
		t.Errorf("an action with a field not offered: status %d %+v, want 400 action_not_offered", resp.StatusCode, e)
	}

	calls := f.model.Calls()
	other := f.secondInstance()
	body := chatBody("chat1", "tab-a", append(page, formAnswer(t, turn, "f1", bookAction("Ada")))...)
	var wg sync.WaitGroup
	var mu sync.Mutex
	statuses := map[string]int{}
	for i := range 20 {
		wg.Go(func() {
			via := f
			if i%2 == 1 {
				via = other
			}
			resp := via.do(http.MethodPost, NameChat, f.token("ada"), body, nil)
			key := "200"
			if resp.StatusCode != http.StatusOK {
				key = errorOf(t, resp).Code
			} else {
				resp.Body.Close()
			}
			mu.Lock()
			statuses[key]++
			mu.Unlock()
		})
	}
	wg.Wait()
	if n := f.model.Calls() - calls; n != 1 {
		t.Errorf("20 copies of the action called the model %d times, want 1 (statuses %v)", n, statuses)
	}
	for key := range statuses {
		if key != "200" && key != "busy" {
			t.Errorf("statuses %v: want each copy answered with the turn or busy", statuses)
		}
	}
	if got := text(f.stream(f.chat("ada", body))); !strings.Contains(got, `"name":"Ada"`) {
		t.Errorf("the turn after the action reads %q, want the model's answer with the action", got)
	}
	surface, call = form()
	d := surface["data"].(map[string]any)
	redraw := mustJSON(t, d["messages"])
	if d["callId"] != "f1" || call["state"] != "output-available" || !strings.Contains(redraw, `"value":{"b":{"date":"2026-12-24","name":"Ada"}}`) {
		t.Errorf("history of the answered form: %v, call %v; want callId f1, the answer, the values sent", d, call)
	}
	resp = f.chat("ada", chatBody("chat1", "tab-a", append(page, formAnswer(t, turn, "f1", bookAction("Bob")))...))
	if e := errorOf(t, resp); resp.StatusCode != http.StatusConflict || e.Code != "already_resolved" {
		t.Errorf("another action on the answered form: status %d %+v, want 409 already_resolved", resp.StatusCode, e)
	}
}

// TestChatFormRewound: an edit takes the form's turn back; the form's
// action then gets 410 and runs nothing, and as a card's action 409.
func TestChatFormRewound(t *testing.T) {
	t.Parallel()
	f, page, turn := formChat(t, modeltest.TextReply("edited answer"))
	f.stream(f.chat("ada", editBody("u1")))
	calls := f.model.Calls()
	before := f.counter.Snapshot()
	resp := f.chat("ada", chatBody("chat1", "tab-a", append(page, formAnswer(t, turn, "f1", bookAction("Ada")))...))
	if e := errorOf(t, resp); resp.StatusCode != http.StatusGone || e.Code != "expired" {
		t.Errorf("the rewound form's action: status %d %+v, want 410 expired", resp.StatusCode, e)
	}
	resp = f.chat("ada", chatBody("chat1", "tab-a", actionMessage("a1", bookAction("Ada"))))
	if e := errorOf(t, resp); resp.StatusCode != http.StatusConflict || e.Code != "surface_gone" {
		t.Errorf("the rewound form's action as a message: status %d %+v, want 409 surface_gone", resp.StatusCode, e)
	}
	if n, w := f.model.Calls()-calls, f.counter.Snapshot().Sub(before).Writes; n != 0 || w != 0 {
		t.Errorf("actions on a rewound form called the model %d times and wrote %d documents, want none", n, w)
	}
	for _, m := range f.messages("ada", "chat1").Messages {
		if len(surfaceParts(m.Parts)) != 0 {
			t.Errorf("history after the rewind shows %v", surfaceParts(m.Parts))
		}
	}
}

// TestChatShowSurfaceFromGo: a Go tool's surface (toolcallback.ShowSurface)
// reaches the stream and the history as the model's do.
func TestChatShowSurfaceFromGo(t *testing.T) {
	t.Parallel()
	f := surfaceFixture(t, modeltest.CallReply(modeltest.Call("m1", "menu", map[string]any{})), modeltest.TextReply("the menu"))
	chunks := f.stream(f.chat("ada", chatBody("chat1", "tab-a", userMessage("u1", "the menu"))))
	want := map[string]any{"card": surfaceData(t, "card", cardAs("Specials"), "")}
	if diff := cmp.Diff(want, surfaceParts(chunks)); diff != "" {
		t.Errorf("stream's data-a2ui (-want +got):\n%s", diff)
	}
	got := map[string]any{}
	for _, m := range f.messages("ada", "chat1").Messages {
		maps.Copy(got, surfaceParts(m.Parts))
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("history's data-a2ui (-want +got):\n%s", diff)
	}
}

// dataParts returns the data-a2ui chunks or parts among parts, in order.
func dataParts(parts []map[string]any) []map[string]any {
	var out []map[string]any
	for _, p := range parts {
		if p["type"] == "data-a2ui" {
			out = append(out, p)
		}
	}
	return out
}

// TestWebCoreReadsChat: @a2ui/web_core (local/e2e/a2ui.mjs) reads the
// data-a2ui parts of real turns' streams, and those of the history, as the
// page draws them: both give the same surfaces. The action it sends for a
// press on the form answers the form's call; the one for a press on the
// card, sent as a message, is taken.
func TestWebCoreReadsChat(t *testing.T) {
	t.Parallel()
	f := surfaceFixture(t,
		showReply(t, "s1", cardJSON, false), modeltest.TextReply("here"),
		showReply(t, "s2", cardUpdateJSON, false), modeltest.TextReply("updated"),
		showReply(t, "f1", formJSON, true), modeltest.EchoReply,
		modeltest.TextReply("more about the menu"),
	)
	var page, streamed []map[string]any
	var turn string
	for _, u := range []map[string]any{userMessage("u1", "a card"), userMessage("u2", "update it"), userMessage("u3", "a form")} {
		page = append(page, u)
		chunks := f.stream(f.chat("ada", chatBody("chat1", "tab-a", page...)))
		streamed = append(streamed, dataParts(chunks)...)
		turn = chunksOfType(chunks, "start")[0]["messageId"].(string)
	}
	var history []map[string]any
	for _, m := range f.messages("ada", "chat1").Messages {
		history = append(history, dataParts(m.Parts)...)
	}
	book := &webcore.Press{SurfaceID: "booking", ComponentID: "book", Set: map[string]any{"/b/date": "2026-12-24", "/b/name": "Ada"}}
	results := webcore.Run(t, []webcore.Case{
		{Name: "stream", Parts: streamed},
		{Name: "history", Parts: history},
		{Name: "form", Parts: streamed, Press: book},
		{Name: "card", Parts: history, Press: &webcore.Press{SurfaceID: "card", ComponentID: "more", Set: map[string]any{"/note": "vegan"}}},
	})
	for _, name := range []string{"stream", "history", "form", "card"} {
		if r := results[name]; !r.OK {
			t.Fatalf("%s: @a2ui/web_core error: %s", name, r.Error)
		}
	}
	if diff := cmp.Diff(results["stream"].Surfaces, results["history"].Surfaces); diff != "" {
		t.Errorf("the history's surfaces differ from the streams' (-stream +history):\n%s", diff)
	}
	if got := results["stream"].Surfaces["card"].Data; !cmp.Equal(got, map[string]any{"title": "Specials of the day"}) {
		t.Errorf("card data = %v, want the update", got)
	}

	var form struct{ Action map[string]any }
	if err := json.Unmarshal(results["form"].Action, &form); err != nil {
		t.Fatal(err)
	}
	answer := formAnswer(t, turn, "f1", mustJSON(t, form.Action))
	if got := text(f.stream(f.chat("ada", chatBody("chat1", "tab-a", append(page, answer)...)))); !strings.Contains(got, `"name":"Ada"`) {
		t.Errorf("the form's answer reached the model as %q, want the renderer's action", got)
	}
	var card struct{ Action json.RawMessage }
	if err := json.Unmarshal(results["card"].Action, &card); err != nil {
		t.Fatal(err)
	}
	if got := text(f.stream(f.chat("ada", chatBody("chat1", "tab-a", actionMessage("a1", string(card.Action)))))); got != "more about the menu" {
		t.Errorf("the card's action turn answered %q", got)
	}
}

// TestChatSurfaceAfterSwitch: a surface shown before an agent switch is
// in the history after it, as it last was, and the new agent's calls are
// checked against it (an update of it is taken).
func TestChatSurfaceAfterSwitch(t *testing.T) {
	t.Parallel()
	f := surfaceFixture(t,
		showReply(t, "s1", cardJSON, false), modeltest.TextReply("here"),
		showReply(t, "s2", cardUpdateJSON, false), modeltest.TextReply("updated"))
	page := []map[string]any{userMessage("u1", "a card")}
	f.stream(f.chat("ada", chatBody("chat1", "tab-a", page...)))
	page = append(page, userMessage("u2", "update it"))
	body := chatBody("chat1", "tab-a", page...)
	body["agent"] = "other"
	if got := surfaceParts(f.stream(f.chat("ada", body))); !cmp.Equal(got, map[string]any{"card": surfaceData(t, "card", cardAs("Specials of the day"), "")}) {
		t.Errorf("the new agent's update sent %v, want the card updated", got)
	}
	view := f.messages("ada", "chat1")
	got := map[string]any{}
	for _, m := range view.Messages {
		maps.Copy(got, surfaceParts(m.Parts))
	}
	if view.Agent != "other" || !cmp.Equal(got, map[string]any{"card": surfaceData(t, "card", cardAs("Specials of the day"), "")}) {
		t.Errorf("history after the switch (agent %q): surfaces %v, want the card as updated", view.Agent, got)
	}
}

// TestChatCardActionAsSent: an action on a card is kept as the client sent
// it (issue 47, items 13 and 14): a timestamp RFC 3339 allows and Go's
// time parser does not (a lower-case t or z, a leap second) starts the
// turn, and the model reads, and GET /Chat gives back, the client message
// with its version, the digits of its timestamp and the order of its
// context as sent.
func TestChatCardActionAsSent(t *testing.T) {
	t.Parallel()
	sent := []string{
		`{"version":"v0.9.1","action":{"name":"more","surfaceId":"card","sourceComponentId":"more","timestamp":"2026-12-01t10:11:12.340z","context":{"topic":"menu","note":"vegan"}}}`,
		`{"version":"v0.9","action":{"name":"more","surfaceId":"card","sourceComponentId":"more","timestamp":"2026-12-31T23:59:60.000Z","context":{"note":"x","topic":"menu"}}}`,
	}
	var read []string
	reply := func(req *model.LLMRequest) *genai.Content {
		read = append(read, req.Contents[len(req.Contents)-1].Parts[0].Text)
		return genai.NewContentFromText("noted", genai.RoleModel)
	}
	f := surfaceFixture(t, showReply(t, "s1", cardJSON, false), modeltest.TextReply("here"), reply, reply)
	f.stream(f.chat("ada", chatBody("chat1", "tab-a", userMessage("u1", "show the card"))))
	for i, raw := range sent {
		id := fmt.Sprintf("a%d", i)
		msg := map[string]any{"id": id, "role": "user", "parts": []any{map[string]any{"type": "data-a2ui-action", "data": json.RawMessage(raw)}}}
		if got := text(f.stream(f.chat("ada", chatBody("chat1", "tab-a", msg)))); got != "noted" {
			t.Fatalf("action %d: the turn answered %q", i, got)
		}
		if want := "A2UI action from the user: " + raw; read[i] != want {
			t.Errorf("action %d: the model read %q, want %q", i, read[i], want)
		}
		if got := sentAction(t, f, "chat1", id); got != raw {
			t.Errorf("action %d: GET /Chat gives back %s, want %s", i, got, raw)
		}
	}
}

// sentAction is the data of the data-a2ui-action part of message id, as
// GET /Chat/{chatId} writes it.
func sentAction(t *testing.T, f *httpFixture, chatID, id string) string {
	t.Helper()
	resp := f.do(http.MethodGet, NameChat+"/"+chatID, f.token("ada"), nil, nil)
	defer resp.Body.Close()
	var page struct {
		Messages []struct {
			ID    string `json:"id"`
			Parts []struct {
				Type string          `json:"type"`
				Data json.RawMessage `json:"data"`
			} `json:"parts"`
		} `json:"messages"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&page); err != nil {
		t.Fatal(err)
	}
	for _, m := range page.Messages {
		for _, p := range m.Parts {
			if m.ID == id && p.Type == "data-a2ui-action" {
				return string(p.Data)
			}
		}
	}
	t.Fatalf("GET /Chat/%s has no action part in message %s", chatID, id)
	return ""
}
