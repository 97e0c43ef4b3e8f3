// The page's transport: the AI SDK's DefaultChatTransport pointed at
// Baton's Chat function, sending only the newest message, with one change
// for resumed streams (useChat's resume on mount, and the page's own after
// a broken connection). Such a stream replays the running turn's assistant
// message only: a turn that started after the page loaded the conversation
// would show its answer without the user message that asked it. So before
// useChat reads a resumed stream, the page loads the conversation as
// stored (the user message is stored before the turn's first chunk).

import { DefaultChatTransport } from 'ai';
import { apiCredentials } from './chatapi.js';

export class BatonTransport extends DefaultChatTransport {
  /**
   * options are DefaultChatTransport's, and onResumed, awaited before a
   * resumed stream is read; lastResume says how the latest resume went:
   * 'stream', 'none' (nothing to resume: 204) or 'failed'.
   */
  constructor({ onResumed, ...options }) {
    super(options);
    this.onResumed = onResumed;
    this.lastResume = 'none';
  }

  async reconnectToStream(options) {
    this.lastResume = 'failed';
    const stream = await super.reconnectToStream(options);
    if (stream) await this.onResumed().catch(() => {});
    this.lastResume = stream ? 'stream' : 'none';
    return stream;
  }
}

/** The transport of chatId's page, as identity, over fetch. */
export function chatTransport({ identity, device, agent, fetch, onResumed }) {
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
  });
}
