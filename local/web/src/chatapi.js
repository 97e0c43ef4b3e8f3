/**
 * The credentials mode of every request to Baton's functions: include, so
 * that a page served from another origin than the functions still sends
 * Cloud Run's session-affinity cookie, which brings a chat's next request
 * to the instance that holds its session (docs/deployment.md). Safe here:
 * the functions authenticate by the Authorization header only and set no
 * cookie, and they allow credentials only to origins listed by name in
 * BATON_ALLOWED_ORIGINS. Same-origin requests send the cookie anyway.
 * Requests to anyone else (Firebase Auth) keep fetch's default.
 */
export const apiCredentials = 'include';

/**
 * An error answer of one of Baton's functions: status is the HTTP status,
 * body the JSON error ({error: {code, message, …}}) when there is one.
 */
export class ApiError extends Error {
  constructor(status, body, fallback) {
    super(body?.error?.message ?? fallback);
    this.name = 'ApiError';
    this.status = status;
    this.body = body;
  }
}

/** The event window gets when the page's sign-in no longer holds. */
export const SIGNED_OUT = 'baton:signed-out';
let signedOut = false;

/** Whether a request stayed 401 after a fresh ID token: retrying is useless. */
export const isSignedOut = () => signedOut;

/** Tells the page its sign-in no longer holds (SIGNED_OUT), once. */
export function sayUnauthorized() {
  if (signedOut) return;
  signedOut = true;
  window.dispatchEvent(new Event(SIGNED_OUT));
}

/**
 * A fetch for Baton's functions, as identity: every request carries the
 * user's current ID token. A 401 gets one forced refresh of the token and
 * one retry; when the refresh fails or the retry is 401 too, the page is
 * told (SIGNED_OUT) instead of trying again by itself.
 */
export function authedFetch(identity) {
  return async (input, init = {}) => {
    const send = async () => {
      const headers = new Headers(init.headers);
      for (const [k, v] of Object.entries(await identity.headers())) headers.set(k, v);
      return fetch(input, { credentials: apiCredentials, ...init, headers });
    };
    const res = await send();
    if (res.status !== 401) return res;
    try {
      await identity.refresh();
    } catch {
      sayUnauthorized();
      return res;
    }
    const again = await send();
    if (again.status === 401) sayUnauthorized();
    return again;
  };
}

/**
 * GET /Chat/{chatId}: a page of the conversation as UI messages, with
 * earlier: true when messages precede it (before: the id of the message
 * the page ends before; none: the latest). A chat the server does not have
 * yet has none.
 */
export async function loadChat(chatId, identity, { before } = {}) {
  const q = before ? `?${new URLSearchParams({ before })}` : '';
  const res = await authedFetch(identity)(`/Chat/${encodeURIComponent(chatId)}${q}`);
  if (res.status === 404 && !before) return { messages: [], agent: '', agents: [], earlier: false };
  const body = await res.json().catch(() => null);
  if (!res.ok) throw new Error(body?.error?.message ?? `GET /Chat: ${res.status}`);
  return body;
}

/**
 * The latest page of the conversation, fresh, after the earlier messages
 * the page has already loaded (those before the page's first message).
 */
export function withEarlier(shown, fresh) {
  const first = fresh.messages[0]?.id;
  const at = first ? shown.findIndex((m) => m.id === first) : -1;
  return at > 0 ? [...shown.slice(0, at), ...fresh.messages] : fresh.messages;
}

/**
 * The messages shown, each one that shows an open call (hasOpenCall)
 * replaced by its version in fresh, a load of the conversation: what the
 * server did with those calls meanwhile (answered, expired, cancelled by a
 * new message). Nothing is added or removed, so a turn streaming into the
 * page meanwhile is left alone.
 */
export function withCallsOf(shown, fresh, hasOpenCall) {
  const stored = new Map(fresh.messages.map((m) => [m.id, m]));
  return shown.map((m) => (hasOpenCall(m) && stored.has(m.id) ? stored.get(m.id) : m));
}

/** DELETE /Chat/{chatId}/stream: stops the chat's running turn (204 when none runs). */
export async function stopChat(chatId, identity) {
  const res = await authedFetch(identity)(`/Chat/${encodeURIComponent(chatId)}/stream`, { method: 'DELETE' });
  if (!res.ok) {
    const body = await res.json().catch(() => null);
    throw new ApiError(res.status, body, `DELETE /Chat/{chatId}/stream: ${res.status}`);
  }
}

/**
 * POST /ToolResult: an answer given outside useChat's requests (a question
 * asked on a live call, an answer of live mode once its socket is gone).
 * When the answer resumes the agent, its stream is read to the end: the
 * page's live-tab wait shows the turn.
 */
export async function postToolResult(identity, body) {
  const res = await authedFetch(identity)('/ToolResult', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (!res.ok) {
    const problem = await res.json().catch(() => null);
    throw new ApiError(res.status, problem, `POST /ToolResult: ${res.status}`);
  }
  await res.text();
}

// A chat this browser profile named but has not sent a message to yet:
// the page does not ask the server for it (it would answer 404).
const NEW_CHAT = 'baton.new-chat';

export function markNewChat(chatId) {
  localStorage.setItem(NEW_CHAT, chatId);
}

export function isNewChat(chatId) {
  return localStorage.getItem(NEW_CHAT) === chatId;
}

/** The chat has a message (sent here, or seen streaming): the server has it. */
export function chatStarted(chatId) {
  if (isNewChat(chatId)) localStorage.removeItem(NEW_CHAT);
}
