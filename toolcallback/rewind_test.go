package toolcallback_test

import (
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/session"
	"google.golang.org/genai"

	"github.com/baton-run/baton/feedback"
	"github.com/baton-run/baton/internal/eventlist"
	"github.com/baton-run/baton/modeltest"
	"github.com/baton-run/baton/sessionstore"
	"github.com/baton-run/baton/toolcallback"
	"github.com/baton-run/baton/transcript"
)

// idTurn is user-1's message text, with the client's id id, to chat.
func (f *fixture) idTurn(chat, id, text string) []*session.Event {
	f.t.Helper()
	req := textTurn(chat, "tab-a", text)
	req.MessageID = id
	events, _, err := runTurn(f.t.Context(), f.team, req)
	if err != nil {
		f.t.Fatalf("Turn(%q) error = %v", text, err)
	}
	return events
}

func (f *fixture) rewind(req toolcallback.RewindRequest) ([]*session.Event, error) {
	f.t.Helper()
	req.UserID, req.ChatID = "user-1", "s1"
	if req.ClientID == "" {
		req.ClientID = "tab-a"
	}
	return runRewind(f.t.Context(), f.team, req)
}

// requestText is everything a model request holds, as text.
func requestText(req *model.LLMRequest) string { return dumpContents(req.Contents) }

// userTexts are the texts of the user messages a chat shows.
func (f *fixture) userTexts(chat string) []string {
	var out []string
	for _, ev := range f.history(chat) {
		if transcript.StartsTurn(ev) {
			out = append(out, ev.Content.Parts[0].Text)
		}
	}
	return out
}

// TestRegenerateStepWithBrowserCallAndApproval regenerates a turn whose
// model step paused on a browser call and an approval: the strict model
// accepts the request (no call without its response), which holds none
// of the taken-back part; the calls' records are cancelled, and a late
// answer is refused as for a cancelled call.
func TestRegenerateStepWithBrowserCallAndApproval(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil,
		textReply("hello there"),
		callReply(call("c1", "change_bgm", map[string]any{"track": 3}), call("b1", "book_table", map[string]any{"people": 4, "name": "Ada"})),
		textReply("regenerated"),
		echoReply,
	)
	f.idTurn("s1", "m1", "hi")
	paused := f.idTurn("s1", "m2", "play and book")
	calls := f.pending("s1", "tab-a")
	if len(calls) != 2 {
		t.Fatalf("pending calls = %d, want 2", len(calls))
	}
	events, err := f.rewind(toolcallback.RewindRequest{Message: paused[0].InvocationID})
	if err != nil {
		t.Fatalf("Rewind(regenerate) error = %v", err)
	}
	if got := finalText(events); got != "regenerated" {
		t.Errorf("regenerated answer = %q, want %q", got, "regenerated")
	}
	req := requestText(f.model.LastRequest())
	if n := strings.Count(req, "play and book"); n != 1 {
		t.Errorf("the model saw the regenerated message %d times, want once:\n%s", n, req)
	}
	for _, gone := range []string{"change_bgm", "book_table", "c1", "b1"} {
		if strings.Contains(req, gone) {
			t.Errorf("the model saw %q of the part taken back:\n%s", gone, req)
		}
	}
	for _, c := range calls {
		if got := f.callStatus("s1", c.ID); got != string(toolcallback.StatusCancelled) {
			t.Errorf("call %s status = %s, want cancelled", c.ID, got)
		}
		if got := f.callField("s1", c.ID, "resumed"); got != true {
			t.Errorf("call %s resumed = %v, want true (closed)", c.ID, got)
		}
	}
	_, _, err = resume(f.team, t.Context(), "s1", "c1", "tab-a", toolcallback.Answer{Output: map[string]any{"playing": 3}})
	if !errors.Is(err, toolcallback.ErrExpired) {
		t.Errorf("late answer to a call taken back: error = %v, want ErrExpired", err)
	}
	if got := f.pending("s1", "tab-a"); len(got) != 0 {
		t.Errorf("Pending() after the rewind = %d calls, want none", len(got))
	}
	// The next turn's request holds nothing of the part taken back either.
	f.idTurn("s1", "m3", "and now?")
	req = requestText(f.model.LastRequest())
	if strings.Contains(req, "change_bgm") || strings.Count(req, "play and book") != 1 {
		t.Errorf("next turn's request holds the part taken back:\n%s", req)
	}
	// The same request again is the one served: nothing runs.
	if _, err := f.rewind(toolcallback.RewindRequest{Message: paused[0].InvocationID}); !errors.Is(err, toolcallback.ErrRewound) {
		t.Errorf("Rewind(same regenerate, after another turn) error = %v, want ErrRewound", err)
	}
}

