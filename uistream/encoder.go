package uistream

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/tool/toolconfirmation"
	"google.golang.org/genai"

	"github.com/baton-run/baton/userinput"
)

// CallKind tells an [Encoder] how a function call is answered.
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
	// CallBackground runs on the server, off the request (a background
	// tool's): tool-input-available, provider-executed for a page; then,
	// while it runs, its progress as preliminary outputs (Progress); then
	// its answer, from the user's side of the transcript, as the call's
	// output. ADK's placeholder response, the agent's, is not sent.
	CallBackground
)

// ErrFinished is returned by [Encoder] methods called after
// [Encoder.Finish].
var ErrFinished = errors.New("ui message stream finished")

// ErrStarted is returned by [Encoder.SetMessageID] once the start
// chunk is written.
var ErrStarted = errors.New("ui message stream started")

// uiUserAuthor is the author of events written by the user.
const uiUserAuthor = "user"

// uiText is the text streamed so far for one model response, keyed by
// author, branch and invocation.
type uiText struct {
	id        string          // id of the open part; "" when none is open
	reasoning bool            // a reasoning part (the thought summary), not text
	sent      strings.Builder // all text sent as deltas for this response
}

// uiReasoningKey follows a uiTextKey to name the response's reasoning.
const uiReasoningKey = "\x00reasoning"

// Encoder turns one turn's ADK events into UI message stream chunks and
// hands them to a Sink. Each method sends its chunks before it returns.
//
// Its methods are serialized by a mutex. Once the sink fails, every later
// call returns that error without sending; after Finish, calls return
// [ErrFinished].
type Encoder struct {
	mu        sync.Mutex
	sink      Sink
	messageID string
	pending   []Chunk // chunks of the current call, not yet sent

	started  bool
	finished bool
	err      error // the sink's first error

	inStep   bool
	stepDone bool // the current step's model response is complete
	// Per event: whether it is a model response, and whether it has
	// written a chunk inside a step yet.
	eventModel   bool
	eventEmitted bool

	textCount int
	texts     map[string]*uiText // streamed model responses, by uiTextKey
	openTexts []*uiText          // texts with an open part, in opening order

	inputs     map[string]bool // call ids sent as tool-input-available
	paused     map[string]bool // call ids answered outside this stream
	background map[string]bool // call ids of background work: only their answer is sent

	// For useChat pages (SetDevice): every call but a browser call is
	// marked provider-executed, and browser and approval calls name device,
	// if set.
	forPage bool
	device  string

	// fileURL gives a file part of an assistant event the URL and media
	// type its file chunk carries ("": no chunk); nil: files are not sent.
	fileURL func(*genai.Part) (url, mediaType string)
}

// SetFiles makes the stream carry a file chunk for each file part (inline
// data or file data) of an event not the user's, at the URL url gives it;
// a part for which url returns "" is left out. Without it, files are not
// sent: a part's URL is the caller's to choose (a data URL, a signed one).
func (s *Encoder) SetFiles(url func(p *genai.Part) (url, mediaType string)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fileURL = url
}

// SetDevice makes tool-input-available chunks say who runs each call, for
// useChat pages: browser calls and calls awaiting approval carry
// providerMetadata {"baton": {"deviceId": device}}, the device that
// started the turn and alone may answer them; every call but a browser
// call is marked providerExecuted, so useChat never hands it to onToolCall.
func (s *Encoder) SetDevice(device string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.forPage, s.device = true, device
}

// NewEncoder returns an Encoder that sends to sink. messageID, when not
// empty, is sent in the start chunk and becomes the id of the assistant
// message on the client (see SetMessageID).
func NewEncoder(sink Sink, messageID string) *Encoder {
	return &Encoder{
		sink:       sink,
		messageID:  messageID,
		texts:      make(map[string]*uiText),
		inputs:     make(map[string]bool),
		paused:     make(map[string]bool),
		background: make(map[string]bool),
	}
}

// SetMessageID sets the id the start chunk carries, the id of the assistant
// message on the client; a stream that continues a message carries that
// message's id. It fails with [ErrStarted] once the start chunk is
// written.
func (s *Encoder) SetMessageID(id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		return ErrStarted
	}
	s.messageID = id
	return nil
}

