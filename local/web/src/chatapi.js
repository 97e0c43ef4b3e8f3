/** GET /Chat/{chatId}: the conversation as UI messages; a new chat has none. */
export async function loadChat(chatId, identity) {
  const res = await fetch(`/Chat/${encodeURIComponent(chatId)}`, { headers: await identity.headers() });
  if (res.status === 404) return { messages: [], agent: '', agents: [] };
  const body = await res.json().catch(() => null);
  if (!res.ok) throw new Error(body?.error?.message ?? `GET /Chat: ${res.status}`);
  return body;
}
