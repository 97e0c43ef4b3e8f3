// Baton demo page: a chat over Baton's HTTP API (README, "HTTP API").
// POST /Turn sends a message; POST /ToolResult answers a paused call (a
// browser tool or an approval); GET /Pending restores the conversation and
// this tab's open calls after a reload. Every request carries the user's
// Firebase ID token (or, in development identity mode, X-Baton-User; see
// auth.js).

import { signIn } from './auth.js';
import { readUIMessageStream } from './stream.js';
import { isBrowserTool, runBrowserTool, playTrack, restoreTrack } from './tools.js';

const AUTO_RETRIES = 3; // automatic retries of a busy session before asking
const MAX_RETRY_DELAY = 2; // seconds; the session is usually free long before its lease expires

const testId = (id, root = document) => root.querySelector(`[data-testid="${id}"]`);
const app = testId('app');
const messages = testId('messages');
const form = testId('composer');
const input = testId('composer-input');
const sendButton = testId('send');
const agentSelect = testId('agent');

// The page's configuration and who is signed in: the user belongs to the
// browser profile.
const config = await fetch('/config.json').then((res) => res.json()).catch(() => ({}));
const identity = await signIn(config.auth);

// The session belongs to the browser profile too, the client id to this tab:
// only the tab that started a turn may answer its browser calls.
const ids = {
  user: identity.user,
  session: remember(localStorage, 'baton.session', 'chat-'),
  client: remember(sessionStorage, 'baton.client', 'tab-'),
};

function newId(prefix) {
  const bytes = crypto.getRandomValues(new Uint8Array(6));
  return prefix + Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
}

function remember(storage, key, prefix) {
  let id = storage.getItem(key);
  if (!id) {
    id = newId(prefix);
    storage.setItem(key, id);
  }
  return id;
}

// The chat's active agent, as the server last reported it. Choosing another
// one in the picker switches the chat with the next message.
let currentAgent = '';

function showAgents(agents, current) {
  if (agents?.length) {
    agentSelect.replaceChildren(...agents.map((name) => new Option(name, name)));
  }
  if (current) currentAgent = current;
  agentSelect.value = currentAgent || agentSelect.options[0]?.value || '';
}

// --- activity ---------------------------------------------------------------

// requests counts requests in flight (Send waits for them, so this tab never
// competes with itself); tools counts browser tools running.
const activity = { requests: 0, tools: 0 };

async function tracked(kind, fn) {
  activity[kind]++;
  showActivity();
  try {
    return await fn();
  } finally {
    activity[kind]--;
    showActivity();
  }
}

function showActivity() {
  app.dataset.state = activity.requests || activity.tools ? 'working' : 'idle';
  sendButton.disabled = activity.requests > 0;
}

// --- HTTP -------------------------------------------------------------------

async function headers(extra = {}) {
  return { ...(await identity.headers()), ...extra };
}
// For the scripted checks in local/e2e, which call the API as this page.
window.batonHeaders = headers;

async function readJSON(res) {
  try {
    return await res.json();
  } catch {
    return null;
  }
}

function isStream(res) {
  return res.ok && (res.headers.get('Content-Type') ?? '').startsWith('text/event-stream');
}

/**
 * POSTs body to path. A 409 busy is retried (automatically a few times, and
 * by the Retry button); a network failure is shown and gives null.
 */
async function post(path, body) {
  let busyLine = null;
  for (let attempt = 1; ; attempt++) {
    let res;
    try {
      res = await fetch(path, {
        method: 'POST',
        headers: await headers({ 'Content-Type': 'application/json', Accept: 'text/event-stream' }),
        body: JSON.stringify(body),
      });
    } catch (err) {
      busyLine?.remove();
      systemLine('error', `Network error: ${err.message}. Is \`go run ./local\` still running?`);
      return null;
    }
    const problem = res.status === 409 ? await readJSON(res.clone()) : null;
    if (problem?.error?.code !== 'busy') {
      if (busyLine) settleBusy(busyLine);
      return res;
    }
    const seconds = problem.error.retryAfterSeconds || Number(res.headers.get('Retry-After')) || 1;
    busyLine ??= systemLine('busy', '');
    await busyWait(busyLine, seconds, attempt);
  }
}