// Start sends the start chunk. Calling it is optional: every other method
// starts the stream first if needed. A second call does
// nothing.
func (s *Encoder) Start() error {
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
// that was not streamed. Thought parts (a thought summary) go the same way
// as a reasoning part (reasoning-start, reasoning-delta, reasoning-end),
// before the response's text. Function calls and
// responses are read from final events only. Function responses are not sent
// for calls answered outside this stream (browser, external, approval), for
// calls paused for confirmation, or for adk_request_confirmation.
//
// A value that cannot be encoded as JSON is sent as null and reported in the
// returned error; the stream stays valid.
func (s *Encoder) Event(ev *session.Event, kind func(call *genai.FunctionCall) CallKind) error {
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
func (s *Encoder) Data(name string, data any) error {
	return s.data(name, "", data)
}

// data writes a data-<name> chunk with id (none when "").
func (s *Encoder) data(name, id string, data any) error {
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
	s.chunk(Data{Name: name, ID: id, Data: raw})
	return s.flush()
}

// Metadata writes a message-metadata chunk: the client merges metadata, a
// JSON object, into the assistant message's metadata.
func (s *Encoder) Metadata(metadata any) error {
	raw, err := json.Marshal(metadata)
	if err != nil {
		return fmt.Errorf("message metadata: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(); err != nil {
		return err
	}
	s.start()
	s.chunk(MessageMetadata{MessageMetadata: raw})
	return s.flush()
}

// Error writes an error chunk. text is shown to the user: it must not carry
// internal details.
func (s *Encoder) Error(text string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(); err != nil {
		return err
	}
	s.start()
	s.chunk(Error{ErrorText: text})
	return s.flush()
}

// Finish closes open text parts and the current step, sends the finish
// chunk and ends the sink (an SSE sink writes the [DONE] marker).
func (s *Encoder) Finish() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(); err != nil {
		return err
	}
	s.start()
	s.endStep()
	s.chunk(Finish{})
	s.finished = true
	if err := s.flush(); err != nil {
		return err
	}
	if err := s.sink.End(); err != nil {
		s.err = err
		return err
	}
	return nil
}

func (s *Encoder) usable() error {
	if s.err != nil {
		return s.err
	}
	if s.finished {
		return ErrFinished
	}
	return nil
}

func (s *Encoder) start() {
	if s.started {
		return
	}
	s.started = true
	s.chunk(Start{MessageID: s.messageID})
}

// chunk queues one chunk for the next flush.
func (s *Encoder) chunk(c Chunk) { s.pending = append(s.pending, c) }

// flush sends the queued chunks.
func (s *Encoder) flush() error {
	if len(s.pending) == 0 {
		return nil
	}
	chunks := s.pending
	s.pending = nil
	if err := s.sink.Send(chunks...); err != nil {
		s.err = err
		return err
	}
	return nil
}

// step is called before the current event writes a chunk that belongs in a
// step. On the event's first such chunk it opens a step if none is open; a
// model response first ends the current step when that step's model
// response is complete. Steps open lazily so that an event that writes
// nothing (a thought, a suppressed placeholder) opens no empty step.
func (s *Encoder) step() {
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
		s.chunk(StartStep{})
	}
}

// endStep closes open text parts (the client forgets them at finish-step)
// and the current step.
func (s *Encoder) endStep() {
	for _, t := range s.openTexts {
		s.chunk(endChunk(t))
		t.id = ""
	}
	s.openTexts = nil
	if s.inStep {
		s.inStep = false
		s.chunk(FinishStep{})
	}
}

func (s *Encoder) partial(ev *session.Event) {
	if ev.Author == uiUserAuthor {
		return
	}
	thought, text := uiEventThought(ev.Content), uiEventText(ev.Content)
	if thought == "" && text == "" {
		return
	}
	s.eventModel = true
	s.step()
	if thought != "" {
		s.delta(uiTextKey(ev)+uiReasoningKey, true, thought)
	}
	if text != "" {
		s.delta(uiTextKey(ev), false, text)
	}
}

// delta streams a piece of a response's text (or reasoning), opening its
// part first if none is open.
func (s *Encoder) delta(key string, reasoning bool, text string) {
	t := s.texts[key]
	if t == nil {
		t = &uiText{reasoning: reasoning}
		s.texts[key] = t
	}
	if t.id == "" {
		t.id = s.openText(reasoning)
		s.openTexts = append(s.openTexts, t)
	}
	s.chunk(deltaChunk(t, text))
	t.sent.WriteString(text)
}

func (s *Encoder) final(ev *session.Event, kind func(*genai.FunctionCall) CallKind) error {
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
			s.finalText(uiTextKey(ev)+uiReasoningKey, true, uiEventThought(ev.Content))
			s.finalText(uiTextKey(ev), false, text)
		} else if text != "" {
			s.wholeText(false, text)
		}
	}

	if ev.Author != uiUserAuthor {
		s.files(ev.Content)
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
		if s.background[p.FunctionResponse.ID] && ev.Author != uiUserAuthor {
			continue // the tool's placeholder: the work's answer comes later
		}
		errs = append(errs, s.response(p.FunctionResponse, confirming))
	}
	return errors.Join(errs...)
}

