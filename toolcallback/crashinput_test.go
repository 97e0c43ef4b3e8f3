package toolcallback_test

import (
	"errors"
	"fmt"
	"testing"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/functiontool"

	"github.com/baton-run/baton/modeltest"
	"github.com/baton-run/baton/toolcallback"
	"github.com/baton-run/baton/userinput"
)

// The crash paths of a tool that asks for input twice (as an MCP server's
// multi-round-trip requests do): the turn that pauses on the first round,
// the answer whose tools/call asks the second round, and the answer that
// ends the call.
func init() {
	crashPaths = append(crashPaths,
		crashPath{
			name:   "turn-that-pauses-for-input",
			script: []reply{callReply(call("r1", "rename", map[string]any{"id": "n1"}))},
			run:    func(w *crashWorld, team *toolcallback.Team) []*session.Event { return w.turn(team, "", "rename n1") },
			took:   tookNewChat,
		},
		crashPath{
			name:        "answer-whose-call-asks-again",
			setupScript: []reply{callReply(call("r1", "rename", map[string]any{"id": "n1"}))},
			setup:       func(w *crashWorld, team *toolcallback.Team) error { return w.turnErr(team, "", "rename n1") },
			run: func(w *crashWorld, team *toolcallback.Team) []*session.Event {
				return w.answerInput(team)
			},
			took: tookShortResume,
		},
		crashPath{
			name:        "answer-that-ends-the-input-call",
			setupScript: []reply{callReply(call("r1", "rename", map[string]any{"id": "n1"}))},
			setup: func(w *crashWorld, team *toolcallback.Team) error {
				if err := w.turnErr(team, "", "rename n1"); err != nil {
					return err
				}
				if events := w.answerInput(team); len(events) == 0 {
					return errors.New("the first answer resumed nothing")
				}
				return nil
			},
			script: []reply{echoReply},
			run: func(w *crashWorld, team *toolcallback.Team) []*session.Event {
				return w.answerInput(team)
			},
			took: tookShortResume,
		},
	)
}

// renameTool asks for a title, then for a confirmation, then renames; the
// request state says which round an answer belongs to.
func (w *crashWorld) renameTool() tool.Tool {
	t, err := functiontool.New(functiontool.Config{Name: "rename", Description: "renames a note"},
		func(ctx agent.Context, a struct {
			ID string `json:"id"`
		}) (map[string]any, error) {
			reply, err := userinput.ReplyOf(ctx)
			if err != nil {
				return nil, err
			}
			round := 0
			if reply != nil {
				round = reply.Round
				if reply.State != fmt.Sprintf("state-%d", round) {
					return nil, fmt.Errorf("state %q for round %d", reply.State, round)
				}
			}
			if round < 2 {
				next := round + 1
				err := userinput.Ask(ctx, userinput.Request{Tool: "rename", Message: "Rename?", Round: next,
					Requests: map[string]any{"q": map[string]any{"method": "elicitation/create"}}, State: fmt.Sprintf("state-%d", next)})
				return map[string]any{"status": "asking"}, err
			}
			w.renamed.Add(1)
			return map[string]any{"renamed": a.ID}, nil
		})
	if err != nil {
		w.t.Fatal(err)
	}
	return t
}

// acceptInput accepts every request of the input call c.
func acceptInput(c *toolcallback.Call) toolcallback.Answer {
	responses := map[string]any{}
	for id := range c.Input.Requests {
		responses[id] = map[string]any{"action": "accept", "content": map[string]any{"ok": true}}
	}
	return toolcallback.Answer{Output: map[string]any{"responses": responses}}
}

// answerInput accepts the chat's one pending input call.
func (w *crashWorld) answerInput(team *toolcallback.Team) []*session.Event {
	state, err := team.Pending(w.t.Context(), toolcallback.PendingRequest{UserID: "user-1", ChatID: crashChat, ClientID: crashClient})
	if err != nil || len(state.Calls) != 1 || state.Calls[0].Kind != toolcallback.KindInput {
		w.t.Fatalf("Pending() = %v, %v; want the input call", state, err)
	}
	return w.answer(team, state.Calls[0].ID, acceptInput(state.Calls[0]))
}

// checkNoPlaceholderLeft: after the recovery, the model never reads the
// input tool's placeholder as the outcome of its call: the call ended,
// expired, or was closed as interrupted.
func checkNoPlaceholderLeft(t *testing.T, m *modeltest.Strict) {
	t.Helper()
	req := m.LastRequest()
	if req == nil {
		return
	}
	for _, c := range req.Contents {
		for _, p := range c.Parts {
			if fr := p.FunctionResponse; fr != nil && fr.Name == "rename" && fr.Response["status"] == "asking" {
				t.Errorf("the model reads the rename call's placeholder as its outcome:\n%s", modeltest.DumpContents(req.Contents))
			}
		}
	}
}
