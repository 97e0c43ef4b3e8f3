// The console's API (docs/operator.md): GET and POST under /admin/api/.

/** An error the API answered: its status, code and message. */
export class APIError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

export function api(session) {
  async function call(method, path, body) {
    const headers = { ...(await session.headers()), Accept: 'application/json' };
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    const resp = await fetch(`/admin/api/${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    if (resp.status === 204) return null;
    const data = await resp.json().catch(() => ({}));
    if (!resp.ok) throw new APIError(resp.status, data.error?.code ?? 'error', data.error?.message ?? resp.statusText);
    return data;
  }
  const seg = encodeURIComponent;
  return {
    me: () => call('GET', 'me'),
    overview: () => call('GET', 'overview'),
    chats: (q) => call('GET', `chats?${new URLSearchParams(Object.entries(q).filter(([, v]) => v))}`),
    timeline: (user, chat) => call('GET', `chats/${seg(user)}/${seg(chat)}`),
    stop: (user, chat) => call('POST', `chats/${seg(user)}/${seg(chat)}/stop`),
    release: (user, chat) => call('POST', `chats/${seg(user)}/${seg(chat)}/release`),
    answer: (user, chat, call_, answer) => call('POST', `chats/${seg(user)}/${seg(chat)}/calls/${seg(call_)}/answer`, answer),
    expire: (user, chat, call_, reason) => call('POST', `chats/${seg(user)}/${seg(chat)}/calls/${seg(call_)}/expire`, { reason }),
    sweep: () => call('POST', 'sweep'),
    user: (user, cursor) => call('GET', `users/${seg(user)}${cursor ? `?cursor=${seg(cursor)}` : ''}`),
    block: (user, reason) => call('POST', `users/${seg(user)}/block`, { reason }),
    unblock: (user) => call('POST', `users/${seg(user)}/unblock`, { reason: '' }),
    deleteUser: (user) => call('DELETE', `users/${seg(user)}`),
    actions: (cursor) => call('GET', `actions${cursor ? `?cursor=${seg(cursor)}` : ''}`),
  };
}
