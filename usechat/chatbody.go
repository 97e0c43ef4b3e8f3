package usechat

// Reading a Chat body. DefaultChatTransport POSTs every message of the
// conversation on every send, so the body grows with the chat while what
// Chat takes from it does not: the newest message, or the answers the
// last assistant message carries. The body is read as a stream
// (encoding/json's Decoder, value by value): each earlier message is
// scanned and dropped, so a request holds at most one message at a time,
// never the history. The standard library's Decoder is enough for this
// and already checks the syntax; no other JSON library is needed.
//
// Liberal in what it ignores, exact in what it takes: members Chat does
// not use (the app's own body fields, a message's metadata, part fields of
// newer AI SDK releases) are skipped unread; the members it takes (ids,
// the trigger, the device, the agent, the new message's parts, the
// answers) go through the same exactness checks as every other body
// (checkTakenJSON).

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"reflect"
	"strings"

	"github.com/baton-run/baton/errclass"
)

// Defaults of Chat's limits, when a Config leaves them zero.
const (
	defaultMaxChatBody = 32 << 20 // Cloud Run's request limit (HTTP/1)
	defaultMaxFile     = 10 << 20
)

func (s *Server) maxChatBody() int64 {
	if s.cfg.MaxChatBodyBytes > 0 {
		return s.cfg.MaxChatBodyBytes
	}
	return defaultMaxChatBody
}

func (s *Server) maxFile() int64 {
	if s.cfg.MaxFileBytes > 0 {
		return s.cfg.MaxFileBytes
	}
	return defaultMaxFile
}

// postBody is what Chat takes from a POST body.
type postBody struct {
	ID        string
	Trigger   string
	MessageID string
	DeviceID  string
	Agent     string
	Messages  int             // how many messages the body has
	Last      json.RawMessage // the last of them, as sent
}

// chatMembers are the body's members Chat takes, each a string.
var chatMembers = []string{"id", "trigger", "messageId", "deviceId", "agent"}

func (b *postBody) field(name string) *string {
	switch name {
	case "id":
		return &b.ID
	case "trigger":
		return &b.Trigger
	case "messageId":
		return &b.MessageID
	case "deviceId":
		return &b.DeviceID
	case "agent":
		return &b.Agent
	}
	return nil
}

// readChatBody streams r's body (at most maxChatBody bytes) and keeps
// what Chat takes from it.
func (s *Server) readChatBody(w http.ResponseWriter, r *http.Request) (*postBody, error) {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "application/json" {
		return nil, errMediaType
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, s.maxChatBody()))
	b, err := readChatMembers(dec)
	if err == nil {
		if _, err = dec.Token(); err == nil {
			err = errors.New("data after the JSON value")
		} else if errors.Is(err, io.EOF) {
			return b, nil
		}
	}
	if tooLarge := (*http.MaxBytesError)(nil); errors.As(err, &tooLarge) {
		return nil, &errclass.LimitError{What: "the request body", Limit: s.maxChatBody(), Env: "BATON_MAX_CHAT_BODY_BYTES"}
	}
	var unsupported *json.UnmarshalTypeError
	if errors.As(err, &unsupported) {
		err = fmt.Errorf("%s must be a %s", where(unsupported.Field), jsonKind(unsupported.Type))
	}
	return nil, fmt.Errorf("%w: %v", errBadRequest, err)
}

// readChatMembers reads the body's object member by member.
func readChatMembers(dec *json.Decoder) (*postBody, error) {
	if err := expectDelim(dec, '{'); err != nil {
		return nil, err
	}
	b := &postBody{}
	seen := map[string]bool{}
	var raw json.RawMessage
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		name, _ := tok.(string)
		taken := name == "messages" || b.field(name) != nil
		if !taken {
			if err := checkNotCaseVariant(name, append([]string{"messages"}, chatMembers...), ""); err != nil {
				return nil, err
			}
			if err := dec.Decode(&ignored{}); err != nil {
				return nil, err
			}
			continue
		}
		if seen[name] {
			return nil, fmt.Errorf("member %q appears twice in the body", name)
		}
		seen[name] = true
		if name == "messages" {
			if err := readMessages(dec, b); err != nil {
				return nil, err
			}
			continue
		}
		if err := dec.Decode(&raw); err != nil {
			return nil, err
		}
		if err := checkTakenJSON(raw, reflect.TypeFor[string](), name); err != nil {
			return nil, err
		}
		if err := json.Unmarshal(raw, b.field(name)); err != nil {
			return nil, fmt.Errorf("%s must be a string", name)
		}
	}
	_, err := dec.Token() // the closing brace
	return b, err
}

