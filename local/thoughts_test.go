package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestThoughtSummariesEndToEnd: with BATON_INCLUDE_THOUGHTS=true the demo
// (offline model) streams its thought summary to useChat as reasoning
// chunks, GET /Chat/{chatId} gives it back as a reasoning part before the
// answer, and the next message, whose history carries that part back as
// useChat sends it, is answered.
func TestThoughtSummariesEndToEnd(t *testing.T) {
	t.Setenv("BATON_DEV_IDENTITY", "true")
	t.Setenv("BATON_INCLUDE_THOUGHTS", "true")
	url := startForTest(t)
	// The runner's project outlives one run: a chat and a user of its
	// own (a user's turn rate is limited).
	chat := fmt.Sprintf("thoughts-%d", time.Now().UnixNano())
	user := "user-" + chat
	post := func(body string) []map[string]any {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, url+"/Chat", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Baton-User", user)
		req.Header.Set("X-Baton-Device", "tab-a")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("POST /Chat = %d %s", resp.StatusCode, raw)
		}
		var chunks []map[string]any
		for _, line := range strings.Split(string(raw), "\n") {
			data, ok := strings.CutPrefix(line, "data: ")
			var c map[string]any
			if ok && json.Unmarshal([]byte(data), &c) == nil {
				chunks = append(chunks, c)
			}
		}
		return chunks
	}
	chunks := post(`{"id":"` + chat + `","trigger":"submit-message","messages":[` +
		`{"id":"u1","role":"user","parts":[{"type":"text","text":"hello"}]}]}`)
	var reasoning, text strings.Builder
	for _, c := range chunks {
		switch c["type"] {
		case "reasoning-delta":
			reasoning.WriteString(c["delta"].(string))
		case "text-delta":
			text.WriteString(c["delta"].(string))
		}
	}
	if !strings.Contains(reasoning.String(), "No tool is needed") || strings.Contains(text.String(), "No tool is needed") {
		t.Fatalf("streamed reasoning %q and text %q, want the thought summary as reasoning only", reasoning.String(), text.String())
	}

	req, _ := http.NewRequest(http.MethodGet, url+"/Chat/"+chat, nil)
	req.Header.Set("X-Baton-User", user)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var page struct {
		Messages []struct {
			ID    string           `json:"id"`
			Role  string           `json:"role"`
			Parts []map[string]any `json:"parts"`
		} `json:"messages"`
	}
	json.NewDecoder(resp.Body).Decode(&page)
	resp.Body.Close()
	if len(page.Messages) != 2 || len(page.Messages[1].Parts) < 2 || page.Messages[1].Parts[0]["type"] != "reasoning" || page.Messages[1].Parts[1]["type"] != "text" {
		t.Fatalf("GET /Chat/%s = %+v, want the assistant message's reasoning part before its text", chat, page.Messages)
	}

	assistant, _ := json.Marshal(page.Messages[1])
	chunks = post(`{"id":"` + chat + `","trigger":"submit-message","messages":[` +
		`{"id":"u1","role":"user","parts":[{"type":"text","text":"hello"}]},` + string(assistant) + `,` +
		`{"id":"u2","role":"user","parts":[{"type":"text","text":"what is 12*7?"}]}]}`)
	text.Reset()
	for _, c := range chunks {
		if c["type"] == "text-delta" {
			text.WriteString(c["delta"].(string))
		}
	}
	if !strings.Contains(text.String(), "12*7 = 84") {
		t.Errorf("second answer = %q, want the calculator's", text.String())
	}
}
