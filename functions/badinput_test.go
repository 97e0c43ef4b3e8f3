package functions

import (
	"net/http"
	"strings"
	"testing"

	"github.com/gorilla/websocket"

	"github.com/baton-run/baton/a2aserver"
	"github.com/baton-run/baton/errclass"
	"github.com/baton-run/baton/modeltest"
)

// transports are the four ways a client reaches Baton; each answers one
// bad input with the code of its class (errclass), "" where the input
// does not apply to it.
type transports struct {
	api  func(f *httpFixture) *http.Response // Baton's JSON routes
	chat func(f *httpFixture) *http.Response // useChat's
	a2a  func(f *httpFixture) rpc            // A2A JSON-RPC
	live func(f *httpFixture) *wsClient      // the live socket: its error frame
}

// TestBadInputEveryTransport feeds the HTTP JSON API, POST /Chat (useChat),
// A2A and the live socket the same bad inputs: each answers with the same
// class, through its own table (the HTTP status of the class, the
// JSON-RPC error of A2A's table with the class's code in its data, the
// live socket's error frame), and none is a 5xx.
func TestBadInputEveryTransport(t *testing.T) {
	t.Parallel()
	f, _ := liveFixture(t, nil, &modeltest.LiveOptions{Repeat: modeltest.EchoReply})
	ada := f.token("ada")
	turn := func(body string) func(f *httpFixture) *http.Response {
		return func(f *httpFixture) *http.Response { return f.do(http.MethodPost, NameTurn, ada, body, nil) }
	}
	chat := func(body any) func(f *httpFixture) *http.Response {
		return func(f *httpFixture) *http.Response { return f.do(http.MethodPost, NameChat, ada, body, nil) }
	}
	a2a := func(params string) func(f *httpFixture) rpc {
		return func(f *httpFixture) rpc { return f.a2aRaw(ada, params) }
	}
	frame := func(raw string) func(f *httpFixture) *wsClient {
		return func(f *httpFixture) *wsClient {
			sock := f.dialLive("bad", "tab-a", map[string]any{"auth": ada})
			sock.next("ready")
			if err := sock.ws.WriteMessage(websocket.TextMessage, []byte(raw)); err != nil {
				t.Fatal(err)
			}
			return sock
		}
	}
	message := func(parts string) string {
		return `{"id":"c1","trigger":"submit-message","deviceId":"tab-a","messages":[{"id":"u1","role":"user","parts":[` + parts + `]}]}`
	}
	action := func(timestamp string) string {
		return `{"version":"v0.9","action":{"name":"more","surfaceId":"card","sourceComponentId":"more","timestamp":"` + timestamp + `","context":{}}}`
	}
	a2aAction := func(timestamp string) string {
		return `{"message":{"kind":"message","messageId":"m1","role":"user","parts":[{"kind":"data","data":` + action(timestamp) +
			`,"metadata":{"mimeType":"application/json+a2ui"}}]}}`
	}
	big := strings.Repeat("x", 70<<10) // over the fixture's BATON_MAX_BODY_BYTES, 64 KiB
	tests := []struct {
		name  string
		class errclass.Code
		transports
	}{
		{"a chat id that names no document", errclass.InvalidRequest, transports{
			api:  turn(`{"sessionId":"a/b","clientId":"tab-a","text":"hi"}`),
			chat: chat(strings.Replace(message(`{"type":"text","text":"hi"}`), `"id":"c1"`, `"id":"a/b"`, 1)),
			a2a:  a2a(`{"message":{"kind":"message","messageId":"m1","role":"user","contextId":"a/b","parts":[{"kind":"text","text":"hi"}]}}`),
			live: func(f *httpFixture) *wsClient { return f.dialLive("a%2Fb", "tab-a", map[string]any{"auth": ada}) },
		}},
		{"malformed JSON", errclass.InvalidRequest, transports{
			api:  turn(`{"sessionId":`),
			chat: chat(`{"id":`),
			live: frame(`{"content":`),
		}},
		{"a member Baton does not take", errclass.InvalidRequest, transports{
			api:  turn(`{"sessionId":"c1","clientId":"tab-a","text":"hi","Text":"again"}`),
			chat: chat(strings.Replace(message(`{"type":"text","text":"hi"}`), `"trigger"`, `"Trigger"`, 1)),
			live: frame(`{"contents":{"parts":[]}}`),
		}},
		{"a message with nothing to say", errclass.InvalidRequest, transports{
			api:  turn(`{"sessionId":"c1","clientId":"tab-a","text":""}`),
			chat: chat(message(``)),
			a2a:  a2a(`{"message":{"kind":"message","messageId":"m1","role":"user","parts":[]}}`),
		}},
		{"a card action whose timestamp is no date-time", errclass.InvalidRequest, transports{
			chat: chat(message(`{"type":"data-a2ui-action","data":` + action("yesterday") + `}`)),
			a2a:  a2a(a2aAction("yesterday")),
		}},
		{"a card action on a surface never drawn", errclass.SurfaceGone, transports{
			chat: chat(message(`{"type":"data-a2ui-action","data":` + action("2026-12-01t10:11:12Z") + `}`)),
			a2a:  a2a(a2aAction("2026-12-01t10:11:12Z")),
		}},
		{"a tool result that is no object", errclass.InvalidRequest, transports{
			api: func(f *httpFixture) *http.Response {
				return f.do(http.MethodPost, NameToolResult, ada, `{"sessionId":"c1","toolCallId":"x","clientId":"tab-a","output":"played"}`, nil)
			},
			chat: chat(`{"id":"c1","trigger":"submit-message","deviceId":"tab-a","messages":[{"id":"a1","role":"assistant","parts":[` +
				`{"type":"tool-change_bgm","toolCallId":"x","state":"output-available","input":{},"output":"played"}]}]}`),
			a2a:  a2a(`{"message":{"kind":"message","messageId":"m1","role":"user","parts":[{"kind":"data","data":{"id":"x","name":"change_bgm","response":"played"},"metadata":{"adk_type":"function_response"}}]}}`),
			live: frame(`{"answer":{"toolCallId":"x","output":"played"}}`),
		}},
		{"an agent the team does not have", errclass.UnknownAgent, transports{
			api:  turn(`{"sessionId":"c1","clientId":"tab-a","text":"hi","agent":"nobody"}`),
			chat: chat(strings.Replace(message(`{"type":"text","text":"hi"}`), `"trigger"`, `"agent":"nobody","trigger"`, 1)),
			live: func(f *httpFixture) *wsClient {
				return f.dialLive("c1", "tab-a&agent=nobody", map[string]any{"auth": ada})
			},
		}},
		{"a query parameter out of bounds", errclass.InvalidRequest, transports{
			api: func(f *httpFixture) *http.Response {
				return f.do(http.MethodGet, NamePending+"?sessionId=c1&clientId=tab-a&history=1000", ada, nil, nil)
			},
			chat: func(f *httpFixture) *http.Response {
				return f.do(http.MethodGet, NameChat+"/c1?limit=0", ada, nil, nil)
			},
			live: func(f *httpFixture) *wsClient { return f.dialLive("c1", "", map[string]any{"auth": ada}) },
		}},
		{"no credentials", errclass.Unauthenticated, transports{
			api: func(f *httpFixture) *http.Response {
				return f.do(http.MethodPost, NameTurn, "", `{"sessionId":"c1","clientId":"tab-a","text":"hi"}`, nil)
			},
			chat: func(f *httpFixture) *http.Response {
				return f.do(http.MethodPost, NameChat, "", message(`{"type":"text","text":"hi"}`), nil)
			},
			a2a: func(f *httpFixture) rpc {
				return f.a2aRaw("", `{"message":{"kind":"message","messageId":"m1","role":"user","parts":[{"kind":"text","text":"hi"}]}}`)
			},
			live: func(f *httpFixture) *wsClient { return f.dialLive("c1", "tab-a", textFrame("hi")) },
		}},
		{"a message over the limit", errclass.TooLarge, transports{
			api:  turn(`{"sessionId":"c1","clientId":"tab-a","text":"` + big + `"}`),
			chat: chat(message(`{"type":"text","text":"` + big + `"}`)),
			a2a:  a2a(`{"message":{"kind":"message","messageId":"m1","role":"user","parts":[{"kind":"text","text":"` + big + `"}]}}`),
		}},
	}
	status := func(c errclass.Code) int { return errclass.Class{Code: c}.HTTPStatus() }
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.api != nil {
				resp := tt.api(f)
				if e := errorOf(t, resp); resp.StatusCode != status(tt.class) || e.Code != string(tt.class) {
					t.Errorf("HTTP API: %d %s, want %d %s", resp.StatusCode, e.Code, status(tt.class), tt.class)
				}
			}
			if tt.chat != nil {
				resp := tt.chat(f)
				if e := errorOf(t, resp); resp.StatusCode != status(tt.class) || e.Code != string(tt.class) {
					t.Errorf("useChat: %d %s, want %d %s", resp.StatusCode, e.Code, status(tt.class), tt.class)
				}
			}
			if tt.a2a != nil {
				got := tt.a2a(f)
				if got.Error == nil || got.Error.Code != a2aserver.RPCCode(tt.class) || got.Error.class() != string(tt.class) || got.status >= 500 {
					t.Errorf("A2A: status %d, error %+v; want JSON-RPC %d with code %s", got.status, got.Error, a2aserver.RPCCode(tt.class), tt.class)
				}
			}
			if tt.live != nil {
				if e := tt.live(f).next("error"); e["code"] != string(tt.class) {
					t.Errorf("live socket: error frame %v, want code %s", e, tt.class)
				}
			}
		})
	}
}

// a2aRaw sends message/send with params as written (JSON), with a bearer
// token ("" for none).
func (f *httpFixture) a2aRaw(token, params string) rpc {
	f.t.Helper()
	return f.a2aBody(token, `{"jsonrpc":"2.0","id":1,"method":"message/send","params":`+params+`}`)
}
