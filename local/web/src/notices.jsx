// Lines the page shows between messages that are not part of any message:
// a busy session (retried by itself, then by the Retry button), a rate
// limit (counted down, then the refused request is sent again), a broken
// connection (until the page has recovered the turn) and errors.

import { useCallback, useMemo, useRef, useState } from 'react';

const AUTO_RETRIES = 3; // automatic retries of a busy session before asking
const MAX_RETRY_DELAY = 2; // seconds; the session is usually free long before its lease expires

let nextKey = 0;

/** What an error of the Chat function means for the person, as a notice. */
export function errorNotice(err) {
  const e = apiErrorOf(err);
  switch (e?.code) {
    case 'expired':
      return { kind: 'expired', text: 'This call was closed before your answer arrived (it expired or was cancelled): the agent no longer waits for it, and your answer was not used.' };
    case 'already_resolved':
      return { kind: 'info', text: 'This call was already answered.' };
    case 'wrong_client':
      return { kind: 'error', text: 'Another tab started this request; only that tab can answer it.' };
    case 'pending_calls': {
      const names = (e.calls ?? []).map((c) => c.toolName).join(', ') || 'a tool call';
      return { kind: 'pending_calls', text: `The agent is still waiting for ${names}. Answer it first (reload the tab that asked).` };
    }
    case 'live':
      return { kind: 'error', text: 'A live conversation holds this chat (in another tab?): type there, or end it first.' };
    case 'unavailable':
      return { kind: 'error', text: 'The service is unavailable; try again shortly.' };
    case 'rate_limited':
      return { kind: 'limited', text: `Too many messages: try again in ${waitText(e.retryAfterSeconds)}.` };
    case 'budget_exhausted':
      return { kind: 'limited', text: `Today's usage limit is reached: try again in ${waitText(e.retryAfterSeconds)}.` };
    case 'unauthenticated':
      return { kind: 'error', unauthenticated: true, text: 'The server did not accept this page\'s sign-in.' };
    case undefined:
      return brokenConnection(err)
        ? { kind: 'error', broken: true, text: 'The connection broke while the agent answered. Reconnecting…' }
        : { kind: 'error', text: `The agent's answer failed: ${err?.message ?? err}` };
    default:
      return { kind: 'error', text: `Error (${e.code}): ${e.message}` };
  }
}

/**
 * The JSON error of one of Baton's functions that err carries ({code,
 * message, …}), or null: an ApiError's body, or the body the AI SDK's
 * transport puts in its error's message.
 */
export function apiErrorOf(err) {
  if (err?.body?.error) return err.body.error;
  try {
    return JSON.parse(err?.message ?? '')?.error ?? null;
  } catch {
    return null; // not one of Baton's JSON errors: a broken connection, say
  }
}

/** Whether err is fetch's for a lost connection, as the AI SDK tells them. */
function brokenConnection(err) {
  const message = String(err?.message ?? '').toLowerCase();
  return err?.name === 'TypeError' && (message.includes('fetch') || message.includes('network') || message === 'load failed');
}

/** A wait in seconds as a person reads it: "40 s", "3 min", "5 h 20 min". */
function waitText(seconds) {
  const s = Math.max(Math.ceil(Number(seconds) || 1), 1);
  if (s < 60) return `${s} s`;
  const m = Math.ceil(s / 60);
  return m < 60 ? `${m} min` : `${Math.floor(m / 60)} h${m % 60 ? ` ${m % 60} min` : ''}`;
}

/**
 * The page's notices. Each is shown where the conversation was when it
 * came (before the message that followed). retryingFetch is the
 * transport's fetch over base: a 409 busy is shown and retried, a few
 * times by itself and then when Retry is pressed; a 429 is counted down
 * and sent again when the wait is over (or Retry is pressed), and its line
 * goes once the request went through.
 */
