package modeltest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/gorilla/websocket"
	"google.golang.org/genai"

	"github.com/baton-run/baton/modeltest"
)

// connect opens a genai live session on s.
func connect(t *testing.T, s *modeltest.LiveServer, cfg *genai.LiveConnectConfig) *genai.Session {
	t.Helper()
	client, err := genai.NewClient(context.Background(), s.ClientConfig())
	if err != nil {
		t.Fatal(err)
	}
	sess, err := client.Live.Connect(context.Background(), "gemini-live-2.5-flash", cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sess.Close() })
	return sess
}

// receive reads messages until one satisfies until, closing the session
// if none does within 10 s.
func receive(t *testing.T, sess *genai.Session, until func(*genai.LiveServerMessage) bool) []*genai.LiveServerMessage {
	t.Helper()
	watchdog := time.AfterFunc(10*time.Second, func() { _ = sess.Close() })
	defer watchdog.Stop()
	var msgs []*genai.LiveServerMessage
	for {
		m, err := sess.Receive()
		if err != nil {
			t.Fatalf("receive after %d messages: %v", len(msgs), err)
		}
		msgs = append(msgs, m)
		if until(m) {
			return msgs
		}
	}
}

func turnComplete(m *genai.LiveServerMessage) bool {
	return m.ServerContent != nil && m.ServerContent.TurnComplete
}

// turn is what a client makes of a model turn's messages.
type turn struct {
	Heard      string   // input transcription
	Text       string   // text parts
	Said       string   // output transcription
	AudioBytes int      // audio inline data
	AudioTypes []string // its media types
	Calls      []string // "id name args"
	Handles    []string // new handles, "-" for resumable false
	Usage      string   // "prompt+response=total"
	Done       bool     // turnComplete seen
}

func summarize(msgs []*genai.LiveServerMessage) turn {
	var tu turn
	for _, m := range msgs {
		if u := m.SessionResumptionUpdate; u != nil {
			h := u.NewHandle
			if !u.Resumable {
				h = "-"
			}
			tu.Handles = append(tu.Handles, h)
		}
		if u := m.UsageMetadata; u != nil {
			tu.Usage = fmt.Sprintf("%d+%d=%d", u.PromptTokenCount, u.ResponseTokenCount, u.TotalTokenCount)
		}
		if m.ToolCall != nil {
			for _, fc := range m.ToolCall.FunctionCalls {
				args, _ := json.Marshal(fc.Args)
				tu.Calls = append(tu.Calls, fmt.Sprintf("%s %s %s", fc.ID, fc.Name, args))
			}
		}
		if sc := m.ServerContent; sc != nil {
			summarizeContent(&tu, sc)
		}
	}
	return tu
}

func summarizeContent(tu *turn, sc *genai.LiveServerContent) {
	if sc.InputTranscription != nil {
		tu.Heard += sc.InputTranscription.Text
	}
	if sc.OutputTranscription != nil {
		tu.Said += sc.OutputTranscription.Text
	}
	tu.Done = tu.Done || sc.TurnComplete
	if sc.ModelTurn == nil {
		return
	}
	for _, p := range sc.ModelTurn.Parts {
		tu.Text += p.Text
		if b := p.InlineData; b != nil {
			tu.AudioBytes += len(b.Data)
			if !slices.Contains(tu.AudioTypes, b.MIMEType) {
				tu.AudioTypes = append(tu.AudioTypes, b.MIMEType)
			}
		}
	}
}

// chunks sends pcm as realtime input in 100 ms blobs.
func chunks(t *testing.T, sess *genai.Session, pcm []byte) {
	t.Helper()
	const size = modeltest.InputRate / 10 * 2
	for i := 0; i < len(pcm); i += size {
		blob := &genai.Blob{MIMEType: "audio/pcm;rate=16000", Data: pcm[i:min(i+size, len(pcm))]}
		if err := sess.SendRealtimeInput(genai.LiveRealtimeInput{Media: blob}); err != nil {
			t.Fatal(err)
		}
	}
}

