// The demo's chat: the AI SDK's useChat over DefaultChatTransport, pointed
// at Baton's Chat function (README, "POST /Chat"). The transport sends the
// user's ID token as a header and this tab's device id in the body; the
// page loads the conversation from GET /Chat/{chatId} and, with resume:
// true, picks up a running turn or calls waiting for it after a reload.
// Browser tools run in onToolCall, approvals go back through
// addToolApprovalResponse (with the payload the person edited written into
// the call's input), and sendAutomaticallyWhen sends the answers.

import { Fragment, useEffect, useMemo, useRef, useState } from 'react';
import { useChat } from '@ai-sdk/react';
import {
  DefaultChatTransport,
  lastAssistantMessageIsCompleteWithApprovalResponses,
  lastAssistantMessageIsCompleteWithToolCalls,
} from 'ai';
import { isBrowserTool, playTrack, restoreTrack, runBrowserTool } from './tools.js';
import { errorNotice, useNotices } from './notices.jsx';
import { useLiveTurns } from './live.js';
import { Message } from './Message.jsx';
import { MessageActions } from './Rewind.jsx';
import { apiCredentials, loadChat, stopChat } from './chatapi.js';
import { Attach } from './files.jsx';
import { INPUT_TOOL, postLiveAnswer } from './InputForm.jsx';

const SUGGESTIONS = [
  'change the music to track 2',
  'where am I?',
  "what's the weather in Tokyo?",
  'book a table for 4',
  'what is 12*7?',
  'what time is it?',
];

export function newId(prefix) {
  const bytes = crypto.getRandomValues(new Uint8Array(6));
  return prefix + Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
}

function remember(storage, key, prefix) {
  let id = storage.getItem(key);
  if (!id) {
    id = newId(prefix);
    storage.setItem(key, id);
  }
  return id;
}

/**
 * The page: the chat session belongs to the browser profile (localStorage),
 * the device id to this tab (sessionStorage): only the tab that started a
 * turn runs its browser tools and answers its approvals.
 */
export function App({ config, identity }) {
  const [chatId, setChatId] = useState(() => remember(localStorage, 'baton.session', 'chat-'));
  const device = useMemo(() => remember(sessionStorage, 'baton.client', 'tab-'), []);
  const [loaded, setLoaded] = useState(null);

  useEffect(() => {
    let current = true;
    loadChat(chatId, identity)
      .then((chat) => current && setLoaded({ chatId, ...chat }))
      .catch((err) => current && setLoaded({ chatId, messages: [], agent: '', agents: [], error: err.message }));
    return () => {
      current = false;
    };
  }, [chatId, identity]);

  // Another tab started a new chat: follow it.
  useEffect(() => {
    const onStorage = (e) => {
      if (e.key === 'baton.session' && e.newValue) setChatId(e.newValue);
    };
    window.addEventListener('storage', onStorage);
    return () => window.removeEventListener('storage', onStorage);
  }, []);

  const newChat = () => {
    const id = newId('chat-');
    localStorage.setItem('baton.session', id);
    setChatId(id);
  };
  if (loaded?.chatId !== chatId) {
    return <div className="app" data-testid="app" data-ready="false" data-state="working" />;
  }
  return (
    <ChatPage key={chatId} config={config} identity={identity} device={device} chatId={chatId} initial={loaded} onNewChat={newChat} />
  );
}

