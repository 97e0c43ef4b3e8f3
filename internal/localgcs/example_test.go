package localgcs_test

import (
	"context"
	"fmt"

	"google.golang.org/adk/v2/artifact"
	"google.golang.org/genai"

	"github.com/baton-run/baton/internal/localgcs"
)

func ExampleStart() {
	ctx := context.Background()
	gcs, err := localgcs.Start("files")
	if err != nil {
		panic(err)
	}
	defer gcs.Stop()
	files, err := gcs.Artifacts(ctx) // ADK's gcsartifact, on the in-process API
	if err != nil {
		panic(err)
	}
	_, err = files.Save(ctx, &artifact.SaveRequest{AppName: "app", UserID: "ada", SessionID: "chat-1", FileName: "note",
		Part: genai.NewPartFromBytes([]byte("hello"), "text/plain")})
	if err != nil {
		panic(err)
	}
	names, _ := gcs.Objects(ctx, "app/")
	fmt.Println(names)
	// Output: [app/ada/chat-1/note/1]
}
