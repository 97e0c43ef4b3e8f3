package live_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/model/gemini"
	"google.golang.org/adk/v2/runner"
	"google.golang.org/adk/v2/session"
	"google.golang.org/genai"

	"github.com/baton-run/baton/live"
	"github.com/baton-run/baton/modeltest"
	"github.com/baton-run/baton/sessionstore"
	"github.com/baton-run/baton/toolcallback"
)

// The scripted exchange both paths play: benchTurns turns of the user's
// voice (1 s of tone, then silence that ends the turn), each answered by
// the stand-in's voice ("I heard 1.0 seconds of audio.", about 1.7 s of
// tone in 100 ms frames) with its transcription. The user's frames are
// 20 ms, handed over every millisecond (twenty times a microphone's pace).
const benchTurns = 3

// stamps are the client's side of an exchange: when it handed each frame
// of the user's voice over, and when it got each frame of the model's.
type stamps struct {
	mu        sync.Mutex
	sent, got []time.Time
	turns     chan struct{} // a model turn ended
}

func newStamps() *stamps { return &stamps{turns: make(chan struct{}, benchTurns)} }

func (s *stamps) handed() {
	s.mu.Lock()
	s.sent = append(s.sent, time.Now())
	s.mu.Unlock()
}

func (s *stamps) received() {
	s.mu.Lock()
	s.got = append(s.got, time.Now())
	s.mu.Unlock()
}

// play hands the exchange's voice over through send, turn by turn, each
// once the previous answer ended.
func (s *stamps) play(tb testing.TB, send func([]byte)) {
	voice := append(modeltest.Tone(time.Second, modeltest.InputRate), modeltest.Silence(700*time.Millisecond, modeltest.InputRate)...)
	const frame = 2 * modeltest.InputRate / 50
	for range benchTurns {
		for i := 0; i < len(voice); i += frame {
			s.handed()
			send(voice[i:min(i+frame, len(voice))])
			time.Sleep(time.Millisecond)
		}
		select {
		case <-s.turns:
		case <-time.After(15 * time.Second):
			tb.Fatal("after 15 s, the model's turn has not ended")
		}
	}
}

