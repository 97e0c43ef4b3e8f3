// Live mode's socket (docs/live.md, "The demo page"; the frames are in
// docs/http-api.md): GET /Chat/{chatId}/live?device=<this tab>, whose
// first frame names the user ({"auth": ID token}, or {"user": name} with
// the local runner's development identity). It comes back by itself: a
// socket that drops without an end frame (the server gone, the network
// cut), or that the browser going offline leaves for dead (a socket whose
// peer vanished may stay open for minutes), is opened again after growing
// pauses (at once when the browser is back online; the server replaces
// the conversation the same tab left), and so is one the server ends for a
// reason that asks for it
// (timeout: the conversation's longest; closed with no error: the instance
// is stopping); an open refused as busy (a text turn runs, or a dead
// holder's lease has not lapsed yet) is tried again; one refused as
// unauthenticated gets one fresh ID token. Any other end is final, and
// said.
//
// An answer the page gives is kept until the call's tool-result arrives:
// a ready frame after a reconnect lists the calls still waiting for this
// tab, and the kept answers among them are sent again (never run again);
// those it no longer lists were recorded. The page gets the answers still
// kept when the conversation ends for good, to send another way.

import { sayUnauthorized } from './chatapi.js';

const PAUSES = [500, 1000, 2000, 4000, 5000]; // ms between tries, the last repeated
const CLOSE_WAIT = 3000; // ms for the end frame after {"close": true}
const SEND_BACKLOG = 1 << 16; // bytes queued on the socket beyond which microphone frames are dropped
const BUSY_TRIES = 12; // opens refused as busy or live in a row before giving up

/** What an end reason means for the person. */
const ENDED = {
  stopped: 'stopped (from this tab or another)',
  'lease-lost': 'another tab or device took this chat over',
  replaced: 'it goes on in another window that has this tab\'s id',
  closed: 'the server closed it',
};

/** What an error that refuses the conversation means for the person. */
const REFUSED = {
  live: 'another tab or device is live in this chat: end it there first',
  live_unavailable: 'live mode is not configured on this server',
  rate_limited: 'too many conversations for now: try again later',
  budget_exhausted: 'today\'s usage limit is reached',
};

/**
 * on: {state({state, why}), ready(frame, again), transcript(frame),
 * toolCall(frame), toolResult(frame), signal(type), error(frame),
 * audio(ArrayBuffer), ended(why, keptAnswers)}. state is connecting,
 * live, reconnecting or ended.
 */
export class LiveSocket {
  constructor({ chatId, device, agent, identity, on }) {
    Object.assign(this, { chatId, device, agent, identity, on });
    this.kept = new Map(); // answers given, by call id, until their tool-result
    this.conn = null; // {ws, ready, error, ended}
    this.tries = 0; // tries failed in a row
    this.readies = 0;
    this.refreshed = false; // a fresh ID token was taken for this open
    this.stopping = false; // the person ended it
    this.over = false;
    this.timer = null;
    this.online = () => {
      if (this.timer === null) return;
      clearTimeout(this.timer);
      this.timer = null;
      this.connect();
    };
    this.offline = () => {
      const conn = this.conn;
      if (!conn || this.over || this.timer !== null) return;
      this.conn = null; // its frames are not read any more
      conn.ws.close();
      this.dropped();
    };
  }

  start() {
    window.addEventListener('online', this.online);
    window.addEventListener('offline', this.offline);
    this.state('connecting');
    this.connect();
  }

  /** Sends text the person typed; false when not live right now. */
  sendText(text) {
    return this.send({ content: { parts: [{ text }] } });
  }

  /** Sends a frame of the microphone; dropped while not live or backed up. */
  sendAudio(pcm) {
    const ws = this.conn?.ws;
    if (!this.conn?.ready || ws.readyState !== WebSocket.OPEN || ws.bufferedAmount > SEND_BACKLOG) return false;
    ws.send(pcm);
    return true;
  }

  /**
   * Answers a call (answer is the frame's {"answer": …} body): sent now
   * when live, else after the next ready that still lists the call.
   */
  answer(callId, answer) {
    this.kept.set(callId, answer);
    this.send({ answer });
  }

  /** Ends the conversation ({"close": true}), as the person asked. */
  end() {
    if (this.over) return;
    this.stopping = true;
    const ws = this.conn?.ws;
    if (this.conn?.ready && ws.readyState === WebSocket.OPEN) {
      ws.send(JSON.stringify({ close: true }));
      setTimeout(() => this.over || this.finish('you ended it'), CLOSE_WAIT);
      return;
    }
    this.finish('you ended it');
  }

