package testagent

import (
	"context"
	"iter"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/session"
	"google.golang.org/genai"
)

// New returns an agent that answers every message with "ok", without a model.
func New(ctx context.Context) (agent.Agent, error) {
	return agent.New(agent.Config{
		Name:        "testagent",
		Description: "Answers ok.",
		Run: func(ictx agent.InvocationContext) iter.Seq2[*session.Event, error] {
			return func(yield func(*session.Event, error) bool) {
				ev := session.NewEvent(ictx, ictx.InvocationID())
				ev.Author = "testagent"
				ev.Content = genai.NewContentFromText("ok", genai.RoleModel)
				yield(ev, nil)
			}
		},
	})
}
