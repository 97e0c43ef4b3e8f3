// Package uistream encodes ADK events as a Vercel AI SDK "UI message
// stream" (protocol v1, header x-vercel-ai-ui-message-stream: v1), the
// format the AI SDK's useChat and DefaultChatTransport read.
//
// An Encoder turns events into Chunks and hands them to a Sink: SSE writes
// them as Server-Sent Events, Collector keeps them for a client that wants
// the turn as one JSON document. The producer is the same for both, so the
// JSON form never re-reads its own stream. The package stores nothing.
//
// A model's thought summary (parts marked Thought) travels as a reasoning
// part, reasoning-start, reasoning-delta, reasoning-end, before the text
// of the same response; useChat keeps it as a part of type "reasoning".
//
// An A2UI surface travels as a data part, data-a2ui (Encoder.Surface):
//
//	{"type": "data-a2ui", "id": "<surfaceId>",
//	 "data": {"surfaceId": "<surfaceId>", "messages": [<A2UI v0.9 messages>]}}
//
// The AI SDK client replaces the data of a message's part of the same type
// and id, so each chunk carries the whole surface as it now is (createSurface,
// updateComponents, updateDataModel: a2ui.Surface.Redraw), and a deleted
// surface's chunk carries its deleteSurface alone. See docs/a2ui.md.
//
// Followed: AI SDK 6, github.com/vercel/ai
//   - packages/ai/src/ui-message-stream/ui-message-chunks.ts (uiMessageChunkSchema:
//     every chunk is a strict object, so no field beyond the schema's is sent;
//     tool-approval-request is {type, approvalId, toolCallId}, new in AI SDK 6)
//   - packages/ai/src/ui-message-stream/ui-message-stream-headers.ts (headers)
//   - packages/ai/src/ui/process-ui-message-stream.ts (client rules: text-delta
//     and text-end need an open text-start with the same id; finish-step forgets
//     open text parts; tool-approval-request and tool-output-* need a tool part
//     for the toolCallId already in the message; a data-* chunk with the type
//     and id of a part already in the message replaces that part's data)
//   - JsonToSseTransformStream: each chunk is "data: <json>\n\n", the stream
//     ends with "data: [DONE]\n\n".
package uistream
