package a2aserver

// A2UI over A2A (docs/a2ui.md): the agent card advertises the extension;
// a client that activates it, or says what it renders in the message's
// metadata, gets each surface a turn shows as DataParts, one A2UI message
// each; any other client gets the surface as text. A surface is a task
// artifact of its own, replaced whenever the surface is drawn again, so
// tasks/get shows it as it last was. An action comes back as a DataPart
// of the client's next message: it answers the task's call waiting on its
// surface, or, on a card, becomes a user message.

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"google.golang.org/adk/v2/session"

	"github.com/baton-run/baton/a2ui"
	"github.com/baton-run/baton/errclass"
	"github.com/baton-run/baton/toolcallback"
)

// A2UIExtensionURI names the A2UI extension of A2A that Baton speaks.
const A2UIExtensionURI = "https://a2ui.org/a2a-extension/a2ui/v0.9.1"

// A2UIMediaType marks a DataPart that holds one A2UI message. Baton sets
// it as the part's mediaType (A2A 1.0) and as its metadata's "mimeType"
// (what the extension names, and all an A2A 0.3 DataPart can carry), and
// reads either.
const A2UIMediaType = "application/json+a2ui"

// capabilitiesKey is the message metadata key in which a client says what
// it renders; sending it asks for A2UI as activating the extension does.
const capabilitiesKey = "a2uiClientCapabilities"

// a2uiExtension is the card's declaration of the extension.
var a2uiExtension = a2a.AgentExtension{
	URI:         A2UIExtensionURI,
	Description: "Shows A2UI v0.9.1 surfaces of the basic catalog as DataParts and takes their actions back as DataParts",
	Params:      map[string]any{"supportedCatalogIds": []any{a2ui.BasicCatalogID}},
}

// extensionHeaders are the service parameters that name the extensions a
// client activates: A2A 1.0's, and the header of A2A 0.3.
var extensionHeaders = []string{a2a.SvcParamExtensions, "X-A2A-Extensions"}

// requestsA2UI reports whether a request's service parameters activate
// the A2UI extension.
func requestsA2UI(params *a2asrv.ServiceParams) bool {
	for _, key := range extensionHeaders {
		values, _ := params.Get(key)
		for _, v := range values {
			for uri := range strings.SplitSeq(v, ",") {
				if strings.TrimSpace(uri) == A2UIExtensionURI {
					return true
				}
			}
		}
	}
	return false
}

// wantsA2UI reports whether the execution's client renders A2UI.
func wantsA2UI(ec *a2asrv.ExecutorContext) bool {
	if ec.Message != nil && ec.Message.Metadata[capabilitiesKey] != nil {
		return true
	}
	return requestsA2UI(ec.ServiceParams)
}

// surfaceArtifact is the artifact of a task that shows surface id.
func surfaceArtifact(id string) a2a.ArtifactID { return a2a.ArtifactID("a2ui-" + id) }

// surfaceEvents are the artifact events that show what ev shows of
// surfaces: each surface in full (or its deleteSurface), replacing the
// artifact that showed it before; as DataParts for a client that renders
// A2UI, as text for any other.
func surfaceEvents(task a2a.TaskInfoProvider, ev *session.Event, rich bool) []*a2a.TaskArtifactUpdateEvent {
	var out []*a2a.TaskArtifactUpdateEvent
	for _, shown := range a2ui.ShownIn(ev) {
		if shown.Error != "" {
			continue
		}
		for _, redraw := range shown.Surfaces {
			if len(redraw) == 0 {
				continue
			}
			callID := ""
			if shown.Wait {
				callID = shown.CallID
			}
			out = append(out, surfaceEvent(task, redraw, callID, rich))
		}
	}
	return out
}

// surfaceEvent is the artifact event that shows a surface drawn in full
// (redraw), waited on by callID ("" for a card).
func surfaceEvent(task a2a.TaskInfoProvider, redraw []a2ui.Message, callID string, rich bool) *a2a.TaskArtifactUpdateEvent {
	info := task.TaskInfo()
	artifact := &a2a.Artifact{ID: surfaceArtifact(redraw[0].SurfaceID()), Name: "surface " + redraw[0].SurfaceID(), Parts: surfaceParts(redraw, rich)}
	if callID != "" {
		artifact.Metadata = map[string]any{"callId": callID}
	}
	return &a2a.TaskArtifactUpdateEvent{TaskID: info.TaskID, ContextID: info.ContextID, Artifact: artifact}
}

