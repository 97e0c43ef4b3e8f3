package modeltest

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"fmt"

	"google.golang.org/genai"
)

// MissingSignature is the message of the error a current Gemini model
// answers a request with when a function call of the current turn lacks
// its thought signature (HTTP 400).
const MissingSignature = "Function call is missing a thought_signature in functionCall parts."

// CorruptedSignature is the message of the error for a signature the
// model did not make (another model's, or changed bytes).
const CorruptedSignature = "Corrupted thought signature."

// skipValidator is the signature Gemini accepts for a call it cannot
// check: its documented text, skip_thought_signature_validator, read as
// base64 (the field is bytes), as package thoughts sends it.
var skipValidator, _ = base64.URLEncoding.DecodeString("skip_thought_signature_validator")

// Signature is the opaque thought signature a model named model attaches
// to the first function call of each response with calls.
func Signature(model string) []byte {
	sum := sha256.Sum256([]byte("modeltest thought signature\x00" + model))
	return sum[:]
}

// Sign returns content as a model named model sends it: the first
// function call part carries Signature(model). Content itself is not
// changed; one without calls is returned as it is.
func Sign(model string, content *genai.Content) *genai.Content {
	if content == nil {
		return nil
	}
	for i, p := range content.Parts {
		if p == nil || p.FunctionCall == nil {
			continue
		}
		out := &genai.Content{Role: content.Role, Parts: append([]*genai.Part(nil), content.Parts...)}
		q := *p
		q.ThoughtSignature = Signature(model)
		out.Parts[i] = &q
		return out
	}
	return content
}

// CheckSignatures returns the error a Gemini model named model answers
// contents with for their thought signatures, nil when it would take
// them. Only the current turn is checked, as Gemini does: it starts at
// the latest user content that holds more than function responses. In
// it, the first function call of every model content must carry the
// model's own signature or the documented skip value, and any other part
// that carries a signature must carry one of those two.
func CheckSignatures(model string, contents []*genai.Content) error {
	start := 0
	for i := len(contents) - 1; i >= 0 && start == 0; i-- {
		if contents[i].Role != genai.RoleUser {
			continue
		}
		for _, p := range contents[i].Parts {
			if p.FunctionResponse == nil {
				start = i
				break
			}
		}
	}
	own := Signature(model)
	for i := start; i < len(contents); i++ {
		if contents[i].Role != genai.RoleModel {
			continue
		}
		first := true
		for j, p := range contents[i].Parts {
			sig := p.ThoughtSignature
			valid := bytes.Equal(sig, own) || bytes.Equal(sig, skipValidator)
			if p.FunctionCall != nil && first {
				first = false
				if len(sig) == 0 {
					return signatureError(MissingSignature, i, j, p)
				}
			}
			if len(sig) > 0 && !valid {
				return signatureError(CorruptedSignature, i, j, p)
			}
		}
	}
	return nil
}

// signatureError is the API's 400 for part j of content i.
func signatureError(msg string, i, j int, p *genai.Part) error {
	where := fmt.Sprintf(" (content %d, part %d", i, j)
	if p.FunctionCall != nil {
		where += ", function call " + p.FunctionCall.Name
	}
	return genai.APIError{Code: 400, Status: "INVALID_ARGUMENT", Message: msg + where + ")"}
}
