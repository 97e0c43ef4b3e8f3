// How live mode's frames join the conversation useChat holds: one list of
// UI messages for text turns and live segments. A transcript frame's
// messageId is the id GET /Chat/{chatId} gives the stored message, so its
// pieces merge into that message (a new one, or the turn's message a text
// turn started), and the load after the segment shows the same messages,
// once each. A piece (final false) extends the message's open text part; a
// final frame carries the words since the last final one whole, and
// closes the part, as the server stores them: each final is one event's
// text. A tool call comes with no messageId: it goes into the assistant
// message the list ends with, or into a provisional one that the turn's
// first words then name.

import { INPUT_TOOL } from './InputForm.jsx';

/** messages with a transcript frame's words merged in. */
export function withTranscript(messages, { role, messageId, text, final }) {
  const next = [...messages];
  let i = next.findIndex((m) => m.id === messageId);
  if (i < 0 && role === 'assistant' && next.at(-1)?.metadata?.provisional) {
    i = next.length - 1;
    next[i] = { ...next[i], id: messageId, metadata: { live: true } };
  }
  if (i < 0) {
    next.push({ id: messageId, role, parts: [], metadata: { live: true } });
    i = next.length - 1;
  }
  const parts = [...next[i].parts];
  const last = parts.at(-1);
  const open = last?.type === 'text' && last.state === 'streaming';
  if (final) {
    const done = { type: 'text', text, state: 'done' };
    if (open) parts[parts.length - 1] = done;
    else parts.push(done);
  } else if (open) {
    parts[parts.length - 1] = { ...last, text: last.text + text };
  } else {
    parts.push({ type: 'text', text, state: 'streaming' });
  }
  next[i] = { ...next[i], parts };
  return next;
}

/**
 * The part that shows a tool-call frame, as GET /Chat/{chatId} shows an
 * open call: a browser call for this tab to run, an approval, a question
 * (a call of baton_input), or a call the page only shows. A call any of
 * the user's devices may answer is this tab's.
 */
function callPart(frame, device) {
  const base = {
    type: `tool-${frame.kind === 'input' ? INPUT_TOOL : frame.toolName}`, toolCallId: frame.toolCallId,
    input: frame.input ?? {}, callProviderMetadata: { baton: { deviceId: frame.deviceId || device } },
  };
  switch (frame.kind) {
    case 'browser':
      return { ...base, state: 'input-available', providerExecuted: false };
    case 'approval':
      return { ...base, state: 'approval-requested', providerExecuted: true, approval: { id: frame.approvalId } };
    case 'input':
      return { ...base, state: 'input-available' };
    default:
      return { ...base, state: 'input-available', providerExecuted: true };
  }
}

const answered = (part) => part.state.startsWith('output-') || part.state === 'approval-responded';

/** messages with the part of a tool call, mapped over the call's own part. */
function withPart(messages, callId, change) {
  return messages.map((m) => (m.parts.some((p) => p.toolCallId === callId)
    ? { ...m, parts: m.parts.map((p) => (p.toolCallId === callId ? change(p) : p)) }
    : m));
}

/** messages showing a tool-call frame (a call shown already keeps its part, unless it is open). */
export function withToolCall(messages, frame, device) {
  const part = callPart(frame, device);
  if (messages.some((m) => m.parts.some((p) => p.toolCallId === frame.toolCallId))) {
    return withPart(messages, frame.toolCallId, (p) => (answered(p) ? p : { ...p, ...part, type: p.type }));
  }
  const last = messages.at(-1);
  if (last?.role === 'assistant') return [...messages.slice(0, -1), { ...last, parts: [...last.parts, part] }];
  return [...messages, { id: `live-call-${frame.toolCallId}`, role: 'assistant', parts: [part], metadata: { live: true, provisional: true } }];
}

/** messages with a call's outcome (a tool-result frame). */
export function withToolResult(messages, { toolCallId, output, errorText }) {
  return withPart(messages, toolCallId, (p) => (errorText !== undefined
    ? { ...p, state: 'output-error', errorText }
    : { ...p, state: 'output-available', output: output ?? {} }));
}

/** messages with a person's decision on a live approval, or answer to a live question. */
export function withAnswer(messages, callId, { approved, input, output }) {
  return withPart(messages, callId, (p) => (approved !== undefined
    ? { ...p, state: 'approval-responded', input: input ?? p.input, approval: { ...p.approval, approved } }
    : { ...p, state: 'output-available', output }));
}

/**
 * The ids of the messages said in a live segment, for their marker: those
 * the page made from its frames, the assistant messages of live turns as
 * GET /Chat/{chatId} names them (live-…), and the user message that began
 * each.
 */
export function liveMessageIds(messages) {
  const live = (m) => m?.role === 'assistant' && (m.metadata?.live || m.id.startsWith('live-'));
  return new Set(messages.filter((m, i) => m.metadata?.live || live(m) || (m.role === 'user' && live(messages[i + 1])))
    .map((m) => m.id));
}
