package functions

// This file encodes one turn of ADK events as a Vercel AI SDK "UI message
// stream" (protocol v1, header x-vercel-ai-ui-message-stream: v1), the
// Server-Sent Events format read by the AI SDK's useChat / DefaultChatTransport.
//
// Followed: AI SDK 6, github.com/vercel/ai
//   - packages/ai/src/ui-message-stream/ui-message-chunks.ts (uiMessageChunkSchema:
//     every chunk is a strict object, so no field beyond the schema's is sent;
//     tool-approval-request is {type, approvalId, toolCallId}, new in AI SDK 6)
//   - packages/ai/src/ui-message-stream/ui-message-stream-headers.ts (headers)
//   - packages/ai/src/ui/process-ui-message-stream.ts (client rules: text-delta
//     and text-end need an open text-start with the same id; finish-step forgets
//     open text parts; tool-approval-request and tool-output-* need a tool part
//     for the toolCallId already in the message)
//   - JsonToSseTransformStream: each chunk is "data: <json>\n\n", the stream
//     ends with "data: [DONE]\n\n".

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"

	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/tool/toolconfirmation"
	"google.golang.org/genai"
)

// CallKind tells a [StreamWriter] how a function call is answered.
type CallKind int

const (
	// CallServer runs on the server; its output arrives in this stream as a
	// function response (tool-input-available, then tool-output-available or
	// tool-output-error).
	CallServer CallKind = iota
	// CallBrowser is run by the browser: tool-input-available, then nothing
	// until the browser posts the result. ADK's placeholder response is not
	// sent.
	CallBrowser
	// CallApproval is ADK's confirmation request, the function call named
	// "adk_request_confirmation": tool-input-available for the original call,
	// then tool-approval-request whose approvalId is the confirmation call's
	// id. A call of that name is always treated as CallApproval; any other
	// call reported as CallApproval is treated as CallExternal (its approval
	// request arrives later as an adk_request_confirmation call).
	CallApproval
	// CallExternal is answered by another system: tool-input-available (the
	// page shows it as waiting). ADK's placeholder response is not sent.
	CallExternal
)

// ErrStreamFinished is returned by [StreamWriter] methods called after
// [StreamWriter.Finish].
var ErrStreamFinished = errors.New("ui message stream finished")

// ErrStreamStarted is returned by [StreamWriter.SetMessageID] once the start
// chunk is written.
var ErrStreamStarted = errors.New("ui message stream started")

// uiUserAuthor is the author of events written by the user.
const uiUserAuthor = "user"

// uiStreamHeaders are the response headers of a UI message stream.
var uiStreamHeaders = [...][2]string{
	{"Content-Type", "text/event-stream"},
	{"Cache-Control", "no-cache"},
	{"Connection", "keep-alive"},
	{"x-vercel-ai-ui-message-stream", "v1"},
	{"X-Accel-Buffering", "no"}, // no proxy buffering (nginx, Cloud Run's front end)
}

// Chunk shapes, field for field as in uiMessageChunkSchema. Optional fields
// are omitted when empty; required ones never are.
type (
	uiTypeChunk struct {
		Type string `json:"type"`
	}
	uiStartChunk struct {
		Type      string `json:"type"`
		MessageID string `json:"messageId,omitempty"`
	}
	uiTextChunk struct {
		Type string `json:"type"`
		ID   string `json:"id"`
	}
	uiTextDeltaChunk struct {
		Type  string `json:"type"`
		ID    string `json:"id"`
		Delta string `json:"delta"`
	}
	uiToolInputChunk struct {
		Type       string          `json:"type"`
		ToolCallID string          `json:"toolCallId"`
		ToolName   string          `json:"toolName"`
		Input      json.RawMessage `json:"input"`
		// ProviderExecuted marks calls the page must not run (useChat calls
		// onToolCall for the others); ProviderMetadata names the device
		// that may answer a browser call (see StreamWriter.SetDevice).
		ProviderExecuted bool            `json:"providerExecuted,omitempty"`
		ProviderMetadata json.RawMessage `json:"providerMetadata,omitempty"`
	}
	uiToolApprovalChunk struct {
		Type       string `json:"type"`
		ApprovalID string `json:"approvalId"`
		ToolCallID string `json:"toolCallId"`
	}
	uiToolOutputChunk struct {
		Type       string          `json:"type"`
		ToolCallID string          `json:"toolCallId"`
		Output     json.RawMessage `json:"output"`
	}
	uiToolErrorChunk struct {
		Type       string `json:"type"`
		ToolCallID string `json:"toolCallId"`
		ErrorText  string `json:"errorText"`
	}
	uiDataChunk struct {
		Type string          `json:"type"`
		Data json.RawMessage `json:"data"`
	}
	uiErrorChunk struct {
		Type      string `json:"type"`
		ErrorText string `json:"errorText"`
	}
)

