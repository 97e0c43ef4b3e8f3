// One message of the conversation, as useChat holds it: text parts, tool
// calls (with an approval form when this tab must decide), A2UI surfaces
// and actions (Surface.jsx), and agent switches (data-agent parts), shown
// as a line before the message; a message said in a live conversation is
// marked so.

import { Fragment, useEffect, useRef, useState } from 'react';
import { isBrowserTool } from './tools.js';
import { useAsk, useKeepFocus } from './follow.js';
import { forgetDraft, useDraft } from './drafts.js';
import { FilePart } from './files.jsx';
import { INPUT_TOOL, InputForm } from './InputForm.jsx';
import { ActionLine, SURFACE_TOOL, SurfacePart } from './Surface.jsx';
import { LiveMark } from './LiveMode.jsx';

function switchedText({ from, to }) {
  return `Switched to ${to}${from ? ` from ${from}` : ''}.`;
}

/**
 * surfaces are the conversation's (surfacesOf): a surface is drawn, as it
 * last was, in the message that showed it first; callOf finds the tool
 * part of the call a form waits on. unsent marks a message of this tab
 * the server refused.
 */
export function Message({ message, live, unsent, device, running, onDecide, onAnswer, surfaces, callOf, onSurfaceAnswer, onCardAction }) {
  const switches = message.parts.filter((p) => p.type === 'data-agent' && p.data?.switched);
  const shown = message.parts.filter((p) => (p.type === 'text' && p.text) || (p.type === 'reasoning' && p.text) || p.type === 'file' ||
    (isTool(p) && toolName(p) !== SURFACE_TOOL) || p.type === 'data-a2ui-action' ||
    (p.type === 'data-a2ui' && surfaces.get(p.id)?.first === message.id));
  if (message.role === 'assistant' && shown.length === 0 && switches.length > 0 && message.parts.every((p) => p.type.startsWith('data-'))) {
    return switches.map((p, i) => <SwitchLine key={i} data={p.data} />);
  }
  return (
    <>
      {switches.map((p, i) => <SwitchLine key={i} data={p.data} />)}
      <div className="msg" data-role={message.role} data-testid="message" data-message-id={message.id}>
        {shown.map((p, i) => (
          <Fragment key={p.toolCallId ?? (p.type === 'data-a2ui' ? `s-${p.id}` : `t${i}`)}>
            {p.type === 'text'
              ? <span className="text" data-testid="message-text">{p.text}</span>
              : p.type === 'reasoning' ? <Thoughts part={p} />
              : p.type === 'file' ? <FilePart part={p} />
              : p.type === 'data-a2ui-action' ? <ActionLine data={p.data} />
              : p.type === 'data-a2ui' ? <SurfacePart data={surfaces.get(p.id).data} call={callOf(surfaces.get(p.id).data?.callId)}
                device={device} onAnswer={onSurfaceAnswer} onCardAction={onCardAction} />
              : <ToolCard part={p} device={device} running={running.get(p.toolCallId)} onDecide={onDecide} onAnswer={onAnswer} />}
          </Fragment>
        ))}
        {message.metadata?.stopped && <span className="stopped" data-testid="message-stopped">Stopped</span>}
        {unsent && <span className="unsent" data-testid="message-unsent">Not sent</span>}
        {live && <LiveMark />}
      </div>
    </>
  );
}

/**
 * Thoughts is the model's thought summary (a reasoning part: a deployment
 * with BATON_INCLUDE_THOUGHTS), folded: the answer is what the page shows.
 */
function Thoughts({ part }) {
  return (
    <details className="thoughts" data-testid="message-reasoning">
      <summary>{part.state === 'streaming' ? 'Thinking…' : 'Thoughts'}</summary>
      <span className="text">{part.text}</span>
    </details>
  );
}

function SwitchLine({ data }) {
  return (
    <div className="system" data-testid="system-message" data-kind="agent" role="status">
      <span className="text">{switchedText(data)}</span>
    </div>
  );
}

function isTool(p) {
  return p.type === 'dynamic-tool' || p.type.startsWith('tool-');
}

