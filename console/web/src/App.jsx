import { useEffect, useState } from 'react';
import { api } from './api.js';
import { signInWith, signInWithGoogle, watchOperator } from './auth.js';
import { Chats } from './Chats.jsx';
import { ChatPage } from './ChatPage.jsx';
import { UserPage } from './UserPage.jsx';
import { Overview, Actions } from './Overview.jsx';

/** The route in the location's hash: #/chats, #/chat/{user}/{chat}, #/user/{user}, #/actions, or the overview. */
function useRoute() {
  const [hash, setHash] = useState(location.hash);
  useEffect(() => {
    const on = () => setHash(location.hash);
    addEventListener('hashchange', on);
    return () => removeEventListener('hashchange', on);
  }, []);
  return hash.replace(/^#\/?/, '').split('/').map(decodeURIComponent);
}

export function App() {
  const [config, setConfig] = useState(null);
  const [session, setSession] = useState(undefined);
  const [denied, setDenied] = useState('');
  useEffect(() => {
    fetch('/admin/config.json').then((r) => r.json()).then(setConfig);
  }, []);
  useEffect(() => (config ? watchOperator(config, setSession) : undefined), [config]);
  useEffect(() => {
    setDenied('');
    if (session) api(session).me().catch((err) => setDenied(err.message));
  }, [session]);
  if (!config || session === undefined) return <main className="center"><p>Loading…</p></main>;
  if (!session) return <SignIn config={config} />;
  return (
    <>
      <header className="top">
        <h1><a href="#/">Baton console</a></h1>
        <nav aria-label="Views">
          <a href="#/">Overview</a>
          <a href="#/chats">Chats</a>
          <a href="#/actions">Actions</a>
        </nav>
        <span className="who">{session.name} <button type="button" onClick={() => session.signOut()}>Sign out</button></span>
      </header>
      <main>
        {denied ? <p role="alert" className="error">{denied}: {session.name} is not an operator of this deployment.</p> : <Route session={session} />}
      </main>
    </>
  );
}

function Route({ session }) {
  const [view, a, b] = useRoute();
  const client = api(session);
  switch (view) {
    case 'chats': return <Chats api={client} />;
    case 'chat': return <ChatPage api={client} user={a} chat={b} />;
    case 'user': return <UserPage api={client} user={a} />;
    case 'actions': return <Actions api={client} />;
    default: return <Overview api={client} />;
  }
}

function SignIn({ config }) {
  const local = config.localOperator;
  const [email, setEmail] = useState(local?.email ?? '');
  const [password, setPassword] = useState(local?.password ?? '');
  const [error, setError] = useState('');
  const go = (f) => f().catch((err) => setError(err.message));
  const dev = config.mode !== 'firebase';
  return (
    <main className="center">
      <h1>Baton console</h1>
      <p>For the operators of this deployment {dev ? '(development identity: a user id listed in BATON_OPERATORS)' : '(a Firebase user with the operator claim, or a verified email listed in BATON_OPERATORS)'}.</p>
      {config.mode === 'firebase' && !config.apiKey && !config.emulator && <p role="alert" className="error">This deployment has no Firebase Web API key (firebase_api_key): operators cannot sign in.</p>}
      <form onSubmit={(e) => { e.preventDefault(); go(() => signInWith(config, email, password)); }}>
        <label>{dev ? 'Operator id' : 'Email'} <input value={email} onChange={(e) => setEmail(e.target.value)} autoComplete="username" required /></label>
        {!dev && <label>Password <input type="password" value={password} onChange={(e) => setPassword(e.target.value)} autoComplete="current-password" required /></label>}
        <button type="submit">Sign in</button>
      </form>
      {!dev && !config.emulator && <button type="button" onClick={() => go(signInWithGoogle)}>Sign in with Google</button>}
      {local && <p className="hint">Local runner: the operator {local.email} is made for you; its password is filled in.</p>}
      {error && <p role="alert" className="error">{error}</p>}
    </main>
  );
}

/** Formats a time for a table: the local date and time, to the second. */
export function when(t) {
  if (!t || t.startsWith('0001-')) return '—';
  return new Date(t).toLocaleString(undefined, { dateStyle: 'short', timeStyle: 'medium' });
}

/** A hook that loads with load(), again whenever deps change; reload() loads again. */
export function useLoad(load, deps) {
  const [state, setState] = useState({ data: null, error: '' });
  const [tick, setTick] = useState(0);
  useEffect(() => {
    let live = true;
    load().then((data) => live && setState({ data, error: '' }), (err) => live && setState({ data: null, error: err.message }));
    return () => { live = false; };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [...deps, tick]);
  return { ...state, reload: () => setTick((n) => n + 1) };
}

/** An action button: runs act, then says what happened. */
export function ActionButton({ label, act, done, confirm: ask, className }) {
  const [busy, setBusy] = useState(false);
  const [msg, setMsg] = useState('');
  return (
    <span className="action">
      <button type="button" className={className} disabled={busy} onClick={async () => {
        if (ask && !window.confirm(ask)) return;
        setBusy(true);
        setMsg('');
        try {
          const out = await act();
          setMsg(`${label}: done`);
          done?.(out);
        } catch (err) {
          setMsg(`${label}: ${err.message}`);
        } finally {
          setBusy(false);
        }
      }}>{label}</button>
      {msg && <span role="status" className="status">{msg}</span>}
    </span>
  );
}
