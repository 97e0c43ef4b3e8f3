// Package runguard keeps a cancelled ADK run from starting tools or model
// requests.
//
// ADK v2.2.0 does not check. Its scheduler, stopping a node after an
// append failed, cancels the node and releases the node's wait for that
// append together, and a node that sees the release first runs the
// event's tools and asks the model again (workflow/scheduler.go, runNode);
// and a stop while one tool of a step runs still starts the step's others.
package runguard

import (
	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/plugin"
	"google.golang.org/adk/v2/tool"
)

// Plugin returns a runner plugin that refuses to start a tool or a model
// request once the run's context has ended (a stop, a lost lease, a
// failed append), with the context's error.
func Plugin() (*plugin.Plugin, error) {
	return plugin.New(plugin.Config{
		Name: "baton_run_guard",
		BeforeToolCallback: func(ctx agent.Context, _ tool.Tool, _ map[string]any) (map[string]any, error) {
			return nil, ctx.Err()
		},
		BeforeModelCallback: func(ctx agent.Context, _ *model.LLMRequest) (*model.LLMResponse, error) {
			return nil, ctx.Err()
		},
	})
}
