package devserver

import (
	"context"
	"os"
	"time"

	"google.golang.org/adk/v2/model"
	"google.golang.org/genai"

	"github.com/baton-run/baton/modeltest"
)

// standInPace paces the stand-in's voice (100 ms of audio a frame, with
// its words between): about as fast as it plays.
const standInPace = 80 * time.Millisecond

// localLive is the live model of a local run: Gemini Live when the
// environment configures Gemini (client nil: the functions build it), or
// a stand-in run in process with the offline rules.
type localLive struct {
	client  *genai.Client
	standIn *modeltest.LiveServer
}

// liveModel starts the stand-in when the environment names no Gemini
// model and rules are given.
func liveModel(ctx context.Context, rules model.LLM) (*localLive, error) {
	configured := os.Getenv("GOOGLE_API_KEY") != "" || os.Getenv("GEMINI_API_KEY") != "" || os.Getenv("GOOGLE_GENAI_USE_VERTEXAI") != ""
	if configured || rules == nil {
		return &localLive{}, nil
	}
	s := modeltest.NewLiveServer(&modeltest.LiveOptions{Repeat: modeltest.LLMReply(rules), FrameDelay: standInPace})
	client, err := genai.NewClient(ctx, s.ClientConfig())
	if err != nil {
		s.Close()
		return nil, err
	}
	return &localLive{client: client, standIn: s}, nil
}

// describe names the live model for the startup lines.
func (l *localLive) describe(name string) string {
	switch {
	case name == "":
		return "none (live mode is off: no Gemini credentials and no stand-in)"
	case l.standIn != nil:
		return "a Gemini Live stand-in with the offline model's rules, at " + l.standIn.URL() + " (no GOOGLE_API_KEY)"
	}
	return name
}

func (l *localLive) stop() {
	if l.standIn != nil {
		l.standIn.Close()
	}
}