// uiText is the text streamed so far for one model response, keyed by
// author, branch and invocation.
type uiText struct {
	id   string          // id of the open text part; "" when none is open
	sent strings.Builder // all text sent as deltas for this response
}

// StreamWriter writes one turn as a UI message stream. Headers are written
// with the first chunk, so the caller may still answer with another status
// until then. Each method writes its chunks and flushes them before it
// returns.
//
// A StreamWriter is meant to be driven by one goroutine, but its methods are
// serialized by a mutex, so KeepAlive may be called from a ticker goroutine
// while another calls Event. Once a write fails, every later call returns that
// error without writing; after Finish, calls return [ErrStreamFinished].
type StreamWriter struct {
	mu        sync.Mutex
	w         http.ResponseWriter
	rc        *http.ResponseController
	messageID string
	buf       bytes.Buffer

	wroteHeader bool
	started     bool
	finished    bool
	err         error // first write or flush error

	inStep   bool
	stepDone bool // the current step's model response is complete
	// Per event: whether it is a model response, and whether it has
	// written a chunk inside a step yet.
	eventModel   bool
	eventEmitted bool

	textCount int
	texts     map[string]*uiText // streamed model responses, by uiTextKey
	openTexts []*uiText          // texts with an open part, in opening order

	inputs map[string]bool // call ids sent as tool-input-available
	paused map[string]bool // call ids answered outside this stream

	// For useChat pages (SetDevice): every call but a browser call is
	// marked provider-executed, and browser calls name device, if set.
	forPage bool
	device  string
}

// SetDevice makes tool-input-available chunks say who runs each call, for
// useChat pages: browser calls and calls awaiting approval carry
// providerMetadata {"baton": {"deviceId": device}}, the device that
// started the turn and alone may answer them; every call but a browser
// call is marked providerExecuted, so useChat never hands it to onToolCall.
func (s *StreamWriter) SetDevice(device string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.forPage, s.device = true, device
}

// NewStreamWriter returns a StreamWriter that writes to w. messageID, when
// not empty, is sent in the start chunk and becomes the id of the assistant
// message on the client (see SetMessageID).
func NewStreamWriter(w http.ResponseWriter, messageID string) *StreamWriter {
	return &StreamWriter{
		w:         w,
		rc:        http.NewResponseController(w),
		messageID: messageID,
		texts:     make(map[string]*uiText),
		inputs:    make(map[string]bool),
		paused:    make(map[string]bool),
	}
}

// SetMessageID sets the id the start chunk carries, the id of the assistant
// message on the client; a stream that continues a message carries that
// message's id. It fails with [ErrStreamStarted] once the start chunk is
// written.
func (s *StreamWriter) SetMessageID(id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		return ErrStreamStarted
	}
	s.messageID = id
	return nil
}

// Start writes the start chunk. Calling it is optional: every other method
// except KeepAlive starts the stream first if needed. A second call does
// nothing.
func (s *StreamWriter) Start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(); err != nil {
		return err
	}
	s.start()
	return s.flush()
}

// Event writes the chunks for one ADK event. kind classifies the event's
// function calls; nil means every call is [CallServer].
//
// Partial events stream their text (text-start, text-delta); the final event
// of the same model response closes the part (text-end) and sends only text
// that was not streamed. Thought parts are skipped. Function calls and
// responses are read from final events only. Function responses are not sent
// for calls answered outside this stream (browser, external, approval), for
// calls paused for confirmation, or for adk_request_confirmation.
//
// A value that cannot be encoded as JSON is sent as null and reported in the
// returned error; the stream stays valid.
func (s *StreamWriter) Event(ev *session.Event, kind func(call *genai.FunctionCall) CallKind) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(); err != nil {
		return err
	}
	if ev == nil || ev.Content == nil {
		return nil
	}
	s.start()
	s.eventEmitted = false
	var encErr error
	if ev.Partial {
		s.partial(ev)
	} else {
		encErr = s.final(ev, kind)
	}
	if err := s.flush(); err != nil {
		return err
	}
	return encErr
}