// delays pairs the client's stamps with the stand-in's frames of
// connection c: the user's frames from handed over to read by the model,
// the model's from written to got by the client, and, per model turn, its
// first frame's.
func (s *stamps) delays(c *modeltest.LiveConn) (in, out, first []time.Duration) {
	var reads, writes []time.Time
	var firsts []int // index among writes of each turn's first audio frame
	turnStart := true
	for _, f := range c.Frames() {
		if m := f.Client; m != nil && m.RealtimeInput != nil && (m.RealtimeInput.Audio != nil || len(m.RealtimeInput.MediaChunks) > 0) {
			reads = append(reads, f.At)
		}
		if f.Server == nil || f.Server.ServerContent == nil {
			continue
		}
		sc := f.Server.ServerContent
		if sc.ModelTurn != nil && len(sc.ModelTurn.Parts) > 0 && sc.ModelTurn.Parts[0].InlineData != nil {
			if turnStart {
				firsts, turnStart = append(firsts, len(writes)), false
			}
			writes = append(writes, f.At)
		}
		turnStart = turnStart || sc.TurnComplete
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range min(len(reads), len(s.sent)) {
		in = append(in, reads[i].Sub(s.sent[i]))
	}
	for i := range min(len(writes), len(s.got)) {
		out = append(out, s.got[i].Sub(writes[i]))
	}
	for _, i := range firsts {
		if i < len(out) {
			first = append(first, out[i])
		}
	}
	return in, out, first
}

func mean(ds []time.Duration) float64 {
	if len(ds) == 0 {
		return 0
	}
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	return float64(sum.Microseconds()) / float64(len(ds))
}

// BenchmarkLive plays the scripted exchange through ADK's runner.RunLive
// on its in-memory session service (adk) and through Baton's live
// conversation on the Firestore emulator (baton), each against a fresh
// Gemini Live stand-in, and reports, from the stand-in's frame times and
// the client's: in-µs, the mean delay of a frame of the user's voice from
// the client to the model; out-µs, of a frame of the model's voice from
// the model to the client; first-out-µs, the same for each model turn's
// first frame (the delay the path adds before the model's first output).
// commit measures one commit of an event on the emulator, the goal's unit.
// Run it with go run ./internal/emulator/withemulator go test -bench
// 'Live$' -run '^$' ./live.
func BenchmarkLive(b *testing.B) {
	for _, path := range []struct {
		name string
		play func(b *testing.B) (*modeltest.LiveConn, *stamps)
	}{{"adk", playADK}, {"baton", playBaton}} {
		b.Run(path.name, func(b *testing.B) {
			var in, out, first []time.Duration
			for range b.N {
				c, st := path.play(b)
				i, o, f := st.delays(c)
				in, out, first = append(in, i...), append(out, o...), append(first, f...)
			}
			b.ReportMetric(mean(in), "in-µs")
			b.ReportMetric(mean(out), "out-µs")
			b.ReportMetric(mean(first), "first-out-µs")
			b.ReportMetric(float64(len(out))/float64(b.N), "frames-out/op")
		})
	}
	b.Run("commit", benchCommit)
}

// playADK plays the exchange through ADK's runner.RunLive.
func playADK(b *testing.B) (*modeltest.LiveConn, *stamps) {
	s := modeltest.NewLiveServer(&modeltest.LiveOptions{})
	b.Cleanup(s.Close)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m, err := gemini.NewModel(ctx, liveModel, s.ClientConfig())
	if err != nil {
		b.Fatal(err)
	}
	a, err := llmagent.New(llmagent.Config{Name: "voice", Model: m, Instruction: "Answer briefly."})
	if err != nil {
		b.Fatal(err)
	}
	svc := session.InMemoryService()
	if _, err := svc.Create(ctx, &session.CreateRequest{AppName: "app", UserID: "user", SessionID: "chat"}); err != nil {
		b.Fatal(err)
	}
	r, err := runner.New(runner.Config{AppName: "app", Agent: a, SessionService: svc})
	if err != nil {
		b.Fatal(err)
	}
	setup := live.DefaultSetup()
	sess, events, err := r.RunLive(ctx, "user", "chat", agent.LiveRunConfig{ResponseModalities: setup.ResponseModalities,
		InputAudioTranscription: setup.InputAudioTranscription, OutputAudioTranscription: setup.OutputAudioTranscription})
	if err != nil {
		b.Fatal(err)
	}
	st := newStamps()
	go func() {
		for ev, err := range events {
			if err != nil || ev == nil {
				continue
			}
			if ev.Content != nil && len(ev.Content.Parts) > 0 && ev.Content.Parts[0].InlineData != nil {
				st.received()
			}
			if ev.TurnComplete {
				st.turns <- struct{}{}
			}
		}
	}()
	st.play(b, func(pcm []byte) {
		_ = sess.Send(agent.LiveRequest{RealtimeInput: &genai.Blob{MIMEType: "audio/pcm;rate=16000", Data: pcm}})
	})
	_ = sess.Close()
	return s.Conn(0), st
}

// playBaton plays the exchange through a live conversation.
func playBaton(b *testing.B) (*modeltest.LiveConn, *stamps) {
	w := newWorld(b, &modeltest.LiveOptions{})
	// A lease term longer than the exchange: its renewals are Firestore's
	// only other work, and they wait for nothing.
	in := w.instance(nil, &toolcallback.Options{LeaseTTL: time.Minute}, live.DefaultSetup())
	st := newStamps()
	conv, err := in.runner.Open(b.Context(), live.Request{UserID: user, ChatID: chat, DeviceID: device}, stampClient{st})
	if err != nil {
		b.Fatal(err)
	}
	st.play(b, func(pcm []byte) { _ = conv.Audio(pcm) })
	conv.Close()
	return w.model.Conn(0), st
}

// stampClient is a conversation's client that notes when the model's voice
// and the ends of its turns arrive.
type stampClient struct{ st *stamps }

func (c stampClient) Audio([]byte) error {
	c.st.received()
	return nil
}

func (c stampClient) Send(m live.Message) error {
	if s, ok := m.(live.Signal); ok && s.Type == "turn-complete" {
		c.st.turns <- struct{}{}
	}
	return nil
}

// benchCommit measures one commit of an event on the emulator: the unit of
// the goal that a live turn waits for at most one.
func benchCommit(b *testing.B) {
	w := newWorld(b, &modeltest.LiveOptions{})
	svc := sessionstore.New(w.client, nil)
	created, err := svc.Create(b.Context(), &session.CreateRequest{AppName: "app", UserID: user, SessionID: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := range b.N {
		ev := session.NewEvent(b.Context(), "bench")
		ev.Author, ev.Content = "user", genai.NewContentFromText("a spoken sentence, transcribed", genai.RoleUser)
		if err := svc.AppendEvent(b.Context(), created.Session, ev); err != nil {
			b.Fatalf("append %d: %v", i, err)
		}
	}
}
