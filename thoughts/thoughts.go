package thoughts

import (
	"bytes"
	"encoding/base64"
	"slices"
	"sync"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/plugin"
	"google.golang.org/genai"
)

// MetadataKey is the key, in a stored model event's custom metadata, of
// the name of the model whose response the event holds.
const MetadataKey = "baton_model"

// dummyText is the value Gemini's documentation names for a function
// call whose thought signature cannot be given.
const dummyText = "skip_thought_signature_validator"

var dummy, _ = base64.URLEncoding.DecodeString(dummyText)

// Dummy returns the signature that stands for a call without a valid one
// (see the package doc for its bytes).
func Dummy() []byte { return slices.Clone(dummy) }

// IsDummy reports whether sig is Dummy.
func IsDummy(sig []byte) bool { return bytes.Equal(sig, dummy) }

// Plugin returns the plugin of one invocation's runner that records the
// model of each response in its event (MetadataKey) and, before each
// model request, puts Dummy on the calls of the current turn whose
// signature is missing or was made by another model (see the package
// doc). It learns who made the signatures of the stored events when the
// run starts (ADK gives model callbacks no session), and of the
// invocation's own responses as they come: build one per invocation.
func Plugin() (*plugin.Plugin, error) {
	var mu sync.Mutex
	asked := map[string]string{}  // agent name → the model it asked last
	makers := map[string]string{} // signature → the model that made it
	return plugin.New(plugin.Config{
		Name: "baton_thought_signatures",
		BeforeRunCallback: func(ctx agent.InvocationContext) (*genai.Content, error) {
			mu.Lock()
			defer mu.Unlock()
			for ev := range ctx.Session().Events().All() {
				record(makers, ev.LLMResponse.Content, MakerOf(ev.LLMResponse))
			}
			return nil, nil
		},
		BeforeModelCallback: func(ctx agent.Context, req *model.LLMRequest) (*model.LLMResponse, error) {
			mu.Lock()
			defer mu.Unlock()
			asked[ctx.AgentName()] = req.Model
			Fix(req.Contents, req.Model, makers)
			return nil, nil
		},
		AfterModelCallback: func(ctx agent.Context, resp *model.LLMResponse, _ error) (*model.LLMResponse, error) {
			mu.Lock()
			defer mu.Unlock()
			name := asked[ctx.AgentName()]
			if resp == nil || name == "" {
				return nil, nil
			}
			if resp.CustomMetadata == nil {
				resp.CustomMetadata = map[string]any{}
			}
			resp.CustomMetadata[MetadataKey] = name
			record(makers, resp.Content, name)
			return nil, nil
		},
	})
}

// record notes maker as the maker of the signatures c carries.
func record(makers map[string]string, c *genai.Content, maker string) {
	if c == nil || maker == "" {
		return
	}
	for _, p := range c.Parts {
		if p != nil && len(p.ThoughtSignature) > 0 {
			makers[string(p.ThoughtSignature)] = maker
		}
	}
}

// MakerOf is the model that made a stored response: the name the plugin
// recorded, else ADK's ModelVersion ("" when neither is there).
func MakerOf(resp model.LLMResponse) string {
	if name, ok := resp.CustomMetadata[MetadataKey].(string); ok && name != "" {
		return name
	}
	return resp.ModelVersion
}

// Fix makes contents acceptable to the model named asked: in the current
// turn (CurrentTurn), the first function call of each model content
// carries its own signature or Dummy, and a signature makers says another
// model made is replaced (Dummy on that first call, removed elsewhere).
// Parts it changes are replaced by copies; contents before the current
// turn are not checked by Gemini and stay as they are.
func Fix(contents []*genai.Content, asked string, makers map[string]string) {
	for _, c := range contents[CurrentTurn(contents):] {
		if c == nil || c.Role != genai.RoleModel {
			continue
		}
		first := true
		for i, p := range c.Parts {
			if p == nil {
				continue
			}
			sig := p.ThoughtSignature
			maker, known := makers[string(sig)]
			foreign := len(sig) > 0 && !IsDummy(sig) && known && maker != asked
			switch {
			case p.FunctionCall != nil && first:
				first = false
				if len(sig) == 0 || foreign {
					c.Parts[i] = signed(p, Dummy())
				}
			case foreign:
				c.Parts[i] = signed(p, nil)
			}
		}
	}
}

// CurrentTurn is the index in contents where the current turn starts, as
// Gemini counts it: the latest user content holding anything but function
// responses (0 when there is none).
func CurrentTurn(contents []*genai.Content) int {
	for i := len(contents) - 1; i >= 0; i-- {
		c := contents[i]
		if c == nil || c.Role != genai.RoleUser {
			continue
		}
		for _, p := range c.Parts {
			if p != nil && p.FunctionResponse == nil {
				return i
			}
		}
	}
	return 0
}

// signed is a copy of p with sig as its signature.
func signed(p *genai.Part, sig []byte) *genai.Part {
	q := *p
	q.ThoughtSignature = sig
	return &q
}

// SummariesPlugin returns a runner plugin that asks the model for a
// summary of its thinking on every request (IncludeThoughts), leaving the
// agent's other thinking settings as they are.
func SummariesPlugin() (*plugin.Plugin, error) {
	return plugin.New(plugin.Config{
		Name: "baton_thought_summaries",
		BeforeModelCallback: func(_ agent.Context, req *model.LLMRequest) (*model.LLMResponse, error) {
			if req.Config == nil {
				req.Config = &genai.GenerateContentConfig{}
			}
			thinking := genai.ThinkingConfig{}
			if req.Config.ThinkingConfig != nil {
				thinking = *req.Config.ThinkingConfig
			}
			thinking.IncludeThoughts = true
			req.Config.ThinkingConfig = &thinking
			return nil, nil
		},
	})
}