func say(t *testing.T, sess *genai.Session, text string) {
	t.Helper()
	done := true
	if err := sess.SendClientContent(genai.LiveClientContentInput{Turns: []*genai.Content{genai.NewContentFromText(text, genai.RoleUser)}, TurnComplete: &done}); err != nil {
		t.Fatal(err)
	}
}

var (
	textOut  = []genai.Modality{genai.ModalityText}
	audioOut = []genai.Modality{genai.ModalityAudio}
	weather  = []*genai.Tool{{FunctionDeclarations: []*genai.FunctionDeclaration{{Name: "get_weather", Description: "weather"}}}}
)

// TestLiveServerTurns: each kind of user turn, answered as genai's client
// sees it.
func TestLiveServerTurns(t *testing.T) {
	speech := slices.Concat(modeltest.Tone(2400*time.Millisecond, modeltest.InputRate), modeltest.Silence(600*time.Millisecond, modeltest.InputRate))
	noVAD := &genai.RealtimeInputConfig{AutomaticActivityDetection: &genai.AutomaticActivityDetection{Disabled: true}}
	for _, tc := range []struct {
		name string
		opts modeltest.LiveOptions
		cfg  genai.LiveConnectConfig
		send func(*testing.T, *genai.Session)
		end  func(*genai.LiveServerMessage) bool // the last message to read; nil: turnComplete or toolCall
		want turn
	}{{
		name: "text in, text out, with handles",
		opts: modeltest.LiveOptions{Script: []modeltest.Reply{modeltest.TextReply("Hello there, how are you today?")}},
		cfg:  genai.LiveConnectConfig{ResponseModalities: textOut, SessionResumption: &genai.SessionResumptionConfig{}},
		send: func(t *testing.T, s *genai.Session) { say(t, s, "hi") },
		end:  func(m *genai.LiveServerMessage) bool { return m.SessionResumptionUpdate != nil },
		want: turn{Text: "Hello there, how are you today?", Handles: []string{"handle-1"}, Usage: "1+8=9", Done: true},
	}, {
		name: "speech ended by silence, fixed answer in audio",
		cfg: genai.LiveConnectConfig{ResponseModalities: audioOut,
			InputAudioTranscription: &genai.AudioTranscriptionConfig{}, OutputAudioTranscription: &genai.AudioTranscriptionConfig{}},
		send: func(t *testing.T, s *genai.Session) { chunks(t, s, speech) },
		want: turn{Heard: "(2.4 seconds of audio)", Said: "I heard 2.4 seconds of audio.", AudioBytes: 2 * 24000 * 29 * 60 / 1000,
			AudioTypes: []string{"audio/pcm;rate=24000"}, Usage: "6+8=14", Done: true},
	}, {
		name: "activity signals bound the turn, silence included",
		cfg:  genai.LiveConnectConfig{ResponseModalities: textOut, RealtimeInputConfig: noVAD},
		send: func(t *testing.T, s *genai.Session) {
			if err := s.SendRealtimeInput(genai.LiveRealtimeInput{ActivityStart: &genai.ActivityStart{}}); err != nil {
				t.Fatal(err)
			}
			chunks(t, s, speech)
			if err := s.SendRealtimeInput(genai.LiveRealtimeInput{ActivityEnd: &genai.ActivityEnd{}}); err != nil {
				t.Fatal(err)
			}
		},
		want: turn{Text: "I heard 3.0 seconds of audio.", Usage: "6+8=14", Done: true},
	}, {
		name: "transcribed speech answered by the script",
		opts: modeltest.LiveOptions{
			Transcribe: func(pcm []byte, rate int) string {
				return fmt.Sprintf("weather in Paris, %d bytes at %d", len(pcm), rate)
			},
			Script: []modeltest.Reply{modeltest.CallReply(modeltest.Call("", "get_weather", map[string]any{"city": "Paris"}))},
		},
		cfg:  genai.LiveConnectConfig{ResponseModalities: textOut, Tools: weather, InputAudioTranscription: &genai.AudioTranscriptionConfig{}},
		send: func(t *testing.T, s *genai.Session) { chunks(t, s, speech) },
		want: turn{Heard: "weather in Paris, 92800 bytes at 16000", Calls: []string{`call-1 get_weather {"city":"Paris"}`}},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			tc.opts.T = t
			s := modeltest.NewLiveServer(&tc.opts)
			defer s.Close()
			sess := connect(t, s, &tc.cfg)
			tc.send(t, sess)
			end := tc.end
			if end == nil {
				end = func(m *genai.LiveServerMessage) bool { return turnComplete(m) || m.ToolCall != nil }
			}
			got := summarize(receive(t, sess, end))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("turn (-want +got):\n%s", diff)
			}
		})
	}
}