// Shows the busy line and resolves when it is time to retry: after a short
// delay for the first attempts, and always when Retry is pressed.
function busyWait(line, seconds, attempt) {
  return new Promise((resolve) => {
    const text = line.querySelector('.text');
    let retry = testId('retry', line);
    if (!retry) {
      retry = button('Retry', 'retry');
      line.append(retry);
    }
    let timer = null;
    const go = () => {
      clearInterval(timer);
      retry.onclick = null;
      text.textContent = 'The session is busy with another tab — retrying…';
      resolve();
    };
    retry.onclick = go;
    if (attempt > AUTO_RETRIES) {
      text.textContent = 'The session is still busy with another tab. Retry when it is done.';
      return;
    }
    let left = Math.min(Math.max(Math.ceil(seconds), 1), MAX_RETRY_DELAY);
    const show = () => {
      text.textContent = `The session is busy with another tab — retrying in ${left} s…`;
    };
    show();
    timer = setInterval(() => (--left <= 0 ? go() : show()), 1000);
  });
}

function settleBusy(line) {
  line.dataset.state = 'resolved';
  line.querySelector('.text').textContent = 'The session was busy with another tab — retried.';
  testId('retry', line)?.remove();
}

/** Reports an error response plainly; call, if given, is the call answered. */
function showError(res, body, call) {
  const e = body?.error ?? { code: `http_${res.status}`, message: res.statusText || 'request failed' };
  switch (e.code) {
    case 'expired':
      if (call) setStatus(call, 'expired', 'expired');
      systemLine('expired', 'This request expired or was cancelled; the agent no longer waits for it.');
      break;
    case 'already_resolved':
      if (call) setStatus(call, 'done', 'already answered');
      systemLine('info', 'This call was already answered.');
      break;
    case 'wrong_client':
      if (call) setStatus(call, 'error', 'belongs to another tab');
      systemLine('error', 'Another tab started this request; only that tab can answer it.');
      break;
    case 'pending_calls': {
      const names = (e.calls ?? []).map((c) => c.toolName).join(', ') || 'a tool call';
      systemLine('pending_calls', `The agent is still waiting for ${names}. Answer it first (reload the tab that asked).`);
      break;
    }
    case 'unavailable': {
      const wait = res.headers.get('Retry-After');
      systemLine('error', `The service is unavailable${wait ? `; try again in ${wait} s` : ''}.`);
      break;
    }
    default:
      if (call) setStatus(call, 'error', 'failed');
      systemLine('error', `Error ${res.status} (${e.code}): ${e.message}`);
  }
}

// --- rendering ----------------------------------------------------------------

function button(label, id, className = '') {
  const b = document.createElement('button');
  b.type = 'button';
  b.textContent = label;
  b.dataset.testid = id;
  if (className) b.className = className;
  return b;
}

function append(el) {
  testId('hint')?.remove();
  const stick = messages.scrollHeight - messages.scrollTop - messages.clientHeight < 40;
  messages.append(el);
  if (stick) messages.scrollTop = messages.scrollHeight;
  return el;
}

function addMessage(role, text, messageId) {
  const el = document.createElement('div');
  el.className = 'msg';
  el.dataset.role = role;
  el.dataset.testid = 'message';
  if (messageId) el.dataset.messageId = messageId;
  if (text) addText(el).append(text);
  return append(el);
}

/**
 * The assistant message of a turn: every stream of one turn (the first and
 * each resume) starts with the turn's message id, and so does every history
 * item of it, so they all land in one message, as the AI SDK keeps them.
 */
function assistantMessage(messageId) {
  const found = messageId && [...messages.querySelectorAll('[data-testid="message"][data-role="assistant"]')]
    .find((m) => m.dataset.messageId === messageId);
  return found || addMessage('assistant', '', messageId);
}

