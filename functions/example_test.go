package functions_test

import (
	"context"
	"log"
	"net/http"
	"os"

	"cloud.google.com/go/firestore"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/model"

	"github.com/baton-run/baton/functions"
	"github.com/baton-run/baton/sessionstore"
	"github.com/baton-run/baton/toolcallback"
)

func ExampleNewServer() {
	ctx := context.Background()
	cfg, err := functions.ConfigFromEnv(os.LookupEnv)
	if err != nil {
		log.Fatal(err)
	}
	client, err := firestore.NewClientWithDatabase(ctx, cfg.Project, cfg.Database)
	if err != nil {
		log.Fatal(err)
	}
	var llm model.LLM // e.g. gemini.NewModel(...)
	root, err := llmagent.New(llmagent.Config{Name: "assistant", Model: llm})
	if err != nil {
		log.Fatal(err)
	}
	s, err := functions.NewServer(cfg, sessionstore.New(client, &sessionstore.Options{Root: cfg.Root}), []toolcallback.Member{{Agent: root}}, nil)
	if err != nil {
		log.Fatal(err)
	}
	// Every function at /{Name} with its sub-paths (/Chat/{chatId}/stream,
	// the A2A agent card), on one port.
	log.Fatal(http.ListenAndServe(":8080", s.Mux()))
}