// answer sends the responses to calls.
func answer(t *testing.T, sess *genai.Session, responses ...*genai.FunctionResponse) {
	t.Helper()
	if err := sess.SendToolResponse(genai.LiveToolResponseInput{FunctionResponses: responses}); err != nil {
		t.Fatal(err)
	}
}

// TestLiveServerToolCalls: a blocking call holds the turn (and the handles)
// until its response; a NON_BLOCKING one does not, and its SILENT response
// brings no turn; a response to no waiting call reaches nothing.
func TestLiveServerToolCalls(t *testing.T) {
	s := modeltest.NewLiveServer(&modeltest.LiveOptions{T: t, Script: []modeltest.Reply{
		modeltest.CallReply(modeltest.Call("", "get_weather", map[string]any{"city": "Paris"})),
		modeltest.EchoReply,
		modeltest.CallReply(modeltest.Call("", "play", nil)),
		modeltest.EchoReply,
	}})
	defer s.Close()
	tools := append(slices.Clone(weather), &genai.Tool{FunctionDeclarations: []*genai.FunctionDeclaration{{Name: "play", Behavior: genai.BehaviorNonBlocking}}})
	sess := connect(t, s, &genai.LiveConnectConfig{ResponseModalities: textOut, Tools: tools, SessionResumption: &genai.SessionResumptionConfig{}})
	isCall := func(m *genai.LiveServerMessage) bool { return m.ToolCall != nil }
	isUpdate := func(m *genai.LiveServerMessage) bool { return m.SessionResumptionUpdate != nil }

	say(t, sess, "weather?")
	got := summarize(slices.Concat(receive(t, sess, isCall), receive(t, sess, isUpdate)))
	want := turn{Calls: []string{`call-1 get_weather {"city":"Paris"}`}, Handles: []string{"-"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("blocking call (-want +got):\n%s", diff)
	}
	answer(t, sess, &genai.FunctionResponse{ID: "call-1", Name: "get_weather", Response: map[string]any{"temp": 20}})
	got = summarize(slices.Concat(receive(t, sess, turnComplete), receive(t, sess, isUpdate)))
	want = turn{Text: `saw get_weather={"temp":20}`, Handles: []string{"handle-2"}, Usage: "15+7=22", Done: true}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("after the response (-want +got):\n%s", diff)
	}

	say(t, sess, "play")
	got = summarize(receive(t, sess, turnComplete))
	want = turn{Calls: []string{"call-3 play null"}, Usage: "22+2=24", Done: true}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("non-blocking call (-want +got):\n%s", diff)
	}
	answer(t, sess, &genai.FunctionResponse{ID: "call-3", Name: "play", Response: map[string]any{"ok": true}, Scheduling: genai.FunctionResponseSchedulingSilent})
	answer(t, sess, &genai.FunctionResponse{ID: "call-99", Name: "play", Response: map[string]any{"ok": true}})
	say(t, sess, "what now?")
	got = summarize(receive(t, sess, turnComplete))
	if got.Text != "saw text=what now?" || s.Turns() != 4 {
		t.Fatalf("after a silent response, turn %q (model turns %d), want the echo of the next user turn (4)", got.Text, s.Turns())
	}
	if o := s.Conn(0).Orphans(); len(o) != 1 || o[0].ID != "call-99" {
		t.Fatalf("orphans = %v, want call-99", o)
	}
	if seen := modeltest.DumpContents(s.Conn(0).Seen()); !strings.Contains(seen, "response(call-3 play") || strings.Contains(seen, "call-99") {
		t.Fatalf("the model saw:\n%s\nwant the silent response and not the orphan", seen)
	}
}