function switchedText(from, to) {
  return `Switched to ${to}${from ? ` from ${from}` : ''}.`;
}

function addText(message) {
  const span = document.createElement('span');
  span.className = 'text';
  span.dataset.testid = 'message-text';
  message.append(span);
  return span;
}

function systemLine(kind, text) {
  const el = document.createElement('div');
  el.className = 'system';
  el.dataset.testid = 'system-message';
  el.dataset.kind = kind;
  el.setAttribute('role', kind === 'info' || kind === 'agent' ? 'status' : 'alert');
  const span = document.createElement('span');
  span.className = 'text';
  span.textContent = text;
  el.append(span);
  return append(el);
}

function showHint() {
  const el = document.createElement('p');
  el.className = 'hint';
  el.dataset.testid = 'hint';
  el.textContent = 'Say hello, or try one of the suggestions below.';
  messages.append(el);
}

// --- tool calls -----------------------------------------------------------------

// Every call shown in this page, by the model's call id.
const calls = new Map();

/** Short JSON of a value, keys sorted, so the same value always reads the same. */
function compact(value) {
  const sorted = (v) => (v && typeof v === 'object' && !Array.isArray(v)
    ? Object.fromEntries(Object.keys(v).sort().map((k) => [k, sorted(v[k])]))
    : Array.isArray(v) ? v.map(sorted) : v);
  const s = JSON.stringify(sorted(value ?? {}));
  return s.length > 160 ? `${s.slice(0, 157)}…` : s;
}

/**
 * The arguments an approved tool runs with: the server merges the payload
 * into the model's arguments as a JSON Merge Patch (RFC 7396).
 */
function mergePatch(target, patch) {
  if (!patch || typeof patch !== 'object' || Array.isArray(patch)) return target;
  const out = { ...(target && typeof target === 'object' && !Array.isArray(target) ? target : {}) };
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else if (typeof v === 'object' && !Array.isArray(v)) out[k] = mergePatch(out[k], v);
    else out[k] = v;
  }
  return out;
}

/** Returns the card of a call, adding it to parent when new. */
function toolCard(parent, { toolCallId, toolName, input }) {
  let call = calls.get(toolCallId);
  if (call) return call;
  const el = document.createElement('div');
  el.className = 'tool';
  el.dataset.testid = 'tool-call';
  el.dataset.toolName = toolName;
  el.dataset.callId = toolCallId;
  el.innerHTML = '<div class="tool-head"><span class="tool-name"></span><code class="tool-input"></code>' +
    '<span class="tool-status" data-testid="tool-status"></span></div><code class="tool-output" data-testid="tool-output"></code>';
  el.querySelector('.tool-name').textContent = toolName;
  el.querySelector('.tool-input').textContent = compact(input);
  call = { id: toolCallId, name: toolName, input: input ?? {}, el, approvalId: '' };
  calls.set(toolCallId, call);
  setStatus(call, 'running', isBrowserTool(toolName) ? 'runs in this tab' : 'running…');
  parent.append(el);
  return call;
}

function showInput(call, input) {
  call.input = input ?? {};
  call.el.querySelector('.tool-input').textContent = compact(input);
}

/** Shows a call as a reloaded history has it: with its outcome, or waiting for one. */
function showHistoryCall(call, item) {
  if (item.approval === 'rejected') setStatus(call, 'rejected', 'rejected', item.errorText ?? '');
  else if (item.errorText) setStatus(call, 'error', 'failed', item.errorText);
  else if (item.output !== undefined && item.approval === 'approved') setStatus(call, 'approved', 'approved · done', compact(item.output));
  else if (item.output !== undefined) setStatus(call, 'done', 'done', compact(item.output));
  else setStatus(call, 'waiting', 'waiting for an answer');
}

function setStatus(call, status, label, output) {
  call.el.dataset.status = status;
  call.el.querySelector('.tool-status').textContent = label ?? status;
  if (output !== undefined) call.el.querySelector('.tool-output').textContent = output;
}

