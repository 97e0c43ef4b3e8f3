package a2apeer

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"iter"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/a2aproject/a2a-go/v2/a2asrv/push"
)

// Mode is how the peer's agent behaves.
type Mode int

const (
	Works  Mode = iota // reports working, then completes once released; pushes
	Asks               // asks a question, completes with the answer; pushes
	Silent             // as Works, but sends no push notifications
)

// Peer is a real a2a-go server agent (a2asrv over JSON-RPC, with
// its own push sender), the remote the tests delegate to.
type Peer struct {
	t           testing.TB
	mode        Mode
	srv         *httptest.Server
	release     chan struct{} // closed: a working task completes
	releaseOnce sync.Once

	mu       sync.Mutex
	messages []string // ids of the messages it took
	texts    []string
	cancels  int // runs of the executor's Cancel
	// cancelRequests counts the requests to cancel a task (tasks/cancel).
	cancelRequests int
	sent           map[string]int    // sends of each message id the remote took (not refused)
	taskOf         map[string]string // the task each message id started or continued
	// gate, when set, sees each request of the instance a test may kill
	// (method and message id) before it reaches the remote; an error
	// refuses it.
	gate func(method, message string) error

	// Result, when set before the first message, gives the parts of the
	// result's artifact, given the peer's URL (where Handle serves what
	// they link to).
	Result func(url string) []*a2a.Part
	// Question, when set before the first message, are parts of the
	// question's message (mode Asks) after its text.
	Question []*a2a.Part

	mux *http.ServeMux
}

func Start(t testing.TB, mode Mode) *Peer {
	p := &Peer{t: t, mode: mode, release: make(chan struct{}), sent: map[string]int{}, taskOf: map[string]string{}}
	mux := http.NewServeMux()
	p.mux = mux
	p.srv = httptest.NewServer(mux)
	t.Cleanup(p.srv.Close)
	card := &a2a.AgentCard{
		Name: "events", Description: "what is on in town", Version: "1",
		SupportedInterfaces: []*a2a.AgentInterface{a2a.NewAgentInterface(p.srv.URL, a2a.TransportProtocolJSONRPC)},
		DefaultInputModes:   []string{"text"}, DefaultOutputModes: []string{"text"},
		Capabilities: a2a.AgentCapabilities{PushNotifications: mode != Silent},
	}
	opts := []a2asrv.RequestHandlerOption{}
	if mode != Silent {
		opts = append(opts, a2asrv.WithPushNotifications(push.NewInMemoryStore(),
			push.NewHTTPPushSender(&push.HTTPSenderConfig{AllowPrivateNetworks: true})))
	}
	mux.Handle(a2asrv.WellKnownAgentCardPath, a2asrv.NewStaticAgentCardHandler(card))
	mux.Handle("/", p.front(a2asrv.NewJSONRPCHandler(a2asrv.NewHandler(p, opts...))))
	return p
}

// front is the peer's JSON-RPC door in front of h: it counts the
// messages sent (by id) and the requests to cancel a task (whether or not
// the task can still be cancelled: the executor's Cancel runs only when it
// can); it passes a request of the instance the gate watches (one with
// InstanceHeader) through the gate first; and it takes a message once
// per id, as a remote that deduplicates retries does: a message sent
// again is answered with the task as it now is, and not run again.
func (p *Peer) front(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Message struct {
					ID string `json:"messageId"`
				} `json:"message"`
			} `json:"params"`
		}
		_ = json.Unmarshal(body, &req)
		msg := req.Params.Message.ID
		p.mu.Lock()
		gate := p.gate
		p.mu.Unlock()
		if gate != nil && r.Header.Get(InstanceHeader) != "" {
			if err := gate(req.Method, msg); err != nil {
				w.WriteHeader(http.StatusServiceUnavailable)
				return
			}
		}
		p.mu.Lock()
		if req.Method == "CancelTask" || req.Method == "tasks/cancel" {
			p.cancelRequests++
		}
		task := p.taskOf[msg]
		p.mu.Unlock()
		if msg != "" && task != "" {
			body = []byte(`{"jsonrpc":"2.0","id":` + string(req.ID) + `,"method":"GetTask","params":{"id":"` + task + `"}}`)
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		out := rec.Body.Bytes()
		var res struct {
			Result json.RawMessage `json:"result"`
		}
		if msg != "" && json.Unmarshal(out, &res) == nil && res.Result != nil {
			var sent struct {
				Task struct {
					ID string `json:"id"`
				} `json:"task"`
			}
			p.mu.Lock()
			p.sent[msg]++ // taken: run, or answered as it was
			if task != "" {
				out = []byte(`{"jsonrpc":"2.0","id":` + string(req.ID) + `,"result":{"task":` + string(res.Result) + `}}`)
			} else if json.Unmarshal(res.Result, &sent) == nil && sent.Task.ID != "" {
				p.taskOf[msg] = sent.Task.ID
			}
			p.mu.Unlock()
		}
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.Header().Del("Content-Length")
		w.WriteHeader(rec.Code)
		_, _ = w.Write(out)
	})
}