// Data writes a data-<name> chunk, which the client adds to the message as
// a part of type data-<name>.
func (s *StreamWriter) Data(name string, data any) error {
	if name == "" {
		return errors.New("data chunk: empty name")
	}
	raw, err := json.Marshal(data)
	if err != nil {
		return fmt.Errorf("data chunk %q: %w", name, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(); err != nil {
		return err
	}
	s.start()
	s.chunk(uiDataChunk{Type: "data-" + name, Data: raw})
	return s.flush()
}

// Error writes an error chunk. text is shown to the user: it must not carry
// internal details.
func (s *StreamWriter) Error(text string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(); err != nil {
		return err
	}
	s.start()
	s.chunk(uiErrorChunk{Type: "error", ErrorText: text})
	return s.flush()
}

// KeepAlive writes an SSE comment, which the client ignores, so that idle
// connections are not closed by proxies.
func (s *StreamWriter) KeepAlive() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(); err != nil {
		return err
	}
	s.buf.WriteString(": keep-alive\n\n")
	return s.flush()
}

// Finish closes open text parts and the current step, then writes the
// finish chunk and the [DONE] marker.
func (s *StreamWriter) Finish() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(); err != nil {
		return err
	}
	s.start()
	s.endStep()
	s.chunk(uiTypeChunk{Type: "finish"})
	s.buf.WriteString("data: [DONE]\n\n")
	s.finished = true
	return s.flush()
}

func (s *StreamWriter) usable() error {
	if s.err != nil {
		return s.err
	}
	if s.finished {
		return ErrStreamFinished
	}
	return nil
}

func (s *StreamWriter) start() {
	if s.started {
		return
	}
	s.started = true
	s.chunk(uiStartChunk{Type: "start", MessageID: s.messageID})
}

// chunk appends one data line. Chunk structs hold only strings and
// already-encoded JSON, so marshaling them cannot fail.
func (s *StreamWriter) chunk(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		b, _ = json.Marshal(uiErrorChunk{Type: "error", ErrorText: "unencodable chunk"})
	}
	s.buf.WriteString("data: ")
	s.buf.Write(b)
	s.buf.WriteString("\n\n")
}

// flush writes the buffered chunks, with the headers first if needed, and
// flushes them to the client.
func (s *StreamWriter) flush() error {
	if s.buf.Len() == 0 {
		return nil
	}
	if !s.wroteHeader {
		s.wroteHeader = true
		h := s.w.Header()
		for _, kv := range uiStreamHeaders {
			h.Set(kv[0], kv[1])
		}
		s.w.WriteHeader(http.StatusOK)
	}
	_, err := s.w.Write(s.buf.Bytes())
	s.buf.Reset()
	if err != nil {
		s.err = fmt.Errorf("write ui message stream: %w", err)
		return s.err
	}
	if err := s.rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
		s.err = fmt.Errorf("flush ui message stream: %w", err)
		return s.err
	}
	return nil
}

// step is called before the current event writes a chunk that belongs in a
// step. On the event's first such chunk it opens a step if none is open; a
// model response first ends the current step when that step's model
// response is complete. Steps open lazily so that an event that writes
// nothing (a thought, a suppressed placeholder) opens no empty step.
func (s *StreamWriter) step() {
	if s.eventEmitted {
		return
	}
	s.eventEmitted = true
	if s.inStep && s.eventModel && s.stepDone {
		s.endStep()
	}
	if !s.inStep {
		s.inStep = true
		s.stepDone = false
		s.chunk(uiTypeChunk{Type: "start-step"})
	}
}

// endStep closes open text parts (the client forgets them at finish-step)
// and the current step.
func (s *StreamWriter) endStep() {
	for _, t := range s.openTexts {
		s.chunk(uiTextChunk{Type: "text-end", ID: t.id})
		t.id = ""
	}
	s.openTexts = nil
	if s.inStep {
		s.inStep = false
		s.chunk(uiTypeChunk{Type: "finish-step"})
	}
}

