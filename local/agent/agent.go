package agent

import (
	"context"
	"errors"
	"fmt"
	"os"

	"google.golang.org/adk/agent"
	"google.golang.org/adk/agent/llmagent"
	"google.golang.org/adk/model"
	"google.golang.org/adk/model/gemini"
)

// GeminiModel is the Gemini model the demo uses when credentials exist.
const GeminiModel = "gemini-2.5-flash"

const instruction = `You are Baton's demo assistant. Use the tools: get_weather, calculate and
get_current_time run on the server; change_bgm switches the music in the user's page (tracks 1 to 3);
get_location asks the user's browser where they are; book_table books a restaurant table once a
person approves. Answer briefly.`

// Model returns Gemini when the standard environment configures it
// (GOOGLE_API_KEY, or GOOGLE_GENAI_USE_VERTEXAI with a project and
// location), and otherwise the offline model. On Cloud Run (K_SERVICE set)
// a missing configuration is an error, never a silent fallback.
func Model(ctx context.Context) (model.LLM, error) {
	if os.Getenv("GOOGLE_API_KEY") != "" || os.Getenv("GEMINI_API_KEY") != "" || os.Getenv("GOOGLE_GENAI_USE_VERTEXAI") != "" {
		m, err := gemini.NewModel(ctx, GeminiModel, nil)
		if err != nil {
			return nil, fmt.Errorf("gemini: %w", err)
		}
		return m, nil
	}
	if os.Getenv("K_SERVICE") != "" {
		return nil, errors.New("no model configured: set GOOGLE_API_KEY, or GOOGLE_GENAI_USE_VERTEXAI=true with GOOGLE_CLOUD_PROJECT and GOOGLE_CLOUD_LOCATION")
	}
	return Offline{}, nil
}

// New returns the default agent on the model Model picks. Its signature is
// functions.AgentFunc.
func New(ctx context.Context) (agent.Agent, error) {
	m, err := Model(ctx)
	if err != nil {
		return nil, err
	}
	return NewWithModel(m)
}

// NewWithModel returns the default agent on m.
func NewWithModel(m model.LLM) (agent.Agent, error) {
	tools, err := Tools()
	if err != nil {
		return nil, err
	}
	return llmagent.New(llmagent.Config{
		Name:        "assistant",
		Description: "Baton's demo assistant",
		Model:       m,
		Instruction: instruction,
		Tools:       tools,
	})
}
