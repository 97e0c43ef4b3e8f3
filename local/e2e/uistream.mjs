// Reads every turn and resume stream a browser context receives with the AI
// SDK's own client code (the `ai` package, pinned in package-lock.json), as
// useChat would: DefaultChatTransport's parser (parseJsonEventStream with
// uiMessageChunkSchema, which refuses any chunk or field outside the
// protocol) and readUIMessageStream, which builds the assistant message and
// refuses a chunk its message cannot take (a tool result for a call the
// message does not hold, say).
//
// A turn's stream builds a new message. Before a resume, the message that
// holds the answered call takes the answer the way useChat's addToolOutput
// and addToolApprovalResponse record it; the resume's stream must then read
// as the continuation of that message, under the same id.
//
// The bytes are copied inside the page (a wrapped fetch that reads a clone
// of each response), so what is read is exactly what the page received.

import { parseJsonEventStream, readUIMessageStream, uiMessageChunkSchema } from 'ai';

const WATCHED = ['/Turn', '/ToolResult'];
const WAIT = 15_000;

/**
 * Follows the streams of one browser context, across its tabs and reloads.
 * check() waits until every request seen so far has been read and throws
 * the first failure.
 */
export async function watchStreams(context) {
  const messages = new Map(); // assistant messages by id, as the AI SDK built them
  const counts = { turns: 0, resumes: 0 };
  const failures = [];
  let started = 0;
  let reported = 0;
  const turns = new Set(); // turn streams being read
  let resumes = Promise.resolve(); // resumes are read in the order they ended

  context.on('request', (request) => {
    if (request.method() === 'POST' && WATCHED.includes(new URL(request.url()).pathname)) started++;
  });
  await context.exposeBinding('__e2eResponse', (_source, record) => {
    reported++;
    if (record.failed || record.status < 200 || record.status > 299) return;
    const fail = (err) => failures.push(new Error(`${record.path} ${record.request}: ${err.message}`, { cause: err }));
    if (record.path === '/Turn') {
      if (!isStream(record)) return;
      const work = readTurn(record).catch(fail).finally(() => turns.delete(work));
      turns.add(work);
    } else {
      resumes = resumes.then(() => readResume(record)).catch(fail);
    }
  });
  await context.addInitScript((watched) => {
    const fetch = window.fetch.bind(window);
    window.fetch = async (input, init = {}) => {
      const path = new URL(input instanceof Request ? input.url : String(input), location.href).pathname;
      if ((init.method ?? 'GET') !== 'POST' || !watched.includes(path)) return fetch(input, init);
      const report = (record) => window.__e2eResponse({ path, request: String(init.body ?? ''), ...record });
      let res;
      try {
        res = await fetch(input, init);
      } catch (err) {
        report({ failed: String(err) });
        throw err;
      }
      res.clone().text().then(
        (body) => report({ status: res.status, contentType: res.headers.get('Content-Type') ?? '', body }),
        (err) => report({ failed: String(err) }));
      return res;
    };
  }, WATCHED);

  async function readTurn(record) {
    const message = await readMessage(record.body);
    if (!message.id) throw new Error('the turn\'s stream names no message');
    messages.set(message.id, message);
    counts.turns++;
  }

  async function readResume(record) {
    const answer = JSON.parse(record.request);
    const message = await holding(answer.toolCallId);
    recordAnswer(message, answer);
    if (!isStream(record)) return; // recorded: other calls of the step are still open
    const continued = await readMessage(record.body, message);
    if (continued.id !== message.id) {
      throw new Error(`the resume's stream starts message ${continued.id}, not ${message.id}, the message it continues`);
    }
    messages.set(continued.id, continued);
    counts.resumes++;
  }

  // The message holding a call (or approval) id, once the turn that made
  // it has been read.
  async function holding(id) {
    const deadline = Date.now() + WAIT;
    for (;;) {
      for (const message of messages.values()) {
        if (message.parts.some((p) => p.toolCallId === id || p.approval?.id === id)) return message;
      }
      if (turns.size === 0 && Date.now() > deadline) throw new Error(`no assistant message holds call ${id}`);
      await Promise.race([...turns, sleep(20)]);
    }
  }

  return {
    counts,
    async check() {
      const deadline = Date.now() + WAIT;
      while (reported < started) {
        if (Date.now() > deadline) throw new Error(`${started - reported} turn or resume responses were never read`);
        await sleep(20);
      }
      await Promise.all([...turns]);
      await resumes;
      if (failures.length) throw failures[0];
    },
  };
}

function isStream(record) {
  return record.contentType.startsWith('text/event-stream');
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// Records a ToolResult's answer in the message's part for the call, as
// useChat does before it sends the message back.
function recordAnswer(message, answer) {
  const part = message.parts.find((p) => p.toolCallId === answer.toolCallId || p.approval?.id === answer.toolCallId);
  if (answer.approved !== undefined) {
    Object.assign(part, { state: 'approval-responded', approval: { ...part.approval, approved: answer.approved } });
  } else if (answer.output !== undefined) {
    Object.assign(part, { state: 'output-available', output: answer.output });
  } else {
    Object.assign(part, { state: 'output-error', errorText: answer.error });
  }
}

/** Reads a UI message stream into the assistant message, continuing message when given. */
async function readMessage(body, message) {
  const chunks = parseJsonEventStream({ stream: new Response(body).body, schema: uiMessageChunkSchema })
    .pipeThrough(new TransformStream({
      transform(chunk, controller) {
        if (!chunk.success) throw chunk.error;
        controller.enqueue(chunk.value);
      },
    }));
  let last = message;
  for await (const snapshot of readUIMessageStream({ message, stream: chunks, terminateOnError: true })) {
    last = snapshot;
  }
  if (!last) throw new Error('the stream built no message');
  return last;
}
