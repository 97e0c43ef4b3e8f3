package toolcallback_test

import (
	"context"
	"errors"
	"iter"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/platform"
	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/tool/functiontool"
	"google.golang.org/genai"

	"github.com/baton-run/baton/internal/firestoretest"
	"github.com/baton-run/baton/modeltest"
	"github.com/baton-run/baton/sessionstore"
	"github.com/baton-run/baton/toolcallback"
	"github.com/baton-run/baton/transcript"
)

// stallingModel streams the start of an answer for its first stalls
// requests, then holds until the request's context ends, and reports when
// that was; every other request goes to the strict model.
type stallingModel struct {
	strict  *modeltest.Strict
	text    string
	stalls  atomic.Int32
	entered chan struct{}  // receives once per stalled request, after the streamed text
	ended   chan time.Time // when a stalled request's context ended
}

func newStallingModel(strict *modeltest.Strict, text string, stalls int) *stallingModel {
	m := &stallingModel{strict: strict, text: text, entered: make(chan struct{}, stalls), ended: make(chan time.Time, stalls)}
	m.stalls.Store(int32(stalls))
	return m
}

func (m *stallingModel) Name() string { return "stalling" }

func (m *stallingModel) GenerateContent(ctx context.Context, req *model.LLMRequest, stream bool) iter.Seq2[*model.LLMResponse, error] {
	if m.stalls.Add(-1) < 0 {
		return m.strict.GenerateContent(ctx, req, stream)
	}
	return func(yield func(*model.LLMResponse, error) bool) {
		if err := modeltest.CheckPairing(req.Contents); err != nil {
			m.strict.T.Errorf("stalled request violates function call pairing: %v", err)
			yield(nil, err)
			return
		}
		if !yield(&model.LLMResponse{Content: genai.NewContentFromText(m.text, genai.RoleModel), Partial: true}, nil) {
			return
		}
		m.entered <- struct{}{}
		<-ctx.Done()
		m.ended <- time.Now()
		yield(nil, ctx.Err())
	}
}

// await receives from ch, failing the test after a generous bound.
func await[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(20 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
		var zero T
		return zero
	}
}

// TestStopAcrossInstances: a stop asked on the instance that does not run
// the turn cancels the model's request; what the model
// had streamed is the turn's final, marked answer; the chat takes its
// next turn with a transcript the strict model accepts; and a stop with
// nothing running writes nothing.
func TestStopAcrossInstances(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil, textReply("after the stop"))
	stalling := newStallingModel(f.model, "1, 2, 3", 1)
	holder := f.instanceWith(f.client, stalling)
	otherClient, _ := firestoretest.Reopen(t, f.client)
	other := f.instanceWith(otherClient, stalling)

	inv, _, err := holder.Turn(t.Context(), textTurn("s1", "tab-a", "count slowly to 20"))
	if err != nil {
		t.Fatalf("Turn() error = %v", err)
	}
	type result struct {
		events []*session.Event
		err    error
	}
	done := make(chan result, 1)
	go func() {
		events, err := collect(inv)
		done <- result{events, err}
	}()
	await(t, stalling.entered, "the model to stream")

	asked := time.Now()
	report, err := other.Stop(t.Context(), "user-1", "s1", 0)
	if err != nil {
		t.Fatalf("Stop() error = %v", err)
	}
	if !report.Running {
		t.Fatalf("Stop() = %+v, want Running", report)
	}
	// Without the stop, the request would run until the invocation's
	// timeout (2 min), well past await's bound. How soon it ends is a
	// matter of load, not checked here (1.3 s once beside the race-built
	// suite and a CPU hog).
	ended := await(t, stalling.ended, "the model's request to be cancelled")
	t.Logf("the model's request ended %s after the stop was asked", ended.Sub(asked))
	got := await(t, done, "the invocation to end")
	if got.err != nil {
		t.Fatalf("stopped invocation error = %v, want none (a stop is not a failure)", got.err)
	}
	last := got.events[len(got.events)-1]
	if !transcript.IsStopNote(last) || finalText(got.events) != "1, 2, 3" {
		t.Errorf("last streamed event = %+v (stopped %v), want the streamed text marked stopped", last.Content, transcript.IsStopNote(last))
	}
	history := f.history("s1")
	if stored := history[len(history)-1]; !transcript.IsStopNote(stored) || stored.Content.Parts[0].Text != "1, 2, 3" {
		t.Errorf("stored transcript ends with %+v, want the stopped answer", stored.Content)
	}

	// The lease is free and the transcript valid: the next turn runs, on
	// either instance, and the model reads the stopped answer.
	if _, err := f.turn(other, "s1", "tab-a", "thanks"); err != nil {
		t.Fatalf("turn after the stop error = %v", err)
	}
	if dump := dumpContents(f.model.LastRequest().Contents); !strings.Contains(dump, "1, 2, 3") {
		t.Errorf("the model's next request does not hold the stopped answer:\n%s", dump)
	}

	before := f.counter.Snapshot()
	report, err = holder.Stop(t.Context(), "user-1", "s1", time.Second)
	if err != nil || report.Running || len(report.Cancelled) > 0 {
		t.Errorf("Stop() with nothing running = %+v, %v; want nothing found", report, err)
	}
	if w := f.counter.Snapshot().Sub(before).Writes; w != 0 {
		t.Errorf("Stop() with nothing running wrote %d documents", w)
	}
	if _, err := holder.Stop(t.Context(), "user-2", "s1", 0); !errors.Is(err, sessionstore.ErrNotFound) {
		t.Errorf("Stop() of another user's chat error = %v, want ErrNotFound", err)
	}
}

