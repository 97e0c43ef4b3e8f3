package functions

import (
	"fmt"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/session"
	"google.golang.org/genai"

	"github.com/baton-run/baton/sessionstore"
	"github.com/baton-run/baton/transcript"
)

// longChat stores a chat of user "ada" whose session holds turns turns,
// every fifth with a tool call (three events in its answer, not one), and
// returns the ids of its messages as GET /Chat/{chatId} names them.
func longChat(t *testing.T, f *httpFixture, chatID string, turns int) []string {
	t.Helper()
	uid := f.user("ada").UID
	at := time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC)
	var events []*session.Event
	add := func(inv, author string, parts ...*genai.Part) *session.Event {
		at = at.Add(time.Second)
		role := genai.RoleModel
		if author == "user" {
			role = genai.RoleUser
		}
		ev := &session.Event{ID: fmt.Sprintf("ev-%d", len(events)), InvocationID: inv, Author: author, Timestamp: at,
			LLMResponse: model.LLMResponse{Content: &genai.Content{Role: role, Parts: parts}}}
		events = append(events, ev)
		return ev
	}
	var ids []string
	for i := range turns {
		inv := fmt.Sprintf("inv-%d", i)
		add(inv, "user", genai.NewPartFromText(fmt.Sprintf("question %d", i))).Actions.StateDelta = map[string]any{transcript.MessageIDKey: fmt.Sprintf("u-%d", i)}
		if i%5 == 0 {
			add(inv, "assistant", &genai.Part{FunctionCall: &genai.FunctionCall{ID: "w" + strconv.Itoa(i), Name: "get_weather", Args: map[string]any{"city": "Oslo"}}})
			add(inv, "assistant", &genai.Part{FunctionResponse: &genai.FunctionResponse{ID: "w" + strconv.Itoa(i), Name: "get_weather", Response: map[string]any{"forecast": "sun"}}})
		}
		add(inv, "assistant", genai.NewPartFromText(fmt.Sprintf("answer %d", i)))
		ids = append(ids, fmt.Sprintf("u-%d", i), inv)
	}
	sessions := sessionstore.New(f.client, &sessionstore.Options{Root: f.cfg.Root})
	sid := chatID + "~0"
	if _, err := sessions.CreateWithEvents(t.Context(), &session.CreateRequest{AppName: f.cfg.AppName, UserID: uid, SessionID: sid}, events); err != nil {
		t.Fatal(err)
	}
	chat := &sessionstore.Chat{App: f.cfg.AppName, UserID: uid, ID: chatID, Agent: "assistant", SessionID: sid, Created: at, LastActivity: at}
	if err := sessions.CreateChat(t.Context(), chat); err != nil {
		t.Fatal(err)
	}
	return ids
}

// TestChatPagesToFirstMessage: GET /Chat/{chatId} pages a chat longer than
// the recent events a read holds (280 turns, 672 events) back to its first
// message: every message once, in order, under the id every other page and
// read gives it, each page at most limit messages, and the first page of
// the latest ones says there are earlier ones.
// defaultPage is how many messages a page holds when limit is not set.
const defaultPage = 50

func TestChatPagesToFirstMessage(t *testing.T) {
	t.Parallel()
	f := newHTTPFixture(t, nil)
	want := longChat(t, f, "long", 280)

	for _, limit := range []int{50, 37} {
		pages := f.pages("ada", "long", limit)
		var got []string
		for i, page := range pages {
			if len(page) > limit || (len(page) < limit && i > 0) {
				t.Errorf("limit=%d: page %d holds %d messages", limit, i, len(page))
			}
			for _, m := range page {
				got = append(got, m.ID)
			}
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("limit=%d: the chat read page by page (-want +got):\n%s", limit, diff)
		}
	}
	latest := f.chatPage("ada", "long", "")
	if !latest.Earlier || len(latest.Messages) != defaultPage || latest.Messages[defaultPage-1].ID != want[len(want)-1] {
		t.Errorf("GET /Chat/long: %d messages, earlier %v; want the latest %d and earlier true", len(latest.Messages), latest.Earlier, defaultPage)
	}
	if got := latest.Messages[len(latest.Messages)-1].Parts; len(got) != 1 || got[0]["text"] != "answer 279" {
		t.Errorf("the last message's parts = %v, want its answer", got)
	}
}

// TestChatPageQuery: a page query that cannot be answered is refused, and
// nothing is read past it.
func TestChatPageQuery(t *testing.T) {
	t.Parallel()
	f := newHTTPFixture(t, nil)
	longChat(t, f, "short", 3)
	for _, tc := range []struct {
		name, query string
		status      int
	}{
		{"events window of the old API", "?history=10", http.StatusBadRequest},
		{"no messages", "?limit=0", http.StatusBadRequest},
		{"over the bound", "?limit=" + strconv.Itoa(maxHistory+1), http.StatusBadRequest},
		{"not a number", "?limit=ten", http.StatusBadRequest},
		{"empty limit", "?limit=", http.StatusBadRequest},
		{"empty cursor", "?before=", http.StatusBadRequest},
		{"unknown message", "?before=u-99", http.StatusNotFound},
		{"the first message", "?before=u-0", http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := f.do(http.MethodGet, NameChat+"/short"+tc.query, f.token("ada"), nil, nil)
			if resp.StatusCode != tc.status {
				t.Fatalf("GET /Chat/short%s: status %d, want %d", tc.query, resp.StatusCode, tc.status)
			}
			if tc.status != http.StatusOK {
				errorOf(t, resp)
				return
			}
			resp.Body.Close()
		})
	}
	if p := f.chatPage("ada", "short", "?before=inv-0"); len(p.Messages) != 1 || p.Messages[0].ID != "u-0" || p.Earlier {
		t.Errorf("the page before the first answer = %+v, want its question alone and no earlier one", p)
	}
}