export function useNotices(base) {
  const [list, setList] = useState([]);
  const count = useRef(0); // messages shown, kept current by the page

  const add = useCallback((notice) => {
    const key = ++nextKey;
    setList((l) => [...l, { key, at: count.current, ...notice }]);
    return key;
  }, []);
  const update = useCallback((key, change) => {
    setList((l) => l.map((n) => (n.key === key ? { ...n, ...change } : n)));
  }, []);
  const remove = useCallback((keep) => {
    setList((l) => l.filter((n) => keep(n)));
  }, []);

  const retryingFetch = useCallback(async (input, init) => {
    let busy = null;
    let limited = null;
    const signal = init?.signal;
    try {
      for (let attempt = 1; ; attempt++) {
        const res = await base(input, init);
        const problem = res.status === 409 || res.status === 429 ? await res.clone().json().catch(() => null) : null;
        const code = problem?.error?.code;
        const seconds = problem?.error?.retryAfterSeconds || Number(res.headers.get('Retry-After')) || 1;
        if (code === 'busy') {
          busy ??= add({ kind: 'busy', text: '' });
          await busyWait(busy, seconds, attempt, update, signal);
        } else if (code === 'rate_limited' || code === 'budget_exhausted') {
          limited ??= add({ kind: 'limited', text: '' });
          await limitWait(limited, seconds, code, update, signal);
        } else {
          if (busy) update(busy, { state: 'resolved', text: 'The session was busy with another tab — retried.', retry: null });
          if (limited) remove((n) => n.key !== limited);
          return res;
        }
      }
    } catch (err) {
      // Stopped (Stop aborts the request) or failed while it waited: the
      // lines about a wait that will not end in a request go.
      if (busy || limited) remove((n) => n.key !== busy && n.key !== limited);
      throw err;
    }
  }, [base, add, update, remove]);

  const render = (at, rest = false) => list
    .filter((n) => (rest ? n.at >= at : n.at === at))
    .map((n) => (
      <div key={n.key} className="system" data-testid="system-message" data-kind={n.kind} data-state={n.state}
        role={n.kind === 'info' || n.kind === 'agent' ? 'status' : 'alert'}>
        <span className="text">{n.text}</span>
        {n.retry && <button type="button" data-testid="retry" onClick={n.retry}>{n.retryLabel ?? 'Retry'}</button>}
      </div>
    ));

  return useMemo(() => ({ list, count, add, update, remove, retryingFetch, render }), [list, add, update, remove, retryingFetch]); // eslint-disable-line react-hooks/exhaustive-deps
}

// Shows the rate limit's line counting down and resolves when the wait is
// over or Retry is pressed; rejects when the request is aborted (Stop).
function limitWait(key, seconds, code, update, signal) {
  return new Promise((resolve, reject) => {
    let left = Math.max(Math.ceil(seconds), 1);
    let timer = null;
    const end = () => {
      clearInterval(timer);
      signal?.removeEventListener('abort', abort);
    };
    const go = () => {
      end();
      update(key, { text: 'Sending your message again…', retry: null });
      resolve();
    };
    const abort = () => {
      end();
      reject(signal.reason ?? new DOMException('The request was aborted', 'AbortError'));
    };
    const why = code === 'budget_exhausted' ? "Today's usage limit is reached" : 'Too many messages';
    const show = () => update(key, { text: `${why}: your message goes again in ${waitText(left)}.`, retry: go, retryLabel: 'Send now' });
    if (signal?.aborted) {
      abort();
      return;
    }
    signal?.addEventListener('abort', abort, { once: true });
    show();
    timer = setInterval(() => (--left <= 0 ? go() : show()), 1000);
  });
}

// Shows the busy line and resolves when it is time to retry: after a short
// delay for the first attempts, and always when Retry is pressed; rejects
// when the request is aborted (Stop).
function busyWait(key, seconds, attempt, update, signal) {
  return new Promise((resolve, reject) => {
    let timer = null;
    const end = () => {
      clearInterval(timer);
      signal?.removeEventListener('abort', abort);
    };
    const go = () => {
      end();
      update(key, { text: 'The session is busy with another tab — retrying…', retry: null });
      resolve();
    };
    const abort = () => {
      end();
      reject(signal.reason ?? new DOMException('The request was aborted', 'AbortError'));
    };
    if (signal?.aborted) {
      abort();
      return;
    }
    signal?.addEventListener('abort', abort, { once: true });
    if (attempt > AUTO_RETRIES) {
      update(key, { text: 'The session is still busy with another tab. Retry when it is done.', retry: go });
      return;
    }
    let left = Math.min(Math.max(Math.ceil(seconds), 1), MAX_RETRY_DELAY);
    const show = () => update(key, { text: `The session is busy with another tab — retrying in ${left} s…`, retry: go });
    show();
    timer = setInterval(() => (--left <= 0 ? go() : show()), 1000);
  });
}
