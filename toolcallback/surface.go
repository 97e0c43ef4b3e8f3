package toolcallback

import (
	"errors"
	"fmt"
	"time"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/functiontool"

	"github.com/baton-run/baton/a2ui"
	"github.com/baton-run/baton/ledger"
)

// KindSurface calls show an A2UI surface and wait for the user's action
// on it (a form, a choice): the action is the call's answer.
const KindSurface = ledger.KindSurface

// ErrSurfaceGone: an action names a surface its call does not show.
var ErrSurfaceGone = errors.New("no such surface")

// SurfaceConfig declares the tool an agent draws A2UI surfaces with.
type SurfaceConfig struct {
	Name        string        // default "show_surface"
	Description string        // default: what the tool takes, for the model
	Timeout     time.Duration // how long a surface waits for its action; zero: the engine's default
	Catalog     *a2ui.Catalog // default a2ui.BasicCatalog
}

type surfaceArgs struct {
	// Messages are A2UI messages of the catalog, applied in order.
	Messages []map[string]any `json:"messages"`
	// Wait: the call waits for the user's action on the surface (a form,
	// a choice); without it, the surface is shown and the call returns.
	Wait bool `json:"wait,omitempty"`
}

// Surface declares the tool a model draws A2UI surfaces with: it takes
// A2UI messages of the catalog, which Baton validates when the model's
// call is stored (a2ui.Catalog.Decide, given the surfaces the chat shows,
// noted in the event: a2ui.ShownIn); refused ones get a short error back,
// for the model to fix its call, and reach no client as a surface. A call
// that waits pauses like a browser call until the action of the device
// that started the turn, checked against what the surface offered,
// resumes it as the call's output, {"action": {...}}.
func Surface(cfg SurfaceConfig) (tool.Tool, error) {
	if cfg.Name == "" {
		cfg.Name = "show_surface"
	}
	if cfg.Description == "" {
		cfg.Description = "Shows the user an A2UI v0.9 surface (basic catalog): messages are createSurface, updateComponents, " +
			"updateDataModel or deleteSurface objects, each with \"version\": \"v0.9\". Set wait to get the user's action " +
			"(a button pressed on a form) as this call's result."
	}
	if cfg.Catalog == nil {
		c, err := a2ui.BasicCatalog()
		if err != nil {
			return nil, err
		}
		cfg.Catalog = c
	}
	inner, err := functiontool.New(functiontool.Config{Name: cfg.Name, Description: cfg.Description, IsLongRunning: true},
		func(ctx agent.Context, _ surfaceArgs) (map[string]any, error) { return surfaceResult(ctx), nil })
	if err != nil {
		return nil, err
	}
	return &pausing{Tool: inner, spec: pauseSpec{Kind: KindSurface, Timeout: cfg.Timeout, decide: cfg.Catalog.Decide}}, nil
}

// surfaceResult is what the surface tool returns, as decided when its call
// was stored: an error, a pause (a waiting surface), or that it was shown.
// ADK's tool context has no session: the decision is the invocation's.
func surfaceResult(ctx agent.Context) map[string]any {
	var s a2ui.Shown
	ok := false
	if tools := pausingToolsFrom(ctx); tools != nil {
		s, ok = tools.surfaces.Decision(ctx.FunctionCallID())
	}
	switch {
	case !ok:
		return map[string]any{"error": "the surface was not recorded; call again"}
	case s.Error != "":
		return map[string]any{"error": s.Error}
	case s.Wait:
		ctx.Actions().SkipSummarization = true
		return map[string]any{"status": "pending"}
	}
	return map[string]any{"status": "shown"}
}

// ShowSurface shows msgs from a Go tool of a Team's agent, validated
// against catalog and the surfaces the chat shows, with the event that
// ends the tool's call: they reach the stream and the session as a surface
// the model drew does. Nothing waits for an action on them: actions come
// back as user messages.
func ShowSurface(ctx agent.Context, catalog *a2ui.Catalog, msgs ...a2ui.Message) error {
	tools := pausingToolsFrom(ctx)
	if tools == nil {
		return errors.New("ShowSurface: not in an invocation of a Team")
	}
	events, ok := tools.surfaces.Events()
	if !ok {
		return errors.New("ShowSurface: the invocation has stored nothing yet")
	}
	shown, err := catalog.Show(events, ctx.FunctionCallID(), msgs...)
	if err != nil {
		return err
	}
	tools.surfaces.Show(shown)
	return nil
}

// checkSurfaceAnswer checks the answer to a waiting surface against what
// its call showed.
func checkSurfaceAnswer(c *Call, a Answer) error {
	if a.Approved != nil || a.Payload != nil || a.Error != "" {
		return fmt.Errorf("%w: a surface call takes an output {\"action\": {...}}", ErrInvalidAnswer)
	}
	_, err := a2ui.CheckAnswer(c.Surfaces, a.Output)
	if errors.Is(err, a2ui.ErrNoSurface) {
		return fmt.Errorf("%w: %w", ErrSurfaceGone, err)
	}
	if err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidAnswer, err)
	}
	return nil
}
