// The demo's chat: the AI SDK's useChat over DefaultChatTransport, pointed
// at Baton's Chat function (README, "POST /Chat"). The transport sends the
// user's ID token as a header and this tab's device id in the body; the
// page loads the conversation from GET /Chat/{chatId} and, with resume:
// true, picks up a running turn or calls waiting for it after a reload.
// Browser tools run in onToolCall, approvals go back through
// addToolApprovalResponse (with the payload the person edited written into
// the call's input), a form's action through addToolOutput (Surface.jsx),
// and sendAutomaticallyWhen sends the answers. The Live button opens a
// voice conversation on the same chat (LiveMode.jsx): its words join the
// same messages, and its calls are run or asked here and answered over its
// socket.

import { Fragment, useCallback, useEffect, useId, useMemo, useRef, useState } from 'react';
import { useChat } from '@ai-sdk/react';
import {
  lastAssistantMessageIsCompleteWithApprovalResponses,
  lastAssistantMessageIsCompleteWithToolCalls,
} from 'ai';
import { isBrowserTool, playTrack, restoreTrack, runBrowserTool } from './tools.js';
import { apiErrorOf, errorNotice, useNotices } from './notices.jsx';
import { useLiveTurns } from './live.js';
import { Message } from './Message.jsx';
import { MessageActions } from './Rewind.jsx';
import {
  authedFetch, chatStarted, isNewChat, isSignedOut, loadChat, markNewChat, postToolResult, SIGNED_OUT, stopChat, withCallsOf, withEarlier,
} from './chatapi.js';
import { Attach, refusedText, sizeProblem } from './files.jsx';
import { INPUT_TOOL, postLiveAnswer } from './InputForm.jsx';
import { chatTransport, hasOpenCall } from './transport.js';
import { LiveButton, LiveStatus, useLiveMode } from './LiveMode.jsx';
import { liveMessageIds, withAnswer, withToolCall } from './livemessages.js';
import { callPart, SURFACE_TOOL, surfacesOf } from './Surface.jsx';
import { useFollow } from './follow.js';
import { useReconnect } from './reconnect.js';
import { Sidebar, useChatList } from './Sidebar.jsx';
import { AccountMenu } from './AccountMenu.jsx';
import { rate, waitingHere } from './chats.js';

export function newId(prefix) {
  const bytes = crypto.getRandomValues(new Uint8Array(6));
  return prefix + Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
}

/** The chat this browser profile shows: the last one it used, or a new one. */
function currentChat() {
  let id = localStorage.getItem('baton.session');
  if (!id) {
    id = newId('chat-');
    markNewChat(id);
    localStorage.setItem('baton.session', id);
  }
  return id;
}

/** The tab's device id, kept across reloads of the tab. */
function tabDevice() {
  let id = sessionStorage.getItem('baton.client');
  if (!id) {
    id = newId('tab-');
    sessionStorage.setItem('baton.client', id);
  }
  return id;
}

/**
 * The page: the chat session belongs to the browser profile (localStorage),
 * the device id to this tab (sessionStorage): only the tab that started a
 * turn runs its browser tools and answers its approvals. Beside the chat,
 * the person's chats (Sidebar.jsx: a column on a wide screen, a drawer the
 * header's Chats button opens on a narrow one) and the menu of their data
 * (AccountMenu.jsx).
 */
