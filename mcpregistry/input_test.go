package mcpregistry_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"cloud.google.com/go/firestore"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/tool/toolconfirmation"
	"google.golang.org/genai"

	"github.com/baton-run/baton/internal/firestoretest"
	"github.com/baton-run/baton/internal/teamtest"
	"github.com/baton-run/baton/mcpregistry"
	"github.com/baton-run/baton/modeltest"
	"github.com/baton-run/baton/sessionstore"
	"github.com/baton-run/baton/toolcallback"
)

// askingServer is an MCP server in the test process whose tools ask the
// person before acting: delete_note asks once ("confirm"), rename_note
// twice (a new title, then a confirmation). Its request states are signed
// with its own key, as a server that gives its state to clients must, so a
// state a client forged or altered is refused here. stateless picks the
// protocol: a stateless handler speaks 2026-07-28, a stateful one
// 2025-11-25.
type askingServer struct {
	URL     string
	key     []byte
	calls   atomic.Int32 // tools/call requests received
	mu      sync.Mutex
	actions []string // what the tools did, in order
}

func newAskingServer(t *testing.T, stateless bool) *askingServer {
	t.Helper()
	a := &askingServer{key: []byte("server-secret")}
	s := mcp.NewServer(&mcp.Implementation{Name: "notes", Version: "1"}, nil)
	schema := json.RawMessage(`{"type":"object","properties":{"id":{"type":"string"}},"required":["id"]}`)
	s.AddTool(&mcp.Tool{Name: "delete_note", InputSchema: schema}, a.deleteNote)
	s.AddTool(&mcp.Tool{Name: "rename_note", InputSchema: schema}, a.renameNote)
	s.AddTool(&mcp.Tool{Name: "retitle_note", InputSchema: schema}, a.retitleNote)
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: stateless})
	hs := httptest.NewServer(h)
	a.URL = hs.URL
	t.Cleanup(func() {
		hs.CloseClientConnections()
		hs.Close()
	})
	return a
}

func (a *askingServer) did(action string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.actions = append(a.actions, action)
}

func (a *askingServer) done() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.actions...)
}

// sign and open carry the server's state: "step:id" with a MAC.
func (a *askingServer) sign(state string) string {
	m := hmac.New(sha256.New, a.key)
	m.Write([]byte(state))
	return base64.RawURLEncoding.EncodeToString([]byte(state)) + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

func (a *askingServer) open(signed string) (string, bool) {
	body, mac, ok := strings.Cut(signed, ".")
	raw, err := base64.RawURLEncoding.DecodeString(body)
	if !ok || err != nil || a.sign(string(raw)) != signed || mac == "" {
		return "", false
	}
	return string(raw), true
}

func confirmForm(message string) *mcp.ElicitParams {
	return &mcp.ElicitParams{Mode: "form", Message: message, RequestedSchema: map[string]any{
		"type": "object", "properties": map[string]any{"confirm": map[string]any{"type": "boolean"}}, "required": []string{"confirm"},
	}}
}

func noteID(req *mcp.CallToolRequest) string {
	var args struct{ ID string }
	_ = json.Unmarshal(req.Params.Arguments, &args)
	return args.ID
}

// answer returns the response to the input request id, or nil.
func answer(req *mcp.CallToolRequest, id string) *mcp.ElicitResult {
	r, _ := req.Params.InputResponses[id].(*mcp.ElicitResult)
	return r
}

func textResult(format string, args ...any) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf(format, args...)}}}
}

func (a *askingServer) deleteNote(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	a.calls.Add(1)
	id := noteID(req)
	if req.Params.RequestState == "" {
		return &mcp.CallToolResult{
			InputRequests: mcp.InputRequestMap{"confirm": confirmForm("Delete note " + id + "?")},
			RequestState:  a.sign("delete:" + id),
		}, nil
	}
	state, ok := a.open(req.Params.RequestState)
	if !ok || state != "delete:"+id {
		a.did("refused state")
		return nil, errors.New("request state refused")
	}
	r := answer(req, "confirm")
	if r == nil || r.Action != "accept" || r.Content["confirm"] != true {
		action := "none"
		if r != nil {
			action = r.Action
		}
		a.did("kept " + id + " (" + action + ")")
		return textResult("note %s kept: %s", id, action), nil
	}
	a.did("deleted " + id)
	return textResult("note %s deleted", id), nil
}