/** Short JSON of a value, keys sorted, so the same value always reads the same. */
export function compact(value) {
  const sorted = (v) => (v && typeof v === 'object' && !Array.isArray(v)
    ? Object.fromEntries(Object.keys(v).sort().map((k) => [k, sorted(v[k])]))
    : Array.isArray(v) ? v.map(sorted) : v);
  const s = JSON.stringify(sorted(value ?? {}));
  return s.length > 160 ? `${s.slice(0, 157)}…` : s;
}

/**
 * Why Baton closed a call without its answer, from the error text it gave
 * the call's output ('' for a tool's own failure): a new message or an
 * agent switch cancels open calls, a stop ends them, and a call waits only
 * so long. The UI message stream carries the text alone.
 */
function closedAs(errorText) {
  const text = String(errorText ?? '');
  if (/^(cancelled\b|not run: the user sent a new message)/.test(text)) return 'cancelled';
  if (/^stopped: /.test(text)) return 'stopped';
  if (/^no result within /.test(text)) return 'expired';
  return '';
}

/**
 * How a tool part shows: its status, the label for it and its output. A
 * call that names the device that decides and runs on the server asks for
 * approval: its request follows (Baton's streams say so first, so that no
 * tab shows it running, even for a moment).
 */
function view(part, name, mine, running, owner) {
  const approval = part.approval;
  switch (part.state) {
    case 'input-streaming':
    case 'input-available':
      if (name === INPUT_TOOL) {
        return mine ? { status: 'approval', label: 'needs your answer', answer: true } : { status: 'waiting', label: 'waiting for an answer' };
      }
      if (isBrowserTool(name) && !part.providerExecuted) {
        return mine ? { status: 'running', label: running ?? 'runs in this tab' } : { status: 'waiting', label: 'waiting for an answer' };
      }
      if (owner && part.providerExecuted) return { status: 'waiting', label: 'asks for approval…' };
      return { status: 'running', label: 'running…' };
    case 'approval-requested':
      return mine ? { status: 'approval', label: 'needs your approval', ask: true } : { status: 'waiting', label: 'waiting for an answer' };
    case 'approval-responded':
      return approval?.approved
        ? { status: 'approved', label: 'approved', output: `approved with ${compact(part.input)}` }
        : { status: 'rejected', label: 'rejected', output: 'rejected' };
    case 'output-available':
      if (part.preliminary) {
        // A background call's progress, until its result replaces it.
        return { status: 'running', label: progressText(part.output), output: compact(part.output), progress: progressOf(part.output) };
      }
      return approval?.approved
        ? { status: 'approved', label: 'approved · done', output: compact(part.output) }
        : { status: 'done', label: 'done', output: compact(part.output) };
    case 'output-error': {
      const closed = closedAs(part.errorText);
      if (closed) return { status: closed, label: closed, output: part.errorText };
      return approval?.approved === false
        ? { status: 'rejected', label: 'rejected', output: part.errorText }
        : { status: 'error', label: 'failed', output: part.errorText };
    }
    case 'output-denied':
      return { status: 'rejected', label: 'rejected', output: approval?.reason ?? '' };
    default:
      return { status: part.state, label: part.state };
  }
}

/** The line a background call's progress reads as: its text, or "3 of 10". */
function progressText(p) {
  if (typeof p === 'string') return p;
  if (p && typeof p === 'object' && Number.isFinite(p.done) && Number.isFinite(p.of)) return `working… ${p.done} of ${p.of}`;
  return 'working…';
}

/** {done, of} of a progress report that counts, or null. */
function progressOf(p) {
  return p && typeof p === 'object' && Number.isFinite(p.done) && Number.isFinite(p.of) && p.of > 0 ? { done: p.done, of: p.of } : null;
}

