// After a broken connection (the stream of a turn cut off, the network
// gone), the page recovers by itself: it tries again with growing pauses
// (at once when the browser says it is back online), loads the
// conversation as stored, and resumes the turn if it still runs or waits
// for this tab (GET /Chat/{chatId}/stream). The line that says so goes
// once the turn is whole again.

import { useCallback, useEffect, useRef } from 'react';

const PAUSES = [1000, 2000, 4000, 8000, 15000]; // ms, the last one repeated

/** The pause, in ms, before try n+1 after n failed ones in a row. */
export const retryPause = (n) => PAUSES[Math.min(n, PAUSES.length - 1)];

/** Resolves after ms, or as soon as the browser comes back online. */
function pause(ms) {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      window.removeEventListener('online', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    window.addEventListener('online', done);
  });
}

/**
 * Returns broken(notice), which the page calls for every error that is a
 * broken connection: the first shows notice and starts recovering; later
 * ones, while it recovers, say the attempt failed. reload loads the
 * conversation (and throws while the network is down); resume is
 * useChat's resumeStream; transport.lastResume says whether it reached the
 * server.
 */
export function useReconnect({ transport, reload, resume, notices }) {
  const state = useRef({ active: false, failed: false, gone: false });
  useEffect(() => () => {
    state.current.gone = true;
  }, []);
  const { add, remove } = notices;
  return useCallback((notice) => {
    const s = state.current;
    s.failed = true;
    if (s.active) return;
    s.active = true;
    const key = add(notice);
    (async () => {
      for (let i = 0; !s.gone; i++) {
        await pause(retryPause(i));
        s.failed = false;
        try {
          await reload();
          await resume(); // its errors come back through broken
        } catch {
          s.failed = true;
        }
        if (!s.failed && transport.lastResume !== 'failed') break;
      }
      remove((n) => n.key !== key);
      s.active = false;
    })();
  }, [transport, reload, resume, add, remove]);
}
