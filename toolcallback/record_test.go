package toolcallback_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/tool"

	"github.com/baton-run/baton/internal/teamtest"
	"github.com/baton-run/baton/modeltest"
	"github.com/baton-run/baton/sessionstore"
	"github.com/baton-run/baton/toolcallback"
)

// TestSwitchRecordsWhatRan: a booking for 4, approved with the payload
// edited to 6, moves to the next agent as a record of the booking for 6
// that ran, with its result; a rejected one as what was asked and the
// rejection.
func TestSwitchRecordsWhatRan(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		answer toolcallback.Answer
		want   string
	}{
		{"approved with an edited payload", toolcallback.Answer{Approved: ptr(true), Payload: map[string]any{"people": 6}},
			`[concierge called book_table(name=Ada, people=6): {"booked":true,"people":6}]`},
		{"approved as asked", toolcallback.Answer{Approved: ptr(true)},
			`[concierge called book_table(name=Ada, people=4): {"booked":true,"people":4}]`},
		{"rejected", toolcallback.Answer{Approved: ptr(false), Payload: map[string]any{"people": 6}},
			`[concierge called book_table(name=Ada, people=4): error: `},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newTeamFixture(t)
			conciergeModel := &modeltest.Strict{T: t, Script: []reply{
				callReply(call("b1", "book_table", map[string]any{"people": 4, "name": "Ada"})), echoReply,
			}}
			f.team = teamtest.NewTeam(t, f.sessions, nil,
				teamtest.Member(t, llmagent.Config{Name: "concierge", Model: conciergeModel, Tools: []tool.Tool{teamtest.NewTools(t).Book}}),
				teamtest.Member(t, llmagent.Config{Name: "dj", Model: f.dj}))
			f.dj.Script = []reply{textReply("Noted.")}

			if _, _, err := f.turn("chat", "", "book a table for 4"); err != nil {
				t.Fatal(err)
			}
			state, err := f.team.Pending(t.Context(), toolcallback.PendingRequest{UserID: "user-1", ChatID: "chat", ClientID: "tab-a"})
			if err != nil || len(state.Calls) != 1 {
				t.Fatalf("Pending() = %v, %v; want the approval", state, err)
			}
			calls := state.Calls
			res, _, err := resume(f.team, t.Context(), "chat", calls[0].ID, "tab-a", tc.answer)
			if err != nil || res.Invocation == nil {
				t.Fatalf("Resume() = %+v, %v", res, err)
			}
			if _, _, err := f.turn("chat", "dj", "what was booked?"); err != nil {
				t.Fatal(err)
			}
			seen := modeltest.DumpContents(f.dj.LastRequest().Contents)
			if !strings.Contains(seen, strings.ReplaceAll(tc.want, `"`, `\"`)) {
				t.Errorf("the DJ's request lacks the record %s:\n%s", tc.want, seen)
			}

			// The record's structured form says the same, for a reloaded page.
			chat, err := f.sessions.GetChat(t.Context(), "app", "user-1", "chat")
			if err != nil {
				t.Fatal(err)
			}
			var records []sessionstore.MovedCall
			for _, ev := range f.historyOf(chat.SessionID) {
				if _, r, ok := sessionstore.MovedBy(ev); ok {
					records = append(records, r...)
				}
			}
			if len(records) != 1 || records[0].Tool != "book_table" || records[0].Approved == nil || *records[0].Approved != (tc.answer.Approved != nil && *tc.answer.Approved) {
				t.Fatalf("records = %+v, want the booking with its decision", records)
			}
			if !strings.Contains(tc.want, "people="+jsonNumber(records[0].Args["people"])) {
				t.Errorf("record args = %v, want them as in %s", records[0].Args, tc.want)
			}
		})
	}
}

func (f *teamFixture) historyOf(sid string) []*session.Event {
	return storedEvents(f.t, f.sessions, sid)
}

func jsonNumber(v any) string {
	if n, ok := v.(float64); ok && n == float64(int(n)) {
		return strconv.Itoa(int(n))
	}
	return fmt.Sprint(v)
}
