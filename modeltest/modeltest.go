package modeltest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"testing"

	"google.golang.org/adk/v2/model"
	"google.golang.org/genai"
)

// Strict is a scripted model.LLM that checks every request the way Gemini
// does: each function call must be answered by exactly one response, in the
// content right after it, and every response must answer a call of the
// content right before it; and, as Gemini 3 and later, the calls of the
// current turn must carry the thought signatures the model gave them
// (CheckSignatures). It signs the calls it makes as they do (Sign), so a
// path that drops a signature, or replays another model's, fails. A
// violation fails the test (when T is set) and the request, with the
// API's 400 (a genai.APIError).
//
// Each request takes the next step of Script; once the script is
// exhausted, Repeat answers every request (a Repeat that chooses its
// answer from the request makes a model with no memory, which any number
// of processes may share). A request beyond both fails.
type Strict struct {
	// T, when set, is failed by a request that breaks the pairing or
	// exceeds the script.
	T testing.TB
	// Model is the model's name (Name), which its signatures are tied
	// to; "" is "strict-scripted".
	Model  string
	Script []Reply
	// Repeat, when set, answers once the script is exhausted.
	Repeat Reply
	// Gate, when set, is received from before answering (to hold the
	// model mid-invocation).
	Gate chan struct{}
	// Usage, when set, is the usage metadata of every response (a model
	// that reports the tokens it used).
	Usage *genai.GenerateContentResponseUsageMetadata

	mu       sync.Mutex
	requests []*model.LLMRequest
	thoughts []string        // the thought summaries it gave
	signed   map[string]bool // the calls it signed, by callKey
}

var _ model.LLM = (*Strict)(nil)

// Reply produces the model's answer to a request.
type Reply func(req *model.LLMRequest) *genai.Content

// Name is the model's name, as ADK reports it: Model, or
// "strict-scripted".
func (m *Strict) Name() string {
	if m.Model == "" {
		return "strict-scripted"
	}
	return m.Model
}

// errorf fails the test with where the request came from: the request's
// goroutine runs inside ADK's runner, whose caller names the path (a turn,
// a resume, a live segment) that made a request no script expected.
func (m *Strict) errorf(format string, args ...any) {
	if m.T != nil {
		m.T.Helper()
		m.T.Errorf(format+"\nrequested from:\n%s", append(args, debug.Stack())...)
	}
}

func (m *Strict) GenerateContent(ctx context.Context, req *model.LLMRequest, _ bool) iter.Seq2[*model.LLMResponse, error] {
	return func(yield func(*model.LLMResponse, error) bool) {
		if err := CheckPairing(req.Contents); err != nil {
			m.errorf("model request violates function call pairing: %v\n%s", err, DumpContents(req.Contents))
			yield(nil, err)
			return
		}
		if err := CheckFiles(req.Contents); err != nil {
			m.errorf("model request holds a file the model cannot read: %v\n%s", err, DumpContents(req.Contents))
			yield(nil, err)
			return
		}
		if err := CheckSignatures(m.Name(), req.Contents); err != nil {
			m.errorf("model request refused for its thought signatures: %v\n%s", err, DumpContents(req.Contents))
			yield(nil, err)
			return
		}
		if err := m.checkDropped(req.Contents); err != nil {
			m.errorf("%v\n%s", err, DumpContents(req.Contents))
			yield(nil, err)
			return
		}
		if err := m.checkThoughts(req.Contents); err != nil {
			m.errorf("%v\n%s", err, DumpContents(req.Contents))
			yield(nil, err)
			return
		}
		m.mu.Lock()
		m.requests = append(m.requests, req)
		if len(m.Script) == 0 && m.Repeat != nil {
			m.Script = append(m.Script, m.Repeat)
		}
		if len(m.Script) == 0 {
			m.mu.Unlock()
			m.errorf("model called more often than scripted:\n%s", DumpContents(req.Contents))
			yield(nil, errors.New("strict model: script exhausted"))
			return
		}
		next := m.Script[0]
		m.Script = m.Script[1:]
		gate := m.Gate
		m.mu.Unlock()
		if gate != nil {
			select {
			case <-gate:
			case <-ctx.Done():
				yield(nil, ctx.Err())
				return
			}
		}
		content := next(req)
		if content == failure {
			yield(nil, ErrScripted)
			return
		}
		if wantsThoughts(req) {
			content = m.withThought(content)
		}
		content = Sign(m.Name(), content)
		m.noteSigned(content)
		yield(&model.LLMResponse{Content: content, TurnComplete: true, UsageMetadata: m.Usage, ModelVersion: m.Name()}, nil)
	}
}

