package live_test

import (
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/tool/functiontool"

	"github.com/baton-run/baton/live"
	"github.com/baton-run/baton/modeltest"
	"github.com/baton-run/baton/toolcallback"
	"github.com/baton-run/baton/userinput"
)

// question is an input request for a title, as an MCP server asks it.
var question = userinput.Request{Tool: "rename", Message: "New title?", Round: 1,
	Requests: map[string]any{"q": map[string]any{"method": "elicitation/create"}}, State: "server-state"}

// titled answers question.
var titled = map[string]any{"responses": map[string]any{"q": map[string]any{"action": "accept", "content": map[string]any{"title": "Sea"}}}}

// TestToolsThatAsk: a tool that pauses for a person's input (userinput.Ask,
// as a stateless MCP server's tool does) is asked as in text mode and runs
// again with the answer, once; a tool that asks while it runs (AskInCall, as
// an MCP server that elicits on the live call) shows its question to the
// device and gets the answer without pausing anything.
func TestToolsThatAsk(t *testing.T) {
	w := newWorld(t, &modeltest.LiveOptions{Script: []modeltest.Reply{
		modeltest.CallReply(modeltest.Call("", "rename", nil)), modeltest.EchoReply,
		modeltest.CallReply(modeltest.Call("", "retitle", nil)), modeltest.EchoReply,
	}})
	var renamed atomic.Int32
	rename, err := functiontool.New(functiontool.Config{Name: "rename", Description: "renames"},
		func(ctx agent.Context, _ struct{}) (map[string]any, error) {
			reply, err := userinput.ReplyOf(ctx)
			if err != nil || reply == nil {
				return map[string]any{"status": "asking"}, userinput.Ask(ctx, question)
			}
			if reply.State != "server-state" {
				t.Errorf("the tool got state %q back, want its own", reply.State)
			}
			renamed.Add(1)
			return map[string]any{"title": reply.Responses["q"].Content["title"]}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	retitle, err := functiontool.New(functiontool.Config{Name: "retitle", Description: "retitles"},
		func(ctx agent.Context, _ struct{}) (map[string]any, error) {
			reply, err := toolcallback.AskInCall(ctx, "retitle", question, 10*time.Second)
			if err != nil {
				return nil, err
			}
			return map[string]any{"title": reply.Responses["q"].Content["title"]}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	w.tools = append(w.tools, rename, retitle)
	conv, cl := w.instance(nil, nil, nil).open(t, chat, device)
	for i, ask := range []string{"rename it", "retitle it"} {
		if err := conv.Text(ask); err != nil {
			t.Fatal(err)
		}
		call := cl.toolCall(i + 1)
		if call.Kind != "input" || call.Input["message"] != "New title?" || call.Input["state"] != nil {
			t.Fatalf("%s: the question was shown as %+v (the server's state must not be)", ask, call)
		}
		if err := conv.Answer(t.Context(), live.Answer{ToolCallID: call.ToolCallID, Output: titled}); err != nil {
			t.Fatal(err)
		}
		if said := cl.said(i + 1); said.Text != `saw `+[]string{"rename", "retitle"}[i]+`={"title":"Sea"}` {
			t.Fatalf("%s: the model said %q", ask, said.Text)
		}
		// The client knows the question by its own id: it is settled.
		cl.await(ask+": the question settled", 1, func(m live.Message) bool {
			r, ok := m.(live.ToolResult)
			return ok && r.ToolCallID == call.ToolCallID && r.ErrorText == ""
		})
	}
	conv.Close()
	if n := renamed.Load(); n != 1 {
		t.Errorf("the tool that paused finished %d times, want once", n)
	}
	checkTextTurn(t, w, w.instance(nil, nil, nil))
}