func (a *askingServer) renameNote(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	a.calls.Add(1)
	id := noteID(req)
	if req.Params.RequestState == "" {
		return &mcp.CallToolResult{
			InputRequests: mcp.InputRequestMap{"title": &mcp.ElicitParams{Mode: "form", Message: "New title?", RequestedSchema: map[string]any{
				"type": "object", "properties": map[string]any{"title": map[string]any{"type": "string"}}, "required": []string{"title"},
			}}},
			RequestState: a.sign("title:" + id),
		}, nil
	}
	state, ok := a.open(req.Params.RequestState)
	switch {
	case ok && state == "title:"+id:
		r := answer(req, "title")
		if r == nil || r.Action != "accept" {
			return textResult("not renamed"), nil
		}
		title, _ := r.Content["title"].(string)
		return &mcp.CallToolResult{
			InputRequests: mcp.InputRequestMap{"confirm": confirmForm("Rename " + id + " to " + title + "?")},
			RequestState:  a.sign("confirm:" + id + ":" + title),
		}, nil
	case ok && strings.HasPrefix(state, "confirm:"+id+":"):
		title := strings.TrimPrefix(state, "confirm:"+id+":")
		if r := answer(req, "confirm"); r != nil && r.Action == "accept" && r.Content["confirm"] == true {
			a.did("renamed " + id + " to " + title)
			return textResult("note %s renamed to %s", id, title), nil
		}
		return textResult("not renamed"), nil
	}
	a.did("refused state")
	return nil, errors.New("request state refused")
}

// retitleNote asks twice on the live call, as a server of 2025-11-25
// does (elicitation/create): a title, then a confirmation.
func (a *askingServer) retitleNote(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	a.calls.Add(1)
	id := noteID(req)
	title, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Mode: "form", Message: "New title?", RequestedSchema: map[string]any{
		"type": "object", "properties": map[string]any{"title": map[string]any{"type": "string"}}, "required": []string{"title"},
	}})
	if err != nil || title.Action != "accept" {
		return textResult("not renamed"), err
	}
	ok, err := req.Session.Elicit(ctx, confirmForm("Rename "+id+"?"))
	if err != nil || ok.Action != "accept" || ok.Content["confirm"] != true {
		return textResult("not renamed"), err
	}
	a.did(fmt.Sprintf("renamed %s to %v", id, title.Content["title"]))
	return textResult("note %s renamed to %v", id, title.Content["title"]), nil
}

// inputInstance is one instance of a team whose one agent calls the notes
// server's tool named in the user's message ("delete_note n1"), then says
// what the tool answered. The strict model fails the test on any request
// Gemini would refuse.
type inputInstance struct {
	t     *testing.T
	team  *toolcallback.Team
	model *modeltest.Strict
}

// twoInputInstances are two instances on one emulator project, each with
// its own client, both using the MCP server at url.
func twoInputInstances(t *testing.T, url string) (first, second *inputInstance) {
	t.Helper()
	client := firestoretest.NewClient(t)
	other, _ := firestoretest.Reopen(t, client)
	return newInputInstance(t, client, url, nil), newInputInstance(t, other, url, nil)
}

func newInputInstance(t *testing.T, client *firestore.Client, url string, opts *toolcallback.Options) *inputInstance {
	return newInputInstanceWith(t, client, url, opts, nil)
}

func newInputInstanceWith(t *testing.T, client *firestore.Client, url string, opts *toolcallback.Options, regOpts *mcpregistry.Options) *inputInstance {
	t.Helper()
	sessions := sessionstore.New(client, nil)
	reg := newRegistry(t, sessions, []mcpregistry.Server{{Name: "notes", URL: url}}, regOpts)
	ts, err := reg.Toolsets("concierge", "notes")
	if err != nil {
		t.Fatal(err)
	}
	m := &modeltest.Strict{T: t, Repeat: func(req *model.LLMRequest) *genai.Content {
		last := req.Contents[len(req.Contents)-1]
		if p := last.Parts[0]; p.Text != "" {
			tool, id, _ := strings.Cut(p.Text, " ")
			return modeltest.CallReply(modeltest.Call("", "notes_"+tool, map[string]any{"id": id}))(req)
		}
		return modeltest.EchoReply(req)
	}}
	// Mode set here: ADK v2.2.0's runner sets an unset Mode on the shared
	// agent on each Run, a data race between an instance's first two runs.
	a := teamtest.Member(t, llmagent.Config{Name: "concierge", Model: m, Toolsets: ts, Mode: llmagent.ModeChat})
	return &inputInstance{t: t, team: teamtest.NewTeam(t, sessions, opts, a), model: m}
}

