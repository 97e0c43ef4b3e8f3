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

/** GET /Chat/{chatId}: the conversation as UI messages; a new chat has none. */
export async function loadChat(chatId, identity) {
  const res = await fetch(`/Chat/${encodeURIComponent(chatId)}`, { headers: await identity.headers(), credentials: apiCredentials });
  if (res.status === 404) return { messages: [], agent: '', agents: [] };
  const body = await res.json().catch(() => null);
  if (!res.ok) throw new Error(body?.error?.message ?? `GET /Chat: ${res.status}`);
  return body;
}

/** DELETE /Chat/{chatId}/stream: stops the chat's running turn (204 when none runs). */
export async function stopChat(chatId, identity) {
  const res = await fetch(`/Chat/${encodeURIComponent(chatId)}/stream`, { method: 'DELETE', headers: await identity.headers(), credentials: apiCredentials });
  if (!res.ok) {
    const body = await res.json().catch(() => null);
    throw new Error(body?.error?.message ?? `DELETE /Chat/{chatId}/stream: ${res.status}`);
  }
}
