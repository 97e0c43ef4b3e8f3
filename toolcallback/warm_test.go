package toolcallback_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"cloud.google.com/go/firestore/apiv1/firestorepb"
	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/functiontool"
	"google.golang.org/genai"

	"github.com/baton-run/baton/internal/firestoretest"
	"github.com/baton-run/baton/internal/teamtest"
	"github.com/baton-run/baton/modeltest"
	"github.com/baton-run/baton/sessionstore"
	"github.com/baton-run/baton/toolcallback"
)

// heardReply answers with the user messages of the request that start
// with "turn ", in order, and counts the requests that missed any of the
// messages sent so far (want returns them).
func heardReply(want func() []string, stale *atomic.Int32) reply {
	return func(req *model.LLMRequest) *genai.Content {
		var heard []string
		for _, c := range req.Contents {
			for _, p := range c.Parts {
				if c.Role == genai.RoleUser && strings.HasPrefix(p.Text, "turn ") {
					heard = append(heard, p.Text)
				}
			}
		}
		if strings.Join(heard, ",") != strings.Join(want(), ",") {
			stale.Add(1)
		}
		return genai.NewContentFromText("heard: "+strings.Join(heard, ","), genai.RoleModel)
	}
}

// TestWarmTurnsAlternateInstances: two instances keep warm copies of one
// chat, and its turns alternate between them, so from the third turn on
// every turn starts on a copy the other instance made stale. Each such turn
// costs at most one model request that is cancelled and never shown, and each
// turn's answer, and the stored history, come from a request that had the
// full, current history.
func TestWarmTurnsAlternateInstances(t *testing.T) {
	t.Parallel()
	var (
		mu    sync.Mutex
		sent  []string
		stale atomic.Int32
	)
	want := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), sent...)
	}
	f := newFixture(t, &toolcallback.Options{SessionStateOnly: true})
	f.model.Repeat = heardReply(want, &stale)
	teams := []*toolcallback.Team{f.team, f.newInstance()}
	const turns = 8
	for k := range turns {
		text := fmt.Sprintf("turn %d", k)
		mu.Lock()
		sent = append(sent, text)
		mu.Unlock()
		events, err := f.turn(teams[k%2], "s1", "tab-a", text)
		if err != nil {
			t.Fatalf("turn %d: %v", k, err)
		}
		if got, want := finalText(events), "heard: "+strings.Join(want(), ","); got != want {
			t.Fatalf("turn %d answered %q, want %q", k, got, want)
		}
	}
	// A stale copy's request is cancelled once the claim fails: if that
	// comes first, the request is never sent, so a turn wastes at most one.
	if got, most := int(stale.Load()), turns-2; got > most {
		t.Errorf("%d model requests on a stale copy, want at most %d (one per turn after the second)", got, most)
	}
	if got, want := f.model.Calls()-int(stale.Load()), turns; got != want {
		t.Errorf("%d model requests on the current history, want %d (one per turn)", got, want)
	}
	var stored []string
	for _, ev := range f.history("s1") {
		if ev.Content != nil && len(ev.Content.Parts) > 0 {
			stored = append(stored, ev.Content.Parts[0].Text)
		}
	}
	for k, text := range stored {
		if k%2 == 0 && text != fmt.Sprintf("turn %d", k/2) || k%2 == 1 && !strings.HasPrefix(text, "heard: turn 0") {
			t.Fatalf("stored history %q: event %d is %q", stored, k, text)
		}
	}
	if len(stored) != 2*turns {
		t.Errorf("stored %d events, want %d: %q", len(stored), 2*turns, stored)
	}
}

// TestWarmTurnRacesColdTurn: a turn on an instance's warm copy and a turn
// on another instance, sent at once, give one turn and one ErrBusy,
// whichever commits first.
func TestWarmTurnRacesColdTurn(t *testing.T) {
	t.Parallel()
	for round := range 4 {
		f := newFixture(t, &toolcallback.Options{SessionStateOnly: true}, textReply("first"))
		if _, err := f.turn(f.team, "s1", "tab-a", "hello"); err != nil {
			t.Fatal(err)
		}
		f.model.Repeat = textReply("raced")
		f.model.Gate = make(chan struct{}) // the winner runs until both returned
		teams := []*toolcallback.Team{f.team, f.newInstance()}
		invs := make([]*toolcallback.Invocation, 2)
		errs := make([]error, 2)
		var wg sync.WaitGroup
		for i := range 2 {
			wg.Go(func() {
				invs[i], _, errs[i] = teams[i].Turn(t.Context(), textTurn("s1", "tab-a", fmt.Sprintf("racer %d", i)))
			})
		}
		wg.Wait()
		close(f.model.Gate)
		won := -1
		for i := range 2 {
			switch {
			case errs[i] == nil:
				won = i
				if _, err := collect(invs[i]); err != nil {
					t.Fatalf("round %d: the winner failed: %v", round, err)
				}
			case !errors.Is(errs[i], sessionstore.ErrBusy):
				t.Fatalf("round %d: racer %d: %v, want ErrBusy", round, i, errs[i])
			}
		}
		if won < 0 || errs[1-won] == nil {
			t.Fatalf("round %d: errors %v, want exactly one ErrBusy", round, errs)
		}
		var racers []string
		for _, ev := range f.history("s1") {
			if ev.Content != nil && strings.HasPrefix(ev.Content.Parts[0].Text, "racer ") {
				racers = append(racers, ev.Content.Parts[0].Text)
			}
		}
		if want := fmt.Sprintf("racer %d", won); len(racers) != 1 || racers[0] != want {
			t.Errorf("round %d: stored %q, want only %q", round, racers, want)
		}
	}
}