// TestEditEarlierMessage edits the first message of a three-turn chat.
func TestEditEarlierMessage(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil, textReply("one"), textReply("two"), textReply("three"), textReply("edited answer"))
	first := f.idTurn("s1", "m1", "first")
	second := f.idTurn("s1", "m2", "second")
	f.idTurn("s1", "m3", "third")
	edit := toolcallback.RewindRequest{Message: "m1", Content: genai.NewContentFromText("first, edited", genai.RoleUser)}
	events, err := f.rewind(edit)
	if err != nil {
		t.Fatalf("Rewind(edit) error = %v", err)
	}
	if got := finalText(events); got != "edited answer" {
		t.Errorf("answer = %q, want %q", got, "edited answer")
	}
	req := requestText(f.model.LastRequest())
	for _, gone := range []string{"one", "second", "two", "third", "three"} {
		if strings.Contains(req, gone) {
			t.Errorf("the model saw %q, which the edit took back:\n%s", gone, req)
		}
	}
	if got, want := f.userTexts("s1"), []string{"first, edited"}; strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("user messages after the edit = %q, want %q", got, want)
	}
	calls, before := f.model.Calls(), f.counter.Snapshot()
	for _, tc := range []struct {
		name string
		req  toolcallback.RewindRequest
		want error
	}{
		{"same edit again", edit, toolcallback.ErrMessageTaken},
		{"message taken back", toolcallback.RewindRequest{Message: "m2", Content: genai.NewContentFromText("x", genai.RoleUser)}, toolcallback.ErrRewound},
		{"answer taken back", toolcallback.RewindRequest{Message: second[0].InvocationID}, toolcallback.ErrRewound},
		{"old first turn", toolcallback.RewindRequest{Message: first[0].InvocationID}, toolcallback.ErrRewound},
		{"unknown message", toolcallback.RewindRequest{Message: "nope"}, toolcallback.ErrMessageNotFound},
	} {
		if _, err := f.rewind(tc.req); !errors.Is(err, tc.want) {
			t.Errorf("%s: Rewind() error = %v, want %v", tc.name, err, tc.want)
		}
	}
	if f.model.Calls() != calls {
		t.Errorf("refused rewinds called the model %d times", f.model.Calls()-calls)
	}
	if w := f.counter.Snapshot().Sub(before).Writes; w != 0 {
		t.Errorf("refused rewinds wrote %d documents, want none", w)
	}
	// The message id still names the edited message: a plain re-send of
	// it is the message taken.
	req2 := textTurn("s1", "tab-a", "first, edited")
	req2.MessageID = "m1"
	if _, _, err := f.team.Turn(t.Context(), req2); !errors.Is(err, toolcallback.ErrMessageTaken) {
		t.Errorf("Turn(m1 again) error = %v, want ErrMessageTaken", err)
	}
}

