package geminilive_test

import (
	"context"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/runner"
	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/functiontool"
	"google.golang.org/adk/v2/tool/toolconfirmation"
	"google.golang.org/genai"

	"github.com/baton-run/baton/geminilive"
	"github.com/baton-run/baton/modeltest"
)

// toolset stands in for an MCP server's toolset: tools resolved when the
// request is built.
type toolset []tool.Tool

func (toolset) Name() string                                        { return "notes" }
func (ts toolset) Tools(agent.ReadonlyContext) ([]tool.Tool, error) { return ts, nil }

func mustTool[A any](t *testing.T, cfg functiontool.Config, f func(agent.Context, A) (map[string]any, error)) tool.Tool {
	t.Helper()
	tl, err := functiontool.New(cfg, f)
	if err != nil {
		t.Fatal(err)
	}
	return tl
}

// captureVoice captures agent "voice" (instruction, a server tool, a tool
// that needs approval, a toolset's tool) on a session holding earlier.
func captureVoice(t *testing.T) (*geminilive.Agent, session.Service) {
	t.Helper()
	ctx := context.Background()
	weather := mustTool(t, functiontool.Config{Name: "get_weather", Description: "weather"},
		func(_ agent.Context, a struct{ City string }) (map[string]any, error) {
			return map[string]any{"city": a.City, "temp": 21}, nil
		})
	book := mustTool(t, functiontool.Config{Name: "book_table", Description: "books", RequireConfirmation: true},
		func(agent.Context, struct{}) (map[string]any, error) { return map[string]any{"booked": true}, nil })
	note := mustTool(t, functiontool.Config{Name: "add_note", Description: "notes"},
		func(agent.Context, struct{ Text string }) (map[string]any, error) {
			return map[string]any{"ok": true}, nil
		})
	a, err := llmagent.New(llmagent.Config{Name: "voice", Model: &modeltest.Strict{T: t}, Instruction: "Answer briefly.",
		Tools: []tool.Tool{weather, book}, Toolsets: []tool.Toolset{toolset{note}}})
	if err != nil {
		t.Fatal(err)
	}
	svc := chatWith(t, earlier...)
	captured, err := geminilive.Capture(ctx, runner.Config{AppName: "app", Agent: a, SessionService: svc}, "user", "chat")
	if err != nil {
		t.Fatal(err)
	}
	return captured, svc
}

// Capture gives the live setup what ADK would send the agent's model, and
// stores nothing.
func TestCapture(t *testing.T) {
	a, svc := captureVoice(t)
	got, err := svc.Get(context.Background(), &session.GetRequest{AppName: "app", UserID: "user", SessionID: "chat"})
	if err != nil {
		t.Fatal(err)
	}
	if n := got.Session.Events().Len(); n != len(earlier) {
		t.Fatalf("session holds %d events after the capture, want %d", n, len(earlier))
	}
	cfg := a.ConnectConfig(&genai.LiveConnectConfig{ResponseModalities: []genai.Modality{genai.ModalityAudio}})
	var names []string
	for _, tl := range cfg.Tools {
		for _, d := range tl.FunctionDeclarations {
			names = append(names, d.Name)
		}
	}
	slices.Sort(names)
	if diff := cmp.Diff([]string{"add_note", "book_table", "get_weather"}, names); diff != "" {
		t.Errorf("declarations (-want +got):\n%s", diff)
	}
	if instr := cfg.SystemInstruction.Parts[0].Text; instr != "Answer briefly.\n\nYou are an agent. Your internal name is \"voice\"." {
		t.Errorf("system instruction %q", instr)
	}
	if cfg.ResponseModalities[0] != genai.ModalityAudio {
		t.Error("base configuration lost")
	}
	if diff := cmp.Diff(modeltest.DumpContents(earlier), modeltest.DumpContents(a.History())); diff != "" {
		t.Errorf("history, without ADK's continue turn (-want +got):\n%s", diff)
	}
}

// The agent's tools run off the socket loops, and an approval completes in
// live mode: the tool runs once with the person's confirmation (compare
// TestADKLiveHasNoConfirmations).
func TestAgentToolsLive(t *testing.T) {
	a, _ := captureVoice(t)
	s := modeltest.NewLiveServer(&modeltest.LiveOptions{T: t, Script: []modeltest.Reply{
		modeltest.CallReply(modeltest.Call("", "get_weather", map[string]any{"City": "Oslo"})), modeltest.EchoReply,
		modeltest.CallReply(modeltest.Call("", "book_table", nil)), modeltest.EchoReply,
	}})
	defer s.Close()
	sess := open(t, s, geminilive.Config{Setup: a.ConnectConfig(&genai.LiveConnectConfig{ResponseModalities: []genai.Modality{genai.ModalityText}}),
		History: func(context.Context) ([]*genai.Content, error) { return a.History(), nil }})
	run := func(fc *genai.FunctionCall, confirmation *toolconfirmation.ToolConfirmation) (*genai.FunctionResponse, *session.EventActions) {
		t.Helper()
		resp, actions, err := a.Run(context.Background(), fc, confirmation)
		if err != nil {
			t.Fatal(err)
		}
		return resp, actions
	}

	if err := sess.SendText("weather in Oslo?"); err != nil {
		t.Fatal(err)
	}
	evs := until(t, sess, geminilive.ToolCall)
	resp, _ := run(evs[len(evs)-1].Calls[0], nil)
	if err := sess.Deliver(resp); err != nil {
		t.Fatal(err)
	}
	if got := texts(until(t, sess, geminilive.TurnComplete)); got != `saw get_weather={"city":"Oslo","temp":21}` {
		t.Fatalf("answer %q", got)
	}

	if err := sess.SendText("book a table"); err != nil {
		t.Fatal(err)
	}
	evs = until(t, sess, geminilive.ToolCall)
	fc := evs[len(evs)-1].Calls[0]
	asked, actions := run(fc, nil)
	if _, ok := actions.RequestedToolConfirmations[fc.ID]; !ok || asked.Response["error"] == nil {
		t.Fatalf("without a confirmation: %v, actions %+v; want a confirmation request", asked.Response, actions)
	}
	approved, _ := run(fc, &toolconfirmation.ToolConfirmation{Confirmed: true})
	if err := sess.Deliver(approved); err != nil {
		t.Fatal(err)
	}
	if got := texts(until(t, sess, geminilive.TurnComplete)); got != `saw book_table={"booked":true}` {
		t.Fatalf("answer %q", got)
	}
	if setup := s.Conn(0).Setup(); setup.SystemInstruction == nil || len(setup.Tools[0].FunctionDeclarations) != 3 {
		t.Fatalf("model's setup lacks the agent's instruction or tools: %+v", setup)
	}
}
