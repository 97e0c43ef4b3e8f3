package toolcallback_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/functiontool"

	"github.com/baton-run/baton/internal/firestoretest"
	"github.com/baton-run/baton/internal/polltest"
	"github.com/baton-run/baton/modeltest"
	"github.com/baton-run/baton/sessionstore"
	"github.com/baton-run/baton/toolcallback"
)

// The figures of docs/cost.md, "Background calls":
//
//	./test -run '^$' -bench 'Background|InRequest' -benchtime 5x ./toolcallback
//
// Each op is one chat's turn that calls prepare_playlist, from the user's
// message to the agent's answer on the tool's result, after a first turn
// that made the chat. Firestore operations are the deployment's (the
// follower's, a second tab on its own client, are left out); queue
// operations are the tasks created and the deliveries made.

// follower is a second tab of chat: it follows the chat's session from
// its own client and notes when the agent's answer on the tool's result
// is stored.
func follower(tb testing.TB, ctx context.Context, team *toolcallback.Team, seen chan<- time.Time) {
	chat, err := team.Follow(ctx, "user-1", "chat")
	if err != nil {
		tb.Fatal(err)
	}
	go func() {
		for c, err := range chat.Watch(ctx, 0) {
			if err != nil {
				return
			}
			for _, ev := range c.Events {
				if ev.Author != "user" && ev.Content != nil && len(ev.Content.Parts) > 0 &&
					strings.Contains(ev.Content.Parts[0].Text, "prepare_playlist=") {
					seen <- time.Now()
					return
				}
			}
		}
	}()
}

// benchFigures are one run's figures.
type benchFigures struct {
	ops               firestoretest.Ops
	creates, delivers int
	latency           time.Duration // from the tool's return to the follower's answer
}

func (f *benchFigures) add(o benchFigures) {
	f.ops = f.ops.Add(o.ops)
	f.creates += o.creates
	f.delivers += o.delivers
	f.latency += o.latency
}

func (f benchFigures) report(b *testing.B) {
	n := float64(b.N)
	b.ReportMetric(float64(f.ops.Lookups())/n, "fs-reads/op")
	b.ReportMetric(float64(f.ops.Writes)/n, "fs-writes/op")
	b.ReportMetric(float64(f.ops.Listens)/n, "fs-listens/op")
	b.ReportMetric(float64(f.creates)/n, "task-creates/op")
	b.ReportMetric(float64(f.delivers)/n, "deliveries/op")
	b.ReportMetric(float64(f.latency.Milliseconds())/n, "ms-return-to-answer/op")
}

// BenchmarkBackgroundCall: a background call's path, with the work
// storing progress a given number of times before it returns.
func BenchmarkBackgroundCall(b *testing.B) {
	for _, writes := range []int{0, 5, 20} {
		b.Run(fmt.Sprintf("progress-writes=%d", writes), func(b *testing.B) {
			var total benchFigures
			for range b.N {
				total.add(backgroundRun(b, writes))
			}
			total.report(b)
		})
	}
}

func backgroundRun(b *testing.B, writes int) benchFigures {
	f := newBGFixture(b, &toolcallback.Options{ProgressInterval: 50 * time.Millisecond}, nil, textReply("hello"), playlistCall, echoReply)
	if _, err := f.turnEvents("chat", "hi"); err != nil {
		b.Fatal(err)
	}
	var stored atomic.Int32
	f.counter.SetHook(func(method string, req any) error {
		if strings.HasSuffix(method, "/Commit") && commitKind(req) == "progress" {
			stored.Add(1)
		}
		return nil
	})
	var returned atomic.Value
	f.setWork(func(ctx context.Context, a playlistArgs) (playlistResult, error) {
		for n := 0; int(stored.Load()) < writes; n++ {
			if err := toolcallback.Progress(ctx, n); err != nil {
				return playlistResult{}, err
			}
			time.Sleep(time.Millisecond)
		}
		returned.Store(time.Now())
		return playlistResult{Tracks: []string{"rain", "tide"}}, nil
	})
	other, _ := firestoretest.Reopen(b, f.client)
	seen := make(chan time.Time, 1)
	follower(b, b.Context(), f.newInstanceOn(other), seen)
	f.counter.Reset()
	before := f.tasks.Stats()
	if _, err := f.turnEvents("chat", "make me a calm playlist"); err != nil {
		b.Fatal(err)
	}
	answered := <-seen
	polltest.Until(b, "the resumed agent to end", func() bool { return f.door.resumed.Load() > 0 })
	after := f.tasks.Stats()
	return benchFigures{ops: f.counter.Snapshot(), creates: after.Creates - before.Creates, delivers: after.Dispatches - before.Dispatches,
		latency: answered.Sub(returned.Load().(time.Time))}
}

// BenchmarkInRequestCall: the same work as an ordinary tool, run inside
// the turn's request.
func BenchmarkInRequestCall(b *testing.B) {
	var total benchFigures
	for range b.N {
		total.add(inRequestRun(b))
	}
	total.report(b)
}

func inRequestRun(b *testing.B) benchFigures {
	var returned atomic.Value
	playlist, err := functiontool.New(functiontool.Config{Name: "prepare_playlist", Description: "prepare a playlist"},
		func(agent.Context, playlistArgs) (playlistResult, error) {
			returned.Store(time.Now())
			return playlistResult{Tracks: []string{"rain", "tide"}}, nil
		})
	if err != nil {
		b.Fatal(err)
	}
	model := &modeltest.Strict{T: b, Script: []reply{textReply("hello"), playlistCall, echoReply}}
	a, err := llmagent.New(llmagent.Config{Name: "dj", Model: model, Tools: []tool.Tool{playlist}})
	if err != nil {
		b.Fatal(err)
	}
	client, counter := firestoretest.NewCountingClient(b)
	team, err := toolcallback.NewTeam(sessionstore.New(client, nil), "app", []toolcallback.Member{{Agent: a}}, nil)
	if err != nil {
		b.Fatal(err)
	}
	if _, _, err := runTurn(b.Context(), team, textTurn("chat", "tab-1", "hi")); err != nil {
		b.Fatal(err)
	}
	other, _ := firestoretest.Reopen(b, client)
	second, err := toolcallback.NewTeam(sessionstore.New(other, nil), "app", []toolcallback.Member{{Agent: a}}, nil)
	if err != nil {
		b.Fatal(err)
	}
	seen := make(chan time.Time, 1)
	follower(b, b.Context(), second, seen)
	counter.Reset()
	if _, _, err := runTurn(b.Context(), team, textTurn("chat", "tab-1", "make me a calm playlist")); err != nil {
		b.Fatal(err)
	}
	answered := <-seen
	return benchFigures{ops: counter.Snapshot(), latency: answered.Sub(returned.Load().(time.Time))}
}
