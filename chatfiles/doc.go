// Package chatfiles keeps the files of chats outside their transcripts:
// the files users send, the files models answer with, and those tools
// save, all through an ADK artifact.Service (in production ADK's
// gcsartifact, a Cloud Storage bucket).
//
// # References instead of bytes
//
// A user's file (a part with inline bytes) is saved as an artifact of the
// chat before its turn starts (Store.SaveMessage), and the message the
// session stores carries a reference in its place: a genai.FileData whose
// URI names the artifact (Ref.Part, "baton-file:{chat}/{name}/{version}").
// A model's inline output is saved the same way before its event is stored
// (Store.SaveEventFiles). The session's documents stay small however large
// a file is, and no file is read back from Firestore on later turns.
//
// The model still receives the bytes: each invocation's runner has a
// plugin (Store.Plugin) whose before-model callback swaps each reference
// in the request for the artifact's bytes. That is the cheapest place:
// ADK's contents processor (llminternal.buildContentsDefault) has already
// deep-copied the history's contents into the request, so the swap edits
// that copy, reads each file once per invocation, and leaves the session's
// events as they are.
//
// # Keyed by the chat
//
// Artifacts are stored under the chat id (the artifact's "session"), not
// under the chat's ADK session, so that references stay valid when the
// chat moves to another agent's session. ADK's runner keys a tool's
// artifacts by the ADK session; the runner is given the store through
// Store.Artifacts, which keys them by the chat instead, so that a tool of
// the chat's next agent finds what an earlier one saved. ADK records each
// save in the event that ends the tool's step (Actions.ArtifactDelta);
// SaveEventFiles notes those files in the event's CustomMetadata with
// their media types, and SavedFiles reads them back as reference parts,
// which a chat's history and streams show as files of the assistant's
// message. The model is not sent them: what a tool saved reaches the model
// only if the tool returns it or loads it.
//
// A remote agent's files are saved by name (SaveOnce: remote-{call}-{part},
// stored once however often its result is applied) and referred to from
// the function response that answers the call, among its parts
// (ResponseRefs reads them); Plugin gives the model their bytes as inline
// parts of the same content, which is how a model reads a user's file.
//
// Deleting a chat deletes its files (Store.DeleteChat). A file saved for a
// message that was then refused before anything was written is deleted
// again (Store.Drop); one whose turn died in between stays under the
// chat's prefix until the chat is deleted.
package chatfiles