export function App({ config, identity }) {
  const [chatId, setChatId] = useState(currentChat);
  const device = useMemo(tabDevice, []);
  const [loaded, setLoaded] = useState(null);
  const list = useChatList(identity, device);
  const [drawer, setDrawer] = useState(false);
  const [notice, setNotice] = useState(null); // what the list or the menu has to say
  const sidebarId = useId();
  const toggle = useRef(null);

  useEffect(() => {
    let current = true;
    // A chat this profile has not sent anything to is not asked for: the
    // server does not have it yet.
    const load = isNewChat(chatId) ? Promise.resolve({ messages: [], agent: '', agents: [], earlier: false }) : loadChat(chatId, identity);
    load
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
    markNewChat(id);
    localStorage.setItem('baton.session', id);
    setChatId(id);
    setDrawer(false);
  };
  /** Shows the chat of that id (from the list): this profile's chat from now on. */
  const openChat = (id) => {
    setDrawer(false);
    toggle.current?.focus();
    if (id === chatId) return;
    localStorage.setItem('baton.session', id);
    setChatId(id);
  };
  const closeDrawer = () => {
    setDrawer(false);
    toggle.current?.focus();
  };
  const { refresh } = list;
  const waiting = waitingHere(list.chats);
  const chrome = (
    <button type="button" ref={toggle} className="drawer-toggle" data-testid="chats-toggle" aria-controls={sidebarId} aria-expanded={drawer}
      onClick={() => setDrawer((o) => !o)}>
      Chats{waiting > 0 && <span className="count" data-testid="waiting-badge"> {waiting}<span className="visually-hidden"> waiting for you</span></span>}
    </button>
  );
  // The data menu sits at the foot of the chat list, as in the chat apps
  // people know, which also keeps the header on one line.
  const account = (
    <AccountMenu identity={identity} notify={setNotice} onDeleted={() => {
      newChat();
      refresh();
    }} />
  );
  return (
    <div className="shell" data-drawer={drawer ? 'open' : 'closed'}>
      <Sidebar id={sidebarId} list={list} identity={identity} current={chatId} isNew={isNewChat(chatId)} open={drawer}
        onOpen={openChat} onNewChat={newChat} onClose={closeDrawer} notify={setNotice} footer={account}
        onDeleted={(id) => id === chatId && newChat()} />
      {loaded?.chatId !== chatId ? (
        <div className="app" data-testid="app" data-ready="false" data-state="working" />
      ) : (
        <ChatPage key={chatId} config={config} identity={identity} device={device} chatId={chatId} initial={loaded} onNewChat={newChat}
          chrome={chrome} onActivity={refresh}
          notice={notice && <PageNotice notice={notice} onDismiss={() => setNotice(null)} />} />
      )}
    </div>
  );
}

/** What the chat list or the data menu has to say, until dismissed. */
function PageNotice({ notice, onDismiss }) {
  return (
    <div className="system page-notice" data-testid="page-notice" data-kind={notice.kind} role={notice.kind === 'error' ? 'alert' : 'status'}>
      <span className="text">{notice.text}</span>
      <button type="button" className="link" data-testid="page-notice-dismiss" onClick={onDismiss}>Dismiss</button>
    </div>
  );
}

function ChatPage({ config, identity, device, chatId, initial, onNewChat, chrome, notice, onActivity }) {
  const agents = initial.agents?.length ? initial.agents : config.agents ?? [];
  // The chat's agent as the server last reported it, and the one picked
  // for the next message; a different pick switches the chat.
  const agent = useRef({ current: initial.agent, picked: initial.agent || agents[0] || '' });
  const [picked, setPicked] = useState(agent.current.picked);
  agent.current.picked = picked;
  const [input, setInput] = useState('');
  const inputRef = useRef(null);
  const [files, setFiles] = useState(null); // a FileList (or file parts, given back) for the next message
  const [problem, setProblem] = useState(''); // why the message box's message cannot go
  const [unsent, setUnsent] = useState(new Set()); // ids of this tab's messages the server refused
  const [running, setRunning] = useState(new Map()); // this tab's browser calls in progress, by call id
  const started = useRef(new Set()); // browser calls started in this page, so none runs twice
  const notices = useNotices(useMemo(() => authedFetch(identity), [identity]));
  const live = useRef(null); // stops the live-turn wait before this tab answers anything
  const shown = useRef(null); // useChat's setMessages, for loads made before it exists
  // Whether messages precede the first shown, by its id, as each load said.
  const earlierThan = useRef(new Map([[initial.messages[0]?.id, !!initial.earlier]]));
  useEffect(() => restoreTrack(), []); // the track this tab played before a reload

  const leftLive = useRef(() => {}); // runs the calls live segments left to this tab (below)
  /** Shows a load of the latest messages after the earlier ones shown. */
  const showLatest = useCallback((fresh) => {
    earlierThan.current.set(fresh.messages[0]?.id, !!fresh.earlier);
    shown.current((ms) => withEarlier(ms, fresh));
    leftLive.current(fresh.messages);
    followAgent(fresh.agent);
  }, []); // eslint-disable-line react-hooks/exhaustive-deps
  /**
   * The chat is with agent now (a load, or a stream, said so): a switch
   * made elsewhere (another tab) moves the picker too, so that this tab's
   * next message does not switch back. A pick of this tab's for the next
   * message stays while the chat's agent does not change.
   */
  function followAgent(to) {
    if (!to || to === agent.current.current) return;
    agent.current.current = to;
    setPicked(to);
  }
  const reload = useCallback(async () => {
    showLatest(await loadChat(chatId, identity));
  }, [chatId, identity, showLatest]);
  // The calls the page shows open, as the server now has them: a new
  // message has just closed them (transport.js).
  const refreshCalls = useCallback(async () => {
    const fresh = await loadChat(chatId, identity);
    shown.current((ms) => withCallsOf(ms, fresh, hasOpenCall));
  }, [chatId, identity]);

  const [followsLive, setFollowsLive] = useState(false); // a resumed stream follows another tab's live conversation
  const transport = useMemo(() => chatTransport({
    identity, device, agent, fetch: notices.retryingFetch,
    onResumed: () => {
      chatStarted(chatId);
      return reload();
    },
    onClosed: refreshCalls,
    onFollowing: setFollowsLive,
  }), [identity, device, chatId, notices.retryingFetch, reload, refreshCalls]);

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
    onError: (err) => {
      const notice = errorNotice(err);
      if (notice.broken) {
        broken(notice);
        return;
      }
      const refused = apiErrorOf(err);
      if (refused && err.sent?.kind === 'message') {
        // Refused, so not stored: the bubble says so, and what it held
        // goes back into the message box.
        const m = latest.current.find((x) => x.id === err.sent.messageId);
        setUnsent((ids) => new Set(ids).add(err.sent.messageId));
        giveBack(m);
        notice.text = refusedText(refused, m, config.limits) ?? `${notice.text} Your message was not sent: it is back in the message box.`;
      } else if (refused && err.sent) {
        // Answers, an edit or a regenerate the server refused: the cards
        // and messages show what it holds, not what this tab assumed.
        reload().catch(() => {});
      }
      if (!(notice.unauthenticated && isSignedOut())) notices.add(notice); // the page says that once
    },
  });
  const { messages, status, setMessages, addToolOutput, addToolApprovalResponse, sendMessage, regenerate, stop, resumeStream } = chat;
  shown.current = setMessages;
  // The chat list says what this chat does: read again as its turns start and end.
  useEffect(() => {
    onActivity?.();
  }, [status, onActivity]);
  const latest = useRef(messages);
  latest.current = messages;
  /**
   * Puts what message m held (its text, its files) back into the message
   * box, unless the person has typed or attached something since.
   */
  const giveBack = useCallback((m) => {
    if (!m) return;
    const text = m.parts.filter((p) => p.type === 'text').map((p) => p.text).join('');
    const given = m.parts.filter((p) => p.type === 'file');
    setInput((typed) => typed || text);
    if (given.length > 0) setFiles((picked) => picked ?? given);
  }, []);
  /**
   * Shows the conversation as stored; when the last message this tab sent
   * is not in it (it never reached the server), gives it back to the
   * message box and reports true.
   */
  const showStored = useCallback(async () => {
    const fresh = await loadChat(chatId, identity);
    const mine = latest.current.findLast((m) => m.role === 'user');
    showLatest(fresh);
    if (!mine || fresh.messages.some((m) => m.id === mine.id)) return false;
    giveBack(mine);
    return true;
  }, [chatId, identity, showLatest, giveBack]);
  // After a broken connection: the conversation as stored. A message sent
  // while the network was down never reached the server: its text goes
  // back into the message box rather than vanishing.
  const recoverLoad = useCallback(async () => {
    if (await showStored()) {
      notices.add({ kind: 'info', text: 'Your last message did not reach the agent: it is back in the message box.' });
    }
  }, [showStored, notices.add]); // eslint-disable-line react-hooks/exhaustive-deps
  const broken = useReconnect({ transport, reload: recoverLoad, resume: resumeStream, notices });
  useSignedOut(identity, notices.add);

  // Live mode: calls shown by its frames, until the conversation as stored
  // is loaded after it ends (their answers go to the socket, or, once it
  // is gone, to POST /ToolResult).
  const liveCalls = useRef(new Set());
  const liveMode = useLiveMode({
    chatId, device, identity, setMessages,
    agent: useCallback(() => (agent.current.picked !== agent.current.current ? agent.current.picked : ''), []),
    onReady: (frame) => {
      chatStarted(chatId);
      agent.current.current = frame.agent;
      setPicked(frame.agent);
      for (const call of frame.calls) liveCall(call);
    },
    onCall: liveCall,
    onResult: ({ toolCallId }) => started.current.delete(toolCallId), // a later call may reuse the id
    onNotice: notices.add,
    onEnded: (why, kept) => {
      Promise.all(kept.map(answerByHTTP)).then(reload).catch(() => {}).finally(() => liveCalls.current.clear());
    },
  });

  // A live segment that ended with a browser call of this tab open (the
  // page that held it reloaded, and the segment was still closing when the
  // reloaded page asked to resume) leaves the call to no socket: a load
  // that shows it runs it, and its answer goes to POST /ToolResult.
  leftLive.current = (loaded) => {
    if (liveMode.on) return;
    for (const m of loaded.filter((x) => x.role === 'assistant' && x.id.startsWith('live-'))) {
      for (const p of m.parts) {
        const name = p.type.slice('tool-'.length);
        if (p.state === 'input-available' && p.providerExecuted === false && isBrowserTool(name) &&
          p.callProviderMetadata?.baton?.deviceId === device) runLiveTool({ toolCallId: p.toolCallId, toolName: name, input: p.input });
      }
    }
  };

  /** A call live mode shows: a browser call of this tab's runs here. */
  function liveCall(frame) {
    liveCalls.current.add(frame.toolCallId);
    setMessages((ms) => withToolCall(ms, frame, device));
    if (frame.kind === 'browser' && (!frame.deviceId || frame.deviceId === device)) runLiveTool(frame);
  }

  async function runLiveTool({ toolCallId, toolName, input: args }) {
    if (started.current.has(toolCallId)) return; // running, or ran: the socket keeps its answer
    started.current.add(toolCallId);
    setRunning((m) => new Map(m).set(toolCallId, 'running in this tab…'));
    const result = await runBrowserTool(toolName, args);
    await answerLive(toolCallId, result.error ? { toolCallId, errorText: result.error } : { toolCallId, output: result.output });
    setRunning((m) => {
      const next = new Map(m);
      next.delete(toolCallId);
      return next;
    });
  }

  /**
   * Answers a live call over the socket, or by POST /ToolResult once it is
   * gone; the turn that answer resumed then continues the call's message,
   * which this tab's live-tab wait counts as seen: the conversation is
   * loaded.
   */
  async function answerLive(callId, answer) {
    if (liveMode.answer(callId, answer)) return;
    await answerByHTTP(answer);
    await reload().catch(() => {});
  }

  /** POST /ToolResult with an answer; false when it was not taken (the page says why). */
  async function answerByHTTP({ toolCallId, approvalId, output, errorText, approved, payload }) {
    const body = { sessionId: chatId, clientId: device, toolCallId: approvalId ?? toolCallId };
    if (approvalId) Object.assign(body, { approved, payload });
    else if (errorText !== undefined) body.error = errorText;
    else body.output = output;
    try {
      await postToolResult(identity, body);
      return true;
    } catch (err) {
      notices.add(apiErrorOf(err) ? errorNotice(err) : { kind: 'error', text: `Could not answer ${toolCallId ?? approvalId}: ${err.message}` });
      return false;
    }
  }

  /**
   * Whether useChat can send an answer to part: its call is in the last
   * message, which sendAutomaticallyWhen looks at. A call of an earlier
   * message is answered by POST /ToolResult (answerEarlier).
   */
  const inLastMessage = (part) => !!latest.current.at(-1)?.parts.some((p) => p.toolCallId === part.toolCallId);

  /**
   * Answers a call shown in an earlier message than the last. A later
   * message has usually closed it (the default policy cancels open calls),
   * and this tab may not have been told yet: the server refuses the answer
   * (410), the page says so, and the card shows why the call closed, from
   * the conversation as stored. A call still open takes the answer, and
   * the load shows the turn it resumed.
   */
  async function answerEarlier(answer) {
    const taken = await answerByHTTP(answer);
    await reload().catch(() => {});
    return taken;
  }

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
    if (liveCalls.current.has(part.toolCallId)) {
      setMessages((ms) => withAnswer(ms, part.toolCallId, { approved, input: approved ? mergePatch(part.input, payload) : part.input }));
      await answerLive(part.toolCallId, { approvalId: part.approval.id, approved, ...(approved ? { payload } : {}) });
      return;
    }
    if (!inLastMessage(part)) {
      await answerEarlier({ approvalId: part.approval.id, approved, ...(approved ? { payload } : {}) });
      return;
    }
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
    // A question asked during a call (input.live) is answered on its own
    // (ToolResult): the turn it belongs to goes on in the stream this tab
    // follows, which may be the idle tab's wait (a remote agent's question
    // while the turn waits on it), so that wait goes on too.
    if (!part.input?.live || liveCalls.current.has(part.toolCallId)) live.current?.();
    if (liveCalls.current.has(part.toolCallId)) {
      setMessages((ms) => withAnswer(ms, part.toolCallId, { output }));
      await answerLive(part.toolCallId, { toolCallId: part.toolCallId, output });
      return;
    }
    if (!part.input?.live && !inLastMessage(part)) {
      await answerEarlier({ toolCallId: part.toolCallId, output });
      return;
    }
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

  /** A press on a form: the output of the call that waits on it. */
  async function answerSurface(callId, action) {
    live.current?.();
    if (!inLastMessage({ toolCallId: callId })) {
      await answerEarlier({ toolCallId: callId, output: { action } });
      return;
    }
    await addToolOutput({ tool: SURFACE_TOOL, toolCallId: callId, output: { action } });
  }

  notices.count.current = messages.length;
  const busy = status === 'submitted' || status === 'streaming';
  const surfaces = useMemo(() => surfacesOf(messages), [messages]);
  const callOf = useCallback((id) => (id ? callPart(latest.current, id) : undefined), []);

  /** A press on a card: a user message holding the action. */
  const cardAction = (action) => {
    if (busy) return;
    live.current?.();
    chatStarted(chatId);
    follow.toEnd();
    sendMessage({ parts: [{ type: 'data-a2ui-action', data: { version: 'v0.9', action } }] });
  };
  // While this tab is live its own frames show the conversation: the
  // live-tab wait rests until the segment ends.
  live.current = useLiveTurns({ chatId, identity, transport, messages, setMessages, onLoaded: showLatest,
    idle: !busy && running.size === 0 && !liveMode.on });
  const liveIds = useMemo(() => liveMessageIds(messages), [messages]);

  // Earlier messages, a page at a time, when the person scrolls to the
  // top of the conversation or asks for them.
  const earlier = messages.length > 0 && earlierThan.current.get(messages[0].id) === true;
  const [paging, setPaging] = useState(false);
  const loadEarlier = async () => {
    if (paging || !earlier) return;
    setPaging(true);
    try {
      const page = await loadChat(chatId, identity, { before: messages[0].id });
      earlierThan.current.set(page.messages[0]?.id, !!page.earlier);
      follow.keepPlace();
      setMessages((ms) => [...page.messages.filter((m) => !ms.some((x) => x.id === m.id)), ...ms]);
    } catch (err) {
      notices.add({ kind: 'error', text: `Could not load earlier messages: ${err.message}` });
    } finally {
      setPaging(false);
    }
  };
  const follow = useFollow(messages.at(-1), loadEarlier);

  // Stop: useChat's stop() only ends this tab's stream; DELETE
  // /Chat/{chatId}/stream stops the turn on the server, whichever instance
  // runs it, and returns once it has ended (docs/stop.md). The page then
  // shows the turn as stored: what the model had written, marked stopped.
  // A message stopped before it reached the server (while the page waited
  // out a rate limit or a busy session) is not stored: it goes back into
  // the message box.
  const stopTurn = async () => {
    await stop();
    try {
      await stopChat(chatId, identity);
    } catch (err) {
      // A chat whose first message was stopped before it was stored is
      // not on the server (404): nothing ran.
      if (err.status !== 404) notices.add(errorNotice(err));
    }
    await showStored().catch((err) => notices.add({ kind: 'error', text: `Could not load the conversation: ${err.message}` }));
  };

  const send = (e) => {
    e.preventDefault();
    const text = input.trim();
    if (liveMode.on) {
      // While live, typed text goes over the socket; the server says it
      // back as the user's words, which show it.
      if (text && liveMode.sendText(text)) setInput('');
      return;
    }
    if (!text || busy) return;
    // What the page can check before sending (the limits /config.json
    // gives): said here, and nothing is sent.
    const tooLarge = sizeProblem(text, files, config.limits);
    if (tooLarge) {
      setProblem(tooLarge);
      return;
    }
    live.current?.();
    chatStarted(chatId);
    setInput('');
    setFiles(null);
    setProblem('');
    follow.toEnd();
    if (unsent.size > 0) {
      // Messages the server refused were never stored: they leave the
      // conversation once the person sends again.
      setMessages((ms) => ms.filter((m) => !unsent.has(m.id)));
      setUnsent(new Set());
    }
    sendMessage(files ? { text, files } : { text });
  };

  const lastAssistant = messages.findLast((m) => m.role === 'assistant')?.id;
  // The turn waits on the server's background work (a playlist being
  // prepared): Stop ends it too, whichever instance runs it.
  const working = !busy && runsInBackground(messages.findLast((m) => m.role === 'assistant'));
  // A live conversation of another tab (or device), which this tab's
  // resumed stream follows (the server said so): Send and Live wait for it.
  const liveElsewhere = busy && followsLive && !liveMode.on;
  // What keeps a message's controls (Regenerate, Edit, the rating of the
  // last answer) back: a turn that is not over, here, in the background or
  // in a live conversation of this tab or another.
  const held = busy || working || running.size > 0 || liveMode.on;
  return (
    <div className="app" data-testid="app" data-ready="true" data-state={busy || running.size ? 'working' : 'idle'}
      data-ai-sdk={__AI_SDK_VERSION__}>
      <Header config={config} agents={agents} picked={picked} onPick={setPicked} onNewChat={onNewChat} chrome={chrome} />
      {notice}
      <main className="chat" aria-label="Chat with the agent">
        <div className="view">
          <div className="messages" data-testid="log" ref={follow.ref} onScroll={follow.onScroll} role="log" aria-label="Conversation">
            <div className="log" data-testid="messages" ref={follow.content}>
              {/* Headings the agent draws (an A2UI form's title, an h3) come below this one. */}
              <h2 className="visually-hidden">Conversation</h2>
              {earlier && (
                <button type="button" className="link earlier" data-testid="earlier" disabled={paging} onClick={loadEarlier}>
                  {paging ? 'Loading earlier messages…' : 'Earlier messages'}
                </button>
              )}
              {messages.length === 0 && notices.list.length === 0 && (
                <p className="hint" data-testid="hint">Say hello, or try one of the suggestions below.</p>
              )}
              {messages.map((m, i) => (
                <Fragment key={m.id}>
                  {notices.render(i)}
                  <Message message={m} live={liveIds.has(m.id)} unsent={unsent.has(m.id)} device={device} running={running} onDecide={decide}
                    onAnswer={answerInput} surfaces={surfaces} callOf={callOf} onSurfaceAnswer={answerSurface} onCardAction={cardAction} />
                  {!unsent.has(m.id) && <MessageActions message={m} last={m.id === lastAssistant} busy={held}
                    waiting={liveElsewhere ? LIVE_ELSEWHERE : undefined}
                    onRegenerate={(messageId) => { live.current?.(); regenerate({ messageId }); }}
                    onRate={(messageId, rating) => rate(identity, chatId, messageId, rating)}
                    onEdit={(messageId, text) => {
                      live.current?.();
                      // The edited message keeps its files: sent back as the URLs
                      // Baton gave them, which /Chat takes as the same files.
                      const files = m.parts.filter((p) => p.type === 'file');
                      sendMessage(files.length > 0 ? { text, files, messageId } : { text, messageId });
                    }} />}
                </Fragment>
              ))}
              {notices.render(messages.length, true)}
              {initial.error && <div className="system" data-testid="system-message" data-kind="error" role="alert">
                <span className="text">Could not load the conversation: {initial.error}</span></div>}
            </div>
          </div>
          {follow.behind && (
            <button type="button" className="jump" data-testid="jump-latest" onClick={follow.toEnd}>Jump to latest ↓</button>
          )}
        </div>
        <form className="composer" data-testid="composer" aria-label="Your message" onSubmit={send}>
          <Suggestions list={config.suggestions?.[picked] ?? []} onPick={(s) => {
            setInput(s);
            inputRef.current?.focus();
          }} />
          <LiveStatus live={liveMode} />
          {liveElsewhere && (
            <p className="live-status" data-testid="live-elsewhere" role="status">
              Another tab is in a live conversation in this chat: Send and Live wait until it ends. Stop ends it.
            </p>
          )}
          {problem && <p className="composer-problem" data-testid="composer-problem" role="alert">{problem}</p>}
          <div className="row">
            <label htmlFor="input" className="visually-hidden">Message</label>
            <input id="input" ref={inputRef} data-testid="composer-input" autoComplete="off" required
              placeholder={liveMode.on ? 'Type to the live agent…' : 'Message the agent…'}
              value={input} onChange={(e) => {
                setInput(e.target.value);
                setProblem('');
              }} />
            <Attach files={files} onChange={(f) => {
              setFiles(f);
              setProblem('');
            }} disabled={busy || liveMode.on} />
            <button type="submit" data-testid="send" disabled={busy || (liveMode.on && liveMode.state !== 'live')}>Send</button>
            {(busy || working) && <button type="button" data-testid="stop" onClick={stopTurn}>Stop</button>}
            {config.liveModel && <LiveButton live={liveMode} model={config.liveModel} disabled={busy && !liveMode.on} />}
          </div>
        </form>
      </main>
      <footer className="ids">
        <span>user <code data-testid="user-id">{identity.user}</code></span>
        <span>session <code data-testid="session-id">{chatId}</code></span>
        <span>tab <code data-testid="client-id">{device}</code></span>
        <span>AI SDK <code data-testid="ai-sdk">{__AI_SDK_VERSION__}</code></span>
      </footer>
    </div>
  );
}