// events drains an invocation.
func events(t *testing.T, inv *toolcallback.Invocation) []*session.Event {
	t.Helper()
	out, err := teamtest.Collect(inv)
	if err != nil {
		t.Fatalf("invocation: %v", err)
	}
	return out
}

// ask runs a turn that calls tool on note id and returns the confirmation
// call that asks for input, checking that the events show no request state.
func (in *inputInstance) ask(chat, text string) *genai.FunctionCall {
	in.t.Helper()
	inv, _, err := in.team.Turn(in.t.Context(), toolcallback.TurnRequest{UserID: "user-1", ChatID: chat, ClientID: "tab",
		Content: genai.NewContentFromText(text, genai.RoleUser)})
	if err != nil {
		in.t.Fatal(err)
	}
	return inputCall(in.t, events(in.t, inv))
}

// inputCall returns the confirmation call that asks for input among evs,
// and fails if any event carries a request state.
func inputCall(t *testing.T, evs []*session.Event) *genai.FunctionCall {
	t.Helper()
	var found *genai.FunctionCall
	for _, ev := range evs {
		if b, _ := json.Marshal(ev); strings.Contains(string(b), `"state"`) {
			t.Errorf("event %s shows a request state: %s", ev.ID, b)
		}
		for _, p := range partsOf(ev.Content) {
			if fc := p.FunctionCall; fc != nil && fc.Name == toolconfirmation.FunctionCallName {
				found = fc
			}
		}
	}
	if found == nil {
		t.Fatalf("no input request in the turn's %d events", len(evs))
	}
	return found
}

func (in *inputInstance) answer(chat, callID string, responses map[string]any) (*toolcallback.ResumeOutcome, error) {
	return in.team.Resume(in.t.Context(), toolcallback.ResumeRequest{UserID: "user-1", ChatID: chat, CallID: callID, ClientID: "tab",
		Answer: toolcallback.Answer{Output: map[string]any{"responses": responses}}})
}

// said returns what the model said last in evs (EchoReply's text).
func said(evs []*session.Event) string {
	var text string
	for _, ev := range evs {
		for _, p := range partsOf(ev.Content) {
			if p.Text != "" && !ev.Partial {
				text = p.Text
			}
		}
	}
	return text
}

func accept(content map[string]any) map[string]any {
	return map[string]any{"action": "accept", "content": content}
}

// resumed answers and returns what the model said once the tool ran again.
func (in *inputInstance) resumed(chat, callID string, responses map[string]any) string {
	in.t.Helper()
	res, err := in.answer(chat, callID, responses)
	if err != nil {
		in.t.Fatalf("Resume: %v", err)
	}
	if res.Invocation == nil {
		in.t.Fatalf("Resume = %+v; want the agent resumed", res)
	}
	return said(events(in.t, res.Invocation))
}

func TestInputPausesAndResumes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		another bool // the answer arrives at another instance
	}{
		{name: "same instance"},
		{name: "another instance", another: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := newAskingServer(t, true)
			client := firestoretest.NewClient(t)
			first := newInputInstance(t, client, srv.URL, nil)
			call := first.ask("chat-1", "delete_note n1")

			pending, err := first.team.Pending(t.Context(), toolcallback.PendingRequest{UserID: "user-1", ChatID: "chat-1", ClientID: "tab"})
			if err != nil || len(pending.Calls) != 1 {
				t.Fatalf("Pending = %+v, %v; want the input call", pending, err)
			}
			c := pending.Calls[0]
			if c.ID != call.ID || c.Kind != toolcallback.KindInput || c.Tool != "notes_delete_note" || c.Input == nil ||
				c.Input.Server != "notes" || c.Input.Tool != "delete_note" || c.Input.Round != 1 || c.Input.State != "" || c.Input.Requests["confirm"] == nil {
				t.Fatalf("pending call = %+v (input %+v); want notes/delete_note's round 1, its confirm request and no state", c, c.Input)
			}

			answering := first
			if tc.another {
				other, _ := firestoretest.Reopen(t, client)
				answering = newInputInstance(t, other, srv.URL, nil)
			}
			got := answering.resumed("chat-1", call.ID, map[string]any{"confirm": accept(map[string]any{"confirm": true})})
			if !strings.Contains(got, "note n1 deleted") {
				t.Errorf("the model saw %q; want the deletion", got)
			}
			if diff := strings.Join(srv.done(), ","); diff != "deleted n1" || srv.calls.Load() != 2 {
				t.Errorf("server did %q in %d calls; want deleted n1 in 2", diff, srv.calls.Load())
			}
		})
	}
}