// submittedEvents are the artifact events that show the form the action a
// answered, on call c, as the user submitted it: a's values where its
// event bound them, as GET /Chat shows the form once answered.
func submittedEvents(task a2a.TaskInfoProvider, c *toolcallback.Call, a a2ui.Action, rich bool) []*a2a.TaskArtifactUpdateEvent {
	var out []*a2a.TaskArtifactUpdateEvent
	for _, redraw := range c.Surfaces {
		if len(redraw) > 0 && redraw[0].SurfaceID() == a.SurfaceID {
			out = append(out, surfaceEvent(task, a2ui.Submitted(redraw, a), c.OriginalID, rich))
		}
	}
	return out
}

// surfaceParts draws a surface's redraw as A2UI DataParts, one message
// each, or as its text.
func surfaceParts(redraw []a2ui.Message, rich bool) []*a2a.Part {
	if !rich {
		s := &a2ui.Surfaces{}
		if err := s.Apply(redraw...); err != nil {
			return []*a2a.Part{a2a.NewTextPart("[" + redraw[0].SurfaceID() + "]")}
		}
		sf, ok := s.Surface(redraw[0].SurfaceID())
		if !ok {
			return []*a2a.Part{a2a.NewTextPart("(surface " + redraw[0].SurfaceID() + " removed)")}
		}
		return []*a2a.Part{a2a.NewTextPart(sf.Text())}
	}
	parts := make([]*a2a.Part, 0, len(redraw))
	for _, m := range redraw {
		var data map[string]any
		raw, err := json.Marshal(m)
		if err == nil {
			err = json.Unmarshal(raw, &data)
		}
		if err != nil {
			continue // a validated message always encodes
		}
		p := &a2a.Part{Content: a2a.Data{Value: data}, MediaType: A2UIMediaType}
		p.SetMeta("mimeType", A2UIMediaType)
		parts = append(parts, p)
	}
	return parts
}

// isA2UIPart reports whether p is a DataPart marked as A2UI.
func isA2UIPart(p *a2a.Part) bool {
	if _, ok := p.Content.(a2a.Data); !ok {
		return false
	}
	return p.MediaType == A2UIMediaType || p.Meta()["mimeType"] == A2UIMediaType
}

// actionOf reads an A2UI DataPart of a client's message: a client message
// {"version", "action": {...}}.
func actionOf(p *a2a.Part) (a2ui.Action, error) {
	raw, err := json.Marshal(p.Data())
	if err != nil {
		return a2ui.Action{}, fmt.Errorf("%w: an A2UI part: %v", errclass.ErrBadRequest, err)
	}
	a, err := a2ui.DecodeAction(raw)
	if err != nil {
		return a2ui.Action{}, fmt.Errorf("%w: an A2UI part must hold an action: %w", errclass.ErrBadRequest, err)
	}
	return a, nil
}

// waitingOn returns the call of calls that waits on surface id.
func waitingOn(calls []*toolcallback.Call, id string) *toolcallback.Call {
	for _, c := range calls {
		if c.Kind != toolcallback.KindSurface {
			continue
		}
		if slices.ContainsFunc(c.Surfaces, func(redraw []a2ui.Message) bool { return len(redraw) > 0 && redraw[0].SurfaceID() == id }) {
			return c
		}
	}
	return nil
}

// actionAnswer is the answer an action gives the call waiting on its
// surface: the tool output {"action": {...}}.
func actionAnswer(a a2ui.Action) (toolcallback.Answer, error) {
	raw, err := json.Marshal(a)
	if err != nil {
		return toolcallback.Answer{}, err
	}
	var action map[string]any
	if err := json.Unmarshal(raw, &action); err != nil {
		return toolcallback.Answer{}, err
	}
	return toolcallback.Answer{Output: map[string]any{"action": action}}, nil
}