// callKey names a call across requests: its id, or, for an id ADK made
// (which it leaves out of requests), its name and arguments.
func callKey(fc *genai.FunctionCall) string {
	if fc.ID != "" && !strings.HasPrefix(fc.ID, "adk-") {
		return "id:" + fc.ID
	}
	args, _ := json.Marshal(fc.Args)
	return "call:" + fc.Name + string(args)
}

// noteSigned records the call content's signature is on.
func (m *Strict) noteSigned(content *genai.Content) {
	if content == nil {
		return
	}
	for _, p := range content.Parts {
		if p.FunctionCall != nil && len(p.ThoughtSignature) > 0 {
			m.mu.Lock()
			if m.signed == nil {
				m.signed = map[string]bool{}
			}
			m.signed[callKey(p.FunctionCall)] = true
			m.mu.Unlock()
			return
		}
	}
}

// checkDropped refuses a request that replays a call this model signed
// with the skip value instead of its signature: Gemini would take it, but
// a path lost the signature on the way (the skip value is for calls made
// by another model, or by none).
func (m *Strict) checkDropped(contents []*genai.Content) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, c := range contents {
		for _, p := range c.Parts {
			if p.FunctionCall != nil && bytes.Equal(p.ThoughtSignature, skipValidator) && m.signed[callKey(p.FunctionCall)] {
				return fmt.Errorf("content %d: call %s %s carries the skip value, but this model signed it: a path dropped its signature", i, p.FunctionCall.ID, p.FunctionCall.Name)
			}
		}
	}
	return nil
}

// wantsThoughts reports whether req asks for thought summaries.
func wantsThoughts(req *model.LLMRequest) bool {
	return req.Config != nil && req.Config.ThinkingConfig != nil && req.Config.ThinkingConfig.IncludeThoughts
}

// withThought is content after a thought summary part, as a thinking
// model answers a request that asks for summaries.
func (m *Strict) withThought(content *genai.Content) *genai.Content {
	m.mu.Lock()
	summary := fmt.Sprintf("%s thinks before answer %d", m.Name(), len(m.requests))
	m.thoughts = append(m.thoughts, summary)
	m.mu.Unlock()
	out := &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{{Text: summary, Thought: true}}}
	if content != nil {
		out.Parts = append(out.Parts, content.Parts...)
	}
	return out
}

// checkThoughts refuses a request that hands one of the model's thought
// summaries back as ordinary text (a thought part is fine).
func (m *Strict) checkThoughts(contents []*genai.Content) error {
	m.mu.Lock()
	thoughts := slices.Clone(m.thoughts)
	m.mu.Unlock()
	for i, c := range contents {
		for _, p := range c.Parts {
			if p.Thought || p.Text == "" {
				continue
			}
			for _, t := range thoughts {
				if strings.Contains(p.Text, t) {
					return fmt.Errorf("content %d: the thought summary %q came back as ordinary text", i, t)
				}
			}
		}
	}
	return nil
}

// Thoughts are the thought summaries the model gave, in order: one per
// request that asked for them (genai's ThinkingConfig.IncludeThoughts).
func (m *Strict) Thoughts() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.thoughts)
}

// Calls is how many requests, well paired, the model has been given.
func (m *Strict) Calls() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.requests)
}

