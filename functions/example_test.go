package functions_test

import (
	"context"
	"log"
	"net/http"
	"os"

	"cloud.google.com/go/firestore"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/session"
	"google.golang.org/genai"

	"github.com/baton-run/baton/functions"
	"github.com/baton-run/baton/toolcallback"
)

func ExampleNewServerWithClient() {
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
	s, err := functions.NewServerWithClient(cfg, client, []toolcallback.Member{{Agent: root}}, nil)
	if err != nil {
		log.Fatal(err)
	}
	for _, name := range functions.Names {
		http.Handle("/"+name, s.Handler(name))
	}
	log.Fatal(http.ListenAndServe(":8080", nil))
}

func ExampleNewStreamWriter() {
	http.HandleFunc("/hello", func(w http.ResponseWriter, r *http.Request) {
		sw := functions.NewStreamWriter(w, "msg-1")
		sw.Start()
		ev := &session.Event{Author: "assistant"}
		ev.Content = genai.NewContentFromText("Hello!", genai.RoleModel)
		sw.Event(ev, func(*genai.FunctionCall) functions.CallKind { return functions.CallServer })
		sw.Finish() // finish, then data: [DONE]
	})
}
