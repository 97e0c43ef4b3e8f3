// Live mode on the demo page (docs/live.md, "The demo page"): the Live button opens a
// voice conversation on the chat over one socket (livesocket.js), with the
// microphone and the model's voice (voice.js), the words of both sides
// merged into the page's messages as they come (livemessages.js), and the
// calls the model makes handed to the page, which runs them or asks the
// person, as in text mode, and answers over the socket.

import { useCallback, useEffect, useRef, useState } from 'react';
import { LiveSocket } from './livesocket.js';
import { withToolResult, withTranscript } from './livemessages.js';
import { audioStats, Voice } from './voice.js';

const ON = new Set(['connecting', 'live', 'reconnecting']);
const GAP_SHOWN = 3000; // ms the model's reconnection is shown when nothing says it is over

/**
 * The page's live mode on chatId. agent() is the agent to open it with
 * ('' for the chat's); the on* callbacks are the page's: onReady(frame,
 * again), onCall(toolCallFrame), onResult(toolResultFrame), onNotice(notice)
 * and onEnded(why, keptAnswers), called once the conversation is over for
 * good. Returns its state and what the page may do with it.
 */
export function useLiveMode({ chatId, device, identity, agent, setMessages, onReady, onCall, onResult, onNotice, onEnded }) {
  const [status, setStatus] = useState({ state: 'off', why: '' });
  const [gap, setGap] = useState(false); // the model's connection is being replaced
  const [speaking, setSpeaking] = useState(false); // the model's turn: from its voice to its end
  const current = useRef(null); // {socket, voice} while on
  const handlers = useRef(null);
  handlers.current = { setMessages, onReady, onCall, onResult, onNotice, onEnded };

  useEffect(() => () => {
    current.current?.socket.end();
    current.current?.voice.close();
  }, []);

  const start = useCallback(() => {
    if (current.current) return;
    const voice = new Voice(); // in the click: browsers start audio after a gesture only
    let gapTimer = null;
    const h = () => handlers.current;
    const socket = new LiveSocket({
      chatId, device, identity, agent: agent(),
      on: {
        state: (s) => setStatus(s),
        ready: (frame, again) => h().onReady(frame, again),
        transcript: (frame) => {
          setGap(false);
          h().setMessages((ms) => withTranscript(ms, frame));
        },
        toolCall: (frame) => h().onCall(frame),
        toolResult: (frame) => {
          h().setMessages((ms) => withToolResult(ms, frame));
          h().onResult(frame);
        },
        signal: (type) => {
          if (type === 'interrupted') voice.interrupt();
          if (type === 'interrupted' || type === 'turn-complete') setSpeaking(false);
          if (type !== 'reconnecting') return;
          setGap(true);
          clearTimeout(gapTimer);
          gapTimer = setTimeout(() => setGap(false), GAP_SHOWN);
        },
        error: (frame) => h().onNotice({ kind: 'error', text: `Live: ${frame.message} (${frame.code})` }),
        audio: (pcm) => {
          setGap(false);
          setSpeaking(true);
          voice.play(pcm);
        },
        ended: (why, kept) => {
          clearTimeout(gapTimer);
          voice.close();
          current.current = null;
          setGap(false);
          setSpeaking(false);
          h().onEnded(why, kept);
        },
      },
    });
    current.current = { socket, voice };
    socket.start();
    voice.listen((pcm) => socket.sendAudio(pcm) && audioStats.sentFrames++).catch((err) => {
      if (current.current?.voice !== voice) return; // the segment is over
      h().onNotice({ kind: 'info', text: `No microphone (${err.message}): live mode goes on with what you type, and the agent's voice.` });
    });
  }, [chatId, device, identity, agent]);

  const socket = () => current.current?.socket;
  return {
    state: status.state,
    why: status.why,
    on: ON.has(status.state),
    gap,
    speaking,
    start,
    end: () => socket()?.end(),
    /** Sends typed text; false when the conversation is not live right now. */
    sendText: (text) => !!socket()?.sendText(text),
    /** Answers a call over the socket; false when no conversation is on. */
    answer: (callId, answer) => {
      const s = socket();
      if (!s) return false;
      s.answer(callId, answer);
      return true;
    },
  };
}

const LABELS = { off: 'Live', ended: 'Live', connecting: 'Connecting… · End', live: 'End live', reconnecting: 'Reconnecting… · End' };

/** The Live button: starts live mode, shows its state, and ends it. */
export function LiveButton({ live, model, disabled }) {
  return (
    <button type="button" className="live-button" data-testid="live" data-state={live.state} aria-pressed={live.on} disabled={disabled}
      title={live.on ? 'End the live conversation' : `Talk with the agent (${model}): uses your microphone`}
      onClick={live.on ? live.end : live.start}>
      <span className="dot" aria-hidden="true" />{LABELS[live.state]}
    </button>
  );
}

/** A line over the message box saying what live mode is doing, or why it ended. */
export function LiveStatus({ live }) {
  if (live.state === 'off') return null;
  const text = {
    connecting: 'Connecting to the live model…',
    live: live.gap ? 'Live · the model\'s connection is being renewed…' : live.speaking ? 'Live: the agent speaks…' : 'Live: listening. Speak, or type below.',
    reconnecting: 'Live: the connection dropped. Reconnecting…',
    ended: `Live ended: ${live.why}.`,
  }[live.state];
  return (
    <p className="live-status" data-testid="live-status" data-state={live.state} data-speaking={live.speaking} role="status">{text}</p>
  );
}

/** The mark of a message said in a live conversation. */
export function LiveMark() {
  return (
    <span className="live-mark" data-testid="message-live" title="Said in a live conversation">
      <svg viewBox="0 0 16 16" width="11" height="11" aria-hidden="true" focusable="false">
        <rect x="5.5" y="1" width="5" height="9" rx="2.5" fill="currentColor" />
        <path d="M3 7.5a5 5 0 0 0 10 0M8 12.5V15" fill="none" stroke="currentColor" strokeWidth="1.5" strokeLinecap="round" />
      </svg>
      {' '}live
    </span>
  );
}
