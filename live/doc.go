// Package live drives a live model (Gemini Live, through geminilive) for
// one chat and one client through Baton's store and ledger: Baton's live
// mode. Runner.Open opens a live segment of the chat
// (toolcallback.Team.OpenLive: a holder of the chat's lease like any
// turn) and the model session, and the Conversation it returns relays the
// client's audio and text to the model and the model's voice and words to
// the client. The HTTP edge (package functions) wires a WebSocket to it
// as a Client; tests drive it without one.
//
// # Nothing waits for Firestore on the way of the audio
//
// Three loops run beside the client's: relay passes the model's events on
// (audio and transcript pieces straight to the client), store writes
// events to Firestore in the order given, one commit at a time, and
// answers follows the ledger's answers. What the user and the model say
// is stored as the chat's messages when it ends (a tool call, the end of
// a model turn, an interruption): the user's words as a user message, a
// turn (transcript.StartsTurn), the model's as the agent's event, with
// the model turn's token usage (counted in the session document like a
// turn's, Options.CountTokens, and held to what the user's budget had left
// when the segment opened). The Transcript messages' ids are the ones GET
// /Chat/{chatId} gives the stored messages.
//
// # Tools
//
// Every tool is declared NON_BLOCKING: the model goes on talking while a
// tool runs, a browser answers or a person decides. A step's calls are
// stored as the model's event, with the ledger records of those that
// pause (toolcallback's browser and external tools) in the same commit;
// the client is shown a paused call once stored. Other tools run on
// goroutines of their own (geminilive.Agent.Run); their response goes to
// the model, then to the store. A tool that asks for a person's
// confirmation (an approval, or an MCP tool's question) is stored as ADK
// stores one: its response, then an adk_request_confirmation call, which
// the ledger records. An answer, whether the client gives it on its
// socket (Conversation.Answer) or any device on any instance does
// (toolcallback.Team.Resume), is recorded in the ledger (first writer
// wins) and reaches the conversation through the ledger
// (LiveSegment.Answers), once: a browser's answer goes to the model, then
// to the store, with its record closed in the same commit; a person's
// decision is stored with its record closed before the tool runs with it,
// so the tool runs at most once.
//
// A background call (toolcallback.Background) is stored like a paused
// call and shown as a tool-call of kind background; its work runs on the
// queue, its progress comes as tool-progress frames from a listener on the
// session's background calls, opened once the client is shown one
// (work.go), and its result reaches the model through Answers.
//
// # Across instances
//
// The model's resumption handle is stored in the session state
// (handleKey) with the event that ends a model turn (which waits up to a
// second for the handle the model issues right after it), or on its own
// at most every Options.HandleEvery, with the calls its model session
// holds. The next holder, on any instance, resumes from it while it is
// valid (two hours) and no event with content was stored after it (a text
// turn, an answer stored after the last handle: the model session would
// not know them), answering those calls as tool responses and the other
// open calls as call-and-response pairs; otherwise it seeds a new model
// session with the chat's stored conversation. A holder that dies
// leaves the ledger and the transcript as any turn leaves them: the next
// holder (live segment or turn) repairs them (toolcallback). The same
// device's next segment does not wait for the dead holder's lease: it
// takes the chat over (toolcallback.Holder.YieldsTo).
//
// It is a folder of its own because it joins toolcallback (the chat's
// lease and ledger) with geminilive (the model's socket), which know
// nothing of each other, and neither knows HTTP.
package live
