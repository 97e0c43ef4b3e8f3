// Reads every stream a browser context receives from the Chat function
// with the AI SDK's own client code, from the installed package the page
// was built with (ai 7, or ai 6 under the npm alias ai-v6): the parser
// DefaultChatTransport uses (parseJsonEventStream with uiMessageChunkSchema,
// which refuses any chunk or field outside the protocol) and
// readUIMessageStream, which builds the assistant message and refuses a
// chunk its message cannot take (a tool result for a call the message does
// not hold, say).
//
//   - POST /Chat whose last message is the user's: a new turn, read as a
//     new message.
//   - POST /Chat whose last message is the assistant's (answers): read as
//     the continuation of exactly that message, as the page sent it; the
//     stream must keep its id.
//   - GET /Chat/{chatId}/stream (a resume after a reload, or a live tab's
//     wait): a replay of the turn from its start, read as a new message
//     that must carry the turn's id.
//
// The bytes are copied inside the page (a wrapped fetch that reads a clone
// of each response), so what is read is exactly what the page received.

const WAIT = 15_000;

const watched = (method, path) => (method === 'POST' && path === '/Chat') ||
  (method === 'GET' && /^\/Chat\/[^/]+\/stream$/.test(path));

/**
 * Follows the streams of one browser context, across its tabs and reloads,
 * reading them with sdk (the `ai` module the page was built with). check()
 * waits until every response seen so far has been read and throws the
 * first failure.
 */
export async function watchStreams(context, sdk) {
  const counts = { turns: 0, resumes: 0, replays: 0 };
  const failures = [];
  const reading = new Set();
  // Per page: responses to wait for and responses reported, for the
  // document the page shows now. A reload abandons what the old document
  // was reading; a GET still open (a live tab's wait) is not waited for.
  const pages = new Map();
  const of = (page) => {
    if (!pages.has(page)) pages.set(page, { gen: 0, started: 0, reported: 0 });
    return pages.get(page);
  };
  context.on('page', (page) => page.on('framenavigated', (frame) => {
    if (frame === page.mainFrame()) Object.assign(of(page), { gen: of(page).gen + 1, started: 0, reported: 0 });
  }));
  const isWatched = (request) => watched(request.method(), new URL(request.url()).pathname);
  const pageOf = (request) => request.frame().page();
  context.on('request', (request) => {
    if (!isWatched(request)) return;
    request.e2eGen = of(pageOf(request)).gen;
    if (request.method() === 'POST') of(pageOf(request)).started++;
  });
  const ended = (request) => {
    if (!isWatched(request) || request.method() === 'POST') return;
    const p = of(pageOf(request));
    if (request.e2eGen === p.gen) p.started++;
  };
  context.on('requestfinished', ended);
  context.on('requestfailed', ended);
  await context.exposeBinding('__e2eResponse', (source, record) => {
    of(source.page).reported++;
    if (record.failed || record.status !== 200 || !record.contentType.startsWith('text/event-stream')) return;
    const work = read(record)
      .catch((err) => failures.push(new Error(`${record.method} ${record.path} ${record.request}: ${err.message}`, { cause: err })))
      .finally(() => reading.delete(work));
    reading.add(work);
  });
  await context.addInitScript(() => {
    const fetch = window.fetch.bind(window);
    const isWatched = (method, path) => (method === 'POST' && path === '/Chat') ||
      (method === 'GET' && /^\/Chat\/[^/]+\/stream$/.test(path));
    window.fetch = async (input, init = {}) => {
      const path = new URL(input instanceof Request ? input.url : String(input), location.href).pathname;
      const method = init.method ?? 'GET';
      if (!isWatched(method, path)) return fetch(input, init);
      const report = (record) => window.__e2eResponse({ method, path, request: String(init.body ?? ''), ...record });
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
  });

  async function read(record) {
    if (record.method === 'GET') {
      const message = await readMessage(sdk, record.body);
      if (!message.id) throw new Error('the replay names no message');
      counts.replays++;
      return;
    }
    const body = JSON.parse(record.request);
    const last = body.messages.at(-1);
    if (last.role === 'user') {
      const message = await readMessage(sdk, record.body);
      if (!message.id || message.id === last.id) throw new Error(`the turn's stream starts message ${message.id}`);
      counts.turns++;
      return;
    }
    const continued = await readMessage(sdk, record.body, structuredClone(last));
    if (continued.id !== last.id) {
      throw new Error(`the answer's stream starts message ${continued.id}, not ${last.id}, the message it continues`);
    }
    counts.resumes++;
  }

  return {
    counts,
    async check() {
      const deadline = Date.now() + WAIT;
      const unread = () => [...pages.values()].reduce((n, p) => n + Math.max(0, p.started - p.reported), 0);
      while (unread() > 0) {
        if (Date.now() > deadline) throw new Error(`${unread()} Chat responses were never read`);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      await Promise.all([...reading]);
      if (failures.length) throw failures[0];
    },
  };
}

/** Reads a UI message stream into the assistant message, continuing message when given. */
async function readMessage({ parseJsonEventStream, readUIMessageStream, uiMessageChunkSchema }, body, message) {
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