// files sends a file chunk for each file part of c (see SetFiles).
func (s *Encoder) files(c *genai.Content) {
	if s.fileURL == nil {
		return
	}
	for _, p := range c.Parts {
		if p == nil || p.InlineData == nil && p.FileData == nil {
			continue
		}
		if url, mediaType := s.fileURL(p); url != "" {
			s.step()
			s.chunk(File{URL: url, MediaType: mediaType})
		}
	}
}

// finalText ends the streamed text (or reasoning) of a model response,
// sending only the text its partial events did not carry.
func (s *Encoder) finalText(key string, reasoning bool, text string) {
	t := s.texts[key]
	delete(s.texts, key)
	if t == nil {
		s.wholeText(reasoning, text)
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
			s.chunk(deltaChunk(t, rest))
		}
		s.closeText(t)
	case isPrefix:
		// The part was closed at a step boundary; send the rest on its own.
		s.wholeText(reasoning, rest)
	default:
		// A callback rewrote the response: what was streamed stays, and the
		// final text follows as its own part, as the transcript has it.
		if t.id != "" {
			s.closeText(t)
		}
		s.wholeText(reasoning, text)
	}
}

// wholeText sends text (or reasoning) as a complete part.
func (s *Encoder) wholeText(reasoning bool, text string) {
	if text == "" {
		return
	}
	s.step()
	t := &uiText{id: s.openText(reasoning), reasoning: reasoning}
	s.chunk(deltaChunk(t, text))
	s.chunk(endChunk(t))
}

// openText writes a text-start (or reasoning-start) chunk with a new part
// id and returns the id.
func (s *Encoder) openText(reasoning bool) string {
	s.textCount++
	if reasoning {
		id := fmt.Sprintf("reasoning-%d", s.textCount)
		s.chunk(ReasoningStart{ID: id})
		return id
	}
	id := fmt.Sprintf("text-%d", s.textCount)
	s.chunk(TextStart{ID: id})
	return id
}

// deltaChunk appends text to t's open part.
func deltaChunk(t *uiText, text string) Chunk {
	if t.reasoning {
		return ReasoningDelta{ID: t.id, Delta: text}
	}
	return TextDelta{ID: t.id, Delta: text}
}

// endChunk closes t's open part.
func endChunk(t *uiText) Chunk {
	if t.reasoning {
		return ReasoningEnd{ID: t.id}
	}
	return TextEnd{ID: t.id}
}

func (s *Encoder) closeText(t *uiText) {
	s.chunk(endChunk(t))
	for i, o := range s.openTexts {
		if o == t {
			s.openTexts = append(s.openTexts[:i], s.openTexts[i+1:]...)
			break
		}
	}
	t.id = ""
}

func (s *Encoder) call(call *genai.FunctionCall, kindOf func(*genai.FunctionCall) CallKind) error {
	if call.Name == toolconfirmation.FunctionCallName {
		return s.approval(call)
	}
	kind := CallServer
	if kindOf != nil {
		kind = kindOf(call)
	}
	switch kind {
	case CallServer:
	case CallBackground:
		s.background[call.ID] = true
	default:
		s.paused[call.ID] = true
	}
	return s.toolInput(call, kind)
}

// Progress sends how the background call id is going, progress (a JSON
// value), as the call's preliminary output, which the call's answer
// replaces: tool-output-available with preliminary true. A call the
// stream has not shown gets nothing (the client needs its part first).
func (s *Encoder) Progress(id string, progress json.RawMessage) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(); err != nil {
		return err
	}
	if !s.inputs[id] || len(progress) == 0 {
		return nil
	}
	s.start()
	s.chunk(ToolOutputAvailable{ToolCallID: id, Output: progress, ProviderExecuted: s.forPage, Preliminary: true})
	return s.flush()
}

