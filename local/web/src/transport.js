// The page's transport: the AI SDK's DefaultChatTransport pointed at
// Baton's Chat function, sending only the newest message, with two changes.
//
// Resumed streams (useChat's resume on mount, and the page's own after a
// broken connection) replay the running turn's assistant message only: a
// turn that started after the page loaded the conversation would show its
// answer without the user message that asked it. So before useChat reads
// a resumed stream, the page loads the conversation as stored (the user
// message is stored before the turn's first chunk).
//
// A new message (or a regenerate, or an edit) closes the calls still open
// in the chat: the server answers each with an error that says why
// ("cancelled: the user sent a new message…"), stored before the new
// turn's stream begins. That stream carries the new assistant message
// only, and an AI SDK stream cannot end a call of another message, so when
// the page shows open calls, it refreshes them from the conversation as
// stored once the stream begins (onClosed), and their cards say they were
// cancelled.
//
// A resumed stream may follow a live conversation of another tab rather
// than a turn (the server says so: X-Baton-Live): the page cannot send
// meanwhile, and says why (onFollowing).

import { DefaultChatTransport } from 'ai';
import { apiCredentials } from './chatapi.js';

export class BatonTransport extends DefaultChatTransport {
  /**
   * options are DefaultChatTransport's, and: onResumed, awaited before a
   * resumed stream is read; onClosed, awaited before the stream of a
   * request that closed open calls is read; onFollowing(live), told for
   * each resumed stream whether it follows a live conversation, and false
   * when the page sends. lastResume says how the latest resume went:
   * 'stream', 'none' (nothing to resume: 204) or 'failed'.
   */
  constructor({ onResumed, onClosed, onFollowing, fetch, ...options }) {
    super({
      ...options,
      fetch: async (input, init) => {
        const res = await fetch(input, init);
        const resume = (init?.method ?? 'GET') === 'GET' && /\/stream$/.test(String(input));
        if (resume && res.ok) onFollowing?.(res.headers.get('X-Baton-Live') === 'true');
        return res;
      },
    });
    this.onResumed = onResumed;
    this.onClosed = onClosed;
    this.onFollowing = onFollowing;
    this.lastResume = 'none';
  }

  async reconnectToStream(options) {
    this.lastResume = 'failed';
    const stream = await super.reconnectToStream(options);
    if (stream) await this.onResumed().catch(() => {});
    this.lastResume = stream ? 'stream' : 'none';
    return stream;
  }

  /**
   * Sends as DefaultChatTransport does. An error says what the request
   * carried (err.sent: sentOf), for the page to tell a refused message
   * from refused answers.
   */
  async sendMessages(options) {
    this.onFollowing?.(false);
    const sent = sentOf(options);
    let stream;
    try {
      stream = await super.sendMessages(options);
    } catch (err) {
      if (err && typeof err === 'object') err.sent = sent;
      throw err;
    }
    if (sent.kind !== 'answers' && options.messages.slice(0, -1).some(hasOpenCall)) {
      await this.onClosed?.().catch(() => {});
    }
    return stream;
  }
}

/**
 * What a request of useChat carries, with the id of its last message: a
 * new user message ('message'), an edit of one ('edit'), a regenerate
 * ('regenerate'), or the answers of the assistant message it ends with
 * ('answers'). All but answers close the chat's open calls.
 */
export function sentOf({ trigger, messageId, messages }) {
  const last = messages.at(-1);
  if (trigger === 'regenerate-message') return { kind: 'regenerate', messageId: last?.id };
  if (last?.role === 'assistant') return { kind: 'answers', messageId: last.id };
  return { kind: messageId ? 'edit' : 'message', messageId: last?.id };
}

/** Whether a message shows a call still waiting for a browser, a person or a decision. */
export function hasOpenCall(message) {
  return message.role === 'assistant' && message.parts.some((p) => p.toolCallId &&
    (p.state === 'approval-requested' || p.state === 'input-streaming' || p.state === 'input-available'));
}

/** The transport of chatId's page, as identity, over fetch (see BatonTransport). */
export function chatTransport({ identity, device, agent, fetch, onResumed, onClosed, onFollowing }) {
  return new BatonTransport({
    api: '/Chat',
    headers: () => identity.headers(),
    credentials: apiCredentials, // also the resume GET (reconnectToStream)
    body: () => {
      const a = agent.current;
      return { deviceId: device, ...(a.picked && a.picked !== a.current ? { agent: a.picked } : {}) };
    },
    // Baton keeps the transcript and reads only the newest message (the
    // user's, or the assistant's with this tab's answers): send just that,
    // so a POST stays small however long the chat grows
    // (docs/files-and-long-chats.md).
    prepareSendMessagesRequest: ({ id, messages, body, trigger, messageId }) => ({
      body: { ...body, id, trigger, messageId, messages: messages.slice(-1) },
    }),
    fetch,
    onResumed,
    onClosed,
    onFollowing,
  });
}
