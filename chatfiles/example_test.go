package chatfiles_test

import (
	"context"
	"log"
	"os"

	"google.golang.org/adk/v2/artifact/gcsartifact"
	"google.golang.org/genai"

	"github.com/baton-run/baton/chatfiles"
)

func ExampleNew() {
	ctx := context.Background()
	files, err := gcsartifact.NewService(ctx, "my-bucket")
	if err != nil {
		log.Fatal(err)
	}
	store := chatfiles.New(files, "demo", nil)
	photo, err := os.ReadFile("photo.jpg")
	if err != nil {
		log.Fatal(err)
	}
	msg := &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{
		genai.NewPartFromText("what is in this photo?"),
		genai.NewPartFromBytes(photo, "image/jpeg"),
	}}
	// The session stores saved, whose second part refers to the photo's
	// artifact instead of holding its bytes.
	saved, err := store.SaveMessage(ctx, "ada", "chat-1", msg)
	if err != nil {
		log.Fatal(err)
	}
	ref, _ := chatfiles.RefOf(saved.Parts[1])
	blob, err := store.Load(ctx, "ada", ref) // the photo's bytes again
	if err != nil {
		log.Fatal(err)
	}
	_ = blob
}
