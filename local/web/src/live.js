// Live tabs: while this tab is idle it waits on the resume endpoint
// (GET /Chat/{chatId}/stream with X-Baton-Wait), which answers as soon as
// a turn starts anywhere, on any instance, with that turn's stream read
// from Firestore, or at once with a finished turn this tab has not shown
// (X-Baton-Seen). When a stream begins, the page first loads the
// conversation: the user message that started the turn is stored before
// the turn's first chunk (the commit that takes the lease holds it), and a
// turn's stream carries only the assistant message. The stream is then read
// with the AI SDK's own parser and message reader over it; when it ends,
// the conversation is loaded again (the turn as stored). A tab never runs
// tools from these streams: they are other tabs' turns. A failed wait is
// tried again after growing pauses; once the page's sign-in no longer
// holds, the tab stops waiting (the page says so).

import { useEffect, useRef } from 'react';
import { readUIMessageStream } from 'ai';
import { authedFetch, chatStarted, isSignedOut, loadChat } from './chatapi.js';
import { retryPause } from './reconnect.js';

const WAIT_SECONDS = 25;
const sleep = (ms, signal) => new Promise((resolve) => {
  const t = setTimeout(resolve, ms);
  signal.addEventListener('abort', () => {
    clearTimeout(t);
    resolve();
  }, { once: true });
});

/**
 * Follows turns made elsewhere while idle is true: each streamed message
 * goes into the page with setMessages, each load of the conversation to
 * onLoaded. Returns a function that stops the current wait at once (before
 * this tab sends or answers).
 */
export function useLiveTurns({ chatId, identity, transport, messages, setMessages, onLoaded, idle }) {
  // The last assistant message this tab shows: a turn it missed between
  // two waits is replayed at once.
  const seen = useRef('none');
  seen.current = messages.findLast((m) => m.role === 'assistant')?.id ?? 'none';
  const stop = useRef(() => {});
  useEffect(() => {
    if (!idle) return undefined;
    const ctrl = new AbortController();
    stop.current = () => ctrl.abort();
    const { signal } = ctrl;
    // The id this tab tells the next wait it has seen, when not the last
    // one it shows (see below).
    let followed = null;
    const showConversation = async () => {
      const fresh = await loadChat(chatId, identity);
      if (!signal.aborted) onLoaded(fresh);
      return fresh.messages;
    };
    const wait = authedFetch(identity);
    (async () => {
      // Give an automatic request (a tool's answer) the chance to start.
      await sleep(300, signal);
      let failed = 0; // waits failed in a row
      while (!signal.aborted && !isSignedOut()) {
        let res = null;
        try {
          res = await wait(`/Chat/${encodeURIComponent(chatId)}/stream`, {
            headers: { 'X-Baton-Wait': String(WAIT_SECONDS), 'X-Baton-Seen': followed ?? seen.current },
            signal,
          });
        } catch {
          // the network is down, or the wait was stopped
        }
        if (!res?.ok) {
          await sleep(retryPause(failed++), signal);
          continue;
        }
        failed = 0;
        if (res.status === 204) continue;
        chatStarted(chatId);
        try {
          // The body waits, buffered, while the conversation loads. A
          // failed load still shows the stream; the load at its end retries.
          await showConversation().catch(() => {});
          if (signal.aborted) return;
          followed = null;
          const stream = transport.processResponseStream(res.body);
          let streamed = null;
          for await (const message of readUIMessageStream({ stream })) {
            if (signal.aborted) return;
            streamed = message.id;
            setMessages((ms) => upsert(ms, message));
          }
          // A load can catch a newer turn than the one streamed, in its
          // middle (an agent switch wakes the wait on the old session):
          // the next wait names the streamed one as seen, so that the
          // newer turn is streamed to this tab whole, calls included.
          const shown = (await showConversation()).findLast((m) => m.role === 'assistant')?.id;
          if (streamed && shown && shown !== streamed) followed = streamed;
        } catch {
          await sleep(1000, signal);
        }
      }
    })();
    return () => ctrl.abort();
  }, [chatId, identity, transport, setMessages, onLoaded, idle]);
  return () => stop.current();
}

function upsert(messages, message) {
  const i = messages.findIndex((m) => m.id === message.id);
  if (i < 0) return [...messages, message];
  const next = [...messages];
  next[i] = message;
  return next;
}