function ToolCard({ part, device, running, onDecide, onAnswer }) {
  const name = toolName(part);
  const owner = (part.callProviderMetadata ?? part.providerMetadata)?.baton?.deviceId;
  const v = view(part, name, owner === device, running, owner);
  const card = useRef(null);
  const keepFocus = useKeepFocus(card);
  return (
    <div ref={card} tabIndex={-1} className="tool" data-testid="tool-call" data-tool-name={name} data-call-id={part.toolCallId}
      data-status={v.status}>
      <div className="tool-head">
        <span className="tool-name">{name}</span>
        <code className="tool-input">{compact(part.input)}</code>
        <span className="tool-status" data-testid="tool-status">{v.label}</span>
      </div>
      {v.progress && <progress className="tool-progress" data-testid="tool-progress" value={v.progress.done} max={v.progress.of} />}
      <code className="tool-output" data-testid="tool-output">{v.output ?? ''}</code>
      {v.ask && <ApprovalForm part={part} onDecide={onDecide} onSent={keepFocus} />}
      {v.answer && <InputForm part={part} onAnswer={onAnswer} onSent={keepFocus} />}
    </div>
  );
}

/** The approver's form: one field per argument, or the JSON to edit. */
function ApprovalForm({ part, onDecide, onSent }) {
  const args = part.input && typeof part.input === 'object' ? part.input : {};
  const entries = Object.entries(args);
  const flat = entries.every(([, v]) => v === null || ['string', 'number', 'boolean'].includes(typeof v));
  const draft = `approval:${part.toolCallId}`;
  const [values, setValues] = useDraft(`${draft}:fields`, () => Object.fromEntries(entries.map(([k, v]) => [k, typeof v === 'boolean' ? v : String(v ?? '')])));
  const [json, setJson] = useDraft(`${draft}:json`, () => JSON.stringify(args, null, 2));
  const [problem, setProblem] = useState('');
  const [sent, setSent] = useState(false);
  // A decision the server refused shows the call asking again (a new
  // part, from the conversation as stored): the form comes back.
  useEffect(() => setSent(false), [part]);
  const form = useRef(null);
  useAsk(form);

  const read = () => {
    if (!flat) return JSON.parse(json);
    return Object.fromEntries(entries.map(([key, value]) => {
      const field = values[key];
      if (typeof value === 'boolean') return [key, field];
      if (typeof value !== 'number') return [key, field];
      const n = Number(field);
      if (String(field).trim() === '' || !Number.isFinite(n)) throw new Error(`${key} must be a number`);
      return [key, n];
    }));
  };
  const decide = (approved) => {
    let payload;
    if (approved) {
      try {
        payload = read();
      } catch (err) {
        setProblem(err.message);
        return;
      }
    }
    onSent(form.current);
    setSent(true);
    forgetDraft(`${draft}:fields`);
    forgetDraft(`${draft}:json`);
    onDecide(part, approved, payload);
  };
  if (sent) return null;
  const id = (key) => `f-${part.approval.id}-${key}`;
  return (
    <form ref={form} className="approval" data-testid="approval" aria-label={`Approve ${toolName(part)}?`} onSubmit={(e) => {
      e.preventDefault();
      decide(true);
    }}>
      {flat ? (
        <div className="fields">
          {entries.map(([key, value]) => (
            <Fragment key={key}>
              <label htmlFor={id(key)}>{key}</label>
              {typeof value === 'boolean'
                ? <input id={id(key)} data-testid={`approval-field-${key}`} type="checkbox" checked={values[key]}
                  onChange={(e) => setValues({ ...values, [key]: e.target.checked })} />
                : <input id={id(key)} data-testid={`approval-field-${key}`} type={typeof value === 'number' ? 'number' : 'text'}
                  value={values[key]} onChange={(e) => setValues({ ...values, [key]: e.target.value })} />}
            </Fragment>
          ))}
        </div>
      ) : (
        <textarea data-testid="approval-payload" rows={Math.min(10, json.split('\n').length)} value={json}
          aria-label={`Arguments of ${toolName(part)}`} onChange={(e) => setJson(e.target.value)} />
      )}
      <div className="actions">
        <button type="submit" className="primary" data-testid="approve">Approve</button>
        <button type="button" data-testid="reject" onClick={() => decide(false)}>Reject</button>
        <span className="problem" role="alert">{problem}</span>
      </div>
    </form>
  );
}

function toolName(part) {
  return part.type === 'dynamic-tool' ? part.toolName : part.type.slice('tool-'.length);
}
