import { useState } from 'react';
import { ActionButton, useLoad } from './App.jsx';
import { ActionsTable } from './UserPage.jsx';

/** The deployment's caps against the day's use, this instance's metrics, and the sweep. */
export function Overview({ api }) {
  const { data, error, reload } = useLoad(() => api.overview(), []);
  if (error) return <p role="alert" className="error">{error}</p>;
  if (!data) return <p>Loading…</p>;
  const o = data.overview;
  return (
    <section aria-labelledby="ov-h">
      <h2 id="ov-h">Overview of {o.app}</h2>
      <p>Agents: {o.agents.join(', ')}. A lease, a call or a cleanup counts as stuck {o.stuckAfter} past its due time.</p>
      <h3>The deployment's caps today ({o.day}, UTC)</h3>
      <Cap label="Model tokens, all users" used={o.service.Tokens} cap={o.tokensCap} />
      <Cap label="New anonymous users" used={o.service.NewAnonymous} cap={o.newAnonymousCap} />
      <div className="actions">
        <ActionButton label="Run the sweep now" act={() => api.sweep()} done={reload} />
        <a href="#/chats?state=stuck-call">Stuck calls</a>
        <a href="#/chats?state=stuck-lease">Stuck leases</a>
      </div>
      <h3>Metrics of this instance</h3>
      <p>Since this instance started; a deployment's are in Cloud Monitoring (the Baton dashboard).</p>
      <Metrics metrics={data.metrics ?? []} />
    </section>
  );
}

function Cap({ label, used, cap }) {
  return (
    <div className="cap">
      <span>{label}: {used}{cap ? ` of ${cap}` : ' (no cap)'}</span>
      {cap > 0 && <meter min="0" max={cap} value={Math.min(used, cap)} aria-label={label}>{used}</meter>}
    </div>
  );
}

function Metrics({ metrics }) {
  if (metrics.length === 0) return <p>No metric recorded yet.</p>;
  return (
    <table>
      <caption>Instruments and their series</caption>
      <thead><tr><th scope="col">Metric</th><th scope="col">Series</th><th scope="col">Value</th></tr></thead>
      <tbody>
        {metrics.flatMap((m) => m.points.map((p, i) => (
          <tr key={`${m.name}-${i}`}>
            <td title={m.description}>{m.name}</td>
            <td>{Object.entries(p.attributes).map(([k, v]) => `${k}=${v}`).join(', ') || '—'}</td>
            <td>{m.kind === 'histogram' ? `${p.count} recorded, sum ${round(p.value)} ${m.unit}` : `${p.value} ${m.unit}`}</td>
          </tr>
        )))}
      </tbody>
    </table>
  );
}

const round = (v) => Math.round(v * 1000) / 1000;

/** The record of operator actions, most recent first. */
export function Actions({ api }) {
  const [cursors, setCursors] = useState(['']);
  const { data, error } = useLoad(() => api.actions(cursors[cursors.length - 1]), [cursors]);
  return (
    <section aria-labelledby="act-h">
      <h2 id="act-h">Operator actions</h2>
      {error && <p role="alert" className="error">{error}</p>}
      {data && <ActionsTable actions={data.actions} />}
      {data?.next && <button type="button" onClick={() => setCursors([...cursors, data.next])}>Next page</button>}
    </section>
  );
}
