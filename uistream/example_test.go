package uistream_test

import (
	"encoding/json"
	"fmt"
	"net/http"

	"google.golang.org/adk/v2/session"
	"google.golang.org/genai"

	"github.com/baton-run/baton/uistream"
)

func ExampleNewEncoder() {
	http.HandleFunc("/hello", func(w http.ResponseWriter, r *http.Request) {
		enc := uistream.NewEncoder(uistream.NewSSE(w), "msg-1")
		ev := &session.Event{Author: "assistant"}
		ev.Content = genai.NewContentFromText("Hello!", genai.RoleModel)
		enc.Event(ev, nil) // nil: every call runs on the server
		enc.Finish()       // finish, then data: [DONE]
	})
}

func ExampleCollector() {
	var c uistream.Collector
	enc := uistream.NewEncoder(&c, "msg-1")
	ev := &session.Event{Author: "assistant"}
	ev.Content = genai.NewContentFromText("Hello!", genai.RoleModel)
	enc.Event(ev, nil)
	enc.Finish()
	b, _ := json.Marshal(c.Chunks)
	fmt.Println(string(b))
	// Output: [{"type":"start","messageId":"msg-1"},{"type":"start-step"},{"type":"text-start","id":"text-1"},{"type":"text-delta","id":"text-1","delta":"Hello!"},{"type":"text-end","id":"text-1"},{"type":"finish-step"},{"type":"finish"}]
}
