// A2UI surfaces (docs/a2ui.md), drawn with the stock React renderer
// (@a2ui/react's v0_9 entry over @a2ui/web_core). Baton sends a surface as
// a data-a2ui part carrying every message that draws it as it now is, so a
// part is drawn by applying its messages to a fresh processor. A surface
// may come in parts of several messages (a later turn updates it): the
// latest part wins, drawn where the surface was first shown.
//
// A press on a surface a call waits on (a form: its part names the call)
// answers that call with addToolOutput; once the call has its output the
// form shows as submitted and takes no more presses. A form whose call
// closed without an answer (cancelled by a new message, stopped, expired)
// shows as closed, with why, and takes none either. A press on a card (no
// call) sends a user message holding the action. A form of this tab takes
// the focus when it appears, as approvals and questions do.

import { useEffect, useMemo, useRef, useState } from 'react';
import { MessageProcessor } from '@a2ui/web_core/v0_9';
import { A2uiSurface, basicCatalog, MarkdownContext } from '@a2ui/react/v0_9';
import { askWhenDrawn, useKeepFocus } from './follow.js';

export const SURFACE_TOOL = 'show_surface';

/**
 * Every surface the messages show: by surface id, its latest data and
 * the id of the message that showed it first.
 */
export function surfacesOf(messages) {
  const out = new Map();
  for (const m of messages) {
    for (const p of m.parts) {
      if (p.type !== 'data-a2ui' || !p.id) continue;
      const seen = out.get(p.id);
      out.set(p.id, { data: p.data, first: seen?.first ?? m.id });
    }
  }
  return out;
}

/** The tool part of call id among the messages, if any. */
export function callPart(messages, id) {
  for (const m of messages) {
    const p = m.parts.find((x) => x.toolCallId === id);
    if (p) return p;
  }
  return undefined;
}

/**
 * How a surface takes presses: 'card' (each a new message), 'form' (the
 * press answers the waiting call), 'submitted', 'closed' (its call ended
 * without an answer: call.errorText says why), or 'elsewhere' (another
 * tab's call).
 */
function stateOf(data, call, device) {
  if (!data.callId) return 'card';
  if (call?.state === 'output-error') return 'closed';
  if (!call || (call.state !== 'input-available' && call.state !== 'input-streaming')) return 'submitted';
  const owner = (call.callProviderMetadata ?? call.providerMetadata)?.baton?.deviceId;
  return owner && owner !== device ? 'elsewhere' : 'form';
}

function noteOf(state, call) {
  switch (state) {
    case 'submitted':
      return 'Submitted';
    case 'elsewhere':
      return 'Waiting for the tab that asked';
    case 'closed':
      return `Closed without an answer: ${call?.errorText ?? 'the call ended'}`;
  }
  return '';
}

/**
 * One surface: data is its latest data-a2ui data, call the tool part of
 * the call that waits on it. onAnswer(callId, action) answers a form,
 * onCardAction(action) sends a card's press.
 */