// TestLiveServerResume: a handle resumes what the model had seen when it
// was issued; a forgotten one is refused with 1007.
func TestLiveServerResume(t *testing.T) {
	s := modeltest.NewLiveServer(&modeltest.LiveOptions{T: t, Repeat: modeltest.EchoReply})
	defer s.Close()
	cfg := &genai.LiveConnectConfig{ResponseModalities: textOut, SessionResumption: &genai.SessionResumptionConfig{}}
	first := connect(t, s, cfg)
	say(t, first, "remember me")
	receive(t, first, turnComplete)
	handle := summarize(receive(t, first, func(m *genai.LiveServerMessage) bool { return m.SessionResumptionUpdate != nil })).Handles[0]
	_ = first.Close()

	resumed := connect(t, s, &genai.LiveConnectConfig{ResponseModalities: textOut, SessionResumption: &genai.SessionResumptionConfig{Handle: handle}})
	say(t, resumed, "again")
	receive(t, resumed, turnComplete)
	want := "  [0] user: text(\"remember me\")\n  [1] model: text(\"saw text=remember me\")\n  [2] user: text(\"again\")\n  [3] model: text(\"saw text=again\")\n"
	if diff := cmp.Diff(want, modeltest.DumpContents(s.Conn(1).Seen())); diff != "" {
		t.Fatalf("resumed model's view (-want +got):\n%s", diff)
	}
	if s.Conn(1).Resumed() != handle {
		t.Fatalf("Resumed() = %q, want %q", s.Conn(1).Resumed(), handle)
	}

	s.Forget(handle)
	client, err := genai.NewClient(context.Background(), s.ClientConfig())
	if err != nil {
		t.Fatal(err)
	}
	_, err = client.Live.Connect(context.Background(), "gemini-live-2.5-flash", &genai.LiveConnectConfig{SessionResumption: &genai.SessionResumptionConfig{Handle: handle}})
	if ce := (*websocket.CloseError)(nil); !errors.As(err, &ce) || ce.Code != modeltest.CloseInvalidArgument {
		t.Fatalf("connect with a forgotten handle: %v, want close %d", err, modeltest.CloseInvalidArgument)
	}
}

// TestLiveServerEnds: how a test ends a connection, as the client sees it.
func TestLiveServerEnds(t *testing.T) {
	for _, tc := range []struct {
		name     string
		end      func(*modeltest.LiveConn)
		want     func(*genai.LiveServerMessage) bool // a message before the end, if any
		wantCode int                                 // close code (1006: cut without one)
	}{
		{"goAway, then 1011 at the deadline", func(c *modeltest.LiveConn) { c.GoAway(10 * time.Millisecond) },
			func(m *genai.LiveServerMessage) bool {
				return m.GoAway != nil && m.GoAway.TimeLeft == 10*time.Millisecond
			}, 1011},
		{"connection limit", func(c *modeltest.LiveConn) { c.CloseWith(modeltest.CloseDeadline, "Deadline expired") }, nil, 1011},
		{"dropped", (*modeltest.LiveConn).Drop, nil, websocket.CloseAbnormalClosure},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := modeltest.NewLiveServer(&modeltest.LiveOptions{T: t})
			defer s.Close()
			sess := connect(t, s, &genai.LiveConnectConfig{})
			receive(t, sess, func(m *genai.LiveServerMessage) bool { return m.SetupComplete != nil })
			tc.end(s.Conn(0))
			if tc.want != nil {
				receive(t, sess, tc.want)
			}
			_, err := sess.Receive()
			if ce := (*websocket.CloseError)(nil); !errors.As(err, &ce) || ce.Code != tc.wantCode {
				t.Fatalf("Receive: %v, want close %d", err, tc.wantCode)
			}
		})
	}
}

