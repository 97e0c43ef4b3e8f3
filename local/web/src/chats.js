// A person's chats and data through Baton's API (docs/http-api.md,
// "Chats" and "Account"): the list with what waits for them, rename,
// delete, ratings, the export and the deletion of everything.

import { authedFetch } from './chatapi.js';

/** Throws the error a JSON error response says, or what the status says. */
async function check(res, what) {
  if (res.ok) return res;
  const body = await res.json().catch(() => null);
  throw new Error(body?.error?.message ?? `${what}: ${res.status}`);
}

/**
 * GET /Chat: the user's chats, most recent first, with what waits for this
 * device (the X-Baton-Device header); all of them, a page at a time.
 */
export async function listChats(identity, device) {
  const chats = [];
  let before = '';
  for (let page = 0; page < 10; page++) {
    const q = new URLSearchParams({ limit: '50', ...(before ? { before } : {}) });
    const res = await check(await authedFetch(identity)(`/Chat?${q}`, { headers: { 'X-Baton-Device': device } }), 'GET /Chat');
    const body = await res.json();
    chats.push(...body.chats);
    if (!body.next) break;
    before = body.next;
  }
  return chats;
}

/** PATCH /Chat/{chatId}: the chat's new title. */
export async function renameChat(identity, chatId, title) {
  await check(await authedFetch(identity)(`/Chat/${encodeURIComponent(chatId)}`, {
    method: 'PATCH', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ title }),
  }), 'PATCH /Chat');
}

/** DELETE /Chat/{chatId}: the chat and everything in it. */
export async function deleteChat(identity, chatId) {
  await check(await authedFetch(identity)(`/Chat/${encodeURIComponent(chatId)}`, { method: 'DELETE' }), 'DELETE /Chat');
}

/** PUT or DELETE /Chat/{chatId}/feedback/{messageId}: a rating, or none. */
export async function rate(identity, chatId, messageId, rating) {
  const url = `/Chat/${encodeURIComponent(chatId)}/feedback/${encodeURIComponent(messageId)}`;
  const init = rating
    ? { method: 'PUT', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ rating }) }
    : { method: 'DELETE' };
  await check(await authedFetch(identity)(url, init), 'feedback');
}

/** GET /Account/export: everything Baton keeps for the user, saved as a ZIP. */
export async function downloadData(identity) {
  const res = await check(await authedFetch(identity)('/Account/export'), 'GET /Account/export');
  const name = /filename="([^"]+)"/.exec(res.headers.get('Content-Disposition') ?? '')?.[1] ?? 'baton-export.zip';
  const url = URL.createObjectURL(await res.blob());
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
  return name;
}

/** DELETE /Account: all of the user's data; 'done', or 'under way' (202). */
export async function deleteData(identity) {
  const res = await check(await authedFetch(identity)('/Account', { method: 'DELETE' }), 'DELETE /Account');
  return res.status === 202 ? 'under way' : 'done';
}

/** What waits for the person in a chat, in words ('' for nothing). */
export function waitingText(c) {
  const w = c.waiting ?? {};
  const parts = [
    [w.approvals, 'approval'], [w.questions, 'question'], [w.forms, 'form'], [w.browser, 'browser call'],
  ].filter(([n]) => n > 0).map(([n, what]) => `${n} ${what}${n > 1 ? 's' : ''}`);
  if (w.elsewhere > 0) parts.push(`${w.elsewhere} on another tab`);
  return parts.join(', ');
}

/** How many calls wait for this device, in a chat or in all of them. */
export function waitingHere(chats) {
  return chats.reduce((n, c) => {
    const w = c.waiting ?? {};
    return n + (w.approvals ?? 0) + (w.questions ?? 0) + (w.forms ?? 0) + (w.browser ?? 0);
  }, 0);
}
