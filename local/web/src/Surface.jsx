// A2UI surfaces (docs/a2ui.md), drawn with the stock React renderer
// (@a2ui/react's v0_9 entry over @a2ui/web_core). Baton sends a surface as
// a data-a2ui part carrying every message that draws it as it now is, so a
// part is drawn by applying its messages to a fresh processor. A surface
// may come in parts of several messages (a later turn updates it): the
// latest part wins, drawn where the surface was first shown.
//
// A press on a surface a call waits on (a form: its part names the call)
// answers that call with addToolOutput; once the call has its output the
// form shows as submitted and takes no more presses. A press on a card
// (no call) sends a user message holding the action.

import { useEffect, useMemo, useRef, useState } from 'react';
import { MessageProcessor } from '@a2ui/web_core/v0_9';
import { A2uiSurface, basicCatalog, MarkdownContext } from '@a2ui/react/v0_9';

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
 * press answers the waiting call), 'submitted', or 'elsewhere' (another
 * tab's call).
 */
function stateOf(data, call, device) {
  if (!data.callId) return 'card';
  if (!call || (call.state !== 'input-available' && call.state !== 'input-streaming')) return 'submitted';
  const owner = (call.callProviderMetadata ?? call.providerMetadata)?.baton?.deviceId;
  return owner && owner !== device ? 'elsewhere' : 'form';
}

const NOTES = {
  submitted: 'Submitted',
  elsewhere: 'Waiting for the tab that asked',
};

/**
 * One surface: data is its latest data-a2ui data, call the tool part of
 * the call that waits on it. onAnswer(callId, action) answers a form,
 * onCardAction(action) sends a card's press.
 */
export function SurfacePart({ data, call, device, onAnswer, onCardAction }) {
  const drawn = useDrawn(data);
  const state = stateOf(data, call, device);
  const [pressed, setPressed] = useState(false);
  const react = useRef(null);
  react.current = async (action) => {
    if (state === 'form') {
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
  const closed = state === 'submitted' || state === 'elsewhere' || pressed;
  const note = NOTES[state] ?? (pressed ? 'Sending…' : '');
  return (
    <div className="surface" data-testid="surface" data-surface-id={data.surfaceId} data-state={pressed && state === 'form' ? 'sent' : state}
      aria-disabled={closed || undefined}>
      <div inert={closed}>
        <MarkdownContext.Provider value={plainText}>
          <A2uiSurface surface={drawn.surface} />
        </MarkdownContext.Provider>
      </div>
      {note && <span className="surface-note" data-testid="surface-note">{note}</span>}
    </div>
  );
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