function ChatPage({ config, identity, device, chatId, initial, onNewChat }) {
  const agents = initial.agents?.length ? initial.agents : config.agents ?? [];
  // The chat's agent as the server last reported it, and the one picked
  // for the next message; a different pick switches the chat.
  const agent = useRef({ current: initial.agent, picked: initial.agent || agents[0] || '' });
  const [picked, setPicked] = useState(agent.current.picked);
  agent.current.picked = picked;
  const [input, setInput] = useState('');
  const [files, setFiles] = useState(null); // a FileList for the next message
  const [running, setRunning] = useState(new Map()); // this tab's browser calls in progress, by call id
  const started = useRef(new Set()); // browser calls started in this page, so none runs twice
  const notices = useNotices();
  const live = useRef(null); // stops the live-turn wait before this tab answers anything
  useEffect(() => restoreTrack(), []); // the track this tab played before a reload

  const transport = useMemo(() => new DefaultChatTransport({
    api: '/Chat',
    headers: () => identity.headers(),
    credentials: apiCredentials, // also the resume GET (reconnectToStream)
    body: () => {
      const a = agent.current;
      return { deviceId: device, ...(a.picked && a.picked !== a.current ? { agent: a.picked } : {}) };
    },
    // Baton keeps the transcript and reads only the newest message (the
    // user's, or the assistant's with this tab's answers): send just that,
    // so a POST stays small however long the chat grows
    // (docs/files-and-long-chats.md).
    prepareSendMessagesRequest: ({ id, messages, body, trigger, messageId }) => ({
      body: { ...body, id, trigger, messageId, messages: messages.slice(-1) },
    }),
    fetch: notices.busyRetryingFetch,
  }), [identity, device, notices.busyRetryingFetch]);

  const chat = useChat({
    id: chatId,
    messages: initial.messages,
    transport,
    resume: true,
    sendAutomaticallyWhen: answersReady,
    onToolCall: ({ toolCall }) => {
      const { toolCallId, toolName, input: args, providerMetadata } = toolCall;
      // Calls of another tab, and server tools, are not this tab's to run.
      if (!isBrowserTool(toolName) || providerMetadata?.baton?.deviceId !== device) return;
      if (started.current.has(toolCallId)) return;
      started.current.add(toolCallId);
      // Not awaited: useChat waits for onToolCall before it reads on, and a
      // tool may wait for a person (the location prompt).
      runTool(toolCallId, toolName, args);
    },
    onData: (part) => {
      if (part.type !== 'data-agent' || !part.data?.to) return;
      agent.current.current = part.data.to;
      setPicked(part.data.to);
    },
    onError: (err) => notices.add(errorNotice(err)),
  });
  const { messages, status, setMessages, addToolOutput, addToolApprovalResponse, sendMessage, regenerate, stop } = chat;

  async function runTool(toolCallId, toolName, args) {
    setRunning((m) => new Map(m).set(toolCallId, 'running in this tab…'));
    const result = await runBrowserTool(toolName, args);
    live.current?.();
    if (result.error) await addToolOutput({ state: 'output-error', tool: toolName, toolCallId, errorText: result.error });
    else await addToolOutput({ tool: toolName, toolCallId, output: result.output });
    setRunning((m) => {
      const next = new Map(m);
      next.delete(toolCallId);
      return next;
    });
  }

  /** The approver's decision; an approval edits the call's input first. */
  async function decide(part, approved, payload) {
    live.current?.();
    if (approved) {
      setMessages((ms) => ms.map((m) => ({
        ...m,
        parts: m.parts.map((p) => (p.toolCallId === part.toolCallId ? { ...p, input: mergePatch(p.input, payload) } : p)),
      })));
    }
    await addToolApprovalResponse({ id: part.approval.id, approved });
  }

  /** A person's answer to a tool's question (InputForm.jsx). */
  async function answerInput(part, output) {
    live.current?.();
    if (!part.input?.live) {
      await addToolOutput({ tool: INPUT_TOOL, toolCallId: part.toolCallId, output });
      return;
    }
    try {
      await postLiveAnswer({ chatId, device, identity, part, output });
    } catch (err) {
      notices.add(errorNotice(err));
    }
  }

  notices.count.current = messages.length;
  const busy = status === 'submitted' || status === 'streaming';
  live.current = useLiveTurns({ chatId, identity, transport, messages, setMessages, idle: !busy && running.size === 0 });

  // Stop: useChat's stop() only ends this tab's stream; DELETE
  // /Chat/{chatId}/stream stops the turn on the server, whichever instance
  // runs it, and returns once it has ended (docs/stop.md). The page then
  // shows the turn as stored: what the model had written, marked stopped.
  const stopTurn = async () => {
    await stop();
    try {
      await stopChat(chatId, identity);
      const fresh = await loadChat(chatId, identity);
      setMessages(fresh.messages);
    } catch (err) {
      notices.add(errorNotice(err));
    }
  };

  const send = (e) => {
    e.preventDefault();
    const text = input.trim();
    if (!text || busy) return;
    live.current?.();
    setInput('');
    setFiles(null);
    sendMessage(files ? { text, files } : { text });
  };

  const lastAssistant = messages.findLast((m) => m.role === 'assistant')?.id;
  const modelName = config.model ? String(config.model).split(' (')[0] : 'unknown';
  return (
    <div className="app" data-testid="app" data-ready="true" data-state={busy || running.size ? 'working' : 'idle'}
      data-ai-sdk={__AI_SDK_VERSION__}>
      <header className="top">
        <h1>Baton <span className="sub">demo</span></h1>
        <span className="badge" data-testid="model" title={config.model ? `Model: ${config.model}` : 'The model answering in this session'}>
          Model: {modelName}
        </span>
        <label className="agent">Agent{' '}
          <select data-testid="agent" title="The agent that answers your next message" value={picked}
            onChange={(e) => setPicked(e.target.value)}>
            {agents.map((name) => <option key={name} value={name}>{name}</option>)}
          </select>
        </label>
        <div className="bgm" data-testid="bgm" data-track="0" role="status" aria-live="polite">
          <span className="bars" aria-hidden="true"><i /><i /><i /></span>
          <span data-testid="bgm-label">Music off</span>
          <button type="button" className="link" data-testid="bgm-stop" hidden onClick={() => playTrack(0)}>Stop</button>
        </div>
        <button type="button" data-testid="new-chat" onClick={onNewChat}>New chat</button>
      </header>

      <main className="messages" data-testid="messages" role="log" aria-live="polite" aria-label="Conversation">
        {messages.length === 0 && notices.list.length === 0 && (
          <p className="hint" data-testid="hint">Say hello, or try one of the suggestions below.</p>
        )}
        {messages.map((m, i) => (
          <Fragment key={m.id}>
            {notices.render(i)}
            <Message message={m} device={device} running={running} onDecide={decide} onAnswer={answerInput} />
            <MessageActions message={m} last={m.id === lastAssistant} busy={busy || running.size > 0}
              onRegenerate={(messageId) => { live.current?.(); regenerate({ messageId }); }}
              onEdit={(messageId, text) => {
                live.current?.();
                // The edited message keeps its files: sent back as the URLs
                // Baton gave them, which /Chat takes as the same files.
                const files = m.parts.filter((p) => p.type === 'file');
                sendMessage(files.length > 0 ? { text, files, messageId } : { text, messageId });
              }} />
          </Fragment>
        ))}
        {notices.render(messages.length, true)}
        {initial.error && <div className="system" data-testid="system-message" data-kind="error" role="alert">
          <span className="text">Could not load the conversation: {initial.error}</span></div>}
      </main>

      <form className="composer" data-testid="composer" onSubmit={send}>
        <div className="suggestions" aria-label="Try these">
          {SUGGESTIONS.map((s) => (
            <button key={s} type="button" className="chip" data-testid="suggestion" onClick={() => setInput(s)}>{s}</button>
          ))}
        </div>
        <div className="row">
          <label htmlFor="input" className="visually-hidden">Message</label>
          <input id="input" data-testid="composer-input" autoComplete="off" placeholder="Message the agent…" required
            value={input} onChange={(e) => setInput(e.target.value)} />
          <Attach files={files} onChange={setFiles} disabled={busy} />
          <button type="submit" data-testid="send" disabled={busy}>Send</button>
          {busy && <button type="button" data-testid="stop" onClick={stopTurn}>Stop</button>}
        </div>
      </form>

      <footer className="ids">
        <span>user <code data-testid="user-id">{identity.user}</code></span>
        <span>session <code data-testid="session-id">{chatId}</code></span>
        <span>tab <code data-testid="client-id">{device}</code></span>
        <span>AI SDK <code data-testid="ai-sdk">{__AI_SDK_VERSION__}</code></span>
      </footer>
    </div>
  );
}

/**
 * Whether to send the answers: once nothing in the last step waits for a
 * browser tool or a decision any more, so that the answers of a step that
 * mixes browser calls and approvals go out together.
 */
function answersReady({ messages }) {
  const last = messages.at(-1);
  if (last?.role !== 'assistant') return false;
  const step = last.parts.slice(last.parts.findLastIndex((p) => p.type === 'step-start') + 1);
  const waiting = step.some((p) => p.state === 'approval-requested' || p.state === 'input-streaming' ||
    (p.state === 'input-available' && !p.providerExecuted));
  return !waiting &&
    (lastAssistantMessageIsCompleteWithToolCalls({ messages }) || lastAssistantMessageIsCompleteWithApprovalResponses({ messages }));
}

/**
 * The arguments an approved tool runs with: the server merges the payload
 * into the model's arguments as a JSON Merge Patch (RFC 7396).
 */
function mergePatch(target, patch) {
  if (!patch || typeof patch !== 'object' || Array.isArray(patch)) return target;
  const out = { ...(target && typeof target === 'object' && !Array.isArray(target) ? target : {}) };
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else if (typeof v === 'object' && !Array.isArray(v)) out[k] = mergePatch(out[k], v);
    else out[k] = v;
  }
  return out;
}
