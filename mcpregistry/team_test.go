package mcpregistry_test

import (
	"fmt"
	"testing"
	"time"

	"cloud.google.com/go/firestore"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/model"
	"google.golang.org/genai"

	"github.com/baton-run/baton/internal/firestoretest"
	"github.com/baton-run/baton/internal/polltest"
	"github.com/baton-run/baton/internal/teamtest"
	"github.com/baton-run/baton/mcpregistry"
	"github.com/baton-run/baton/modeltest"
	"github.com/baton-run/baton/toolcallback"
)

// whoamiModel calls notes_whoami for every user message and then says
// what it got; it fails the test on a request Gemini would refuse.
func whoamiModel(t *testing.T) *modeltest.Strict {
	return &modeltest.Strict{T: t, Repeat: whoamiReply}
}

// whoamiReply calls notes_whoami when the request ends on the user's
// message and the agent has the tool; otherwise it says it is done.
func whoamiReply(req *model.LLMRequest) *genai.Content {
	last := req.Contents[len(req.Contents)-1]
	if last.Parts[0].FunctionResponse == nil && req.Tools["notes_whoami"] != nil {
		return modeltest.CallReply(modeltest.Call("", "notes_whoami", map[string]any{}))(req)
	}
	return genai.NewContentFromText("done", genai.RoleModel)
}

// teamInstance is one instance: a team of a concierge and a DJ that both
// declare the notes server, and a "quiet" agent that declares none, over
// its own registry, hooked to the team's chat events as functions wires it.
type teamInstance struct {
	t    *testing.T
	team *toolcallback.Team
	reg  *mcpregistry.Registry
}

func newTeamInstance(t *testing.T, client *firestore.Client, servers []mcpregistry.Server) *teamInstance {
	t.Helper()
	return newTeamInstanceWith(t, client, servers, whoamiModel(t))
}

// newTeamInstanceWith is newTeamInstance with the agents on llm: a world
// of the shared test world on client's project, whose instance has a
// registry of servers.
func newTeamInstanceWith(t *testing.T, client *firestore.Client, servers []mcpregistry.Server, llm model.LLM, tune ...func(*toolcallback.Options)) *teamInstance {
	t.Helper()
	opts := &toolcallback.Options{IdleRetention: time.Hour}
	for _, f := range tune {
		f(opts)
	}
	agents := func(_ *teamtest.World, in *teamtest.Instance) []toolcallback.Member {
		var members []toolcallback.Member
		for _, name := range []string{"concierge", "dj", "quiet"} {
			cfg := llmagent.Config{Name: name, Model: llm}
			if name != "quiet" {
				ts, err := in.MCP.Toolsets(name, "notes")
				if err != nil {
					t.Fatal(err)
				}
				cfg.Toolsets = ts
			}
			members = append(members, teamtest.Member(t, cfg))
		}
		return members
	}
	w := teamtest.On(t, client, nil, &teamtest.Options{Team: opts, Agents: agents, MCP: servers}, nil)
	return &teamInstance{t: t, team: w.Team, reg: w.MCP}
}

// whoami runs a turn of chat with agent (empty: the current one) and
// returns what notes_whoami answered, or a zero whoami if it was not called.
func (ti *teamInstance) whoami(chat, agentName string) whoami {
	ti.t.Helper()
	got, err := ti.tryWhoami(chat, agentName)
	if err != nil {
		ti.t.Fatal(err)
	}
	return got
}

// tryWhoami is whoami returning its failure, for another goroutine.
func (ti *teamInstance) tryWhoami(chat, agentName string) (whoami, error) {
	inv, _, err := ti.team.Turn(ti.t.Context(), toolcallback.TurnRequest{UserID: "user-1", ChatID: chat, ClientID: "tab", Agent: agentName,
		Content: genai.NewContentFromText("who am I talking to?", genai.RoleUser)})
	if err != nil {
		return whoami{}, err
	}
	var got whoami
	for ev, err := range inv.Events() {
		if err != nil {
			return whoami{}, err
		}
		for _, p := range partsOf(ev.Content) {
			if r := p.FunctionResponse; r != nil && r.Name == "notes_whoami" {
				if e, ok := r.Response["error"]; ok {
					return whoami{}, fmt.Errorf("notes_whoami failed: %v", e)
				}
				got.Session, _ = r.Response["session"].(string)
			}
		}
	}
	return got, nil
}

// idleOut lets the team's Sweep delete chat as idle.
func (ti *teamInstance) idleOut(t *testing.T, chat string) {
	t.Helper()
	report, err := ti.team.Sweep(t.Context(), time.Now().Add(2*time.Hour))
	if err != nil || report.Idle != 1 {
		t.Fatalf("Sweep = %+v, %v; want chat %s deleted as idle", report, err, chat)
	}
}

func partsOf(c *genai.Content) []*genai.Part {
	if c == nil {
		return nil
	}
	return c.Parts
}

func TestAgentSwitchKeepsConnection(t *testing.T) {
	t.Parallel()
	srv := newHTTPServer(t)
	ti := newTeamInstance(t, firestoretest.NewClient(t), []mcpregistry.Server{{Name: "notes", URL: srv.URL}})

	first := ti.whoami("chat-1", "")
	switched := ti.whoami("chat-1", "dj")
	if first.Session == "" || switched.Session != first.Session {
		t.Fatalf("MCP session of the concierge %q, of the DJ after the switch %q; want the same", first.Session, switched.Session)
	}
	srv.initialized(t, 1)

	// An agent that does not declare the server retires the chat's session.
	if got := ti.whoami("chat-1", "quiet"); got.Session != "" {
		t.Fatalf("the quiet agent called notes_whoami: %+v", got)
	}
	polltest.Until(t, "the server to close the session the quiet agent retired", func() bool { return srv.live() == 0 })
}