func (s *StreamWriter) partial(ev *session.Event) {
	if ev.Author == uiUserAuthor {
		return
	}
	text := uiEventText(ev.Content)
	if text == "" {
		return
	}
	s.eventModel = true
	s.step()
	key := uiTextKey(ev)
	t := s.texts[key]
	if t == nil {
		t = &uiText{}
		s.texts[key] = t
	}
	if t.id == "" {
		t.id = s.openText()
		s.openTexts = append(s.openTexts, t)
	}
	s.chunk(uiTextDeltaChunk{Type: "text-delta", ID: t.id, Delta: text})
	t.sent.WriteString(text)
}

func (s *StreamWriter) final(ev *session.Event, kind func(*genai.FunctionCall) CallKind) error {
	modelResponse := ev.Author != uiUserAuthor && ev.Content.Role != genai.RoleUser && !uiConfirmationsOnly(ev.Content)
	s.eventModel = modelResponse
	defer func() {
		if s.eventEmitted {
			s.stepDone = true
		}
	}()

	if ev.Author != uiUserAuthor {
		text := uiEventText(ev.Content)
		if modelResponse {
			s.finalText(uiTextKey(ev), text)
		} else if text != "" {
			s.wholeText(text)
		}
	}

	var errs []error
	for _, p := range ev.Content.Parts {
		if p == nil || p.FunctionCall == nil {
			continue
		}
		errs = append(errs, s.call(p.FunctionCall, kind))
	}
	for _, p := range ev.Content.Parts {
		if p == nil || p.FunctionResponse == nil {
			continue
		}
		_, confirming := ev.Actions.RequestedToolConfirmations[p.FunctionResponse.ID]
		errs = append(errs, s.response(p.FunctionResponse, confirming))
	}
	return errors.Join(errs...)
}

// finalText ends the streamed text of a model response, sending only the
// text its partial events did not carry.
func (s *StreamWriter) finalText(key, text string) {
	t := s.texts[key]
	delete(s.texts, key)
	if t == nil {
		s.wholeText(text)
		return
	}
	if t.id != "" {
		// The response's part is open, so its step is the current one:
		// the rest of this event belongs there too.
		s.eventEmitted = true
	}
	sent := t.sent.String()
	rest, isPrefix := strings.CutPrefix(text, sent)
	switch {
	case isPrefix && t.id != "":
		if rest != "" {
			s.chunk(uiTextDeltaChunk{Type: "text-delta", ID: t.id, Delta: rest})
		}
		s.closeText(t)
	case isPrefix:
		// The part was closed at a step boundary; send the rest on its own.
		s.wholeText(rest)
	default:
		// A callback rewrote the response: what was streamed stays, and the
		// final text follows as its own part, as the transcript has it.
		if t.id != "" {
			s.closeText(t)
		}
		s.wholeText(text)
	}
}

// wholeText sends text as a complete part.
func (s *StreamWriter) wholeText(text string) {
	if text == "" {
		return
	}
	s.step()
	id := s.openText()
	s.chunk(uiTextDeltaChunk{Type: "text-delta", ID: id, Delta: text})
	s.chunk(uiTextChunk{Type: "text-end", ID: id})
}

// openText writes a text-start chunk with a new part id and returns the id.
func (s *StreamWriter) openText() string {
	s.textCount++
	id := fmt.Sprintf("text-%d", s.textCount)
	s.chunk(uiTextChunk{Type: "text-start", ID: id})
	return id
}

func (s *StreamWriter) closeText(t *uiText) {
	s.chunk(uiTextChunk{Type: "text-end", ID: t.id})
	for i, o := range s.openTexts {
		if o == t {
			s.openTexts = append(s.openTexts[:i], s.openTexts[i+1:]...)
			break
		}
	}
	t.id = ""
}

func (s *StreamWriter) call(call *genai.FunctionCall, kindOf func(*genai.FunctionCall) CallKind) error {
	if call.Name == toolconfirmation.FunctionCallName {
		return s.approval(call)
	}
	kind := CallServer
	if kindOf != nil {
		kind = kindOf(call)
	}
	if kind != CallServer {
		s.paused[call.ID] = true
	}
	return s.toolInput(call, kind)
}