// TestRewindRestoresSessionState: session-scoped state written by the
// part taken back is rolled back; user: state is not.
func TestRewindRestoresSessionState(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil, textReply("one"), textReply("two"), textReply("two again"))
	f.idTurn("s1", "m1", "first")
	f.idTurn("s1", "m2", "second")
	sid := f.sessionOf("s1")
	// A state change made in the second turn's part of the history.
	got, err := f.sessions.Get(t.Context(), &session.GetRequest{AppName: "app", UserID: "user-1", SessionID: sid})
	if err != nil {
		t.Fatal(err)
	}
	ev := session.NewEvent(t.Context(), "state-writer")
	ev.Author = "assistant"
	ev.Actions.StateDelta = map[string]any{"mood": "happy", "user:seen": true}
	if err := f.sessions.AppendEvent(t.Context(), got.Session, ev); err != nil {
		t.Fatal(err)
	}
	if _, err := f.rewind(toolcallback.RewindRequest{Message: "m2"}); err != nil {
		t.Fatalf("Rewind() error = %v", err)
	}
	got, err = f.sessions.Get(t.Context(), &session.GetRequest{AppName: "app", UserID: "user-1", SessionID: sid})
	if err != nil {
		t.Fatal(err)
	}
	if v, err := got.Session.State().Get("mood"); !errors.Is(err, session.ErrStateKeyNotExist) {
		t.Errorf("state mood after the rewind = %v, %v; want no such key", v, err)
	}
	if v, _ := got.Session.State().Get("user:seen"); v != true {
		t.Errorf("state user:seen after the rewind = %v, want true (user state is shared, not rolled back)", v)
	}
	if v, _ := got.Session.State().Get(transcript.MessageIDKey); v != "m2" {
		t.Errorf("message id after the regenerate = %v, want m2", v)
	}
	if n := len(mustStored(t, got.Session).Rewound()); n == 0 {
		t.Error("no event is kept as rewound")
	}
}

// TestRewindBusy: a rewind holds the session's lease like a turn; one
// while a turn runs is refused as busy, writing nothing.
func TestRewindBusy(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil, textReply("one"), textReply("two"))
	f.idTurn("s1", "m1", "first")
	gate := make(chan struct{})
	f.model.Gate = gate
	inv, _, err := f.team.Turn(t.Context(), textTurn("s1", "tab-a", "second"))
	if err != nil {
		t.Fatal(err)
	}
	before := len(f.history("s1"))
	if _, err := f.rewind(toolcallback.RewindRequest{Message: "m1"}); !errors.Is(err, sessionstore.ErrBusy) {
		t.Errorf("Rewind() during a turn error = %v, want ErrBusy", err)
	}
	if after := len(f.history("s1")); after != before {
		t.Errorf("a refused rewind changed the history: %d events, want %d", after, before)
	}
	close(gate)
	if _, err := collect(inv); err != nil {
		t.Fatal(err)
	}
}

// TestRewoundPartIsNotMigratedNorListed: Pending's history and an agent
// switch after a rewind hold nothing of the part taken back.
func TestRewoundPartIsNotMigratedNorListed(t *testing.T) {
	t.Parallel()
	w := newCrashWorld(t)
	w.model = &modeltest.Strict{T: t, Script: []reply{textReply("one"), textReply("two"), textReply("edited answer"), echoReply}}
	team := w.team(w.client, w.model)
	for _, m := range []struct{ id, text string }{{"m1", "first"}, {"m2", "second"}} {
		if err := w.idTurn(team, m.id, m.text, false); err != nil {
			t.Fatal(err)
		}
	}
	if events := w.rewind(team, toolcallback.RewindRequest{Message: "m2", Content: genai.NewContentFromText("second, edited", genai.RoleUser)}); finalText(events) != "edited answer" {
		t.Fatalf("edit answered %q", finalText(events))
	}
	state, err := team.Pending(t.Context(), toolcallback.PendingRequest{UserID: "user-1", ChatID: crashChat, History: 100})
	if err != nil {
		t.Fatal(err)
	}
	if got := dumpEvents(state.History); strings.Contains(got, "two") || strings.Contains(got, `"second"`) || !strings.Contains(got, "second, edited") {
		t.Errorf("Pending's history holds the part taken back, or lacks the edit:\n%s", got)
	}
	if _, _, err := runTurn(t.Context(), team, crashTurn("dj", "", "DJ please")); err != nil {
		t.Fatal(err)
	}
	req := requestText(w.model.LastRequest())
	if strings.Contains(req, "two") || !strings.Contains(req, "second, edited") {
		t.Errorf("the DJ's request after the switch holds the part taken back, or lacks the edit:\n%s", req)
	}
	moved := dumpEvents(eventlistOf(storedEvents(t, w.sessions, crashChat+"~1")))
	if strings.Contains(moved, "two") {
		t.Errorf("the switch moved the part taken back:\n%s", moved)
	}
}