function askApproval(call, approvalId) {
  call.approvalId = approvalId;
  setStatus(call, 'approval', 'needs your approval');
  const box = document.createElement('form');
  box.className = 'approval';
  box.dataset.testid = 'approval';
  const values = Object.entries(call.input);
  const flat = values.every(([, v]) => v === null || ['string', 'number', 'boolean'].includes(typeof v));
  let read;
  if (flat) {
    // One field per argument, typed like the model's value.
    const fields = document.createElement('div');
    fields.className = 'fields';
    const readers = values.map(([key, value]) => {
      const id = `f-${approvalId}-${key}`;
      const label = document.createElement('label');
      label.htmlFor = id;
      label.textContent = key;
      const field = document.createElement('input');
      field.id = id;
      field.dataset.testid = `approval-field-${key}`;
      if (typeof value === 'boolean') {
        field.type = 'checkbox';
        field.checked = value;
      } else {
        field.type = typeof value === 'number' ? 'number' : 'text';
        field.value = value ?? '';
      }
      fields.append(label, field);
      return () => {
        if (typeof value === 'boolean') return [key, field.checked];
        if (typeof value !== 'number') return [key, field.value];
        const n = Number(field.value);
        if (field.value.trim() === '' || !Number.isFinite(n)) throw new Error(`${key} must be a number`);
        return [key, n];
      };
    });
    box.append(fields);
    read = () => Object.fromEntries(readers.map((r) => r()));
  } else {
    const area = document.createElement('textarea');
    area.dataset.testid = 'approval-payload';
    area.rows = Math.min(10, JSON.stringify(call.input, null, 2).split('\n').length);
    area.value = JSON.stringify(call.input, null, 2);
    area.setAttribute('aria-label', `Arguments of ${call.name}`);
    box.append(area);
    read = () => JSON.parse(area.value);
  }
  const actions = document.createElement('div');
  actions.className = 'actions';
  const approve = button('Approve', 'approve', 'primary');
  approve.type = 'submit';
  const reject = button('Reject', 'reject');
  const problem = document.createElement('span');
  problem.className = 'problem';
  problem.setAttribute('role', 'alert');
  actions.append(approve, reject, problem);
  box.append(actions);
  call.el.append(box);

  const decide = async (approved) => {
    let payload;
    if (approved) {
      try {
        payload = read();
      } catch (err) {
        problem.textContent = err.message;
        return;
      }
    }
    box.remove();
    const asked = call.input;
    if (approved) showInput(call, mergePatch(asked, payload));
    setStatus(call, approved ? 'approved' : 'rejected', approved ? 'approved' : 'rejected',
      approved ? `approved with ${compact(payload)}` : 'rejected');
    if (!await answer(call, approved ? { approved: true, payload } : { approved: false })) {
      // The server never got the decision: ask again.
      showInput(call, asked);
      setStatus(call, 'approval', 'needs your approval', '');
      call.el.append(box);
    }
  };
  box.addEventListener('submit', (e) => {
    e.preventDefault();
    decide(true);
  });
  reject.addEventListener('click', () => decide(false));
}

// Browser calls already started in this page, so none runs twice.
const started = new Set();

/** Runs this tab's browser calls, then posts their results in order. */
function runBrowserCalls(list) {
  list = list.filter((call) => !started.has(call.id));
  list.forEach((call) => started.add(call.id));
  if (list.length === 0) return Promise.resolve();
  return tracked('tools', async () => {
    const results = await Promise.all(list.map((call) => {
      setStatus(call, 'running', 'running in this tab…');
      return runBrowserTool(call.name, call.input);
    }));
    for (const [i, call] of list.entries()) {
      const result = results[i];
      if (result.error) setStatus(call, 'error', 'failed in the browser', result.error);
      else setStatus(call, 'sending', 'sending the result…', compact(result.output));
      await answer(call, result);
    }
  });
}

/**
 * Posts the answer to a paused call and follows the agent's continuation.
 * Reports whether the server received it.
 */
