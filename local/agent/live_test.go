package agent

import (
	"context"
	"testing"

	"google.golang.org/genai"

	"github.com/baton-run/baton/modeltest"
)

// The offline model's rules answer behind the Gemini Live stand-in, as the
// local runner serves live mode without a key: a call the rules make goes
// out as a toolCall, and its response is worded as in text mode.
func TestOfflineRulesLive(t *testing.T) {
	s := modeltest.NewLiveServer(&modeltest.LiveOptions{T: t, Repeat: modeltest.LLMReply(Offline{})})
	defer s.Close()
	client, err := genai.NewClient(context.Background(), s.ClientConfig())
	if err != nil {
		t.Fatal(err)
	}
	tools := []*genai.Tool{{FunctionDeclarations: []*genai.FunctionDeclaration{{Name: "change_bgm"}}}}
	sess, err := client.Live.Connect(context.Background(), GeminiModel, &genai.LiveConnectConfig{ResponseModalities: []genai.Modality{genai.ModalityText}, Tools: tools})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	done := true
	if err := sess.SendClientContent(genai.LiveClientContentInput{Turns: []*genai.Content{genai.NewContentFromText("change the music to track 2", genai.RoleUser)}, TurnComplete: &done}); err != nil {
		t.Fatal(err)
	}
	var call *genai.FunctionCall
	for call == nil {
		m, err := sess.Receive()
		if err != nil {
			t.Fatal(err)
		}
		if m.ToolCall != nil {
			call = m.ToolCall.FunctionCalls[0]
		}
	}
	if call.Name != "change_bgm" || call.Args["track"] != float64(2) {
		t.Fatalf("call = %s %v, want change_bgm track 2", call.Name, call.Args)
	}
	if err := sess.SendToolResponse(genai.LiveToolResponseInput{FunctionResponses: []*genai.FunctionResponse{{ID: call.ID, Name: call.Name, Response: map[string]any{"playing": 2}}}}); err != nil {
		t.Fatal(err)
	}
	var text string
	for {
		m, err := sess.Receive()
		if err != nil {
			t.Fatal(err)
		}
		if sc := m.ServerContent; sc != nil && sc.ModelTurn != nil {
			text += sc.ModelTurn.Parts[0].Text
		}
		if m.ServerContent != nil && m.ServerContent.TurnComplete {
			break
		}
	}
	if text != "Done: now playing track 2." {
		t.Fatalf("answer %q, want the offline model's wording", text)
	}
}