// dumpEvents is the text of every event's content.
func dumpEvents(events session.Events) string {
	var contents []*genai.Content
	for ev := range events.All() {
		if ev.Content != nil {
			contents = append(contents, ev.Content)
		}
	}
	return dumpContents(contents)
}

func eventlistOf(events []*session.Event) session.Events { return eventlist.List(events) }

// TestRewindCost holds a rewind to its Firestore operations (the
// figures docs/conversation-control.md gives): the chat and the session
// read whole, the ledger query, the mark's commit, which takes the lease
// (with one write per ledger record it closes), then the turn's own
// writes.
func TestRewindCost(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		second reply
		// The most round trips, lookups and writes it may take.
		roundTrips, lookups, writes int64
	}{
		// Besides the session's: the chat's listing in the commits that
		// take and release the lease (its activity), and the rating of
		// the message taken back, deleted with the mark (package
		// feedback); with calls, the listing's waiting calls go in the
		// commit that closes their records.
		{"regenerate a plain answer", textReply("two"), 6, 3, 6},
		{"regenerate a step paused on two calls", callReply(call("c1", "change_bgm", map[string]any{"track": 3}),
			call("b1", "book_table", map[string]any{"people": 4, "name": "Ada"})), 6, 4, 9},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, &toolcallback.Options{SessionStateOnly: true}, textReply("one"), tc.second, textReply("again"))
			f.idTurn("s1", "m1", "first")
			f.idTurn("s1", "m2", "second")
			before := f.counter.Snapshot()
			if _, err := f.rewind(toolcallback.RewindRequest{Message: "m2"}); err != nil {
				t.Fatal(err)
			}
			got := f.counter.Snapshot().Sub(before)
			t.Logf("%s: %d round trips (%d of them listens), %d lookups, %d writes", tc.name, got.RoundTrips, got.Listens, got.Lookups(), got.Writes)
			// A turn that runs past toolcallback's stop delay (500 ms, a
			// loaded machine) also listens for a Stop: one listen stream,
			// counted apart, as TestTurnCost does.
			if got.RoundTrips-got.Listens > tc.roundTrips || got.Listens > 1 || got.Lookups() > tc.lookups || got.Writes > tc.writes {
				t.Errorf("%s: %d round trips besides %d listens, %d lookups, %d writes; want at most %d (and one listen), %d, %d",
					tc.name, got.RoundTrips-got.Listens, got.Listens, got.Lookups(), got.Writes, tc.roundTrips, tc.lookups, tc.writes)
			}
		})
	}
}

// TestRewindBeforeAnAgentSwitch: a turn moved by an agent switch is named
// by its turn id as before; rewinding it keeps the chat with its new agent.
func TestRewindBeforeAnAgentSwitch(t *testing.T) {
	t.Parallel()
	w := newCrashWorld(t)
	w.model = &modeltest.Strict{T: t, Script: []reply{textReply("one"), textReply("the DJ here"), textReply("again")}}
	team := w.team(w.client, w.model)
	first, _, err := runTurn(t.Context(), team, crashTurn("", "m1", "first"))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := runTurn(t.Context(), team, crashTurn("dj", "m2", "DJ please")); err != nil {
		t.Fatal(err)
	}
	events := w.rewind(team, toolcallback.RewindRequest{Message: first[0].InvocationID})
	if finalText(events) != "again" || events[len(events)-1].Author != "dj" {
		t.Fatalf("regenerate of the moved turn = %q by %q, want the DJ's new answer", finalText(events), events[len(events)-1].Author)
	}
	req := requestText(w.model.LastRequest())
	if strings.Contains(req, "DJ please") || strings.Contains(req, "one") || strings.Count(req, "first") != 1 {
		t.Errorf("the request after the rewind holds the part taken back:\n%s", req)
	}
	chat, err := w.sessions.GetChat(t.Context(), "app", "user-1", crashChat)
	if err != nil || chat.Agent != "dj" {
		t.Errorf("chat after the rewind = %+v, %v; want the DJ's", chat, err)
	}
}

