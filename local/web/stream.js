// Reader for the Vercel AI SDK "UI message stream" (protocol v1): Server-Sent
// Events whose data lines each hold one JSON chunk, ending with
// "data: [DONE]". Comment lines (": keep-alive") and other fields are ignored.

/**
 * Reads body to its end (or to [DONE]) and calls onChunk for each chunk, in
 * order. onChunk may be async; it is awaited before the next chunk.
 * @param {ReadableStream<Uint8Array>} body
 * @param {(chunk: object) => (void|Promise<void>)} onChunk
 */
export async function readUIMessageStream(body, onChunk) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += value;
      // Events end with a blank line; accept \n and \r\n line endings.
      let end;
      while ((end = buffer.search(/\r?\n\r?\n/)) >= 0) {
        const event = buffer.slice(0, end);
        buffer = buffer.slice(end).replace(/^\r?\n\r?\n/, '');
        if (await dispatch(event, onChunk) === 'done') return;
      }
    }
    if (buffer.trim() !== '') await dispatch(buffer, onChunk);
  } finally {
    reader.cancel().catch(() => {});
  }
}

async function dispatch(event, onChunk) {
  const data = [];
  for (const line of event.split(/\r?\n/)) {
    if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
  }
  if (data.length === 0) return; // a comment such as ": keep-alive"
  const text = data.join('\n');
  if (text === '[DONE]') return 'done';
  let chunk;
  try {
    chunk = JSON.parse(text);
  } catch {
    chunk = { type: 'error', errorText: 'The server sent an unreadable chunk.' };
  }
  await onChunk(chunk);
}