// readMessages reads the messages array, keeping only the last message:
// each one is decoded into the same buffer, which the next overwrites.
func readMessages(dec *json.Decoder, b *postBody) error {
	if err := expectDelim(dec, '['); err != nil {
		return fmt.Errorf("messages must be an array")
	}
	for dec.More() {
		if err := dec.Decode(&b.Last); err != nil {
			return err
		}
		b.Messages++
	}
	_, err := dec.Token()
	return err
}

func expectDelim(dec *json.Decoder, d json.Delim) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if tok != d {
		return fmt.Errorf("want %q, got %v", d, tok)
	}
	return nil
}

// ignored is a value Chat skips: the decoder scans it (its syntax is
// still checked) and nothing is kept.
type ignored struct{}

func (*ignored) UnmarshalJSON([]byte) error { return nil }

// checkNotCaseVariant refuses a member name that equals one Baton takes
// but for case: encoding/json would take it for that member.
func checkNotCaseVariant(name string, known []string, path string) error {
	for _, k := range known {
		if name != k && strings.EqualFold(name, k) {
			return fmt.Errorf("unknown member %q in %s: did you mean %q? (names are case-sensitive)", name, where(path), k)
		}
	}
	return nil
}

func jsonKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Slice, reflect.Array:
		return "array"
	case reflect.Struct, reflect.Map:
		return "object"
	}
	return t.String()
}

// rawPart is one part of the last message, as sent: takeMessage checks
// and decodes the parts Chat takes and skips the others.
type rawPart json.RawMessage

func (p *rawPart) UnmarshalJSON(b []byte) error {
	*p = append((*p)[:0], b...)
	return nil
}

// messageShape is the last message before its parts are read.
type messageShape struct {
	ID    string    `json:"id"`
	Role  string    `json:"role"`
	Parts []rawPart `json:"parts"`
}

// takeMessage checks and decodes the body's last message: its id and
// role, and the parts Chat takes from it (a user message's text and file
// parts, an assistant message's tool parts, which carry the answers).
// Other parts and other members are skipped. What is new is bounded: a
// user message's files by maxFile each (checked as they are decoded) and
// the rest of it by MaxBodyBytes, each tool part by MaxBodyBytes.
func (s *Server) takeMessage(b *postBody) (*uiMessage, error) {
	path := fmt.Sprintf("messages[%d]", b.Messages-1)
	if err := checkTakenJSON(b.Last, reflect.TypeFor[messageShape](), path); err != nil {
		return nil, fmt.Errorf("%w: %v", errBadRequest, err)
	}
	var shape messageShape
	if err := json.Unmarshal(b.Last, &shape); err != nil {
		return nil, fmt.Errorf("%w: the last message: %v", errBadRequest, err)
	}
	m := &uiMessage{ID: shape.ID, Role: shape.Role}
	rest := int64(len(b.Last))
	for i, raw := range shape.Parts {
		var head struct {
			Type any `json:"type"`
		}
		_ = json.Unmarshal(raw, &head) // a part Chat does not take may be anything
		typ, _ := head.Type.(string)
		if !takesPart(m.Role, typ) {
			continue
		}
		at := fmt.Sprintf("%s.parts[%d]", path, i)
		if err := checkTakenJSON(raw, reflect.TypeFor[uiPart](), at); err != nil {
			return nil, fmt.Errorf("%w: %v", errBadRequest, err)
		}
		var p uiPart
		if err := json.Unmarshal(raw, &p); err != nil {
			return nil, fmt.Errorf("%w: %s: %v", errBadRequest, at, err)
		}
		if m.Role == "assistant" && int64(len(raw)) > s.cfg.MaxBodyBytes {
			return nil, &errclass.LimitError{What: "an answer (" + at + ")", Limit: s.cfg.MaxBodyBytes, Env: "BATON_MAX_BODY_BYTES"}
		}
		if p.Type == "file" {
			rest -= int64(len(p.URL)) // files have their own limit
		}
		m.Parts = append(m.Parts, p)
	}
	if m.Role == "user" && rest > s.cfg.MaxBodyBytes {
		return nil, &errclass.LimitError{What: "the new message without its files", Limit: s.cfg.MaxBodyBytes, Env: "BATON_MAX_BODY_BYTES"}
	}
	return m, nil
}

// takesPart says which parts of the last message Chat reads.
func takesPart(role, typ string) bool {
	switch role {
	case "user":
		return typ == "text" || typ == "file" || typ == actionPartType
	case "assistant":
		return strings.HasPrefix(typ, "tool-") || typ == "dynamic-tool"
	}
	return false
}