// TestRewindEnqueueWaitsForTheTurn: under LeaseEnqueue a rewind that
// finds a turn running waits for it (taking the lease the long way), then
// takes that turn back too.
func TestRewindEnqueueWaitsForTheTurn(t *testing.T) {
	t.Parallel()
	f := newFixture(t, &toolcallback.Options{LeasePolicy: toolcallback.LeaseEnqueue, MaxWait: 20 * time.Second},
		textReply("one"), textReply("two"), textReply("edited answer"))
	f.idTurn("s1", "m1", "first")
	gate := make(chan struct{})
	f.model.Gate = gate
	inv, _, err := f.team.Turn(t.Context(), textTurn("s1", "tab-a", "second"))
	if err != nil {
		t.Fatal(err)
	}
	// The rewind's second read is its first try at the lease: it waits.
	var gets atomic.Int32
	waiting := make(chan struct{})
	var once sync.Once
	f.counter.SetHook(func(method string, _ any) error {
		if strings.HasSuffix(method, "/BatchGetDocuments") && gets.Add(1) == 2 {
			once.Do(func() { close(waiting) })
		}
		return nil
	})
	type outcome struct {
		events []*session.Event
		err    error
	}
	done := make(chan outcome, 1)
	go func() {
		events, err := f.rewind(toolcallback.RewindRequest{Message: "m1", Content: genai.NewContentFromText("first, edited", genai.RoleUser)})
		done <- outcome{events, err}
	}()
	select {
	case <-waiting:
	case r := <-done:
		t.Fatalf("the rewind ended while the turn ran: %v", r.err)
	}
	f.counter.SetHook(nil)
	close(gate)
	if _, err := collect(inv); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil || finalText(r.events) != "edited answer" {
		t.Fatalf("Rewind() after waiting = %q, %v; want the edited answer", finalText(r.events), r.err)
	}
	if got := f.userTexts("s1"); strings.Join(got, "|") != "first, edited" {
		t.Errorf("user messages after the rewind = %q, want the edited one alone", got)
	}
}

// TestRegenerateDropsItsRating: a rating of the answer a regenerate takes
// back is deleted with it; a rating of an earlier answer stays.
func TestRegenerateDropsItsRating(t *testing.T) {
	t.Parallel()
	f := newFixture(t, &toolcallback.Options{SessionStateOnly: true}, textReply("one"), textReply("two"), textReply("two again"))
	f.idTurn("s1", "m1", "first")
	f.idTurn("s1", "m2", "second")
	ratings := feedback.New(f.sessions, "app")
	ctx := t.Context()
	var answers []string
	for _, ev := range f.history("s1") {
		if transcript.StartsTurn(ev) {
			answers = append(answers, ev.InvocationID)
		}
	}
	if len(answers) != 2 {
		t.Fatalf("turns: %v, want two", answers)
	}
	for _, id := range answers {
		if err := ratings.Put(ctx, "user-1", "s1", id, feedback.Rating{Rating: "up", Updated: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.rewind(toolcallback.RewindRequest{Message: "m2"}); err != nil {
		t.Fatal(err)
	}
	got, err := ratings.Ratings(ctx, "user-1", "s1", answers)
	if err != nil {
		t.Fatal(err)
	}
	if _, kept := got[answers[0]]; !kept || len(got) != 1 {
		t.Errorf("ratings after the regenerate: %v; want only the first answer's", got)
	}
}
