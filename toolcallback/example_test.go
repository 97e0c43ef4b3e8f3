package toolcallback_test

import (
	"context"
	"log"

	"cloud.google.com/go/firestore"
	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/model"
	"google.golang.org/genai"

	"github.com/baton-run/baton/sessionstore"
	"github.com/baton-run/baton/toolcallback"
)

func ExampleNewTeam() {
	ctx := context.Background()
	client, err := firestore.NewClient(ctx, "my-project")
	if err != nil {
		log.Fatal(err)
	}
	var llm model.LLM // e.g. gemini.NewModel(...)
	concierge, err := llmagent.New(llmagent.Config{Name: "concierge", Model: llm})
	if err != nil {
		log.Fatal(err)
	}
	dj, err := llmagent.New(llmagent.Config{Name: "dj", Model: llm})
	if err != nil {
		log.Fatal(err)
	}
	team, err := toolcallback.NewTeam(sessionstore.New(client, nil), "demo",
		[]toolcallback.Member{{Agent: concierge}, {Agent: dj, DropState: true}}, nil)
	if err != nil {
		log.Fatal(err)
	}
	// Asking a chat for another agent switches it, carrying the conversation over.
	inv, report, err := team.Turn(ctx, toolcallback.TurnRequest{
		UserID: "user-1", ChatID: "chat-1", ClientID: "tab-1", Agent: "dj",
		Content: genai.NewContentFromText("play track 2", genai.RoleUser),
	})
	if err != nil {
		log.Fatal(err)
	}
	_ = report // {Switched: true, From: "concierge", To: "dj"} once the chat existed
	_ = inv.Wait()
}

func ExampleApproval() {
	type transfer struct {
		Amount int    `json:"amount"`
		To     string `json:"to"`
	}
	// The handler runs only after a person approves; an approver's payload
	// such as {"amount": 40} replaces the model's arguments first.
	send, err := toolcallback.Approval(toolcallback.ApprovalConfig[transfer]{
		Name:        "send_money",
		Description: "Send money to a contact.",
		Require:     func(t transfer) bool { return t.Amount > 10 }, // small amounts need no approval
	}, func(_ agent.Context, t transfer) (map[string]any, error) {
		return map[string]any{"sent": t.Amount, "to": t.To}, nil
	})
	if err != nil {
		log.Fatal(err)
	}
	_ = send
}
