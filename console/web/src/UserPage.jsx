import { useState } from 'react';
import { ActionButton, useLoad, when } from './App.jsx';

/** A user: their chats, their usage today against their limits, feedback, blocks and deletion. */
export function UserPage({ api, user }) {
  const [cursor, setCursor] = useState('');
  const [reason, setReason] = useState('');
  const { data: p, error, reload } = useLoad(() => api.user(user, cursor), [user, cursor]);
  if (error) return <p role="alert" className="error">{error}</p>;
  if (!p) return <p>Loading…</p>;
  const kind = p.info?.kind || 'user';
  const lim = p.limits?.[kind] ?? {};
  const of = (n, cap) => (cap ? `${n} of ${cap}` : `${n} (no limit)`);
  return (
    <section aria-labelledby="user-h">
      <h2 id="user-h">User {user}</h2>
      <dl className="facts">
        <dt>Kind</dt><dd>{p.info?.kind || 'unknown'}{p.info?.email ? ` (${p.info.email})` : ''}</dd>
        <dt>Blocked</dt><dd>{p.info ? (p.info.blocked ? 'yes' : 'no') : 'unknown'}</dd>
        <dt>Model tokens today</dt><dd>{of(p.usage.Tokens, lim.UserTokensPerDay)}</dd>
        <dt>Turns in the last minute</dt><dd>{of(p.usage.TurnsLastMinute, lim.UserTurnsPerMinute)}</dd>
        <dt>Admitted as a new guest</dt><dd>{p.usage.Admitted ? 'yes' : 'no'}</dd>
      </dl>
      <div className="actions">
        <label>Reason <input value={reason} onChange={(e) => setReason(e.target.value)} /></label>
        {p.info?.blocked
          ? <ActionButton label="Unblock" act={() => api.unblock(user)} done={reload} />
          : <ActionButton label="Block" act={() => api.block(user, reason)} done={reload} confirm={`Block ${user}? Their requests get 403.`} />}
        <ActionButton label="Delete their data" className="danger" act={() => api.deleteUser(user)} done={reload}
          confirm={`Delete everything Baton holds for ${user}? This cannot be undone.`} />
      </div>
      <h3>Chats</h3>
      <table>
        <caption>Most recent activity first</caption>
        <thead><tr><th scope="col">Chat</th><th scope="col">Agent</th><th scope="col">Created</th><th scope="col">Last activity</th><th scope="col">Switches</th></tr></thead>
        <tbody>
          {p.chats.length === 0 && <tr><td colSpan="5">No chat.</td></tr>}
          {p.chats.map((c) => (
            <tr key={c.chat}>
              <td><a href={`#/chat/${encodeURIComponent(user)}/${encodeURIComponent(c.chat)}`}>{c.chat}</a></td>
              <td>{c.agent}</td><td>{when(c.created)}</td><td>{when(c.lastActivity)}</td><td>{c.switches}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {p.next && <button type="button" onClick={() => setCursor(p.next)}>Next page</button>}
      <h3>Feedback</h3>
      {p.feedbackNote ? <p>{p.feedbackNote}.</p> : (p.feedback ?? []).length === 0 ? <p>No feedback.</p> : (
        <ul>{p.feedback.map((f) => <li key={`${f.chat}/${f.message}`}>{f.rating} on {f.chat}/{f.message}{f.comment ? `: ${f.comment}` : ''}</li>)}</ul>
      )}
      <h3>Operator actions on this user</h3>
      <ActionsTable actions={p.actions} />
    </section>
  );
}

export function ActionsTable({ actions }) {
  if (!actions?.length) return <p>None.</p>;
  return (
    <table>
      <caption>Most recent first</caption>
      <thead><tr><th scope="col">When</th><th scope="col">Operator</th><th scope="col">What</th><th scope="col">On</th><th scope="col">Outcome</th></tr></thead>
      <tbody>
        {actions.map((a) => (
          <tr key={a.id}>
            <td>{when(a.at)}</td><td>{a.operator}</td><td>{a.what}{a.reason ? ` (${a.reason})` : ''}</td>
            <td>{[a.user, a.chat, a.call].filter(Boolean).join(' / ') || 'the deployment'}</td>
            <td>{a.outcome}{a.detail ? `: ${a.detail}` : ''}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