// TestFinalTextShownBeforeItsCommit: a reply the model gives whole (no
// partial events) is stored with the lease's release, and its readers get
// its text at once, as they get a streamed reply's, not after that commit:
// the commit is held here until a reader has the text.
func TestFinalTextShownBeforeItsCommit(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil, textReply("hello there"))
	inv, _, err := f.team.Turn(t.Context(), textTurn("s1", "tab-a", "hi"))
	if err != nil {
		t.Fatal(err)
	}
	shown := make(chan struct{})
	var released atomic.Bool
	f.counter.SetHook(func(method string, req any) error {
		if c, ok := req.(*firestorepb.CommitRequest); ok && slices.ContainsFunc(c.Writes, func(w *firestorepb.Write) bool {
			return slices.Contains(w.GetUpdateMask().GetFieldPaths(), "lease.holder")
		}) {
			select {
			case <-shown:
			case <-time.After(5 * time.Second):
			}
			released.Store(true)
		}
		return nil
	})
	var before string
	for ev, err := range inv.Events() {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Partial && ev.Content != nil && before == "" && !released.Load() {
			before = ev.Content.Parts[0].Text
			close(shown)
		}
	}
	if before != "hello there" {
		t.Errorf("text a reader got before the reply's commit = %q, want %q", before, "hello there")
	}
	if got := finalText(f.history("s1")); got != "hello there" {
		t.Errorf("stored reply = %q, want %q", got, "hello there")
	}
}

// sharedStateReply answers "remember NAME" with a call of remember, the
// call's response with "noted", and anything else with the request's
// system instruction, which names the user's state.
func sharedStateReply(req *model.LLMRequest) *genai.Content {
	last := req.Contents[len(req.Contents)-1]
	switch p := last.Parts[0]; {
	case p.FunctionResponse != nil:
		return genai.NewContentFromText("noted", genai.RoleModel)
	case strings.HasPrefix(p.Text, "remember "):
		return modeltest.CallReply(modeltest.Call(fmt.Sprintf("call-%d", len(req.Contents)), "remember",
			map[string]any{"name": strings.TrimPrefix(p.Text, "remember ")}))(req)
	}
	said := req.Config.SystemInstruction.Parts[0].Text
	said, _, _ = strings.Cut(said, "\n") // ADK adds the agent's name below
	return genai.NewContentFromText(said, genai.RoleModel)
}

// sharedStateWorld is a team whose agent keeps user: state (its tool
// remember sets the user's name and visits), and a say that runs one turn
// in chat s1.
type sharedStateWorld struct {
	t        *testing.T
	counter  *firestoretest.Counter
	model    *modeltest.Strict
	sessions *sessionstore.Service
	team     *toolcallback.Team
}

func newSharedStateWorld(t *testing.T, opts *toolcallback.Options) *sharedStateWorld {
	remember, err := functiontool.New(functiontool.Config{Name: "remember", Description: "remembers the user's name"},
		func(ctx agent.Context, a struct {
			Name string `json:"name"`
		}) (map[string]any, error) {
			if err := ctx.State().Set("user:name", a.Name); err != nil {
				return nil, err
			}
			return nil, ctx.State().Set("user:visits", 3)
		})
	if err != nil {
		t.Fatal(err)
	}
	w := teamtest.New(t, &teamtest.Options{Team: opts, Agents: func(w *teamtest.World, _ *teamtest.Instance) []toolcallback.Member {
		return []toolcallback.Member{w.Member(llmagent.Config{Name: "assistant", Model: w.Model, Tools: []tool.Tool{remember},
			Instruction: "The user is {user:name?}, visits {user:visits?}."})}
	}})
	w.Model.Repeat = sharedStateReply
	return &sharedStateWorld{t: t, counter: w.Counter, model: w.Model, sessions: w.Sessions, team: w.Team}
}

