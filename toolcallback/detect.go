package toolcallback

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/tool/toolconfirmation"
	"google.golang.org/genai"
)

// runState is what one running invocation knows beyond ADK's context: the
// client that started it and the pausing tools its model requests offered.
// It travels in the invocation's context.
type runState struct {
	client string

	mu      sync.Mutex
	pausing map[string]pauseSpec // by tool name
}

type runStateKey struct{}

func withRunState(ctx context.Context, client string) context.Context {
	return context.WithValue(ctx, runStateKey{}, &runState{client: client, pausing: map[string]pauseSpec{}})
}

func runStateFrom(ctx context.Context) *runState {
	st, _ := ctx.Value(runStateKey{}).(*runState)
	return st
}

func (st *runState) declare(name string, spec pauseSpec) {
	st.mu.Lock()
	st.pausing[name] = spec
	st.mu.Unlock()
}

func (st *runState) spec(name string) (pauseSpec, bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	spec, ok := st.pausing[name]
	return spec, ok
}

// detected is a paused call found in an event about to be stored.
type detected struct {
	id, tool, step, originalID, invocation, hint string
	args                                         map[string]any
	spec                                         pauseSpec
	created                                      time.Time
}

// pausedBy returns the calls that ev pauses: calls of the invocation's
// pausing tools (recognised by name, before the tool runs) and ADK's
// confirmation requests for approval tools. prior is the session's history
// before ev, where an approval's original call is found.
func pausedBy(st *runState, prior session.Events, ev *session.Event) []detected {
	if ev == nil || ev.Partial || ev.Content == nil {
		return nil
	}
	var out []detected
	for _, p := range ev.Content.Parts {
		fc := p.FunctionCall
		if fc == nil {
			continue
		}
		if fc.Name == toolconfirmation.FunctionCallName {
			if d, ok := approvalRequest(prior, ev, fc); ok {
				out = append(out, d)
			}
			continue
		}
		spec, ok := st.spec(fc.Name)
		if !ok {
			continue
		}
		out = append(out, detected{
			id: fc.ID, tool: fc.Name, step: ev.ID, originalID: fc.ID, invocation: ev.InvocationID,
			args: fc.Args, spec: spec, created: ev.Timestamp,
		})
	}
	return out
}

// approvalRequest reads ADK's confirmation request fc: the call that needs
// approval, and the model step it belongs to.
func approvalRequest(prior session.Events, ev *session.Event, fc *genai.FunctionCall) (detected, bool) {
	original, err := toolconfirmation.OriginalCallFrom(fc)
	if err != nil || original == nil {
		return detected{}, false
	}
	step := ev.ID
	for i := prior.Len() - 1; i >= 0; i-- {
		if holdsCall(prior.At(i), original.ID) {
			step = prior.At(i).ID
			break
		}
	}
	var hint string
	if raw, err := json.Marshal(fc.Args["toolConfirmation"]); err == nil {
		var tc toolconfirmation.ToolConfirmation
		if json.Unmarshal(raw, &tc) == nil {
			hint = tc.Hint
		}
	}
	return detected{
		id: fc.ID, tool: original.Name, step: step, originalID: original.ID, invocation: ev.InvocationID,
		args: original.Args, spec: pauseSpec{Kind: KindApproval}, hint: hint, created: ev.Timestamp,
	}, true
}

func holdsCall(ev *session.Event, id string) bool {
	if ev.Content == nil {
		return false
	}
	for _, p := range ev.Content.Parts {
		if p.FunctionCall != nil && p.FunctionCall.ID == id {
			return true
		}
	}
	return false
}
