package live_test

import (
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/adk/v2/model"
	"google.golang.org/genai"

	"github.com/baton-run/baton/internal/firestoretest"
	"github.com/baton-run/baton/internal/polltest"
	"github.com/baton-run/baton/live"
	"github.com/baton-run/baton/modeltest"
	"github.com/baton-run/baton/toolcallback"
)

// TestLiveTurnCost: a live turn costs two commits (the user's words, the
// model's with its handle) and no read; the model's voice costs none.
func TestLiveTurnCost(t *testing.T) {
	w := newWorld(t, &modeltest.LiveOptions{Repeat: modeltest.TextReply("It is sunny, and the sea is calm today.")})
	// A lease term longer than the test: no renewal among its writes.
	in := w.instance(nil, &toolcallback.Options{LeaseTTL: time.Minute}, live.DefaultSetup())
	conv, cl := in.open(t, chat, device)
	cl.ready()
	before := w.counter.Snapshot()
	const turns = 3
	for i := range turns {
		if err := conv.Text("how is the weather?"); err != nil {
			t.Fatal(err)
		}
		cl.turnsComplete(i + 1)
		// The turn's last event waits for the handle, then is stored.
		want := int64(2 * (i + 1))
		polltest.Until(t, "the turn's commits", func() bool { return w.counter.Snapshot().Sub(before).Writes >= want })
	}
	ops := w.counter.Snapshot().Sub(before)
	conv.Close()
	if cl.audioBytes() == 0 {
		t.Fatal("the model's voice did not reach the client")
	}
	if ops.Writes != 2*turns || ops.Lookups() != 0 {
		t.Errorf("%d turns cost %d writes and %d reads, want %d and none", turns, ops.Writes, ops.Lookups(), 2*turns)
	}
}

// minuteRules answer the minute's exchange: the music asked for is played
// by the browser (change_bgm), its answer acknowledged, anything else
// answered in a sentence.
func minuteRules(req *model.LLMRequest) *genai.Content {
	last := req.Contents[len(req.Contents)-1]
	for _, p := range last.Parts {
		switch {
		case p.FunctionResponse != nil:
			return genai.NewContentFromText("Track two is playing now.", genai.RoleModel)
		case strings.Contains(p.Text, "track"):
			return modeltest.CallReply(modeltest.Call("", "change_bgm", map[string]any{"track": 2}))(req)
		}
	}
	return genai.NewContentFromText("Sure, that sounds like a fine plan for today.", genai.RoleModel)
}

// BenchmarkLiveMinute plays a minute of live conversation in real time and
// reports the Firestore operations of the instance holding it, per minute:
// six spoken turns (2 s of the user's voice each, at the pace a microphone
// gives it, then the model's spoken answer), one of which asks for music,
// played by the browser (change_bgm) and answered a second later.
// Run it with go test -bench LiveMinute -benchtime 1x -run '^$' ./live.
func BenchmarkLiveMinute(b *testing.B) {
	for range b.N {
		ops := liveMinute(b)
		b.ReportMetric(float64(ops.Writes), "writes/min")
		b.ReportMetric(float64(ops.Lookups()), "reads/min")
		b.ReportMetric(float64(ops.Listens), "listens/min")
		b.ReportMetric(float64(ops.RoundTrips), "roundtrips/min")
	}
}

func liveMinute(b *testing.B) firestoretest.Ops {
	var mu sync.Mutex
	heard := 0
	w := newWorld(b, &modeltest.LiveOptions{Repeat: minuteRules, Transcribe: func([]byte, int) string {
		mu.Lock()
		defer mu.Unlock()
		heard++
		if heard == 3 {
			return "change the music to track 2"
		}
		return "what shall we do today"
	}})
	in := w.instance(nil, nil, live.DefaultSetup())
	start := w.counter.Snapshot()
	began := time.Now()
	conv, cl := in.open(b, chat, device)
	cl.ready()
	voice, silence := modeltest.Tone(2*time.Second, modeltest.InputRate), modeltest.Silence(600*time.Millisecond, modeltest.InputRate)
	for turn := range 6 {
		next := began.Add(time.Duration(turn) * 10 * time.Second)
		time.Sleep(time.Until(next))
		speak(conv, append(append([]byte{}, voice...), silence...))
		if turn == 2 {
			call := cl.toolCall(1)
			time.Sleep(time.Second)
			if err := conv.Answer(b.Context(), live.Answer{ToolCallID: call.ToolCallID, Output: map[string]any{"playing": 2}}); err != nil {
				b.Fatal(err)
			}
		}
	}
	time.Sleep(time.Until(began.Add(time.Minute)))
	conv.Close()
	return w.counter.Snapshot().Sub(start)
}

// speak sends pcm to the conversation in 20 ms frames at the pace of a
// microphone.
func speak(conv *live.Conversation, pcm []byte) {
	const frame = 2 * modeltest.InputRate / 50 // 20 ms of 16-bit samples
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for i := 0; i < len(pcm); i += frame {
		<-tick.C
		_ = conv.Audio(pcm[i:min(i+frame, len(pcm))])
	}
}