function answer(call, result) {
  return tracked('requests', async () => {
    const body = { sessionId: ids.session, toolCallId: call.approvalId || call.id, clientId: ids.client, ...result };
    const res = await post('/ToolResult', body);
    if (!res) return false;
    const done = () => {
      if (call.approvalId) return;
      if (result.error) setStatus(call, 'error', 'failed in the browser');
      else setStatus(call, 'done', 'done');
    };
    if (isStream(res)) {
      done();
      await consumeStream(res);
      return true;
    }
    const reply = await readJSON(res);
    if (!res.ok) {
      showError(res, reply, call);
      return true;
    }
    done();
    if (reply?.status === 'already_resolved') {
      setStatus(call, call.el.dataset.status, 'already answered');
    } else if (reply?.deferred) {
      systemLine('info', 'The session was busy: the answer is saved and reaches the agent shortly or with your next message.');
    } else if (reply?.waiting?.length) {
      call.el.querySelector('.tool-status').textContent += ` · waiting for ${reply.waiting.length} more`;
    }
    return true;
  });
}

// --- the stream of one turn or resume ---------------------------------------------

async function consumeStream(res) {
  let message = null;
  let messageId = '';
  const texts = new Map(); // text part id → span
  const browserCalls = [];
  const ensureMessage = () => (message ??= assistantMessage(messageId));
  const textPart = (id) => {
    if (!texts.has(id)) texts.set(id, addText(ensureMessage()));
    return texts.get(id);
  };
  const onChunk = (c) => {
    switch (c.type) {
      case 'start':
        // A resume names the message of the turn it continues.
        messageId = c.messageId ?? '';
        break;
      case 'text-start':
        textPart(c.id);
        break;
      case 'text-delta':
        textPart(c.id).append(c.delta);
        messages.scrollTop = messages.scrollHeight;
        break;
      case 'tool-input-available': {
        const call = toolCard(ensureMessage(), c);
        if (isBrowserTool(c.toolName)) browserCalls.push(call);
        break;
      }
      case 'tool-approval-request': {
        const call = calls.get(c.toolCallId) ?? toolCard(ensureMessage(), { toolCallId: c.toolCallId, toolName: 'tool', input: {} });
        askApproval(call, c.approvalId);
        break;
      }
      case 'tool-output-available': {
        const call = calls.get(c.toolCallId);
        if (call) setStatus(call, call.approvalId ? call.el.dataset.status : 'done', call.approvalId ? 'approved · done' : 'done', compact(c.output));
        break;
      }
      case 'tool-output-error': {
        const call = calls.get(c.toolCallId);
        if (call?.el.dataset.status === 'rejected') setStatus(call, 'rejected', 'rejected', c.errorText);
        else if (call) setStatus(call, 'error', 'failed', c.errorText);
        else systemLine('error', c.errorText);
        break;
      }
      case 'data-agent':
        if (c.data?.switched) systemLine('agent', switchedText(c.data.from, c.data.to));
        showAgents(null, c.data?.to);
        break;
      case 'error':
        systemLine('error', c.errorText || 'The agent failed.');
        break;
      default:
        // start-step, finish-step, finish, other data-*: nothing to show.
    }
  };
  try {
    await readUIMessageStream(res.body, onChunk);
  } catch (err) {
    systemLine('error', `The connection broke while the agent answered: ${err.message}. Reload to see where things stand.`);
  }
  for (const call of calls.values()) {
    if (call.el.dataset.status === 'running' && !isBrowserTool(call.name) && !call.approvalId && message?.contains(call.el)) {
      setStatus(call, 'waiting', 'waiting for an answer from elsewhere');
    }
  }
  // The answers go out after the stream has ended, once the turn has
  // released the session. Not awaited: a tool may wait for a person.
  runBrowserCalls(browserCalls.filter((call) => !call.approvalId));
}

// --- sending and restoring --------------------------------------------------------

async function send(text) {
  addMessage('user', text);
  await tracked('requests', async () => {
    const body = { sessionId: ids.session, clientId: ids.client, text };
    if (agentSelect.value && agentSelect.value !== currentAgent) body.agent = agentSelect.value;
    const res = await post('/Turn', body);
    if (!res) return;
    if (isStream(res)) await consumeStream(res);
    else if (!res.ok) showError(res, await readJSON(res));
  });
}