const LIVE_ELSEWHERE = 'Another tab is in a live conversation in this chat: this waits until it ends.';

function Header({ config, agents, picked, onPick, onNewChat, chrome }) {
  const modelName = config.model ? String(config.model).split(' (')[0] : 'unknown';
  return (
    <header className="top">
      <h1>Baton <span className="sub">demo</span></h1>
      <span className="badge" data-testid="model" title={config.model ? `Model: ${config.model}` : 'The model answering in this session'}>
        Model: {modelName}
      </span>
      <label className="agent">Agent{' '}
        <select data-testid="agent" title="The agent that answers your next message" value={picked}
          onChange={(e) => onPick(e.target.value)}>
          {agents.map((name) => <option key={name} value={name}>{name}</option>)}
        </select>
      </label>
      <div className="bgm" data-testid="bgm" data-track="0" role="status" aria-live="polite">
        <span className="bars" aria-hidden="true"><i /><i /><i /></span>
        <span data-testid="bgm-label">Music off</span>
        <button type="button" className="link" data-testid="bgm-stop" hidden onClick={() => playTrack(0)}>Stop</button>
      </div>
      <button type="button" data-testid="new-chat" onClick={onNewChat}>New chat</button>
      {chrome}
    </header>
  );
}

/**
 * What the picked agent can do, as the server lists it (config.json's
 * suggestions, by agent): a chip puts its text in the message box.
 */