export function SurfacePart({ data, call, device, onAnswer, onCardAction }) {
  const drawn = useDrawn(data);
  const state = stateOf(data, call, device);
  const [pressed, setPressed] = useState(false);
  // An answer the server refused leaves the call waiting, shown by a new
  // part (the conversation as stored): the form takes presses again.
  useEffect(() => setPressed(false), [call]);
  const holder = useRef(null);
  const keepFocus = useKeepFocus(holder);
  // This tab's form, when it appears (or takes presses again), is brought
  // into view with the focus in its first field, as approvals are.
  const asks = state === 'form' && !pressed && !!drawn.surface;
  useEffect(() => (asks ? askWhenDrawn(holder.current) : undefined), [asks]);
  const held = useHeldBack(holder, state === 'form' && !pressed, data);
  const react = useRef(null);
  react.current = async (action) => {
    if (state === 'form') {
      keepFocus(holder.current?.firstChild);
      setPressed(true);
      await onAnswer(data.callId, action);
    } else if (state === 'card') {
      await onCardAction(action);
    }
  };
  useEffect(() => {
    if (!drawn.surface) return undefined;
    const sub = drawn.surface.onAction.subscribe((action) => react.current(action));
    return () => sub?.unsubscribe?.();
  }, [drawn.surface]);

  if (drawn.error) {
    return <div className="surface" data-testid="surface" data-surface-id={data.surfaceId} data-state="broken">
      <span className="problem" role="alert">This surface could not be drawn: {drawn.error}</span>
    </div>;
  }
  if (!drawn.surface) return null; // deleted
  const closed = state !== 'form' && state !== 'card' || pressed;
  const note = noteOf(state, call) || (pressed ? 'Sending…' : '') || held;
  return (
    <div ref={holder} tabIndex={-1} className="surface" data-testid="surface" data-surface-id={data.surfaceId} data-call-id={data.callId}
      data-state={pressed && state === 'form' ? 'sent' : state} aria-disabled={closed || undefined}>
      <div inert={closed}>
        <MarkdownContext.Provider value={plainText}>
          <A2uiSurface surface={drawn.surface} />
        </MarkdownContext.Provider>
      </div>
      {note && <span className="surface-note" data-testid="surface-note" role="status">{note}</span>}
    </div>
  );
}

/**
 * Why a form's button is disabled, while it is ('' otherwise): the
 * renderer disables a button whose checks fail (a required field left
 * empty) and shows the message of a failed field's check beside the field,
 * but neither the button's own message nor a date's: the page says the
 * button's, as the agent wrote them in its checks.
 */
function useHeldBack(holder, open, data) {
  const [held, setHeld] = useState('');
  const messages = useMemo(() => buttonCheckMessages(data), [data]);
  useEffect(() => {
    const el = holder.current;
    if (!open || !el || messages.length === 0) {
      setHeld('');
      return undefined;
    }
    const look = () => setHeld(el.querySelector('button:disabled') ? messages.join(' ') : '');
    look();
    const observer = new MutationObserver(look);
    observer.observe(el, { subtree: true, childList: true, attributes: true, attributeFilter: ['disabled'] });
    return () => observer.disconnect();
  }, [holder, open, messages]);
  return held;
}

/** The messages of the checks of data's buttons, as its messages draw them. */
function buttonCheckMessages(data) {
  const out = [];
  for (const m of data.messages ?? []) {
    for (const c of m.updateComponents?.components ?? []) {
      if (c.component !== 'Button') continue;
      for (const rule of c.checks ?? []) {
        const text = !rule?.message || /[.!?]$/.test(rule.message) ? rule?.message : `${rule.message}.`;
        if (text && !out.includes(text)) out.push(text);
      }
    }
  }
  return out;
}

/**
 * The demo draws a Text's words as they are, not as Markdown (a Markdown
 * renderer, such as @a2ui/markdown-it, would add to the bundle what the
 * demo's surfaces do not use).
 */
async function plainText(value) {
  const escaped = String(value).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
  return escaped.replace(/\n/g, '<br>');
}

/** A fresh processor drawing data's messages, kept while they are the same. */
function useDrawn(data) {
  const key = JSON.stringify(data.messages ?? []);
  return useMemo(() => {
    const processor = new MessageProcessor([basicCatalog]);
    try {
      processor.processMessages(JSON.parse(key));
    } catch (err) {
      return { error: String(err?.message ?? err).slice(0, 200) };
    }
    return { surface: processor.model.getSurface(data.surfaceId) };
  }, [key, data.surfaceId]);
}

/** A user message's action on a card, as its bubble shows it. */
export function ActionLine({ data }) {
  const a = data?.action ?? {};
  const context = Object.entries(a.context ?? {}).map(([k, v]) => `${k}: ${typeof v === 'string' ? v : JSON.stringify(v)}`);
  return (
    <span className="text action" data-testid="message-action" data-surface-id={a.surfaceId}>
      Pressed “{a.name}”{context.length ? ` (${context.join(', ')})` : ''}
    </span>
  );
}
