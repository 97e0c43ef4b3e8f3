import { useState } from 'react';
import { useLoad, when } from './App.jsx';

const STATES = [
  ['running', 'Running'], ['live', 'Live'], ['waiting', 'Waiting for an answer'], ['background', 'Background work'],
  ['stuck-lease', 'Stuck: lease'], ['stuck-call', 'Stuck: call'], ['stuck-cleanup', 'Stuck: cleanup'],
];

/** Chats by state, one page at a time, with filters by user, agent and age. */
export function Chats({ api }) {
  const params = new URLSearchParams(location.hash.split('?')[1] ?? '');
  const [state, setState] = useState(params.get('state') ?? 'waiting');
  const [filters, setFilters] = useState({ user: '', agent: '', minAge: '' });
  const [applied, setApplied] = useState(filters);
  const [cursors, setCursors] = useState(['']);
  const cursor = cursors[cursors.length - 1];
  const { data, error } = useLoad(() => api.chats({ state, ...applied, cursor, limit: 25 }), [state, applied, cursor]);
  const pick = (s) => { setState(s); setCursors(['']); };
  return (
    <section aria-labelledby="chats-h">
      <h2 id="chats-h">Chats by state</h2>
      <div className="tabs" role="group" aria-label="State">
        {STATES.map(([s, label]) => (
          <button type="button" key={s} aria-pressed={state === s} onClick={() => pick(s)}>{label}</button>
        ))}
      </div>
      <form className="filters" onSubmit={(e) => { e.preventDefault(); setApplied(filters); setCursors(['']); }}>
        <label>User <input value={filters.user} onChange={(e) => setFilters({ ...filters, user: e.target.value })} /></label>
        <label>Agent <input value={filters.agent} onChange={(e) => setFilters({ ...filters, agent: e.target.value })} /></label>
        <label>In the state for at least <input value={filters.minAge} placeholder="10m" onChange={(e) => setFilters({ ...filters, minAge: e.target.value })} /></label>
        <button type="submit">Filter</button>
      </form>
      {error && <p role="alert" className="error">{error}</p>}
      {data && (
        <table>
          <caption>{STATES.find(([s]) => s === state)[1]}: {data.rows.length} on this page</caption>
          <thead><tr><th scope="col">User</th><th scope="col">Chat</th><th scope="col">Agent</th><th scope="col">Since</th><th scope="col">Calls</th><th scope="col">Holder</th></tr></thead>
          <tbody>
            {data.rows.length === 0 && <tr><td colSpan="6">No chat in this state.</td></tr>}
            {data.rows.map((r) => (
              <tr key={`${r.user}/${r.chat}/${r.session}`}>
                <td><a href={`#/user/${encodeURIComponent(r.user)}`}>{r.user}</a></td>
                <td><a href={`#/chat/${encodeURIComponent(r.user)}/${encodeURIComponent(r.chat)}`}>{r.chat}</a></td>
                <td>{r.agent || '—'}</td>
                <td>{when(r.since)}</td>
                <td>{(r.calls ?? []).map((c) => `${c.tool} (${c.kind}, ${c.status})`).join(', ') || '—'}</td>
                <td>{r.holder || '—'}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <div className="pager">
        {cursors.length > 1 && <button type="button" onClick={() => setCursors(cursors.slice(0, -1))}>Previous page</button>}
        {data?.next && <button type="button" onClick={() => setCursors([...cursors, data.next])}>Next page</button>}
      </div>
    </section>
  );
}
