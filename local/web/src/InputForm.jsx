// A tool's question to the person (docs/mcp-input.md): a call of the
// browser tool "baton_input" whose input holds the server's requests, each
// with a JSON schema of flat fields. The tab that started the turn answers
// {responses: {id: {action, content}}}. A paused call (multi-round-trip)
// is answered as a browser tool's output; a question asked on the live call
// (input.live) while the turn is still streaming goes straight to
// /ToolResult, since useChat sends answers only once the stream ends.

import { Fragment, useEffect, useRef, useState } from 'react';
import { postToolResult } from './chatapi.js';
import { forgetDraft, useDraft } from './drafts.js';
import { useAsk } from './follow.js';

export const INPUT_TOOL = 'baton_input';

/** The form's initial value of each field of schema. */
function initial(schema) {
  return Object.fromEntries(Object.entries(schema?.properties ?? {}).map(([key, p]) => [key, p.default ?? (p.type === 'boolean' ? false : '')]));
}

/** The content the server asked for, typed as its schema says. */
function content(schema, values) {
  return Object.fromEntries(Object.entries(schema?.properties ?? {}).map(([key, p]) => {
    const v = values[key];
    if (p.type === 'number' || p.type === 'integer') {
      const n = Number(v);
      if (String(v).trim() === '' || !Number.isFinite(n)) throw new Error(`${p.title ?? key} must be a number`);
      return [key, n];
    }
    return [key, v];
  }));
}

/**
 * The question's form; onAnswer(part, output) sends the answer, onSent(form)
 * is told just before the form goes (follow.js's useKeepFocus).
 */
export function InputForm({ part, onAnswer, onSent }) {
  const requests = Object.entries(part.input?.requests ?? {});
  const draft = `input:${part.toolCallId}`;
  const [values, setValues] = useDraft(draft, () => Object.fromEntries(requests.map(([id, r]) => [id, initial(r.params?.requestedSchema)])));
  const [problem, setProblem] = useState('');
  const [sent, setSent] = useState(false);
  // An answer the server refused shows the question open again (a new
  // part, from the conversation as stored): the form comes back.
  useEffect(() => setSent(false), [part]);
  const form = useRef(null);
  useAsk(form);
  if (sent) return null;

  const answer = (action) => {
    try {
      const responses = Object.fromEntries(requests.map(([id, r]) => [id, action === 'accept'
        ? { action, content: content(r.params?.requestedSchema, values[id]) }
        : { action }]));
      onSent?.(form.current);
      setSent(true);
      forgetDraft(draft);
      onAnswer(part, { responses });
    } catch (err) {
      setProblem(err.message);
    }
  };
  const set = (id, key, v) => setValues({ ...values, [id]: { ...values[id], [key]: v } });
  return (
    <form ref={form} className="approval" data-testid="input-form" aria-label="The agent asks you" onSubmit={(e) => {
      e.preventDefault();
      answer('accept');
    }}>
      {requests.map(([id, r]) => (
        <fieldset key={id} className="fields">
          <legend data-testid="input-message">{r.params?.message}</legend>
          {Object.entries(r.params?.requestedSchema?.properties ?? {}).map(([key, p]) => {
            const fid = `in-${part.toolCallId}-${id}-${key}`;
            return (
              <Fragment key={key}>
                <label htmlFor={fid}>{p.title ?? key}</label>
                {p.type === 'boolean'
                  ? <input id={fid} data-testid={`input-field-${key}`} type="checkbox" checked={values[id][key]}
                    onChange={(e) => set(id, key, e.target.checked)} />
                  : p.enum
                    ? <select id={fid} data-testid={`input-field-${key}`} value={values[id][key]} onChange={(e) => set(id, key, e.target.value)}>
                      {p.enum.map((o) => <option key={o} value={o}>{o}</option>)}
                    </select>
                    : <input id={fid} data-testid={`input-field-${key}`} type={p.type === 'number' || p.type === 'integer' ? 'number' : 'text'}
                      value={values[id][key]} onChange={(e) => set(id, key, e.target.value)} />}
              </Fragment>
            );
          })}
        </fieldset>
      ))}
      <div className="actions">
        <button type="submit" className="primary" data-testid="input-accept">Submit</button>
        <button type="button" data-testid="input-decline" onClick={() => answer('decline')}>Decline</button>
        <button type="button" data-testid="input-cancel" onClick={() => answer('cancel')}>Cancel</button>
        <span className="problem" role="alert">{problem}</span>
      </div>
    </form>
  );
}

/** Sends the answer to a question asked on the live call, outside useChat. */
export function postLiveAnswer({ chatId, device, identity, part, output }) {
  return postToolResult(identity, { sessionId: chatId, toolCallId: part.toolCallId, clientId: device, output });
}
