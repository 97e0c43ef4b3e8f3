package modeltest_test

import (
	"context"
	"fmt"
	"log"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/runner"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/functiontool"
	"google.golang.org/genai"

	"github.com/baton-run/baton/modeltest"
)

// An agent's tool, tested without a live model: the script calls the tool,
// then echoes what the tool answered.
func ExampleStrict() {
	type sum struct {
		A, B int
	}
	add, err := functiontool.New(functiontool.Config{Name: "add", Description: "adds two numbers"},
		func(_ agent.Context, s sum) (map[string]any, error) { return map[string]any{"sum": s.A + s.B}, nil })
	if err != nil {
		log.Fatal(err)
	}
	m := &modeltest.Strict{Script: []modeltest.Reply{
		modeltest.CallReply(modeltest.Call("call-1", "add", map[string]any{"A": 2, "B": 3})),
		modeltest.EchoReply,
	}} // in a test, set T: t so that a request Gemini would refuse fails it
	a, err := llmagent.New(llmagent.Config{Name: "adder", Model: m, Tools: []tool.Tool{add}})
	if err != nil {
		log.Fatal(err)
	}
	r, err := runner.NewInMemory("example", a)
	if err != nil {
		log.Fatal(err)
	}
	for ev, err := range r.Run(context.Background(), "user", "session", genai.NewContentFromText("2+3?", genai.RoleUser), agent.RunConfig{}) {
		if err != nil {
			log.Fatal(err)
		}
		if ev.Content != nil && ev.Content.Parts[0].Text != "" {
			fmt.Println(ev.Content.Parts[0].Text)
		}
	}
	fmt.Println("model calls:", m.Calls())
	// Output:
	// saw add={"sum":5}
	// model calls: 2
}

// A live session on the Gemini Live stand-in, through genai's own client:
// the scripted answer arrives as text, then turnComplete with the turn's
// usage.
func ExampleNewLiveServer() {
	s := modeltest.NewLiveServer(&modeltest.LiveOptions{Script: []modeltest.Reply{modeltest.TextReply("Hello from the stand-in.")}})
	defer s.Close()
	ctx := context.Background()
	client, err := genai.NewClient(ctx, s.ClientConfig())
	if err != nil {
		log.Fatal(err)
	}
	sess, err := client.Live.Connect(ctx, "gemini-live-2.5-flash", &genai.LiveConnectConfig{ResponseModalities: []genai.Modality{genai.ModalityText}})
	if err != nil {
		log.Fatal(err)
	}
	defer sess.Close()
	done := true
	if err := sess.SendClientContent(genai.LiveClientContentInput{Turns: []*genai.Content{genai.NewContentFromText("hi", genai.RoleUser)}, TurnComplete: &done}); err != nil {
		log.Fatal(err)
	}
	for {
		m, err := sess.Receive()
		if err != nil {
			log.Fatal(err)
		}
		if sc := m.ServerContent; sc != nil && sc.ModelTurn != nil {
			fmt.Print(sc.ModelTurn.Parts[0].Text)
		}
		if m.UsageMetadata != nil {
			fmt.Println("\ntokens:", m.UsageMetadata.TotalTokenCount)
			break
		}
	}
	// Output:
	// Hello from the stand-in.
	// tokens: 7
}
