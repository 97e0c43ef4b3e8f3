package mcpregistry_test

import (
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/genai"

	"github.com/baton-run/baton/internal/firestoretest"
	"github.com/baton-run/baton/mcpregistry"
	"github.com/baton-run/baton/toolcallback"
	"github.com/baton-run/baton/userinput"
)

// liveTurn runs a turn on a server of 2025-11-25 whose tool asks on the
// live call; each time the stream shows a form, answer is called with its
// call id and round (from 1). It returns what the model said at the end.
func (in *inputInstance) liveTurn(text string, answer func(id string, round int)) string {
	in.t.Helper()
	inv, _, err := in.team.Turn(in.t.Context(), toolcallback.TurnRequest{UserID: "user-1", ChatID: "chat-1", ClientID: "tab",
		Content: genai.NewContentFromText(text, genai.RoleUser)})
	if err != nil {
		in.t.Fatal(err)
	}
	var last string
	round := 0
	for ev, err := range inv.Events() {
		if err != nil {
			in.t.Fatalf("invocation: %v", err)
		}
		for _, p := range partsOf(ev.Content) {
			if fc := p.FunctionCall; fc != nil && fc.Name == userinput.ToolName {
				if fc.Args["live"] != true || !slicesContain(ev.LongRunningToolIDs, fc.ID) {
					in.t.Errorf("form %v is not shown as a live browser call", fc)
				}
				round++
				answer(fc.ID, round)
			}
			if p.Text != "" && !ev.Partial {
				last = p.Text
			}
		}
	}
	return last
}

func slicesContain(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func (in *inputInstance) mustAnswer(id string, responses map[string]any) {
	in.t.Helper()
	res, err := in.answer("chat-1", id, responses)
	if err != nil || res.Invocation != nil {
		in.t.Errorf("answer %s: %+v, %v; want it recorded, nothing resumed", id, res, err)
	}
}

func TestElicitationOnTheLiveCall(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		another bool
		action  string
		want    string
	}{
		{name: "accepted on the same instance", action: "accept", want: "note n1 deleted"},
		{name: "accepted on another instance", another: true, action: "accept", want: "note n1 deleted"},
		{name: "declined", action: "decline", want: "note n1 kept: decline"},
		{name: "cancelled", another: true, action: "cancel", want: "note n1 kept: cancel"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := newAskingServer(t, false)
			client := firestoretest.NewClient(t)
			in := newInputInstance(t, client, srv.URL, nil)
			answering := in
			if tc.another {
				other, _ := firestoretest.Reopen(t, client)
				answering = newInputInstance(t, other, srv.URL, nil)
			}
			got := in.liveTurn("delete_note n1", func(id string, _ int) {
				r := map[string]any{"action": tc.action}
				if tc.action == "accept" {
					r["content"] = map[string]any{"confirm": true}
				}
				answering.mustAnswer(id, map[string]any{"elicitation": r})
			})
			if !strings.Contains(got, tc.want) {
				t.Errorf("the model saw %q; want %q", got, tc.want)
			}
			if srv.calls.Load() != 2 { // the go-sdk server calls its handler again with the answer
				t.Errorf("server handled %d calls; want 2", srv.calls.Load())
			}
		})
	}
}

func TestElicitationDuplicateAnswers(t *testing.T) {
	t.Parallel()
	srv := newAskingServer(t, false)
	in, second := twoInputInstances(t, srv.URL)
	instances := []*inputInstance{in, second}
	var recorded, same atomic.Int32
	got := in.liveTurn("delete_note n1", func(id string, _ int) {
		var wg sync.WaitGroup
		for i := range 20 {
			wg.Go(func() {
				_, err := instances[i%2].answer("chat-1", id, map[string]any{"elicitation": accept(map[string]any{"confirm": true})})
				var already *toolcallback.AlreadyResolvedError
				switch {
				case errors.As(err, &already) && already.Same:
					same.Add(1)
				case err != nil:
					t.Errorf("answer: %v", err)
				default:
					recorded.Add(1)
				}
			})
		}
		wg.Wait()
	})
	if recorded.Load() != 1 || same.Load() != 19 {
		t.Errorf("%d answers recorded, %d got the recorded outcome; want 1 and 19", recorded.Load(), same.Load())
	}
	if !strings.Contains(got, "note n1 deleted") || strings.Join(srv.done(), ",") != "deleted n1" {
		t.Errorf("model saw %q, server did %v; want n1 deleted once", got, srv.done())
	}
}

func TestElicitationTwoQuestions(t *testing.T) {
	t.Parallel()
	srv := newAskingServer(t, false)
	in, second := twoInputInstances(t, srv.URL)
	got := in.liveTurn("retitle_note n1", func(id string, round int) {
		if round == 1 {
			second.mustAnswer(id, map[string]any{"elicitation": accept(map[string]any{"title": "Groceries"})})
			return
		}
		in.mustAnswer(id, map[string]any{"elicitation": accept(map[string]any{"confirm": true})})
	})
	if !strings.Contains(got, "note n1 renamed to Groceries") {
		t.Errorf("the model saw %q; want the rename", got)
	}
}

// Past its share of the call's timeout, the instance declines and tells
// the model; a late answer is refused.
func TestElicitationUnansweredIsDeclined(t *testing.T) {
	t.Parallel()
	srv := newAskingServer(t, false)
	in := newInputInstanceWith(t, firestoretest.NewClient(t), srv.URL, nil, &mcpregistry.Options{CallTimeout: 4 * time.Second})
	var asked string
	got := in.liveTurn("delete_note n1", func(id string, _ int) { asked = id })
	if !strings.Contains(got, "note n1 kept: decline") || !strings.Contains(got, "did not answer") {
		t.Errorf("the model saw %q; want the decline and why", got)
	}
	_, err := in.answer("chat-1", asked, map[string]any{"elicitation": accept(map[string]any{"confirm": true})})
	if !errors.Is(err, toolcallback.ErrExpired) {
		t.Errorf("late answer: %v; want ErrExpired", err)
	}
	if strings.Join(srv.done(), ",") != "kept n1 (decline)" {
		t.Errorf("server did %v", srv.done())
	}
}