/** Shows the session's recent history and takes up this tab's open calls. */
async function restore() {
  messages.replaceChildren();
  calls.clear();
  currentAgent = '';
  const q = new URLSearchParams({ sessionId: ids.session, clientId: ids.client, history: '50' });
  let res;
  try {
    res = await tracked('requests', async () => fetch(`/Pending?${q}`, { headers: await headers() }));
  } catch (err) {
    systemLine('error', `Network error: ${err.message}. Is \`go run ./local\` still running?`);
    return;
  }
  if (res.status === 404) {
    showAgents(null);
    showHint(); // a new session: it is created by the first message
    return;
  }
  const body = await readJSON(res);
  if (!res.ok) {
    showError(res, body);
    return;
  }
  showAgents(body.agents, body.agent);
  // The history reads as the streams showed it: user messages, each turn's
  // assistant message (text and tool calls), and agent switches.
  let last = null;
  for (const item of body.history ?? []) {
    if (item.role === 'user') {
      last = addMessage('user', item.text);
      continue;
    }
    if (item.role === 'switch') {
      systemLine('agent', switchedText(item.from, item.to));
      last = null;
      continue;
    }
    if (!last || last.dataset.role !== 'assistant' || (item.messageId ?? '') !== (last.dataset.messageId ?? '')) {
      last = assistantMessage(item.messageId);
    }
    if (item.text) addText(last).append(item.text);
    if (item.toolCallId) showHistoryCall(toolCard(last, item), item);
  }
  if (!body.history?.length && !body.calls?.length) showHint();

  const browserCalls = [];
  for (const c of body.calls ?? []) {
    if (!last || last.dataset.role !== 'assistant') last = addMessage('assistant');
    const call = toolCard(last, c);
    if (c.kind === 'approval') askApproval(call, c.approvalId);
    else if (c.kind === 'browser' && isBrowserTool(c.toolName)) browserCalls.push(call);
    else if (c.kind === 'browser') answer(call, { error: `this page cannot run ${c.toolName}` });
    else setStatus(call, 'waiting', 'waiting for another system');
  }
  messages.scrollTop = messages.scrollHeight;
  runBrowserCalls(browserCalls);
}

function showIds() {
  testId('user-id').textContent = ids.user;
  testId('session-id').textContent = ids.session;
  testId('client-id').textContent = ids.client;
}

function showModel() {
  const badge = testId('model');
  if (!config.model) {
    badge.textContent = 'Model: unknown';
    return;
  }
  // "offline (deterministic rules, …)" shows as "offline"; the rest is in the tooltip.
  badge.textContent = `Model: ${String(config.model).split(' (')[0]}`;
  badge.title = `Model: ${config.model}`;
  if (agentSelect.options.length === 0) showAgents(config.agents);
}

form.addEventListener('submit', (e) => {
  e.preventDefault();
  const text = input.value.trim();
  if (!text || activity.requests) return;
  input.value = '';
  send(text);
});

for (const chip of document.querySelectorAll('[data-testid="suggestion"]')) {
  chip.addEventListener('click', () => {
    input.value = chip.textContent;
    input.focus();
  });
}

testId('new-chat').addEventListener('click', () => {
  ids.session = newId('chat-');
  localStorage.setItem('baton.session', ids.session);
  showIds();
  messages.replaceChildren();
  calls.clear();
  currentAgent = '';
  showAgents(null);
  showHint();
  input.focus();
});

testId('bgm-stop').addEventListener('click', () => playTrack(0));

// Another tab started a new chat: follow it.
window.addEventListener('storage', (e) => {
  if (e.key === 'baton.session' && e.newValue && e.newValue !== ids.session) {
    ids.session = e.newValue;
    showIds();
    restore();
  }
});

showIds();
restoreTrack();
showModel();
await restore();
app.dataset.ready = 'true';