// approval sends ADK's confirmation request as the original call awaiting
// approval. The browser answers approvalId, the confirmation call's id. A
// confirmation that asks for input is sent as a form (inputForm).
func (s *Encoder) approval(call *genai.FunctionCall) error {
	s.step()
	s.paused[call.ID] = true
	orig, err := toolconfirmation.OriginalCallFrom(call)
	if err != nil || orig.ID == "" {
		// Malformed request: show the confirmation call itself.
		orig = call
	}
	s.paused[orig.ID] = true
	if input, ok := inputRequest(call); ok {
		return s.toolInput(&genai.FunctionCall{ID: call.ID, Name: userinput.ToolName, Args: input}, CallBrowser)
	}
	encErr := s.toolInput(orig, CallApproval)
	s.chunk(ToolApprovalRequest{ApprovalID: call.ID, ToolCallID: orig.ID})
	return encErr
}

// toolInput sends a tool-input-available chunk once per call id (see
// SetDevice for the exception).
func (s *Encoder) toolInput(call *genai.FunctionCall, kind CallKind) error {
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
	chunk := ToolInputAvailable{ToolCallID: call.ID, ToolName: call.Name, Input: input}
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

func (s *Encoder) response(resp *genai.FunctionResponse, confirming bool) error {
	// A question asked on a live call (see userinput.ToolName) is answered
	// outside the stream: its outcome, a response named userinput.ToolName, is
	// sent, marked provider-executed for a page, which has nothing to send
	// for it. A paused call's answer is the client's own and is not sent.
	live := resp.Name == userinput.ToolName
	if resp.Name == toolconfirmation.FunctionCallName || confirming || s.paused[resp.ID] && !live {
		return nil
	}
	s.step()
	if e, ok := resp.Response["error"]; ok && e != nil && e != "" {
		s.chunk(ToolOutputError{ToolCallID: resp.ID, ErrorText: ErrorText(e), ProviderExecuted: (live || s.background[resp.ID]) && s.forPage})
		return nil
	}
	var v any = resp.Response
	if resp.Response == nil {
		v = map[string]any{}
	}
	output, err := uiJSON(v)
	s.chunk(ToolOutputAvailable{ToolCallID: resp.ID, Output: output, ProviderExecuted: (live || s.background[resp.ID]) && s.forPage})
	s.responseFiles(resp)
	if err != nil {
		return fmt.Errorf("output of call %q: %w", resp.ID, err)
	}
	return nil
}

// responseFiles sends a file chunk for each file resp holds among its
// parts (a remote agent's files, stored by reference), after its output:
// a file of the message, as a model's is (see SetFiles).
func (s *Encoder) responseFiles(resp *genai.FunctionResponse) {
	if s.fileURL == nil {
		return
	}
	for _, fp := range resp.Parts {
		if fp == nil || fp.FileData == nil {
			continue
		}
		p := &genai.Part{FileData: &genai.FileData{FileURI: fp.FileData.FileURI, MIMEType: fp.FileData.MIMEType, DisplayName: fp.FileData.DisplayName}}
		if url, mediaType := s.fileURL(p); url != "" {
			s.chunk(File{URL: url, MediaType: mediaType})
		}
	}
}

// uiJSON encodes v, or null when it cannot be encoded.
func uiJSON(v any) (json.RawMessage, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return json.RawMessage("null"), err
	}
	return b, nil
}

// ErrorText is the text a stream shows for a tool's error value: the string
// itself, an error's message, or else its JSON.
func ErrorText(v any) string {
	switch e := v.(type) {
	case string:
		return shortToolError(e)
	case error:
		return shortToolError(e.Error())
	}
	if b, err := json.Marshal(v); err == nil {
		return string(b)
	}
	return fmt.Sprint(v)
}

// shortToolError cuts ADK's answer to a call of a tool the agent lacks
// ("tool 'x' not found." followed by the available tools and advice for
// the agent's developer) to its first line: a page shows that one line.
// The model still receives the whole text.
func shortToolError(s string) string {
	if first, rest, ok := strings.Cut(s, "\n"); ok && strings.HasPrefix(first, "tool '") &&
		strings.HasSuffix(first, "' not found.") && strings.HasPrefix(rest, "Available tools:") {
		return first
	}
	return s
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

// uiEventThought joins the thought parts of c: the model's thought
// summary.
func uiEventThought(c *genai.Content) string {
	var b strings.Builder
	for _, p := range c.Parts {
		if p != nil && p.Thought {
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