function Suggestions({ list, onPick }) {
  if (list.length === 0) return null;
  return (
    <div className="suggestions" role="group" aria-label="Try these">
      {list.map((s) => (
        <button key={s} type="button" className="chip" data-testid="suggestion" onClick={() => onPick(s)}>{s}</button>
      ))}
    </div>
  );
}

/**
 * Tells the person, once, that the page's sign-in no longer holds (a
 * request stayed 401 after a fresh ID token), with a button that signs in
 * again: the page reloads signed out, and signs in anew.
 */
function useSignedOut(identity, add) {
  useEffect(() => {
    let told = false;
    const tell = () => {
      if (told) return;
      told = true;
      add({
        kind: 'error', text: 'Your sign-in is no longer valid, so this page cannot reach the agent. Sign in again to go on.',
        retryLabel: 'Sign in again',
        retry: async () => {
          await identity.signOut().catch(() => {});
          location.reload();
        },
      });
    };
    if (isSignedOut()) tell();
    window.addEventListener(SIGNED_OUT, tell);
    return () => window.removeEventListener(SIGNED_OUT, tell);
  }, [identity, add]);
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

/**
 * Whether message has a call the server runs in the background still
 * under way: provider-executed, nobody's to answer, with no result yet
 * (running, or showing its progress as a preliminary output).
 */
function runsInBackground(message) {
  return !!message?.parts.some((p) => (p.type.startsWith('tool-') || p.type === 'dynamic-tool') && p.providerExecuted &&
    !(p.callProviderMetadata ?? p.providerMetadata)?.baton?.deviceId &&
    (p.state === 'input-available' || (p.state === 'output-available' && p.preliminary)));
}
