// Package thoughts holds what Baton does about a model's thinking: it
// keeps a model request acceptable to a Gemini model that checks thought
// signatures, whatever model made the calls the request replays (Plugin),
// and asks the model for thought summaries when a deployment wants them
// (SummariesPlugin, toolcallback.Options.IncludeThoughts).
//
// Gemini 3 and later attach an opaque thought signature to the first
// function call of each response that makes calls, and refuse a request
// (HTTP 400) whose current turn holds a call without its signature, or
// with a signature another model made. The current turn starts at the
// latest user content that holds more than function responses: a step of
// a turn can be paused for hours, and the deployment that answers it may
// run a newer model than the one that made the call (or the call was made
// by a model without signatures, such as a live model, or written by
// Baton). Such a call then carries the value Gemini's documentation
// names for calls it cannot check, skip_thought_signature_validator,
// instead of nothing or a foreign signature; calls the model now asked
// made keep theirs, and the request changes nothing else.
//
// Who made a signature is known from the stored event that holds it: the
// plugin writes the name of the model each response came from into the
// event's custom metadata (MetadataKey), read back when a later request
// replays the call. Events stored before that field existed fall back to
// ADK's ModelVersion, which Gemini fills with the model that answered.
// A signature whose maker is not known at all is left as it is.
//
// The documented value is text, and thoughtSignature is a bytes field,
// which the API reads from base64; genai (v1.66) encodes a []byte as
// standard base64, an alphabet without "_", so the literal text cannot
// be sent through it (go-genai issue 711). Dummy is the decoding of that
// text as URL-safe base64: genai then sends
// "skip/thought/signature/validator", which the API decodes to the same
// bytes as the documented text.
//
// A thought summary comes back as parts marked Thought, stored with the
// model's event like its text. ADK hands them back to the model as thought
// parts, never as text; the streams show them as reasoning (package
// uistream), and an agent switch leaves them out of the records it makes
// of the old agent's turns (package sessionstore).
//
// It stores nothing and uses no Firestore path; every turn's runner has
// its plugins (package toolcallback).
package thoughts
