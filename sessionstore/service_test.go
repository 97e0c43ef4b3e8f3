package sessionstore_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/runner"
	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/session/sessiontestsuite"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/toolconfirmation"
	"google.golang.org/genai"

	"github.com/baton-run/baton/internal/firestoretest"
	"github.com/baton-run/baton/internal/teamtest"
	"github.com/baton-run/baton/modeltest"
	"github.com/baton-run/baton/sessionstore"
)

func TestMain(m *testing.M) { firestoretest.Main(m) }

func newService(t testing.TB) *sessionstore.Service {
	return sessionstore.New(firestoretest.NewClient(t), nil)
}

// getSession reads session id of user "u" in app "app", whole.
func getSession(t testing.TB, svc *sessionstore.Service, id string) *sessionstore.Session {
	t.Helper()
	got, err := svc.Read(context.Background(), sessionstore.ReadRequest{App: "app", User: "u", SessionID: id, Shared: true})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func TestConformance(t *testing.T) {
	t.Parallel()
	sessiontestsuite.RunServiceTests(t, sessiontestsuite.SuiteOptions{SupportsUserProvidedSessionID: true},
		func(t *testing.T) session.Service { return newService(t) })
}

func TestRootSeparatesDeployments(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	client := firestoretest.NewClient(t)
	a := sessionstore.New(client, &sessionstore.Options{Root: "team-a"})
	b := sessionstore.New(client, &sessionstore.Options{Root: "team-b"})
	if _, err := a.Create(ctx, &session.CreateRequest{AppName: "app", UserID: "u", SessionID: "s", State: map[string]any{"app:k": "a"}}); err != nil {
		t.Fatalf("Create(a) error = %v", err)
	}
	got, err := b.Create(ctx, &session.CreateRequest{AppName: "app", UserID: "u", SessionID: "s"})
	if err != nil {
		t.Fatalf("Create(b) with the same ids error = %v, want nil", err)
	}
	if _, err := got.Session.State().Get("app:k"); !errors.Is(err, session.ErrStateKeyNotExist) {
		t.Errorf("b sees a's app state: Get(app:k) error = %v, want ErrStateKeyNotExist", err)
	}
	for _, tc := range []struct {
		name string
		svc  *sessionstore.Service
	}{{"a", a}, {"b", b}} {
		list, err := tc.svc.List(ctx, &session.ListRequest{AppName: "app"})
		if err != nil {
			t.Fatalf("List(%s) error = %v", tc.name, err)
		}
		if len(list.Sessions) != 1 {
			t.Errorf("List(%s) = %d sessions, want 1", tc.name, len(list.Sessions))
		}
	}
}

// TestEventFidelity stores an event with every field set and reads it back
// through a second service value, as another instance would.
func TestEventFidelity(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	client := firestoretest.NewClient(t)
	svc := sessionstore.New(client, nil)
	created, err := svc.Create(ctx, &session.CreateRequest{AppName: "app", UserID: "u", SessionID: "s"})
	if err != nil {
		t.Fatalf("Create() error = %v", err)
	}
	ts := time.Date(2026, 11, 22, 10, 30, 15, 123456789, time.UTC)
	events := []*session.Event{
		{
			ID: "e1", Timestamp: ts, InvocationID: "inv", Branch: "root.child", Author: "agent",
			LongRunningToolIDs: []string{"call-1", "call-2"},
			IsolationScope:     "scope-1",
			Routes:             []string{"approved"},
			RequestedInput:     &session.RequestInput{InterruptID: "int-1", Message: "which one?", Payload: map[string]any{"options": []any{"a", "b"}}},
			Output:             map[string]any{"total": float64(42)},
			NodeInfo:           &session.NodeInfo{Path: "wf/step@1", MessageAsOutput: true, OutputFor: []string{"wf/step@1", "wf"}},
			Actions: session.EventActions{
				StateDelta:        map[string]any{"k": "v", "n": float64(3), "nested": map[string]any{"a": []any{"x", true}}},
				ArtifactDelta:     map[string]int64{"file.png": 2},
				SkipSummarization: true,
				TransferToAgent:   "other",
				Escalate:          true,
				RequestedToolConfirmations: map[string]toolconfirmation.ToolConfirmation{
					"call-3": {Hint: "approve?", Confirmed: false, Payload: map[string]any{"amount": float64(12)}},
				},
			},
			LLMResponse: model.LLMResponse{
				Content: &genai.Content{Role: "model", Parts: []*genai.Part{
					{Text: "thinking", Thought: true, ThoughtSignature: []byte{0, 1, 2, 255}},
					{FunctionCall: &genai.FunctionCall{ID: "call-1", Name: "change_bgm", Args: map[string]any{"track": float64(2)}}},
					{FunctionResponse: &genai.FunctionResponse{ID: "call-0", Name: "get_time", Response: map[string]any{"time": "10:00"}}},
					{InlineData: &genai.Blob{MIMEType: "image/png", Data: []byte("\x89PNG\r\n")}},
				}},
				CustomMetadata: map[string]any{"trace": "t"},
				UsageMetadata:  &genai.GenerateContentResponseUsageMetadata{PromptTokenCount: 3, TotalTokenCount: 5},
				ModelVersion:   "m-1",
				TurnComplete:   true,
				Interrupted:    true,
				ErrorCode:      "E",
				ErrorMessage:   "msg",
				FinishReason:   genai.FinishReasonStop,
				AvgLogprobs:    -0.5,
			},
		},
		// Empty (not nil) maps and slices stay empty; nil stays nil.
		{ID: "e2", Timestamp: ts.Add(time.Second), Author: "user",
			Actions:            session.EventActions{StateDelta: map[string]any{}, ArtifactDelta: map[string]int64{}},
			LongRunningToolIDs: []string{}, Routes: []string{}},
		{ID: "e3", Timestamp: ts.Add(2 * time.Second), Author: "user"},
	}
	for _, e := range events {
		if err := svc.AppendEvent(ctx, created.Session, e); err != nil {
			t.Fatalf("AppendEvent(%s) error = %v", e.ID, err)
		}
	}
	got, err := sessionstore.New(client, nil).Get(ctx, &session.GetRequest{AppName: "app", UserID: "u", SessionID: "s"})
	if err != nil {
		t.Fatalf("Get() error = %v", err)
	}
	if diff := cmp.Diff(events, collect(got.Session.Events())); diff != "" {
		t.Errorf("events after round trip (-want +got):\n%s", diff)
	}
}

func collect(events session.Events) []*session.Event {
	var out []*session.Event
	for e := range events.All() {
		out = append(out, e)
	}
	return out
}

func TestStateScopes(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	svc := newService(t)
	s1, err := svc.Create(ctx, &session.CreateRequest{AppName: "app", UserID: "u1", SessionID: "s1",
		State: map[string]any{"app:a": "1", "user:u": "1", "k": "1", "temp:t": "1"}})
	if err != nil {
		t.Fatalf("Create() error = %v", err)
	}
	if _, err := s1.Session.State().Get("temp:t"); !errors.Is(err, session.ErrStateKeyNotExist) {
		t.Errorf("Create kept temp:t in state: Get error = %v", err)
	}
	ev := &session.Event{ID: "e1", Author: "agent", InvocationID: "inv",
		Actions: session.EventActions{StateDelta: map[string]any{"app:a": "2", "user:u": "2", "k": "2", "temp:t": "2"}}}
	if err := svc.AppendEvent(ctx, s1.Session, ev); err != nil {
		t.Fatalf("AppendEvent() error = %v", err)
	}
	// The handle keeps temp: for the rest of the invocation.
	if v, _ := s1.Session.State().Get("temp:t"); v != "2" {
		t.Errorf("handle State temp:t = %v, want 2", v)
	}
	if got := s1.Session.Events().At(0).Actions.StateDelta; got["temp:t"] != nil {
		t.Errorf("handle event kept temp:t in its delta: %v", got)
	}
	if ev.Actions.StateDelta["temp:t"] != "2" {
		t.Errorf("AppendEvent changed the caller's event: %v", ev.Actions.StateDelta)
	}

	tests := []struct {
		name string
		user string
		id   string
		want map[string]any
	}{
		{"same session", "u1", "s1", map[string]any{"app:a": "2", "user:u": "2", "k": "2"}},
		{"same user", "u1", "s2", map[string]any{"app:a": "2", "user:u": "2"}},
		{"other user", "u2", "s3", map[string]any{"app:a": "2"}},
	}
	for _, tc := range tests {
		var sess session.Session
		if tc.id == "s1" {
			got, err := svc.Get(ctx, &session.GetRequest{AppName: "app", UserID: tc.user, SessionID: tc.id})
			if err != nil {
				t.Fatalf("Get() error = %v", err)
			}
			sess = got.Session
			if diff := cmp.Diff(map[string]any{"app:a": "2", "user:u": "2", "k": "2"}, sess.Events().At(0).Actions.StateDelta); diff != "" {
				t.Errorf("stored event delta (-want +got):\n%s", diff)
			}
		} else {
			got, err := svc.Create(ctx, &session.CreateRequest{AppName: "app", UserID: tc.user, SessionID: tc.id})
			if err != nil {
				t.Fatalf("Create() error = %v", err)
			}
			sess = got.Session
		}
		state := map[string]any{}
		for k, v := range sess.State().All() {
			state[k] = v
		}
		if diff := cmp.Diff(tc.want, state); diff != "" {
			t.Errorf("%s: state (-want +got):\n%s", tc.name, diff)
		}
	}
}

// TestRunnerSeesAppendedEvents fails when AppendEvent does not update the
// session it is given: the flow reads the tool call and its response from
// that session before calling the model a second time.
func TestRunnerSeesAppendedEvents(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	svc := newService(t)
	weather := teamtest.NewTools(t).Weather
	llm := &modeltest.Strict{T: t, Script: []modeltest.Reply{
		modeltest.CallReply(modeltest.Call("call-1", "get_weather", map[string]any{"city": "Tokyo"})),
		modeltest.TextReply("It is sunny in Tokyo."),
	}}
	a, err := llmagent.New(llmagent.Config{Name: "assistant", Model: llm, Tools: []tool.Tool{weather}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := runner.New(runner.Config{AppName: "app", Agent: a, SessionService: svc})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Create(ctx, &session.CreateRequest{AppName: "app", UserID: "u", SessionID: "s"}); err != nil {
		t.Fatal(err)
	}
	var last string
	for ev, err := range r.Run(ctx, "u", "s", genai.NewContentFromText("weather in Tokyo?", "user"), agent.RunConfig{}) {
		if err != nil {
			t.Fatalf("Run() error = %v", err)
		}
		if ev.Content != nil && len(ev.Content.Parts) > 0 && ev.Content.Parts[0].Text != "" {
			last = ev.Content.Parts[0].Text
		}
	}
	if last != "It is sunny in Tokyo." {
		t.Errorf("final text = %q, want the model's second answer", last)
	}
	if llm.Calls() != 2 {
		t.Fatalf("model called %d times, want 2", llm.Calls())
	}
	var sawCall, sawResponse bool
	for _, c := range llm.LastRequest().Contents {
		for _, p := range c.Parts {
			if p.FunctionCall != nil && p.FunctionCall.ID == "call-1" {
				sawCall = true
			}
			if p.FunctionResponse != nil && p.FunctionResponse.ID == "call-1" && strings.Contains(fmt.Sprint(p.FunctionResponse.Response), "sunny in Tokyo") {
				sawResponse = true
			}
		}
	}
	if !sawCall || !sawResponse {
		t.Errorf("second model request: function call seen = %v, response seen = %v; want both", sawCall, sawResponse)
	}
	got, err := svc.Get(ctx, &session.GetRequest{AppName: "app", UserID: "u", SessionID: "s"})
	if err != nil {
		t.Fatal(err)
	}
	if n := got.Session.Events().Len(); n != 4 {
		t.Errorf("stored events = %d, want 4 (user, call, response, answer)", n)
	}
}

// TestConcurrentAppends races two handles of one session, 50 times.
func TestConcurrentAppends(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	svc := newService(t)
	if _, err := svc.Create(ctx, &session.CreateRequest{AppName: "app", UserID: "u", SessionID: "s"}); err != nil {
		t.Fatal(err)
	}
	get := func() session.Session {
		got, err := svc.Get(ctx, &session.GetRequest{AppName: "app", UserID: "u", SessionID: "s"})
		if err != nil {
			t.Fatalf("Get() error = %v", err)
		}
		return got.Session
	}
	var winners []string
	for round := range 50 {
		handles := []session.Session{get(), get()}
		errs := make([]error, 2)
		var wg sync.WaitGroup
		for i := range 2 {
			wg.Go(func() {
				errs[i] = svc.AppendEvent(ctx, handles[i], &session.Event{
					ID: fmt.Sprintf("r%d-h%d", round, i), Author: "user", InvocationID: "inv",
					Actions: session.EventActions{StateDelta: map[string]any{"last": fmt.Sprintf("r%d-h%d", round, i)}},
				})
			})
		}
		wg.Wait()
		won := -1
		for i, err := range errs {
			switch {
			case err == nil && won == -1:
				won = i
			case err == nil:
				t.Fatalf("round %d: both appends succeeded", round)
			case !errors.Is(err, sessionstore.ErrConflict):
				t.Fatalf("round %d: AppendEvent() error = %v, want ErrConflict", round, err)
			}
		}
		if won == -1 {
			t.Fatalf("round %d: no append succeeded: %v", round, errs)
		}
		loser := handles[1-won]
		if n := loser.Events().Len(); n != len(winners) {
			t.Errorf("round %d: loser handle has %d events, want it unchanged at %d", round, n, len(winners))
		}
		winners = append(winners, fmt.Sprintf("r%d-h%d", round, won))
	}
	final := get()
	var ids []string
	for e := range final.Events().All() {
		ids = append(ids, e.ID)
	}
	if diff := cmp.Diff(winners, ids); diff != "" {
		t.Errorf("stored events (-want +got):\n%s", diff)
	}
	if v, _ := final.State().Get("last"); v != winners[len(winners)-1] {
		t.Errorf("state last = %v, want %v", v, winners[len(winners)-1])
	}
}

func TestLongHistorySpansChunks(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	svc := newService(t)
	created, err := svc.Create(ctx, &session.CreateRequest{AppName: "app", UserID: "u", SessionID: "s"})
	if err != nil {
		t.Fatal(err)
	}
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	text := strings.Repeat("x", 200_000)
	for i := range 12 { // ~2.4 MB: three chunks
		if err := svc.AppendEvent(ctx, created.Session, &session.Event{ID: fmt.Sprint(i), Author: "user",
			Timestamp: base.Add(time.Duration(i) * time.Second), LLMResponse: model.LLMResponse{Content: genai.NewContentFromText(text, "user")}}); err != nil {
			t.Fatalf("AppendEvent(%d) error = %v", i, err)
		}
	}
	tests := []struct {
		name    string
		req     session.GetRequest
		wantIDs string
	}{
		{"all", session.GetRequest{}, "0 1 2 3 4 5 6 7 8 9 10 11"},
		{"recent 6", session.GetRequest{NumRecentEvents: 6}, "6 7 8 9 10 11"},
		{"after 9s", session.GetRequest{After: base.Add(9 * time.Second)}, "9 10 11"},
		{"recent 5 after 8s", session.GetRequest{NumRecentEvents: 5, After: base.Add(8 * time.Second)}, "8 9 10 11"},
	}
	for _, tc := range tests {
		req := tc.req
		req.AppName, req.UserID, req.SessionID = "app", "u", "s"
		got, err := svc.Get(ctx, &req)
		if err != nil {
			t.Fatalf("%s: Get() error = %v", tc.name, err)
		}
		var ids []string
		for e := range got.Session.Events().All() {
			ids = append(ids, e.ID)
			if len(e.Content.Parts[0].Text) != len(text) {
				t.Errorf("%s: event %s text has %d bytes, want %d", tc.name, e.ID, len(e.Content.Parts[0].Text), len(text))
			}
		}
		if diff := cmp.Diff(tc.wantIDs, strings.Join(ids, " ")); diff != "" {
			t.Errorf("%s: event ids (-want +got):\n%s", tc.name, diff)
		}
	}
}

func TestBadInputWritesNothing(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	client, counter := firestoretest.NewCountingClient(t)
	svc := sessionstore.New(client, nil)
	created, err := svc.Create(ctx, &session.CreateRequest{AppName: "app", UserID: "u", SessionID: "s"})
	if err != nil {
		t.Fatal(err)
	}
	huge := strings.Repeat("x", 1<<20)
	tests := []struct {
		name    string
		call    func() error
		wantErr error
	}{
		{"empty session id on get", func() error {
			_, err := svc.Get(ctx, &session.GetRequest{AppName: "app", UserID: "u"})
			return err
		}, sessionstore.ErrInvalidID},
		{"slash in session id", func() error {
			_, err := svc.Create(ctx, &session.CreateRequest{AppName: "app", UserID: "u", SessionID: "a/b"})
			return err
		}, sessionstore.ErrInvalidID},
		{"slash in user id", func() error {
			_, err := svc.Create(ctx, &session.CreateRequest{AppName: "app", UserID: "x/../y", SessionID: "s2"})
			return err
		}, sessionstore.ErrInvalidID},
		{"empty user id", func() error {
			_, err := svc.Create(ctx, &session.CreateRequest{AppName: "app", SessionID: "s2"})
			return err
		}, sessionstore.ErrInvalidID},
		{"empty app name", func() error {
			_, err := svc.Create(ctx, &session.CreateRequest{UserID: "u", SessionID: "s2"})
			return err
		}, sessionstore.ErrInvalidID},
		{"id over 1500 bytes", func() error {
			_, err := svc.Create(ctx, &session.CreateRequest{AppName: "app", UserID: "u", SessionID: strings.Repeat("a", 1501)})
			return err
		}, sessionstore.ErrInvalidID},
		{"reserved __x__ id", func() error {
			_, err := svc.Create(ctx, &session.CreateRequest{AppName: "app", UserID: "__admin__", SessionID: "s2"})
			return err
		}, sessionstore.ErrInvalidID},
		{"dot id", func() error {
			_, err := svc.Create(ctx, &session.CreateRequest{AppName: "app", UserID: "u", SessionID: ".."})
			return err
		}, sessionstore.ErrInvalidID},
		{"invalid utf-8", func() error {
			_, err := svc.Create(ctx, &session.CreateRequest{AppName: "app", UserID: "u", SessionID: "s\xff"})
			return err
		}, sessionstore.ErrInvalidID},
		{"NUL in session id", func() error {
			_, err := svc.Create(ctx, &session.CreateRequest{AppName: "app", UserID: "u", SessionID: "s\x00"})
			return err
		}, sessionstore.ErrInvalidID},
		{"invalid list user", func() error {
			_, err := svc.List(ctx, &session.ListRequest{AppName: "app", UserID: "a/b"})
			return err
		}, sessionstore.ErrInvalidID},
		{"invalid delete id", func() error {
			return svc.Delete(ctx, &session.DeleteRequest{AppName: "app", UserID: "u", SessionID: "__x__"})
		}, sessionstore.ErrInvalidID},
		{"oversize initial state", func() error {
			_, err := svc.Create(ctx, &session.CreateRequest{AppName: "app", UserID: "u", SessionID: "s2", State: map[string]any{"k": huge}})
			return err
		}, sessionstore.ErrTooLarge},
		{"oversize event", func() error {
			return svc.AppendEvent(ctx, created.Session, &session.Event{ID: "big", Author: "user",
				LLMResponse: model.LLMResponse{Content: genai.NewContentFromText(huge, "user")}})
		}, sessionstore.ErrTooLarge},
		{"oversize state delta", func() error {
			return svc.AppendEvent(ctx, created.Session, &session.Event{ID: "big", Author: "user",
				Actions: session.EventActions{StateDelta: map[string]any{"user:k": huge}}})
		}, sessionstore.ErrTooLarge},
	}
	for _, tc := range tests {
		before := counter.Snapshot()
		err := tc.call()
		if !errors.Is(err, tc.wantErr) {
			t.Errorf("%s: error = %v, want %v", tc.name, err, tc.wantErr)
		}
		if ops := counter.Snapshot().Sub(before); ops.Writes != 0 {
			t.Errorf("%s: %d documents written, want 0", tc.name, ops.Writes)
		}
	}
	got, err := svc.Get(ctx, &session.GetRequest{AppName: "app", UserID: "u", SessionID: "s"})
	if err != nil {
		t.Fatal(err)
	}
	if n := got.Session.Events().Len(); n != 0 || created.Session.Events().Len() != 0 {
		t.Errorf("events after rejected appends: stored %d, handle %d; want 0, 0", n, created.Session.Events().Len())
	}
	list, err := svc.List(ctx, &session.ListRequest{AppName: "app"})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Sessions) != 1 {
		t.Errorf("List() = %d sessions after rejected creates, want 1", len(list.Sessions))
	}
}

func TestNotFound(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	svc := newService(t)
	created, err := svc.Create(ctx, &session.CreateRequest{AppName: "app", UserID: "owner", SessionID: "s"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Get(ctx, &session.GetRequest{AppName: "app", UserID: "intruder", SessionID: "s"}); !errors.Is(err, sessionstore.ErrNotFound) {
		t.Errorf("Get(other user's session) error = %v, want ErrNotFound", err)
	}
	if _, err := svc.Get(ctx, &session.GetRequest{AppName: "app", UserID: "owner", SessionID: "missing"}); !errors.Is(err, sessionstore.ErrNotFound) {
		t.Errorf("Get(missing) error = %v, want ErrNotFound", err)
	}
	if err := svc.Delete(ctx, &session.DeleteRequest{AppName: "app", UserID: "owner", SessionID: "s"}); err != nil {
		t.Fatal(err)
	}
	if err := svc.AppendEvent(ctx, created.Session, &session.Event{ID: "e", Author: "user"}); !errors.Is(err, sessionstore.ErrNotFound) {
		t.Errorf("AppendEvent(deleted) error = %v, want ErrNotFound", err)
	}
}

func TestDeleteRemovesEveryDocument(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	client := firestoretest.NewClient(t)
	svc := sessionstore.New(client, nil)
	created, err := svc.Create(ctx, &session.CreateRequest{AppName: "app", UserID: "u", SessionID: "s"})
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Repeat("y", 400_000)
	for i := range 5 {
		if err := svc.AppendEvent(ctx, created.Session, &session.Event{ID: fmt.Sprint(i), Author: "user",
			LLMResponse: model.LLMResponse{Content: genai.NewContentFromText(text, "user")}}); err != nil {
			t.Fatal(err)
		}
	}
	ref := svc.Client().Doc(svc.SessionDoc("app", "u", "s").Path())
	chunks, err := ref.Collection("events").Documents(ctx).GetAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(chunks) < 2 {
		t.Fatalf("history stored in %d chunks, want several", len(chunks))
	}
	if err := svc.Delete(ctx, &session.DeleteRequest{AppName: "app", UserID: "u", SessionID: "s"}); err != nil {
		t.Fatalf("Delete() error = %v", err)
	}
	left, err := ref.Collection("events").Documents(ctx).GetAll()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ref.Get(ctx); err == nil || len(left) != 0 {
		t.Errorf("after Delete: session doc read error = %v, %d chunks left; want not found and 0", err, len(left))
	}
}

// stored is sess as the service's handle.
func stored(t testing.TB, sess session.Session) *sessionstore.Session {
	t.Helper()
	ss, err := sessionstore.Of(sess)
	if err != nil {
		t.Fatal(err)
	}
	return ss
}

// TestSharedStateCurrent: a handle's app: and user: state is current while
// only its own appends change it (a number and a nested object, which read
// back as float64 and map[string]any), and not once another session of
// the user, or of another user of the app, changes a key.
func TestSharedStateCurrent(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	svc := newService(t)
	if _, err := svc.Create(ctx, &session.CreateRequest{AppName: "app", UserID: "u", SessionID: "s1",
		State: map[string]any{"user:name": "Ada", "k": 1}}); err != nil {
		t.Fatal(err)
	}
	sess := getSession(t, svc, "s1")
	if err := svc.SharedStateCurrent(ctx, sess); err != nil {
		t.Fatalf("as read: %v, want nil", err)
	}
	delta := map[string]any{"user:visits": 3, "app:menu": map[string]any{"soup": []int{1, 2}}, "temp:t": "x"}
	if err := svc.AppendEvent(ctx, sess, &session.Event{ID: "e1", InvocationID: "i1", Author: "agent",
		Actions: session.EventActions{StateDelta: delta}}); err != nil {
		t.Fatal(err)
	}
	if err := svc.SharedStateCurrent(ctx, sess); err != nil {
		t.Fatalf("after its own append: %v, want nil", err)
	}
	for _, other := range []struct{ user, key string }{{"u", "user:name"}, {"v", "app:menu"}} {
		if _, err := svc.Create(ctx, &session.CreateRequest{AppName: "app", UserID: other.user, SessionID: "s-" + other.key,
			State: map[string]any{other.key: "changed"}}); err != nil {
			t.Fatal(err)
		}
		if err := svc.SharedStateCurrent(ctx, sess); !errors.Is(err, sessionstore.ErrSharedStateChanged) {
			t.Fatalf("after user %s changed %s: %v, want ErrSharedStateChanged", other.user, other.key, err)
		}
		sess = getSession(t, svc, "s1")
		if err := svc.SharedStateCurrent(ctx, sess); err != nil {
			t.Fatalf("read again: %v, want nil", err)
		}
	}
}