// LastRequest is the latest request the model was given, nil before the
// first.
func (m *Strict) LastRequest() *model.LLMRequest {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.requests) == 0 {
		return nil
	}
	return m.requests[len(m.requests)-1]
}

// CheckPairing returns an error when contents would be refused by Gemini
// for how they pair function calls with responses (see Strict).
func CheckPairing(contents []*genai.Content) error {
	for i, c := range contents {
		var calls, responses []string
		for _, p := range c.Parts {
			if p.FunctionCall != nil {
				calls = append(calls, p.FunctionCall.ID)
			}
			if p.FunctionResponse != nil {
				responses = append(responses, p.FunctionResponse.ID)
			}
		}
		if len(responses) > 0 {
			if i == 0 {
				return fmt.Errorf("content %d: responses %v with no call before them", i, responses)
			}
			prev := map[string]bool{}
			for _, p := range contents[i-1].Parts {
				if p.FunctionCall != nil {
					prev[p.FunctionCall.ID] = true
				}
			}
			for _, id := range responses {
				if !prev[id] {
					return fmt.Errorf("content %d: response %q answers no call of content %d", i, id, i-1)
				}
			}
		}
		if len(calls) == 0 {
			continue
		}
		if i+1 >= len(contents) {
			return fmt.Errorf("content %d: calls %v have no response", i, calls)
		}
		count := map[string]int{}
		n := 0
		for _, p := range contents[i+1].Parts {
			if p.FunctionResponse != nil {
				count[p.FunctionResponse.ID]++
				n++
			}
		}
		for _, id := range calls {
			if count[id] != 1 {
				return fmt.Errorf("content %d: call %q has %d responses in the next content, want 1", i, id, count[id])
			}
		}
		if n != len(calls) {
			return fmt.Errorf("content %d: %d calls but %d responses", i, len(calls), n)
		}
	}
	return nil
}

// CheckFiles returns an error when contents hold a file part the model
// could not read: inline data without bytes or media type, or with a
// display name (the Gemini API refuses one; ADK removes it before the
// before-model callbacks run), or a file URI
// that is neither a Cloud Storage (gs://) nor an https URI, such as an
// application's own reference left in the request.
func CheckFiles(contents []*genai.Content) error {
	for i, c := range contents {
		for j, p := range c.Parts {
			switch {
			case p.InlineData != nil && (len(p.InlineData.Data) == 0 || p.InlineData.MIMEType == ""):
				return fmt.Errorf("content %d part %d: inline data needs bytes and a media type", i, j)
			case p.InlineData != nil && p.InlineData.DisplayName != "":
				return fmt.Errorf("content %d part %d: the Gemini API takes no display name on inline data", i, j)
			case p.FileData != nil && !strings.HasPrefix(p.FileData.FileURI, "gs://") && !strings.HasPrefix(p.FileData.FileURI, "https://"):
				return fmt.Errorf("content %d part %d: file URI %q is not one the model can fetch", i, j, p.FileData.FileURI)
			}
			if p.FunctionResponse == nil {
				continue
			}
			for _, fp := range p.FunctionResponse.Parts {
				if fp != nil && fp.FileData != nil && !strings.HasPrefix(fp.FileData.FileURI, "gs://") && !strings.HasPrefix(fp.FileData.FileURI, "https://") {
					return fmt.Errorf("content %d part %d: the function response's file URI %q is not one the model can fetch", i, j, fp.FileData.FileURI)
				}
			}
		}
	}
	return nil
}