// InstanceHeader marks the requests of the instance a test may kill
// (Peer.gate).
const InstanceHeader = "X-Test-Instance"

// Sends is how many times the message id was sent to the remote, and
// runs how many times its agent ran it (once per id: front).
func (p *Peer) Sends(id string) (sends, runs int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, m := range p.messages {
		if m == id {
			runs++
		}
	}
	return p.sent[id], runs
}

// Cancelled is how many requests to cancel a task the remote took.
func (p *Peer) Cancelled() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cancelRequests
}

func (p *Peer) Took() (ids, texts []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.messages...), append([]string(nil), p.texts...)
}

func (p *Peer) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		p.mu.Lock()
		p.messages = append(p.messages, ec.Message.ID)
		text := ""
		for _, part := range ec.Message.Parts {
			text += part.Text()
		}
		p.texts = append(p.texts, text)
		p.mu.Unlock()
		agentSays := func(s string) *a2a.Message { return a2a.NewMessage(a2a.MessageRoleAgent, a2a.NewTextPart(s)) }
		if ec.StoredTask == nil {
			if !yield(a2a.NewSubmittedTask(ec, ec.Message), nil) {
				return
			}
			if p.mode == Asks {
				asks := agentSays("Which part of town?")
				asks.Parts = append(asks.Parts, p.Question...)
				yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateInputRequired, asks), nil)
				return
			}
		}
		if !yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateWorking, agentSays("looking at the listings")), nil) {
			return
		}
		if p.mode != Asks {
			select {
			case <-p.release:
			case <-ctx.Done():
				return
			}
		}
		answer := "jazz at the Blue Room"
		if p.mode == Asks {
			answer += " in " + text
		}
		parts := []*a2a.Part{a2a.NewTextPart(answer), a2a.NewDataPart(map[string]any{"venue": "Blue Room"})}
		if p.Result != nil {
			parts = p.Result(p.srv.URL)
		}
		if !yield(a2a.NewArtifactEvent(ec, parts...), nil) {
			return
		}
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCompleted, nil), nil)
	}
}

func (p *Peer) Cancel(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		p.mu.Lock()
		p.cancels++
		p.mu.Unlock()
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCanceled, nil), nil)
	}
}

// Handle serves h at pattern on the peer's address besides the agent
// (a file a result links to); before the first message.
func (p *Peer) Handle(pattern string, h http.HandlerFunc) { p.mux.HandleFunc(pattern, h) }

// URL is the peer's base URL, where its card is read.
func (p *Peer) URL() string { return p.srv.URL }

// Release lets a working task complete (mode Works, Silent); once only.
func (p *Peer) Release() { p.releaseOnce.Do(func() { close(p.release) }) }

// Cancels is how many times the agent's Cancel ran: once per task
// cancelled (a request to cancel a task that can no longer be cancelled
// does not run it).
func (p *Peer) Cancels() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cancels
}

// SetGate makes gate see each request carrying InstanceHeader (its
// method and message id) before the agent does: an error refuses it (a
// 503). A test that kills an instance refuses the requests of the dead
// one, and counts the messages and cancels it sends among its writes.
func (p *Peer) SetGate(gate func(method, message string) error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.gate = gate
}