func TestInputDeclinedAndCancelled(t *testing.T) {
	t.Parallel()
	for _, action := range []string{"decline", "cancel"} {
		t.Run(action, func(t *testing.T) {
			t.Parallel()
			srv := newAskingServer(t, true)
			in := newInputInstance(t, firestoretest.NewClient(t), srv.URL, nil)
			call := in.ask("chat-1", "delete_note n1")
			got := in.resumed("chat-1", call.ID, map[string]any{"confirm": map[string]any{"action": action}})
			if want := "note n1 kept: " + action; !strings.Contains(got, want) {
				t.Errorf("the model saw %q; want %q", got, want)
			}
			if diff := strings.Join(srv.done(), ","); diff != "kept n1 ("+action+")" {
				t.Errorf("server did %q", diff)
			}
		})
	}
}

func TestInputDuplicateAnswersResumeOnce(t *testing.T) {
	t.Parallel()
	srv := newAskingServer(t, true)
	in, second := twoInputInstances(t, srv.URL)
	instances := []*inputInstance{in, second}
	call := in.ask("chat-1", "delete_note n1")

	const n = 20
	var wg sync.WaitGroup
	var resumed, same atomic.Int32
	for i := range n {
		wg.Go(func() {
			res, err := instances[i%2].answer("chat-1", call.ID, map[string]any{"confirm": accept(map[string]any{"confirm": true})})
			var already *toolcallback.AlreadyResolvedError
			switch {
			case errors.As(err, &already) && already.Same:
				same.Add(1)
			case err != nil:
				t.Errorf("answer: %v", err)
			case res.Invocation != nil:
				resumed.Add(1)
				events(t, res.Invocation)
			}
		})
	}
	wg.Wait()
	if resumed.Load() != 1 || same.Load() != n-1 {
		t.Errorf("%d answers resumed, %d got the recorded outcome; want 1 and %d", resumed.Load(), same.Load(), n-1)
	}
	if diff := strings.Join(srv.done(), ","); diff != "deleted n1" || srv.calls.Load() != 2 {
		t.Errorf("server did %q in %d calls; want deleted n1 in 2", diff, srv.calls.Load())
	}
}

func TestInputExpires(t *testing.T) {
	t.Parallel()
	srv := newAskingServer(t, true)
	in := newInputInstance(t, firestoretest.NewClient(t), srv.URL, &toolcallback.Options{CallTimeout: time.Minute})
	call := in.ask("chat-1", "delete_note n1")
	report, err := in.team.Sweep(t.Context(), time.Now().Add(2*time.Minute))
	if err != nil || report.Expired != 1 {
		t.Fatalf("Sweep = %+v, %v; want the input call expired", report, err)
	}
	_, err = in.answer("chat-1", call.ID, map[string]any{"confirm": accept(map[string]any{"confirm": true})})
	if !errors.Is(err, toolcallback.ErrExpired) {
		t.Errorf("answer after expiry: %v; want ErrExpired", err)
	}
	// The next turn's model request pairs the call with its expiry.
	inv, _, err := in.team.Turn(t.Context(), toolcallback.TurnRequest{UserID: "user-1", ChatID: "chat-1", ClientID: "tab",
		Content: genai.NewContentFromText("rename_note n2", genai.RoleUser)})
	if err != nil {
		t.Fatal(err)
	}
	events(t, inv)
	if srv.calls.Load() != 2 || len(srv.done()) != 0 {
		t.Errorf("server got %d calls and did %v; want the first call of each tool and nothing done", srv.calls.Load(), srv.done())
	}
}

