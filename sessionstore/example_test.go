package sessionstore_test

import (
	"context"
	"fmt"
	"log"

	"cloud.google.com/go/firestore"
	"google.golang.org/adk/v2/session"

	"github.com/baton-run/baton/sessionstore"
)

func ExampleNew() {
	ctx := context.Background()
	client, err := firestore.NewClient(ctx, "my-project")
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()

	// Two deployments can share a database by using different roots.
	svc := sessionstore.New(client, &sessionstore.Options{Root: "baton"})
	created, err := svc.Create(ctx, &session.CreateRequest{AppName: "concierge", UserID: "user-1"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(created.Session.ID() != "")
}
