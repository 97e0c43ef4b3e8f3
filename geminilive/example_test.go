package geminilive_test

import (
	"context"
	"fmt"
	"log"

	"google.golang.org/genai"

	"github.com/baton-run/baton/geminilive"
	"github.com/baton-run/baton/modeltest"
)

// A conversation seeded with the chat's history, on the Gemini Live
// stand-in: the model answers the user's turn, and reports its usage and a
// handle a later holder can resume from.
func ExampleOpen() {
	s := modeltest.NewLiveServer(&modeltest.LiveOptions{Repeat: modeltest.EchoReply})
	defer s.Close()
	ctx := context.Background()
	client, err := genai.NewClient(ctx, s.ClientConfig())
	if err != nil {
		log.Fatal(err)
	}
	sess, err := geminilive.Open(ctx, geminilive.Config{
		Client: client, Model: "gemini-live-2.5-flash",
		Setup: &genai.LiveConnectConfig{ResponseModalities: []genai.Modality{genai.ModalityText}},
		History: func(context.Context) ([]*genai.Content, error) {
			return []*genai.Content{genai.NewContentFromText("hi", genai.RoleUser), genai.NewContentFromText("hello", genai.RoleModel)}, nil
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer sess.Close()
	if err := sess.SendText("how are you?"); err != nil {
		log.Fatal(err)
	}
	answer := ""
	for ev := range sess.Events() {
		switch ev.Kind {
		case geminilive.Text:
			answer += ev.Text
		case geminilive.TurnComplete:
			fmt.Println("model:", answer)
		case geminilive.Usage:
			fmt.Println("tokens:", ev.Usage.TotalTokenCount)
		case geminilive.Handle:
			fmt.Println("handle:", ev.Handle)
			return
		}
	}
	// Output:
	// tokens: 11
	// model: saw text=how are you?
	// handle: handle-1
}
