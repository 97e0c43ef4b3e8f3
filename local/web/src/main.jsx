// Baton demo page: a useChat app (README, "Try it"). It talks to Baton's
// Chat function through the AI SDK's DefaultChatTransport; see App.jsx.

import { createRoot } from 'react-dom/client';
import { signIn } from './auth.js';
import { App } from './App.jsx';
import './style.css';

async function main() {
  const config = await fetch('/config.json').then((res) => res.json()).catch(() => ({}));
  const identity = await signIn(config.auth);
  // For the scripted checks in local/e2e, which call the API as this page.
  window.batonHeaders = async (extra = {}) => ({ ...(await identity.headers()), ...extra });
  createRoot(document.getElementById('root')).render(<App config={config} identity={identity} />);
}

main();