// DumpContents writes contents one per line, for test failure messages.
func DumpContents(contents []*genai.Content) string {
	var b strings.Builder
	for i, c := range contents {
		fmt.Fprintf(&b, "  [%d] %s:", i, c.Role)
		for _, p := range c.Parts {
			switch {
			case p.Text != "" && p.Thought:
				fmt.Fprintf(&b, " thought(%q)", p.Text)
			case p.Text != "":
				fmt.Fprintf(&b, " text(%q)", p.Text)
			case p.FunctionCall != nil:
				fmt.Fprintf(&b, " call(%s %s %v%s)", p.FunctionCall.ID, p.FunctionCall.Name, p.FunctionCall.Args, signedMark(p))
			case p.FunctionResponse != nil:
				fmt.Fprintf(&b, " response(%s %s %v)", p.FunctionResponse.ID, p.FunctionResponse.Name, p.FunctionResponse.Response)
			case p.InlineData != nil:
				fmt.Fprintf(&b, " inline(%s, %d bytes)", p.InlineData.MIMEType, len(p.InlineData.Data))
			case p.FileData != nil:
				fmt.Fprintf(&b, " file(%s %s)", p.FileData.MIMEType, p.FileData.FileURI)
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}

// signedMark says, in DumpContents, whether a call carries a signature.
func signedMark(p *genai.Part) string {
	if len(p.ThoughtSignature) == 0 {
		return " unsigned"
	}
	return " signed"
}

// CallReply makes the model call tools, all in one step.
func CallReply(calls ...*genai.FunctionCall) Reply {
	return func(*model.LLMRequest) *genai.Content {
		c := &genai.Content{Role: genai.RoleModel}
		for _, fc := range calls {
			c.Parts = append(c.Parts, &genai.Part{FunctionCall: fc})
		}
		return c
	}
}

// Call is a function call for CallReply. An empty id lets ADK give the call
// one.
func Call(id, name string, args map[string]any) *genai.FunctionCall {
	return &genai.FunctionCall{ID: id, Name: name, Args: args}
}

// EchoReply answers with text describing the responses of the request's
// last content, so tests can see what the model was given.
func EchoReply(req *model.LLMRequest) *genai.Content {
	var parts []string
	last := req.Contents[len(req.Contents)-1]
	for _, p := range last.Parts {
		if p.FunctionResponse != nil {
			b, _ := json.Marshal(p.FunctionResponse.Response)
			parts = append(parts, p.FunctionResponse.Name+"="+string(b))
		}
		if p.Text != "" {
			parts = append(parts, "text="+p.Text)
		}
	}
	return genai.NewContentFromText("saw "+strings.Join(parts, "; "), genai.RoleModel)
}

// unchecked is req with the skip value on every function call (a copy:
// req is not changed).
func unchecked(req *model.LLMRequest) *model.LLMRequest {
	out := *req
	out.Contents = make([]*genai.Content, len(req.Contents))
	for i, c := range req.Contents {
		cc := &genai.Content{Role: c.Role, Parts: make([]*genai.Part, len(c.Parts))}
		for j, p := range c.Parts {
			if p.FunctionCall != nil {
				q := *p
				q.ThoughtSignature = skipValidator
				p = &q
			}
			cc.Parts[j] = p
		}
		out.Contents[i] = cc
	}
	return &out
}

// ErrScripted is the error a FailReply step answers with.
var ErrScripted = errors.New("scripted model failure")

// failure marks FailReply's step; only its address matters.
var failure = &genai.Content{}

// FailReply makes the model answer its request with ErrScripted, as a model
// that is down or refuses the request would.
func FailReply(*model.LLMRequest) *genai.Content { return failure }

// TextReply makes the model answer with text.
func TextReply(s string) Reply {
	return func(*model.LLMRequest) *genai.Content { return genai.NewContentFromText(s, genai.RoleModel) }
}

// LLMReply answers with m's final content for the request: a model's rules
// (an offline model's regular expressions, say) behind a scripted step or
// a LiveServer. An error or no content fails the step, as FailReply.
//
// The signatures of the request are the caller's to check (Strict's, or
// none over a live socket): m is given the request with every call marked
// with the skip value, so that its own check passes.
func LLMReply(m model.LLM) Reply {
	return func(req *model.LLMRequest) *genai.Content {
		content := failure
		for resp, err := range m.GenerateContent(context.Background(), unchecked(req), false) {
			if err != nil {
				return failure
			}
			if resp.Content != nil && !resp.Partial {
				content = resp.Content
			}
		}
		return content
	}
}