// TestLiveServerCancellation: a user turn into a blocking call's wait
// cancels the call; its late response is an orphan.
func TestLiveServerCancellation(t *testing.T) {
	s := modeltest.NewLiveServer(&modeltest.LiveOptions{T: t, Script: []modeltest.Reply{
		modeltest.CallReply(modeltest.Call("", "get_weather", nil)), modeltest.EchoReply,
	}})
	defer s.Close()
	sess := connect(t, s, &genai.LiveConnectConfig{ResponseModalities: textOut, Tools: weather})
	say(t, sess, "weather?")
	receive(t, sess, func(m *genai.LiveServerMessage) bool { return m.ToolCall != nil })
	say(t, sess, "never mind")
	msgs := receive(t, sess, turnComplete)
	if c := msgs[0].ToolCallCancellation; c == nil || !slices.Equal(c.IDs, []string{"call-1"}) {
		t.Fatalf("first message after the interruption: %+v, want the cancellation of call-1", msgs[0])
	}
	answer(t, sess, &genai.FunctionResponse{ID: "call-1", Name: "get_weather", Response: map[string]any{"late": true}})
	if got := summarize(msgs).Text; got != "saw text=never mind" {
		t.Fatalf("answer %q, want the echo of the interruption", got)
	}
	if s.Conn(0).Count("toolCallCancellation") != 1 {
		t.Fatal("want one toolCallCancellation frame")
	}
}

// TestLiveServerRefusesSetup: what Gemini 3.8 Live refuses in a setup (a
// thinking configuration, proactive audio off, affective dialog) is
// closed with 1007; the same setup without it connects.
func TestLiveServerRefusesSetup(t *testing.T) {
	s := modeltest.NewLiveServer(&modeltest.LiveOptions{T: t, Repeat: modeltest.EchoReply})
	defer s.Close()
	client, err := genai.NewClient(context.Background(), s.ClientConfig())
	if err != nil {
		t.Fatal(err)
	}
	off, on := false, true
	for _, tc := range []struct {
		name   string
		cfg    genai.LiveConnectConfig
		refuse bool
	}{
		{"thinking configuration", genai.LiveConnectConfig{ThinkingConfig: &genai.ThinkingConfig{ThinkingLevel: genai.ThinkingLevelLow}}, true},
		{"proactive audio off", genai.LiveConnectConfig{Proactivity: &genai.ProactivityConfig{ProactiveAudio: &off}}, true},
		{"affective dialog", genai.LiveConnectConfig{EnableAffectiveDialog: &on}, true},
		{"audio with transcription", genai.LiveConnectConfig{ResponseModalities: []genai.Modality{genai.ModalityAudio},
			OutputAudioTranscription: &genai.AudioTranscriptionConfig{}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			cfg.ResponseModalities = append(cfg.ResponseModalities, textOut...)
			sess, err := client.Live.Connect(context.Background(), "gemini-3.8-live", &cfg)
			if err == nil {
				defer sess.Close()
				_, err = sess.Receive()
			}
			ce := (*websocket.CloseError)(nil)
			refused := errors.As(err, &ce) && ce.Code == modeltest.CloseInvalidArgument
			if refused != tc.refuse {
				t.Errorf("connect = %v, want refused %v", err, tc.refuse)
			}
		})
	}
}