func TestInputStateCannotBeForged(t *testing.T) {
	t.Parallel()
	srv := newAskingServer(t, true)
	in := newInputInstance(t, firestoretest.NewClient(t), srv.URL, nil)
	call := in.ask("chat-1", "delete_note n1")
	forged := srv.sign("delete:n2") // a valid state for another note
	for _, tc := range []struct {
		name   string
		answer toolcallback.Answer
	}{
		{"state beside the responses", toolcallback.Answer{Output: map[string]any{"responses": map[string]any{"confirm": accept(map[string]any{"confirm": true})}, "state": forged}}},
		{"state in a response", toolcallback.Answer{Output: map[string]any{"responses": map[string]any{"confirm": map[string]any{"action": "accept", "content": map[string]any{"confirm": true}, "requestState": forged}}}}},
		{"as an approval payload", toolcallback.Answer{Approved: new(true), Payload: map[string]any{"batonInput": map[string]any{"state": forged}}}},
		{"a request it did not ask", toolcallback.Answer{Output: map[string]any{"responses": map[string]any{"other": accept(nil)}}}},
		{"an unknown action", toolcallback.Answer{Output: map[string]any{"responses": map[string]any{"confirm": map[string]any{"action": "approve"}}}}},
	} {
		_, err := in.team.Resume(t.Context(), toolcallback.ResumeRequest{UserID: "user-1", ChatID: "chat-1", CallID: call.ID, ClientID: "tab", Answer: tc.answer})
		if !errors.Is(err, toolcallback.ErrInvalidAnswer) {
			t.Errorf("%s: Resume error = %v; want ErrInvalidAnswer", tc.name, err)
		}
	}
	if _, err := in.team.Resume(t.Context(), toolcallback.ResumeRequest{UserID: "user-1", ChatID: "chat-1", CallID: call.ID, ClientID: "another-tab",
		Answer: toolcallback.Answer{Output: map[string]any{"responses": map[string]any{"confirm": accept(map[string]any{"confirm": true})}}}}); !errors.Is(err, toolcallback.ErrWrongClient) {
		t.Errorf("answer from another device: %v; want ErrWrongClient", err)
	}
	// The call is still open, and the state the server gets is its own.
	got := in.resumed("chat-1", call.ID, map[string]any{"confirm": accept(map[string]any{"confirm": true})})
	if !strings.Contains(got, "note n1 deleted") || strings.Join(srv.done(), ",") != "deleted n1" {
		t.Errorf("model saw %q, server did %v; want n1 deleted", got, srv.done())
	}
}

func TestInputTwoRounds(t *testing.T) {
	t.Parallel()
	srv := newAskingServer(t, true)
	in, second := twoInputInstances(t, srv.URL)

	call := in.ask("chat-1", "rename_note n1")
	res, err := second.answer("chat-1", call.ID, map[string]any{"title": accept(map[string]any{"title": "Groceries"})})
	if err != nil || res.Invocation == nil {
		t.Fatalf("first answer: %+v, %v", res, err)
	}
	again := inputCall(t, events(t, res.Invocation))
	if n := in.model.Calls() + second.model.Calls(); n != 1 {
		t.Errorf("the model was called %d times by the second round; want once, for the first call", n)
	}
	if again.ID == call.ID {
		t.Fatalf("the second round reuses the first's call id %q", call.ID)
	}
	pending, err := in.team.Pending(t.Context(), toolcallback.PendingRequest{UserID: "user-1", ChatID: "chat-1", ClientID: "tab"})
	if err != nil || len(pending.Calls) != 1 || pending.Calls[0].Input.Round != 2 || pending.Calls[0].Input.Requests["confirm"] == nil {
		t.Fatalf("Pending = %+v, %v; want round 2 asking to confirm", pending, err)
	}
	got := in.resumed("chat-1", again.ID, map[string]any{"confirm": accept(map[string]any{"confirm": true})})
	if !strings.Contains(got, "note n1 renamed to Groceries") || strings.Join(srv.done(), ",") != "renamed n1 to Groceries" || srv.calls.Load() != 3 {
		t.Errorf("model saw %q, server did %v in %d calls; want n1 renamed in 3", got, srv.done(), srv.calls.Load())
	}
}

func TestInputCancelledByNewMessage(t *testing.T) {
	t.Parallel()
	srv := newAskingServer(t, true)
	in := newInputInstance(t, firestoretest.NewClient(t), srv.URL, nil)
	call := in.ask("chat-1", "delete_note n1")
	// The strict model checks that the new turn's request pairs the call
	// with its cancellation.
	second := in.ask("chat-1", "rename_note n2")
	if second.ID == call.ID {
		t.Fatal("the new turn did not ask again")
	}
	_, err := in.answer("chat-1", call.ID, map[string]any{"confirm": accept(map[string]any{"confirm": true})})
	if !errors.Is(err, toolcallback.ErrExpired) {
		t.Errorf("answer to the cancelled call: %v; want ErrExpired", err)
	}
	if srv.calls.Load() != 2 || len(srv.done()) != 0 {
		t.Errorf("server got %d calls and did %v; want one call per tool and nothing done", srv.calls.Load(), srv.done())
	}
	last := in.model.LastRequest().Contents
	if got := modeltest.DumpContents(last); !strings.Contains(got, "cancelled") {
		t.Errorf("the model was not told the call was cancelled:\n%s", got)
	}
}
