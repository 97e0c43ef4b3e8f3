package events

import (
	"context"
	"encoding/base64"
	"iter"
	"net/http"
	"strings"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/a2aproject/a2a-go/v2/a2asrv/push"
)

// Question is what the agent asks before it answers.
const Question = "Which part of town: the old town or the harbour?"

// LookFor is how long it looks for events once it knows where.
const LookFor = 2 * time.Second

// listings are what is on tonight, by part of town.
var listings = map[string]string{
	"old town": "a string quartet at St. Mary's at 19:30, and late-night jazz at the Blue Room from 22:00",
	"harbour":  "an open-air film on the pier at 21:00, and a fish market street party from 18:00",
}

// Poster is the image the agent sends with its answer (an 8×8 PNG), as
// the bytes of a file part of its result.
var Poster, _ = base64.StdEncoding.DecodeString("iVBORw0KGgoAAAANSUhEUgAAAAgAAAAICAIAAABLbSncAAAAEUlEQVR4nGMwDL+KFTEMLQkA7rdXQTtkwCoAAAAASUVORK5CYII=")

// a2uiMediaType marks a data part holding an A2UI message.
const a2uiMediaType = "application/json+a2ui"

// a2uiPart is one A2UI message as a data part, marked as A2UI's A2A
// extension marks it (the part's media type, and its metadata for A2A
// 0.3 readers).
func a2uiPart(msg map[string]any) *a2a.Part {
	p := a2a.NewDataPart(msg)
	p.MediaType = a2uiMediaType
	p.Metadata = map[string]any{"mimeType": a2uiMediaType}
	return p
}

// result is the agent's answer for where: the listing as text, the
// poster as a file, and the listing as an A2UI card.
func result(where string) []*a2a.Part {
	answer := "Tonight in the " + where + ": " + listings[where] + "."
	poster := a2a.NewRawPart(Poster)
	poster.Filename, poster.MediaType = "poster.png", "image/png"
	card := []any{
		map[string]any{"id": "root", "component": "Card", "child": "body"},
		map[string]any{"id": "body", "component": "Column", "children": []any{"title", "listing"}},
		map[string]any{"id": "title", "component": "Text", "text": "Tonight in the " + where, "variant": "h3"},
		map[string]any{"id": "listing", "component": "Text", "text": listings[where]},
	}
	return []*a2a.Part{a2a.NewTextPart(answer), poster,
		a2uiPart(map[string]any{"version": "v0.9", "createSurface": map[string]any{"surfaceId": "tonight",
			"catalogId": "https://a2ui.org/specification/v0_9/catalogs/basic/catalog.json"}}),
		a2uiPart(map[string]any{"version": "v0.9", "updateComponents": map[string]any{"surfaceId": "tonight", "components": card}}),
	}
}

// Handler serves the events agent whose card names url (where the
// handler is reachable): the card at /.well-known/agent-card.json, the
// agent's JSON-RPC at /. Its push notifications may go to loopback
// addresses: the local runner's push callback is one.
func Handler(url string) http.Handler {
	card := &a2a.AgentCard{
		Name: "events", Description: "What is on in town tonight", Version: "1",
		SupportedInterfaces: []*a2a.AgentInterface{a2a.NewAgentInterface(url, a2a.TransportProtocolJSONRPC)},
		DefaultInputModes:   []string{"text"}, DefaultOutputModes: []string{"text"},
		Capabilities: a2a.AgentCapabilities{PushNotifications: true},
		Skills: []a2a.AgentSkill{{ID: "tonight", Name: "What is on tonight", Description: "Events in the old town or the harbour",
			Tags: []string{"events"}}},
	}
	handler := a2asrv.NewHandler(executor{}, a2asrv.WithPushNotifications(push.NewInMemoryStore(),
		push.NewHTTPPushSender(&push.HTTPSenderConfig{AllowPrivateNetworks: true})))
	mux := http.NewServeMux()
	mux.Handle(a2asrv.WellKnownAgentCardPath, a2asrv.NewStaticAgentCardHandler(card))
	mux.Handle("/", a2asrv.NewJSONRPCHandler(handler))
	return mux
}

type executor struct{}

var _ a2asrv.AgentExecutor = executor{}

func says(s string) *a2a.Message { return a2a.NewMessage(a2a.MessageRoleAgent, a2a.NewTextPart(s)) }

// place is the part of town text names, "" when none.
func place(text string) string {
	t := strings.ToLower(text)
	switch {
	case strings.Contains(t, "old"):
		return "old town"
	case strings.Contains(t, "harbo"):
		return "harbour"
	}
	return ""
}

// Execute asks where, unless the message says it, then looks and answers.
func (executor) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		var text strings.Builder
		for _, p := range ec.Message.Parts {
			text.WriteString(p.Text())
		}
		if ec.StoredTask == nil && !yield(a2a.NewSubmittedTask(ec, ec.Message), nil) {
			return
		}
		where := place(text.String())
		if where == "" {
			yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateInputRequired, says(Question)), nil)
			return
		}
		if !yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateWorking, says("Looking at tonight's listings for the "+where+"…")), nil) {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(LookFor):
		}
		if !yield(a2a.NewArtifactEvent(ec, result(where)...), nil) {
			return
		}
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCompleted, nil), nil)
	}
}

// Cancel ends the task.
func (executor) Cancel(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCanceled, nil), nil)
	}
}
