import { useState } from 'react';
import { ActionButton, useLoad, when } from './App.jsx';

/** A chat's timeline, its calls with what an operator may do to them, and its actions. */
export function ChatPage({ api, user, chat }) {
  const { data: tl, error, reload } = useLoad(() => api.timeline(user, chat), [user, chat]);
  if (error) return <p role="alert" className="error">{error}</p>;
  if (!tl) return <p>Loading…</p>;
  const waiting = tl.calls.filter((c) => c.status === 'pending');
  return (
    <section aria-labelledby="chat-h">
      <h2 id="chat-h">Chat {chat}</h2>
      <dl className="facts">
        <dt>User</dt><dd><a href={`#/user/${encodeURIComponent(user)}`}>{user}</a></dd>
        <dt>Agent</dt><dd>{tl.agent}</dd>
        <dt>Session</dt><dd>{tl.session}</dd>
        <dt>Lease</dt><dd>{tl.lease.state}{tl.lease.holder && ` (held by ${tl.lease.holder} until ${when(tl.lease.expires)})`}, fence {tl.lease.fence}</dd>
      </dl>
      <div className="actions">
        <ActionButton label="Stop" act={() => api.stop(user, chat)} done={reload} />
        <ActionButton label="Release the lease" act={() => api.release(user, chat)} done={reload}
          confirm="Release this chat's lease? A holder that is still alive loses its writes." />
      </div>
      <h3>Calls</h3>
      {tl.calls.length === 0 ? <p>No paused call.</p> : (
        <table>
          <caption>Paused calls of this chat</caption>
          <thead><tr><th scope="col">Call</th><th scope="col">Tool</th><th scope="col">Kind</th><th scope="col">Status</th><th scope="col">Created</th><th scope="col">Expires</th><th scope="col">Settled</th></tr></thead>
          <tbody>
            {tl.calls.map((c) => (
              <tr key={c.id}>
                <td>{c.id}</td><td>{c.tool}</td><td>{c.kind}</td>
                <td>{c.status}{c.resumed ? ', delivered' : ''}</td>
                <td>{when(c.created)}</td><td>{when(c.expires)}</td>
                <td>{c.resolvedBy ? `by ${c.resolvedBy}` : ''}{c.reason ? ` (${c.reason})` : ''}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {waiting.map((c) => <AnswerForm key={c.id} api={api} user={user} chat={chat} call={c} done={reload} />)}
      <h3>Timeline</h3>
      <ol className="timeline">
        {tl.entries.map((e, i) => (
          <li key={i} className={`entry ${e.kind}${e.rewound ? ' rewound' : ''}`}>
            <time dateTime={e.at}>{when(e.at)}</time> <span className="kind">{e.kind}</span>
            {e.author && <span className="author"> {e.author}</span>}
            {e.rewound && <span className="tag"> (rewound)</span>}
            <span className="text"> {e.text}</span>
          </li>
        ))}
      </ol>
    </section>
  );
}

/** What an operator may answer to a waiting call: an output, an error, a decision, or an expiry. */
function AnswerForm({ api, user, chat, call, done }) {
  const approval = call.kind === 'approval';
  const [output, setOutput] = useState('{}');
  const [reason, setReason] = useState('');
  const id = `call-${call.id}`;
  const parsed = () => {
    try {
      return JSON.parse(output);
    } catch {
      throw new Error('the output is not JSON');
    }
  };
  return (
    <fieldset className="answer" aria-labelledby={`${id}-h`}>
      <legend id={`${id}-h`}>Answer {call.tool} ({call.id}) for the user</legend>
      <p>Arguments: <code>{JSON.stringify(call.args ?? {})}</code>{call.hint && ` — ${call.hint}`}</p>
      {approval ? (
        <div className="actions">
          <ActionButton label="Approve" act={() => api.answer(user, chat, call.id, { approved: true })} done={done} />
          <ActionButton label="Reject" act={() => api.answer(user, chat, call.id, { approved: false })} done={done} />
        </div>
      ) : (
        <div>
          <label htmlFor={`${id}-out`}>Output (JSON)</label>
          <textarea id={`${id}-out`} rows="3" value={output} onChange={(e) => setOutput(e.target.value)} />
          <ActionButton label="Answer" act={() => api.answer(user, chat, call.id, { output: parsed() })} done={done} />
        </div>
      )}
      <label htmlFor={`${id}-reason`}>Reason the model reads</label>
      <input id={`${id}-reason`} value={reason} onChange={(e) => setReason(e.target.value)} />
      <div className="actions">
        {!approval && <ActionButton label="Reject with this reason" act={() => api.answer(user, chat, call.id, { error: reason || 'rejected by an operator' })} done={done} />}
        <ActionButton label="Expire with this reason" act={() => api.expire(user, chat, call.id, reason)} done={done} />
      </div>
    </fieldset>
  );
}
