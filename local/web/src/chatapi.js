/** GET /Chat/{chatId}: the conversation as UI messages; a new chat has none. */
export async function loadChat(chatId, identity) {
  const res = await fetch(`/Chat/${encodeURIComponent(chatId)}`, { headers: await identity.headers() });
  if (res.status === 404) return { messages: [], agent: '', agents: [] };
  const body = await res.json().catch(() => null);
  if (!res.ok) throw new Error(body?.error?.message ?? `GET /Chat: ${res.status}`);
  return body;
}

/** DELETE /Chat/{chatId}/stream: stops the chat's running turn (204 when none runs). */
export async function stopChat(chatId, identity) {
  const res = await fetch(`/Chat/${encodeURIComponent(chatId)}/stream`, { method: 'DELETE', headers: await identity.headers() });
  if (!res.ok) {
    const body = await res.json().catch(() => null);
    throw new Error(body?.error?.message ?? `DELETE /Chat/{chatId}/stream: ${res.status}`);
  }
}