// TestStopWaitsForTheEnd: Stop given a wait reports the invocation ended,
// and the chat's lease is free when it returns.
func TestStopWaitsForTheEnd(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil, textReply("next"))
	stalling := newStallingModel(f.model, "partly", 1)
	holder := f.instanceWith(f.client, stalling)
	inv, _, err := holder.Turn(t.Context(), textTurn("s1", "tab-a", "go on"))
	if err != nil {
		t.Fatalf("Turn() error = %v", err)
	}
	await(t, stalling.entered, "the model to stream")
	report, err := f.newInstance().Stop(t.Context(), "user-1", "s1", 10*time.Second)
	if err != nil || !report.Running || !report.Ended {
		t.Fatalf("Stop() = %+v, %v; want Running and Ended", report, err)
	}
	if _, err := f.turn(f.team, "s1", "tab-a", "next"); err != nil {
		t.Errorf("turn right after Stop() returned: %v, want it to run", err)
	}
	if err := inv.Wait(); err != nil {
		t.Errorf("stopped invocation error = %v", err)
	}
}

// TestStopPausedTurn: a paused turn is not running; stopping it cancels
// its pending calls (a late answer finds them cancelled), closes them in
// the transcript, and the chat takes its next turn.
func TestStopPausedTurn(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil,
		callReply(call("c1", "change_bgm", map[string]any{"track": 2}), call("l1", "get_location", nil)),
		textReply("next"))
	if _, err := f.turn(f.team, "s1", "tab-a", "play 2 where I am"); err != nil {
		t.Fatal(err)
	}
	report, err := f.newInstance().Stop(t.Context(), "user-1", "s1", 0)
	if err != nil {
		t.Fatalf("Stop() error = %v", err)
	}
	if report.Running || len(report.Cancelled) != 2 {
		t.Errorf("Stop() = %+v, want the two calls cancelled", report)
	}
	for _, id := range []string{"c1", "l1"} {
		if st := f.callStatus("s1", id); st != string(toolcallback.StatusCancelled) {
			t.Errorf("call %s status = %s, want cancelled", id, st)
		}
		if resumed := f.callField("s1", id, "resumed"); resumed != true {
			t.Errorf("call %s resumed = %v, want true (closed)", id, resumed)
		}
	}
	_, _, err = resume(f.team, t.Context(), "s1", "c1", "tab-a", toolcallback.Answer{Output: map[string]any{"playing": 2}})
	if !errors.Is(err, toolcallback.ErrExpired) {
		t.Errorf("late answer error = %v, want ErrExpired", err)
	}
	if n := len(f.pending("s1", "")); n != 0 {
		t.Errorf("Pending() lists %d calls after the stop, want none", n)
	}
	history := f.history("s1")
	if last := history[len(history)-1]; !transcript.IsStopNote(last) {
		t.Errorf("transcript ends with %+v, want the stopped note", last.Content)
	}
	if _, err := f.turn(f.team, "s1", "tab-a", "next"); err != nil {
		t.Fatalf("turn after the stop error = %v", err)
	}
}

// TestStopClosesRunningCalls: a stop while a server tool runs, beside a
// browser call of the same step, closes both: the browser call's record
// is cancelled and every call gets a response, so the strict model takes
// the next turn; the model's request saw no call without its response.
func TestStopClosesRunningCalls(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil,
		callReply(call("c1", "change_bgm", map[string]any{"track": 2}), call("s1", "slow_lookup", nil)),
		textReply("next"))
	entered, ended := make(chan struct{}, 1), make(chan struct{}, 1)
	slow, err := functiontool.New(functiontool.Config{Name: "slow_lookup", Description: "takes its time"},
		func(ctx agent.Context, _ struct{}) (map[string]any, error) {
			entered <- struct{}{}
			<-ctx.Done()
			ended <- struct{}{}
			return nil, ctx.Err()
		})
	if err != nil {
		t.Fatal(err)
	}
	f.tools = append(f.tools, slow)
	holder := f.instanceOn(f.client)
	inv, _, err := holder.Turn(t.Context(), textTurn("s1", "tab-a", "play 2 and look it up"))
	if err != nil {
		t.Fatalf("Turn() error = %v", err)
	}
	await(t, entered, "the server tool to run")
	other, _ := firestoretest.Reopen(t, f.client)
	if report, err := f.instanceOn(other).Stop(t.Context(), "user-1", "s1", 0); err != nil || !report.Running {
		t.Fatalf("Stop() = %+v, %v; want a running turn", report, err)
	}
	await(t, ended, "the server tool's context to end")
	if err := inv.Wait(); err != nil {
		t.Fatalf("stopped invocation error = %v", err)
	}
	if st := f.callStatus("s1", "c1"); st != string(toolcallback.StatusCancelled) {
		t.Errorf("browser call status = %s, want cancelled", st)
	}
	if err := modeltest.CheckPairing(contentsOf(f.history("s1"))); err != nil {
		t.Errorf("stored transcript pairs calls badly: %v", err)
	}
	if _, err := f.turn(f.team, "s1", "tab-a", "next"); err != nil {
		t.Fatalf("turn after the stop error = %v", err)
	}
}