// say runs text in chat s1 and checks its answer and that it made one of
// the model request counts given.
func (w *sharedStateWorld) say(text, want string, requests ...int) {
	w.t.Helper()
	before := w.model.Calls()
	events, _, err := runTurn(w.t.Context(), w.team, textTurn("s1", "tab-a", text))
	if err != nil {
		w.t.Fatalf("%q: %v", text, err)
	}
	if got := finalText(events); got != want {
		w.t.Fatalf("%q answered %q, want %q", text, got, want)
	}
	if got := w.model.Calls() - before; !slices.Contains(requests, got) {
		w.t.Errorf("%q made %d model requests, want one of %v", text, got, requests)
	}
}

// otherSessionSetsName stores, from another session of the user, the
// user state name.
func (w *sharedStateWorld) otherSessionSetsName(name string) {
	w.t.Helper()
	if _, err := w.sessions.Create(w.t.Context(), &session.CreateRequest{AppName: "app", UserID: "user-1", SessionID: "elsewhere",
		State: map[string]any{"user:name": name}}); err != nil {
		w.t.Fatal(err)
	}
}

// storedTexts are the texts of chat s1's stored events, in order.
func (w *sharedStateWorld) storedTexts() []string {
	var stored []string
	for _, ev := range storedEvents(w.t, w.sessions, sessionstore.ChatSessionID("s1", 0)) {
		if ev.Content != nil && len(ev.Content.Parts) > 0 && ev.Content.Parts[0].Text != "" {
			stored = append(stored, ev.Content.Parts[0].Text)
		}
	}
	return stored
}

// TestWarmTurnSharedState: agents that keep user: state have warm turns,
// and a warm turn runs with the user state as stored: after another
// session changed it, the turn's copy is found stale before anything is
// shown (the copy's model request, if it was sent, cancelled) and the turn
// runs on a read; after its own turn changed it (a string and a number,
// which the store gives back as float64), the copy is current and the turn
// runs on it.
func TestWarmTurnSharedState(t *testing.T) {
	t.Parallel()
	log := &errorLog{}
	w := newSharedStateWorld(t, &toolcallback.Options{Logger: log.logger()})
	say := w.say
	say("hello", "The user is , visits .", 1)
	say("remember Ada", "noted", 2) // warm: the copy has no user state, nor has the store
	say("who am I?", "The user is Ada, visits 3.", 1)
	w.otherSessionSetsName("Bo")
	// The copy's request, cancelled, if the check had not failed before
	// it was sent, and the read's.
	say("and now?", "The user is Bo, visits 3.", 1, 2)
	say("still?", "The user is Bo, visits 3.", 1)
	if got, want := w.storedTexts(), []string{"hello", "The user is , visits .", "remember Ada", "noted", "who am I?",
		"The user is Ada, visits 3.", "and now?", "The user is Bo, visits 3.", "still?", "The user is Bo, visits 3."}; !slices.Equal(got, want) {
		t.Errorf("stored %q, want %q", got, want)
	}
	if got := log.got(); len(got) > 0 {
		t.Errorf("the stale copy's run logged errors: %q", got)
	}
}

// TestStaleCopyStoresNothing: a turn planned on a stale copy whose model
// calls a tool before the copy's check has answered stores nothing of
// that attempt. The call's append waits for the claiming commit, which
// the check refuses; before, it stored the staged message itself and
// took the lease, so the turn, planned again on a read, found its own
// chat busy. The check is held until the call's append has started.
func TestStaleCopyStoresNothing(t *testing.T) {
	t.Parallel()
	log := &errorLog{}
	opts := &toolcallback.Options{Logger: log.logger()}
	watch := newClaimWatch(opts)
	w := newSharedStateWorld(t, opts)
	w.say("hello", "The user is , visits .", 1)
	w.otherSessionSetsName("Bo")
	// The warm turn's first read is the copy's check (of the app and user
	// state documents).
	watch.hold(t, w.counter, "/BatchGetDocuments")
	w.say("remember Ada", "noted", 3) // the copy's call, and the read's call and answer
	w.counter.SetHook(nil)
	if !watch.held.Load() {
		t.Fatal("the copy's check never read the shared state")
	}
	w.say("who am I?", "The user is Ada, visits 3.", 1)
	if got, want := w.storedTexts(), []string{"hello", "The user is , visits .", "remember Ada", "noted", "who am I?",
		"The user is Ada, visits 3."}; !slices.Equal(got, want) {
		t.Errorf("stored %q, want %q", got, want)
	}
	if got := log.got(); len(got) > 0 {
		t.Errorf("the stale copy's run logged errors: %q", got)
	}
}