  send(frame) {
    const ws = this.conn?.ws;
    if (!this.conn?.ready || ws.readyState !== WebSocket.OPEN) return false;
    ws.send(JSON.stringify(frame));
    return true;
  }

  url() {
    const q = new URLSearchParams({ device: this.device });
    if (this.agent) q.set('agent', this.agent);
    const scheme = location.protocol === 'https:' ? 'wss:' : 'ws:';
    return `${scheme}//${location.host}/Chat/${encodeURIComponent(this.chatId)}/live?${q}`;
  }

  connect() {
    this.timer = null;
    const ws = new WebSocket(this.url());
    ws.binaryType = 'arraybuffer';
    const conn = { ws, ready: false, error: null, ended: false };
    this.conn = conn;
    ws.onopen = async () => {
      const first = await this.identity.socketAuth().catch(() => ({ auth: '' }));
      if (this.conn === conn && ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify(first));
    };
    ws.onmessage = (e) => this.conn === conn && this.frame(conn, e.data);
    ws.onclose = () => this.conn === conn && !conn.ended && this.dropped();
  }

  frame(conn, data) {
    if (this.over) return; // ended here while frames were on their way
    if (typeof data !== 'string') {
      this.on.audio(data);
      return;
    }
    let m;
    try {
      m = JSON.parse(data);
    } catch {
      return;
    }
    switch (m.type) {
      case 'ready':
        conn.ready = true;
        this.tries = 0;
        this.refreshed = false;
        this.state('live');
        this.resend(m.calls ?? []);
        this.on.ready(m, this.readies++ > 0);
        break;
      case 'error':
        conn.error = m;
        if (conn.ready) this.on.error(m);
        break;
      case 'end':
        conn.ended = true;
        this.ended(conn, m.reason);
        break;
      case 'tool-result':
        this.kept.delete(m.toolCallId);
        this.on.toolResult(m);
        break;
      case 'tool-call':
        this.on.toolCall(m);
        break;
      case 'transcript':
        this.on.transcript(m);
        break;
      default:
        this.on.signal(m.type); // turn-complete, interrupted, reconnecting
    }
  }

  /** Sends again the kept answers of the calls ready lists; forgets the others. */
  resend(calls) {
    const listed = new Set(calls.map((c) => c.toolCallId));
    for (const [id, answer] of this.kept) {
      if (listed.has(id)) this.send({ answer });
      else this.kept.delete(id);
    }
  }

  /** The server ended the conversation: come back, or say why not. */
  ended(conn, reason) {
    const code = conn.error?.code;
    conn.ws.close();
    if (this.stopping) this.finish('you ended it');
    else if (!conn.ready && code === 'unauthenticated') this.refresh();
    else if (!conn.ready && (code === 'busy' || (code === 'live' && this.readies > 0)) && this.tries < BUSY_TRIES) this.retry();
    else if (reason === 'timeout' || (reason === 'closed' && !conn.error)) this.retry(true);
    else this.finish(REFUSED[code] ?? (conn.error && !conn.ready ? conn.error.message : ENDED[reason] ?? reason));
  }

  /** The socket dropped without an end frame: come back. */
  dropped() {
    if (this.stopping) this.finish('you ended it');
    else this.retry();
  }

  retry(atOnce = false) {
    if (this.over) return;
    this.state('reconnecting');
    const pause = atOnce ? 0 : PAUSES[Math.min(this.tries, PAUSES.length - 1)];
    this.tries++;
    this.timer = setTimeout(() => this.connect(), pause);
  }

  /** One fresh ID token per open, as the HTTP requests get. */
  async refresh() {
    if (!this.refreshed) {
      this.refreshed = true;
      try {
        await this.identity.refresh();
        if (!this.over) this.connect();
        return;
      } catch {
        // the sign-in no longer holds
      }
    }
    sayUnauthorized();
    this.finish('the sign-in no longer holds');
  }

  finish(why) {
    if (this.over) return;
    this.over = true;
    clearTimeout(this.timer);
    window.removeEventListener('online', this.online);
    window.removeEventListener('offline', this.offline);
    this.conn?.ws.close();
    this.state('ended', why);
    this.on.ended(why, [...this.kept.values()]);
    this.kept.clear();
  }

  state(state, why = '') {
    this.on.state({ state, why });
  }
}