// TestStopStartsNoMoreTools: a stop while one server tool of a step runs
// keeps the step's other tools from starting. The step's tools run one
// after another (platform.WithTaskRunner) so that the second would start
// only after the first saw the stop; ADK starts it all the same.
func TestStopStartsNoMoreTools(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil, callReply(call("s1", "slow_lookup", nil), call("s2", "send_mail", nil)), textReply("next"))
	entered := make(chan struct{}, 1)
	var sent atomic.Int32
	slow, err := functiontool.New(functiontool.Config{Name: "slow_lookup", Description: "takes its time"},
		func(ctx agent.Context, _ struct{}) (map[string]any, error) {
			entered <- struct{}{}
			<-ctx.Done()
			return nil, ctx.Err()
		})
	if err != nil {
		t.Fatal(err)
	}
	mail, err := functiontool.New(functiontool.Config{Name: "send_mail", Description: "sends a mail"},
		func(agent.Context, struct{}) (map[string]any, error) {
			sent.Add(1)
			return map[string]any{"sent": true}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	f.tools = append(f.tools, slow, mail)
	team := f.instanceOn(f.client)
	oneByOne := platform.WithTaskRunner(t.Context(), func(ctx context.Context, tasks []func(context.Context)) {
		for _, task := range tasks {
			task(ctx)
		}
	})
	inv, _, err := team.Turn(oneByOne, textTurn("s1", "tab-a", "look it up and mail it"))
	if err != nil {
		t.Fatalf("Turn() error = %v", err)
	}
	await(t, entered, "the first tool to run")
	if report, err := team.Stop(t.Context(), "user-1", "s1", 0); err != nil || !report.Running {
		t.Fatalf("Stop() = %+v, %v; want a running turn", report, err)
	}
	if err := inv.Wait(); err != nil {
		t.Fatalf("stopped invocation error = %v", err)
	}
	if n := sent.Load(); n != 0 {
		t.Errorf("send_mail ran %d times after the stop, want never", n)
	}
	if err := modeltest.CheckPairing(contentsOf(f.history("s1"))); err != nil {
		t.Errorf("stored transcript pairs calls badly: %v", err)
	}
	if _, err := f.turn(f.team, "s1", "tab-a", "next"); err != nil {
		t.Fatalf("turn after the stop error = %v", err)
	}
}

// contentsOf is the contents of events, as a model request would hold
// them (partial events left out).
func contentsOf(events []*session.Event) []*genai.Content {
	var out []*genai.Content
	for _, ev := range events {
		if !ev.Partial && ev.Content != nil {
			out = append(out, ev.Content)
		}
	}
	return out
}

// TestStopPausedApproval: stopping a turn that waits for an approval
// cancels it (the approval cannot be given any more), the tool never
// runs, and the strict model takes the next turn.
func TestStopPausedApproval(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil, callReply(call("b1", "book_table", map[string]any{"people": 4, "name": "Ada"})), textReply("next"))
	if _, err := f.turn(f.team, "s1", "tab-a", "book for 4"); err != nil {
		t.Fatal(err)
	}
	calls := f.pending("s1", "tab-a")
	if len(calls) != 1 {
		t.Fatalf("Pending() = %v, want the approval", calls)
	}
	report, err := f.newInstance().Stop(t.Context(), "user-1", "s1", 0)
	if err != nil || len(report.Cancelled) != 1 || report.Cancelled[0] != calls[0].ID {
		t.Fatalf("Stop() = %+v, %v; want the approval cancelled", report, err)
	}
	_, _, err = resume(f.team, t.Context(), "s1", calls[0].ID, "tab-a", toolcallback.Answer{Approved: ptr(true)})
	if !errors.Is(err, toolcallback.ErrExpired) {
		t.Errorf("late approval error = %v, want ErrExpired", err)
	}
	if _, err := f.turn(f.team, "s1", "tab-a", "next"); err != nil {
		t.Fatalf("turn after the stop error = %v", err)
	}
	if n := f.booked.Load(); n != 0 {
		t.Errorf("the approval-gated tool ran %d times after the stop, want 0", n)
	}
}
