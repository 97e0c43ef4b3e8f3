package toolcallback_test

import (
	"context"
	"log"

	"cloud.google.com/go/firestore"
	"google.golang.org/adk/agent/llmagent"
	"google.golang.org/adk/model"
	"google.golang.org/adk/tool"
	"google.golang.org/genai"

	"github.com/baton-run/baton/sessionstore"
	"github.com/baton-run/baton/toolcallback"
)

func ExampleNew() {
	ctx := context.Background()
	client, err := firestore.NewClient(ctx, "my-project")
	if err != nil {
		log.Fatal(err)
	}
	type track struct {
		Track int `json:"track"`
	}
	changeBGM, err := toolcallback.Browser[track](toolcallback.BrowserConfig{
		Name: "change_bgm", Description: "Switch the page's background music.",
	})
	if err != nil {
		log.Fatal(err)
	}
	var llm model.LLM // e.g. gemini.NewModel(...)
	root, err := llmagent.New(llmagent.Config{Name: "dj", Model: llm, Tools: []tool.Tool{changeBGM}})
	if err != nil {
		log.Fatal(err)
	}
	engine, err := toolcallback.New(client, sessionstore.New(client, nil), "demo", root, nil)
	if err != nil {
		log.Fatal(err)
	}
	inv, err := engine.Turn(ctx, toolcallback.TurnRequest{
		UserID: "user-1", SessionID: "chat-1", ClientID: "tab-1",
		Content: genai.NewContentFromText("play track 2", genai.RoleUser),
	})
	if err != nil {
		log.Fatal(err)
	}
	for ev, err := range inv.Events() {
		if err != nil {
			log.Fatal(err)
		}
		_ = ev // stream it to the client; the browser answers change_bgm later with engine.Resume
	}
}