// approval sends ADK's confirmation request as the original call awaiting
// approval. The browser answers approvalId, the confirmation call's id.
func (s *StreamWriter) approval(call *genai.FunctionCall) error {
	s.step()
	s.paused[call.ID] = true
	orig, err := toolconfirmation.OriginalCallFrom(call)
	if err != nil || orig.ID == "" {
		// Malformed request: show the confirmation call itself.
		orig = call
	}
	s.paused[orig.ID] = true
	encErr := s.toolInput(orig, CallApproval)
	s.chunk(uiToolApprovalChunk{Type: "tool-approval-request", ApprovalID: call.ID, ToolCallID: orig.ID})
	return encErr
}

// toolInput sends a tool-input-available chunk once per call id (see
// SetDevice for the exception).
func (s *StreamWriter) toolInput(call *genai.FunctionCall, kind CallKind) error {
	// A call that turns out to need approval is sent again for a page, to
	// name the device that may decide.
	again := kind == CallApproval && s.forPage && s.device != ""
	if s.inputs[call.ID] && !again {
		return nil
	}
	s.step()
	s.inputs[call.ID] = true
	var args any = call.Args
	if call.Args == nil {
		args = map[string]any{}
	}
	input, err := uiJSON(args)
	chunk := uiToolInputChunk{Type: "tool-input-available", ToolCallID: call.ID, ToolName: call.Name, Input: input}
	if s.forPage {
		chunk.ProviderExecuted = kind != CallBrowser
		if (kind == CallBrowser || kind == CallApproval) && s.device != "" {
			chunk.ProviderMetadata, _ = json.Marshal(map[string]any{"baton": map[string]string{"deviceId": s.device}})
		}
	}
	s.chunk(chunk)
	if err != nil {
		return fmt.Errorf("input of call %q: %w", call.ID, err)
	}
	return nil
}

func (s *StreamWriter) response(resp *genai.FunctionResponse, confirming bool) error {
	if resp.Name == toolconfirmation.FunctionCallName || confirming || s.paused[resp.ID] {
		return nil
	}
	s.step()
	if e, ok := resp.Response["error"]; ok && e != nil && e != "" {
		s.chunk(uiToolErrorChunk{Type: "tool-output-error", ToolCallID: resp.ID, ErrorText: uiErrorText(e)})
		return nil
	}
	var v any = resp.Response
	if resp.Response == nil {
		v = map[string]any{}
	}
	output, err := uiJSON(v)
	s.chunk(uiToolOutputChunk{Type: "tool-output-available", ToolCallID: resp.ID, Output: output})
	if err != nil {
		return fmt.Errorf("output of call %q: %w", resp.ID, err)
	}
	return nil
}

// uiJSON encodes v, or null when it cannot be encoded.
func uiJSON(v any) (json.RawMessage, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return json.RawMessage("null"), err
	}
	return b, nil
}

func uiErrorText(v any) string {
	switch e := v.(type) {
	case string:
		return e
	case error:
		return e.Error()
	}
	if b, err := json.Marshal(v); err == nil {
		return string(b)
	}
	return fmt.Sprint(v)
}

// uiTextKey identifies the model response an event belongs to: ADK gives
// each partial event its own id, but one agent in one branch of one
// invocation streams one response at a time.
func uiTextKey(ev *session.Event) string {
	return ev.Author + "\x00" + ev.Branch + "\x00" + ev.InvocationID
}

// uiEventText joins the visible (non-thought) text parts of c.
func uiEventText(c *genai.Content) string {
	var b strings.Builder
	for _, p := range c.Parts {
		if p != nil && !p.Thought {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// uiConfirmationsOnly reports whether c holds only adk_request_confirmation
// calls: ADK's confirmation event belongs to the step of the calls it gates.
func uiConfirmationsOnly(c *genai.Content) bool {
	found := false
	for _, p := range c.Parts {
		if p == nil {
			continue
		}
		if p.FunctionCall == nil || p.FunctionCall.Name != toolconfirmation.FunctionCallName {
			return false
		}
		found = true
	}
	return found
}
