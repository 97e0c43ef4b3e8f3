package functions

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/baton-run/baton/modeltest"
	"github.com/baton-run/baton/usechat"
)

func TestCheckExactJSON(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		body    string
		into    any
		wantErr string // "" for no error
	}{
		{"plain", `{"sessionId":"s1","clientId":"tab","text":"hi"}`, &turnRequest{}, ""},
		{"escaped replacement character", `{"sessionId":"s-\ufffd","clientId":"tab","text":"hi"}`, &turnRequest{}, ""},
		{"surrogate pair", `{"sessionId":"s1","clientId":"tab","text":"\ud83d\ude00"}`, &turnRequest{}, ""},
		{"escaped backslash before u", `{"sessionId":"s1","clientId":"tab","text":"\\ud800"}`, &turnRequest{}, ""},
		{"escaped name", `{"sessi\u006fnId":"s1","clientId":"tab","text":"hi"}`, &turnRequest{}, ""},
		{"invalid UTF-8", "{\"sessionId\":\"s-\xff\",\"clientId\":\"tab\",\"text\":\"hi\"}", &turnRequest{}, "not valid UTF-8"},
		{"lone high surrogate", `{"sessionId":"s-\ud800","clientId":"tab","text":"hi"}`, &turnRequest{}, "unpaired surrogate"},
		{"lone low surrogate", `{"sessionId":"s-\uDC00","clientId":"tab","text":"hi"}`, &turnRequest{}, "unpaired surrogate"},
		{"high surrogate then a letter", `{"sessionId":"s-\ud800\u0041","clientId":"tab","text":"hi"}`, &turnRequest{}, "unpaired surrogate"},
		{"high surrogate at the end of a string", `{"sessionId":"s1","clientId":"tab","text":"\ud800"}`, &turnRequest{}, "unpaired surrogate"},
		{"upper-case name", `{"SESSIONID":"s1","clientId":"tab","text":"hi"}`, &turnRequest{}, `unknown member "SESSIONID"`},
		{"lower-case name", `{"sessionid":"s1","clientId":"tab","text":"hi"}`, &turnRequest{}, `unknown member "sessionid"`},
		{"name in a part", `{"sessionId":"s1","clientId":"tab","parts":[{"Text":"hi"}]}`, &turnRequest{}, `unknown member "Text" in parts[0]`},
		{"name in inline data", `{"sessionId":"s1","clientId":"tab","parts":[{"inlineData":{"MimeType":"image/png","data":""}}]}`, &turnRequest{}, `unknown member "MimeType" in parts[0].inlineData`},
		{"name twice", `{"sessionId":"a","sessionId":"b","clientId":"tab","text":"hi"}`, &turnRequest{}, `member "sessionId" appears twice`},
		{"answer name", `{"sessionId":"s1","toolCallId":"c1","clientId":"tab","OUTPUT":{}}`, &toolResultRequest{}, `unknown member "OUTPUT"`},
		{"free-form output keeps any name", `{"sessionId":"s1","toolCallId":"c1","clientId":"tab","output":{"Playing":2,"playing":3,"x":{"Y":[{"Z":1}]}}}`, &toolResultRequest{}, ""},
		{"free-form output names a member twice", `{"sessionId":"s1","toolCallId":"c1","clientId":"tab","output":{"a":1,"a":2}}`, &toolResultRequest{}, `member "a" appears twice in output`},
		{"payload names a member twice", `{"sessionId":"s1","toolCallId":"c1","clientId":"tab","approved":true,"payload":[{"a":1,"a":2}]}`, &toolResultRequest{}, `appears twice in payload[0]`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := usechat.CheckExactJSON([]byte(tc.body), tc.into)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("usechat.CheckExactJSON(%s) error = %v, want nil", tc.body, err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("usechat.CheckExactJSON(%s) error = %v, want one containing %q", tc.body, err, tc.wantErr)
			}
		})
	}
}

// TestExactIDs: an id names exactly what the client sent. Bytes that are
// not UTF-8, escapes of no character and NUL are refused with 400 and
// write nothing, rather than being replaced so that two different ids name
// one chat; member names match only as written.
func TestExactIDs(t *testing.T) {
	t.Parallel()
	f := newHTTPFixture(t, nil, modeltest.TextReply("hello"))
	ada := f.token("ada")
	// The chat whose id is "s-" and U+FFFD, a valid id.
	f.stream(f.do(http.MethodPost, NameTurn, ada, `{"sessionId":"s-\ufffd","clientId":"tab-a","text":"first"}`, nil))

	tests := []struct {
		name  string
		fn    string
		body  string
		query string
	}{
		{"invalid UTF-8 in the chat id", NameTurn, "{\"sessionId\":\"s-\xff\",\"clientId\":\"tab-a\",\"text\":\"hi\"}", ""},
		{"unpaired surrogate in the chat id", NameTurn, `{"sessionId":"s-\udfff","clientId":"tab-a","text":"hi"}`, ""},
		{"NUL in the chat id", NameTurn, `{"sessionId":"s-\u0000","clientId":"tab-a","text":"hi"}`, ""},
		{"NUL in the client id", NameTurn, `{"sessionId":"s-\ufffd","clientId":"tab\u0000","text":"hi"}`, ""},
		{"invalid UTF-8 in the text", NameTurn, "{\"sessionId\":\"s-\\ufffd\",\"clientId\":\"tab-a\",\"text\":\"h\xffi\"}", ""},
		{"upper-case member", NameTurn, `{"SESSIONID":"s-\ufffd","clientId":"tab-a","text":"hi"}`, ""},
		{"member twice", NameTurn, `{"sessionId":"other","sessionId":"s-\ufffd","clientId":"tab-a","text":"hi"}`, ""},
		{"invalid UTF-8 in a call id", NameToolResult, "{\"sessionId\":\"s-\\ufffd\",\"toolCallId\":\"c\xff\",\"clientId\":\"tab-a\",\"output\":{}}", ""},
		{"lower-case answer member", NameToolResult, `{"sessionId":"s-\ufffd","toolcallid":"c1","clientId":"tab-a","output":{}}`, ""},
		{"invalid UTF-8 in a query", NamePending, "", "?sessionId=s-%FF&clientId=tab-a"},
		{"NUL in a query", NamePending, "", "?sessionId=s-%00&clientId=tab-a"},
	}
	for _, tc := range tests {
		before := f.counter.Snapshot()
		var resp *http.Response
		if tc.body == "" {
			resp = f.do(http.MethodGet, tc.fn+tc.query, ada, nil, nil)
		} else {
			resp = f.do(http.MethodPost, tc.fn, ada, tc.body, nil)
		}
		if resp.StatusCode != http.StatusBadRequest {
			raw, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			t.Errorf("%s: status %d, want 400: %s", tc.name, resp.StatusCode, raw)
			continue
		}
		if e := errorOf(t, resp); e.Code != "invalid_request" {
			t.Errorf("%s: error %+v, want invalid_request", tc.name, e)
		}
		if w := f.counter.Snapshot().Sub(before).Writes; w != 0 {
			t.Errorf("%s: %d documents written, want 0", tc.name, w)
		}
	}

	// The refused messages reached no chat: the U+FFFD chat holds the first
	// message and its answer only.
	resp := f.do(http.MethodGet, NamePending+"?sessionId=s-%EF%BF%BD&clientId=tab-a", ada, nil, nil)
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || strings.Count(string(raw), `"role":"user"`) != 1 {
		t.Errorf("Pending(s-\\uFFFD) = %d %s, want 200 with one user message", resp.StatusCode, raw)
	}
}
