// Browser scenarios for the demo page, a useChat app, in headless Chromium
// driven by playwright-core, against a running `go run ./local` (BATON_URL).
//
//   cd local/e2e && npm ci && BATON_URL=http://127.0.0.1:8080 node --test scenarios.test.mjs
//
// (BATON_E2E_SDK=7 or 6 limits the run to one of the two pages below;
// BATON_E2E_CLAIMS and BATON_E2E_TIMED are described where they are read.)
//
// Every scenario runs twice: on the page built with ai 7 and @ai-sdk/react 4
// (served at /) and on the same page built with ai 6 and @ai-sdk/react 3
// (served at /ai6/). Each uses a fresh browser context (a new user, signed
// in anonymously to the Firebase Auth emulator, and a new chat), refuses any
// request that would leave the machine, and saves a screenshot in
// test-output/. Every stream a scenario's pages receive from Chat is also
// read with the installed `ai` package the page was built with
// (uistream.mjs): an answer's stream must continue the message it answers.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { closeSync, mkdirSync, openSync, rmSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { inflateRawSync } from 'node:zlib';
import { createRequire } from 'node:module';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import * as ai7 from 'ai';
import * as ai6 from 'ai-v6';
import { watchStreams } from './uistream.mjs';
import { fakeMicArgs, recordLiveStates, writeToneWav } from './livemode.mjs';

// axe-core's browser build, injected into pages by the accessibility scenario.
const axePath = createRequire(import.meta.url).resolve('axe-core/axe.min.js');

// The page builds, the SDK each was built with, and the major version the
// page must report. BATON_E2E_SDK=7 (or 6) runs the scenarios on that page
// only.
const SDKS = [
  { label: 'ai 7', path: '/', sdk: ai7, major: '7' },
  { label: 'ai 6', path: '/ai6/', sdk: ai6, major: '6' },
].filter(({ major }) => !process.env.BATON_E2E_SDK || process.env.BATON_E2E_SDK === major);
if (SDKS.length === 0) throw new Error(`BATON_E2E_SDK=${process.env.BATON_E2E_SDK} names no page build (7 or 6)`);

// BATON_E2E_CLAIMS names a directory that node processes running the
// scenarios side by side share: each runs a scenario only once it has
// claimed it there (by creating a file of its name), and skips the ones
// another process claimed first. So the processes share the work as it
// goes, whatever each scenario takes, and together run every one once.
const CLAIMS = process.env.BATON_E2E_CLAIMS || '';

/** Claims the scenario named key for this process; false if another has. */
function claim(key) {
  if (!CLAIMS) return true;
  try {
    closeSync(openSync(join(CLAIMS, key), 'wx'));
    return true;
  } catch (err) {
    if (err.code === 'EEXIST') return false;
    throw err;
  }
}

// BATON_E2E_TIMED=only runs only the scenarios that hold a latency bound
// (declared with { timed: true }), =skip all the others; unset, all of
// them. local's Go test runs the timed ones alone after the others, so
// that a bound is measured on a machine not busy with three other
// browsers.
const TIMED = process.env.BATON_E2E_TIMED || '';
if (!['', 'only', 'skip'].includes(TIMED)) throw new Error(`BATON_E2E_TIMED=${TIMED}: want only or skip`);

const BASE = (process.env.BATON_URL || 'http://127.0.0.1:8080').replace(/\/$/, '');
const OUT = join(import.meta.dirname ?? new URL('.', import.meta.url).pathname, 'test-output');
// Longest wait for one expected change on the page. A wait returns as soon
// as its change shows; the bound matters only when one never does, and it is
// generous because four node processes run at once beside other packages' tests
// on a 2-core machine (a 15 s bound once ran out there). On a machine busier
// than that (its load average over its cores, when the process starts) it
// grows in proportion, up to four times.
const WAIT = 30_000 * Math.min(4, Math.max(1, loadavg()[0] / availableParallelism()));

let browser;
// The fake microphone's recording (livemode.mjs), one per process.
const MIC = join(tmpdir(), `baton-e2e-mic-${process.pid}.wav`);

before(async () => {
  mkdirSync(OUT, { recursive: true });
  writeToneWav(MIC);
  browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync', ...fakeMicArgs(MIC)],
  });
});

after(async () => {
  await browser?.close();
  rmSync(MIC, { force: true });
});

// --- helpers ------------------------------------------------------------------

const sel = (id, attrs = '') => `[data-testid="${id}"]${attrs}`;

/**
 * Declares a scenario, once per page build (SDKS). When it fails, every
 * page it opened is saved as test-output/FAILED-<sdk>-<slug>-<n>.png before
 * its contexts close.
 */
function scenario(title, slug, fn, { timed = false } = {}) {
  if ((TIMED === 'only' && !timed) || (TIMED === 'skip' && timed)) return;
  for (const { label, path, sdk, major } of SDKS) {
    const prefix = major === '7' ? '' : `ai${major}-`;
    test(`${label}: ${title}`, async (t) => {
      if (!claim(`ai${major}-${slug}`)) {
        t.skip('run by another process');
        return;
      }
      const contexts = [];
      const watchers = [];
      const offsite = []; // requests that would leave the machine, refused
      t.newContext = async () => {
        const context = await browser.newContext({ viewport: { width: 820, height: 760 } });
        await context.route((url) => !['127.0.0.1', 'localhost'].includes(url.hostname), (route) => {
          offsite.push(route.request().url());
          return route.abort();
        });
        Object.assign(context, { base: BASE + path, major, prefix });
        contexts.push(context);
        watchers.push(await watchStreams(context, sdk));
        return context;
      };
      // Waits for the streams seen so far to be read by the AI SDK, fails
      // on the first it refused, and returns how many it read of each kind.
      t.streamsRead = async () => {
        for (const w of watchers) await w.check();
        return watchers.reduce((sum, w) => ({
          turns: sum.turns + w.counts.turns, resumes: sum.resumes + w.counts.resumes, replays: sum.replays + w.counts.replays,
        }), { turns: 0, resumes: 0, replays: 0 });
      };
      try {
        await fn(t);
        const read = await t.streamsRead();
        assert.ok(read.turns + read.resumes + read.replays > 0, 'no stream was read with the AI SDK');
        t.diagnostic(`AI SDK ${major} read ${read.turns} turn, ${read.resumes} answer and ${read.replays} replay streams`);
        assert.deepEqual(offsite, [], 'the page asked for something beyond this machine');
      } catch (err) {
        const pages = contexts.flatMap((c) => c.pages());
        for (const [i, page] of pages.entries()) {
          await page.screenshot({ path: join(OUT, `FAILED-${prefix}${slug}-${i + 1}.png`) }).catch(() => {});
        }
        throw err;
      } finally {
        for (const context of contexts) await context.close();
      }
    });
  }
}

/**
 * Opens the page in a new tab and waits until it has restored the session;
 * prepare, when given, is called with the tab before it loads the page.
 */
async function openTab(context, prepare) {
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (err) => errors.push(err.message));
  page.errors = errors;
  await prepare?.(page);
  await page.goto(context.base);
  await ready(page);
  assert.equal((await page.getAttribute(sel('app'), 'data-ai-sdk')).split('.')[0], context.major, 'the page runs the AI SDK under test');
  return page;
}

async function ready(page) {
  await page.waitForSelector(sel('app', '[data-ready="true"]'), { timeout: WAIT });
}

/** Picks the agent for the next message, when the server has one of that name. */
async function chooseAgent(page, name) {
  if (await count(page, `${sel('agent')} option[value="${name}"]`)) {
    await page.selectOption(sel('agent'), name);
  }
}

async function send(page, text) {
  await front(page);
  await page.fill(sel('composer-input'), text);
  await page.click(sel('send'));
}

/**
 * Makes page the tab in front. Chromium draws only the front tab of a
 * window, and Playwright waits for drawn frames (an element is stable when
 * two frames agree): acting on a tab behind another takes seconds a click.
 */
async function front(page) {
  await page.bringToFront();
}

/** Waits for an assistant message whose text matches re, and returns it. */
async function assistantSays(page, re, timeout = WAIT) {
  const handle = await page.waitForFunction(([source, flags]) => {
    const pattern = new RegExp(source, flags);
    const found = [...document.querySelectorAll('[data-testid="message"][data-role="assistant"]')]
      .map((m) => m.innerText)
      .find((text) => pattern.test(text));
    return found ?? false;
  }, [re.source, re.flags], { timeout }).catch((err) => {
    throw new Error(`no assistant message matched ${re}: ${err.message}`);
  });
  return handle.jsonValue();
}

/** Records, in the array it returns, every POST /Chat the page makes from now on. */
function recordPosts(page) {
  const posts = [];
  page.on('request', (req) => {
    if (req.method() === 'POST' && new URL(req.url()).pathname === '/Chat') posts.push(req);
  });
  return posts;
}

async function count(page, selector) {
  return page.locator(selector).count();
}

async function ids(page) {
  return {
    user: await page.textContent(sel('user-id')),
    session: await page.textContent(sel('session-id')),
    client: await page.textContent(sel('client-id')),
  };
}

/** Calls GET /Pending from inside the page, as its user and the given client. */
function pendingFor(page, { session, client }) {
  return page.evaluate(async ([s, c]) => {
    const q = new URLSearchParams({ sessionId: s, clientId: c, history: '0' });
    const res = await fetch(`/Pending?${q}`, { headers: await window.batonHeaders() });
    return res.json();
  }, [session, client]);
}

function noPageErrors(...pages) {
  for (const page of pages) assert.deepEqual(page.errors, [], 'uncaught errors in the page');
}

/**
 * An init script: once the tab's session says so, records in
 * window.e2eStatuses every status any book_table call card takes, as the
 * page renders it.
 */
function recordStatuses() {
  if (!sessionStorage.getItem('e2e.record-statuses')) return;
  window.e2eStatuses = [];
  const note = () => {
    for (const card of document.querySelectorAll('[data-testid="tool-call"][data-tool-name="book_table"]')) {
      window.e2eStatuses.push(card.dataset.status);
    }
  };
  new MutationObserver(note).observe(document, { subtree: true, childList: true, attributes: true, attributeFilter: ['data-status'] });
}

async function screenshot(page, name) {
  await page.screenshot({ path: join(OUT, `${page.context().prefix}${name}.png`) });
}

// --- scenarios ------------------------------------------------------------------

scenario('change the music to track 2: the tab runs change_bgm and the agent answers', 'music', async (t) => {
  const context = await t.newContext();
  const page = await openTab(context);
  assert.match(await page.textContent(sel('model')), /^Model: (?!unknown)\S/);
  assert.equal(await page.getAttribute(sel('bgm'), 'data-track'), '0');

  await chooseAgent(page, 'dj');
  await send(page, 'change the music to track 2');

  await page.waitForSelector(sel('tool-call', '[data-tool-name="change_bgm"][data-status="done"]'), { timeout: WAIT });
  await page.waitForSelector(sel('bgm', '[data-track="2"]'), { timeout: WAIT });
  assert.match(await page.textContent(sel('bgm-label')), /Now playing: Track 2/);
  await assistantSays(page, /track 2/i);
  assert.equal((await t.streamsRead()).resumes, 1, 'the resume stream, read as the turn\'s message');
  assert.equal(await count(page, sel('message', '[data-role="assistant"]')), 1, 'the resume continues the turn\'s message');
  await screenshot(page, 'music');
  noPageErrors(page);
});

scenario('two tabs of one user: the tool request reaches only the tab that asked, the other shows it live', 'two-tabs', async (t) => {
  const context = await t.newContext();
  await context.addInitScript(recordStatuses);
  const asker = await openTab(context);
  const other = await openTab(context);
  const a = await ids(asker);
  const b = await ids(other);
  assert.equal(b.user, a.user, 'one user per browser profile');
  const sent = await asker.evaluate(() => window.batonHeaders());
  assert.match(sent.Authorization ?? '', /^Bearer [\w-]+\.[\w-]+\./, 'signed in through Firebase Auth, not a development identity');
  assert.equal(sent['X-Baton-User'], undefined, 'no development identity header');
  assert.equal(b.session, a.session, 'one session per browser profile');
  assert.notEqual(b.client, a.client, 'one client id per tab');

  // A browser tool: only the asking tab plays the music.
  await chooseAgent(asker, 'dj');
  await send(asker, 'change the music to track 2');
  await asker.waitForSelector(sel('bgm', '[data-track="2"]'), { timeout: WAIT });
  await assistantSays(asker, /track 2/i);

  // An approval, left open: only the asking tab may answer it.
  await chooseAgent(asker, 'concierge');
  await send(asker, 'book a table for 4');
  await asker.waitForSelector(sel('approve'), { timeout: WAIT });

  // The other tab follows the turn live: it shows the call waiting, and no buttons.
  await other.waitForSelector(sel('tool-call', '[data-tool-name="book_table"][data-status="waiting"]'), { timeout: WAIT });
  assert.equal(await count(other, sel('approve')), 0, 'the other tab shows approval buttons');
  // Every state the other tab shows a tool call in, from its reload on:
  // the replay that the reload resumes must not show the call running,
  // even for a moment (Baton's replay asks for approval first).
  await other.evaluate(() => {
    sessionStorage.setItem('e2e.record-statuses', '1');
  });
  await other.reload();
  await ready(other);
  // The other tab shows the conversation but runs nothing and offers no approval.
  await other.waitForSelector(sel('message', '[data-role="user"]:has-text("book a table for 4")'), { timeout: WAIT });
  assert.equal(await count(other, sel('approve')), 0, 'the other tab shows approval buttons');
  await other.waitForSelector(sel('tool-call', '[data-tool-name="book_table"][data-status="waiting"]'), { timeout: WAIT });
  assert.equal(await count(other, sel('tool-call', ':not([data-status="waiting"]):not([data-status="done"])')), 0,
    'the other tab took up a call');
  await other.waitForTimeout(500); // the replay is over
  assert.deepEqual(await other.evaluate(() => [...new Set(window.e2eStatuses)]), ['waiting'],
    'the states the reloaded other tab showed the open approval in');
  assert.equal(await other.getAttribute(sel('bgm'), 'data-track'), '0', 'the other tab ran change_bgm');
  const listed = await pendingFor(other, b);
  assert.deepEqual(listed.calls, [], 'Pending lists the call for the other tab');
  const own = await pendingFor(asker, a);
  assert.deepEqual(own.calls.map((c) => c.toolName), ['book_table'], 'Pending for the asking tab');

  // The asking tab still has its approval after a reload.
  await asker.reload();
  await ready(asker);
  await asker.waitForSelector(sel('approve'), { timeout: WAIT });

  await screenshot(other, 'two-tabs');
  await screenshot(asker, 'two-tabs-asker');
  noPageErrors(asker, other);
});

scenario('reload while get_location is pending: the reloaded tab completes the call', 'reload', async (t) => {
  const context = await t.newContext();
  // On the tab's first load the location never arrives, as if the person
  // ignored the permission prompt; the reloaded page gets a real answer.
  await context.addInitScript(() => {
    if (sessionStorage.getItem('e2e.geolocation-blocked')) return;
    sessionStorage.setItem('e2e.geolocation-blocked', '1');
    navigator.geolocation.getCurrentPosition = () => {};
  });
  const page = await openTab(context);

  await send(page, 'where am I?');
  await page.waitForSelector(sel('tool-call', '[data-tool-name="get_location"][data-status="running"]'), { timeout: WAIT });
  await page.waitForSelector(sel('send', ':enabled'), { timeout: WAIT }); // the turn has ended
  const before = await ids(page);
  const pending = await pendingFor(page, before);
  assert.deepEqual(pending.calls.map((c) => c.toolName), ['get_location'], 'the call is pending before the reload');

  await context.grantPermissions(['geolocation'], { origin: BASE });
  await context.setGeolocation({ latitude: 48.85, longitude: 2.35, accuracy: 20 });
  await page.reload();
  await ready(page);
  assert.deepEqual(await ids(page), before, 'same user, session and tab after a reload');

  await page.waitForSelector(sel('tool-call', '[data-tool-name="get_location"][data-status="done"]'), { timeout: WAIT });
  await assistantSays(page, /latitude 48\.85, longitude 2\.35/);
  assert.deepEqual((await pendingFor(page, before)).calls, [], 'no call left pending');
  assert.equal((await t.streamsRead()).resumes, 1, 'the resume after the reload, read as the turn\'s message');
  assert.equal(await count(page, sel('message', '[data-role="assistant"]')), 1, 'the resume continues the turn\'s message');
  await screenshot(page, 'reload');
  noPageErrors(page);
});

scenario('approval: approve with an edited payload, then reject', 'approval', async (t) => {
  const context = await t.newContext();
  const page = await openTab(context);

  await send(page, 'book a table for 4');
  const people = page.locator(sel('approval-field-people'));
  await people.waitFor({ timeout: WAIT });
  assert.equal(await people.inputValue(), '4');
  await people.fill('6');
  await screenshot(page, 'approval-edit');
  await page.click(sel('approve'));
  await assistantSays(page, /table for 6\b/);
  await page.waitForSelector(sel('tool-call', '[data-tool-name="book_table"][data-status="approved"]'), { timeout: WAIT });
  assert.equal(await count(page, sel('approve')), 0, 'the answered approval still shows its buttons');

  await send(page, 'book a table for 2');
  await page.waitForSelector(sel('approve'), { timeout: WAIT });
  await page.click(sel('reject'));
  await assistantSays(page, /did not book/i);
  await page.waitForSelector(sel('tool-call', '[data-tool-name="book_table"][data-status="rejected"]'), { timeout: WAIT });
  assert.equal((await t.streamsRead()).resumes, 2, 'the approval and the rejection, read as their turns\' messages');
  await screenshot(page, 'approval');
  noPageErrors(page);
});

scenario('two quick messages from two tabs: one proceeds, the other is told busy and succeeds on retry', 'busy', async (t) => {
  const context = await t.newContext();
  const tabs = [await openTab(context), await openTab(context)];
  // Slow turns, so that the two overlap whichever goes first.
  const questions = ['count slowly to 5', 'count slowly to 6'];
  const answers = [/Counting: 1, 2, 3, 4, 5\. Done/, /Counting: 1, 2, 3, 4, 5, 6\. Done/];

  // Both tabs press Send at the same instant of the shared clock.
  for (const [i, tab] of tabs.entries()) await tab.fill(sel('composer-input'), questions[i]);
  const at = Date.now() + 300;
  await Promise.all(tabs.map((tab) => tab.evaluate((when) => {
    setTimeout(() => document.querySelector('[data-testid="send"]').click(), when - Date.now());
  }, at)));

  // Exactly one tab is told the session is busy; both get their answer.
  const busySel = sel('system-message', '[data-kind="busy"]');
  const busyTab = await Promise.any(tabs.map((tab) => tab.waitForSelector(busySel, { timeout: WAIT }).then(() => tab)))
    .catch(() => assert.fail('neither tab was told the session is busy'));
  assert.match(await busyTab.innerText(busySel), /busy with another tab/);
  await screenshot(busyTab, 'busy');

  for (const [i, tab] of tabs.entries()) await assistantSays(tab, answers[i]);
  await busyTab.waitForSelector(sel('system-message', '[data-kind="busy"][data-state="resolved"]'), { timeout: WAIT });
  const other = tabs.find((tab) => tab !== busyTab);
  assert.equal(await count(other, busySel), 0, 'both tabs were told the session is busy');
  await screenshot(busyTab, 'busy-retried');
  noPageErrors(...tabs);
});

scenario('agent switch: the concierge answers from what the DJ did, and a reload shows the same', 'switch', async (t) => {
  const context = await t.newContext();
  const page = await openTab(context);
  const agents = await page.$$eval(`${sel('agent')} option`, (os) => os.map((o) => o.value));
  assert.deepEqual(agents.sort(), ['concierge', 'dj'], 'the demo team');

  // The concierge books a table for 4, approved as 6.
  await page.selectOption(sel('agent'), 'concierge');
  await send(page, 'book a table for 4');
  await page.locator(sel('approval-field-people')).fill('6');
  await page.click(sel('approve'));
  await assistantSays(page, /table for 6\b/);

  await page.selectOption(sel('agent'), 'dj');
  await send(page, 'change the music to track 2');
  await page.waitForSelector(sel('bgm', '[data-track="2"]'), { timeout: WAIT });
  await assistantSays(page, /track 2/i);

  await page.selectOption(sel('agent'), 'concierge');
  await send(page, 'what did the DJ just do?');
  const answer = await assistantSays(page, /change_bgm\(track=2\)/);
  assert.match(answer, /dj called change_bgm\(track=2\)/, 'the migrated record names the DJ and the call');
  assert.match(answer, /concierge called book_table\(name=Guest, people=6, time=19:00\)/, 'the record shows the booking that ran');
  await page.waitForFunction(() => document.querySelector('[data-testid="agent"]').value === 'concierge', null, { timeout: WAIT });
  await page.waitForSelector(sel('send', ':enabled'), { timeout: WAIT });
  const live = await conversation(page);
  assert.deepEqual(live.filter((b) => b.system === 'agent').map((b) => b.text),
    ['Switched to dj from concierge.', 'Switched to concierge from dj.']);

  // After a reload the chat still talks to the concierge and shows the
  // conversation as it was shown live: the earlier agents' calls as tool
  // calls (not as their textual records), and both switches.
  await page.reload();
  await ready(page);
  assert.equal(await page.inputValue(sel('agent')), 'concierge');
  await assistantSays(page, /change_bgm\(track=2\)/);
  assert.deepEqual(await conversation(page), live, 'the conversation after a reload');
  assert.ok((await t.streamsRead()).resumes >= 2, 'the approval and the browser tool resumes, read as their turns\' messages');
  await screenshot(page, 'switch');
  noPageErrors(page);
});

scenario('an agent switch in one tab: the other tab\'s picker follows it, and its next message stays with the new agent', 'switch-elsewhere', async (t) => {
  const context = await t.newContext();
  const first = await openTab(context);
  await chooseAgent(first, 'concierge');
  await send(first, 'hello');
  await assistantSays(first, /offline demo model/);
  await first.waitForSelector(sel('send', ':enabled'), { timeout: WAIT });
  const second = await openTab(context);
  assert.equal(await second.inputValue(sel('agent')), 'concierge', 'the second tab opens on the chat\'s agent');

  await chooseAgent(first, 'dj');
  await send(first, 'change the music to track 2');
  await assistantSays(first, /now playing track 2/);
  await second.waitForSelector(`${sel('system-message', '[data-kind="agent"]')}:has-text("Switched to dj from concierge.")`, { timeout: WAIT });
  await second.waitForFunction(() => document.querySelector('[data-testid="agent"]').value === 'dj', null, { timeout: WAIT })
    .catch((err) => {
      throw new Error(`the second tab's picker did not follow the switch to dj: ${err.message}`);
    });
  await second.waitForSelector(sel('send', ':enabled'), { timeout: WAIT });
  await screenshot(second, 'switch-elsewhere');

  // The second tab's next message goes to the dj: no switch back.
  await send(second, 'hello');
  await second.waitForFunction(() => [...document.querySelectorAll('[data-testid="message"][data-role="assistant"]')]
    .filter((m) => /offline demo model/.test(m.innerText)).length === 2, null, { timeout: WAIT });
  await second.waitForSelector(sel('send', ':enabled'), { timeout: WAIT });
  // The switch line stays: the replay of the dj's turn this tab followed
  // carries the switch as the turn's own stream did (it once lacked it,
  // and the replayed message, shown in place of the loaded one, lost the
  // line when this tab's send cut the follow short of its closing load).
  const switches = (await conversation(second)).filter((b) => b.system === 'agent').map((b) => b.text);
  assert.deepEqual(switches, ['Switched to dj from concierge.'], 'the chat stayed with the dj');
  assert.equal(await second.inputValue(sel('agent')), 'dj');
  noPageErrors(first, second);
});

scenario('parallel calls: two browser tools of one step run, and their answers resume the agent once', 'parallel', async (t) => {
  const context = await t.newContext();
  await context.grantPermissions(['geolocation'], { origin: BASE });
  await context.setGeolocation({ latitude: 35.68, longitude: 139.69, accuracy: 30 });
  const page = await openTab(context);

  await chooseAgent(page, 'dj');
  await send(page, 'change the music to track 3 and tell me where I am');
  await page.waitForSelector(sel('tool-call', '[data-tool-name="change_bgm"][data-status="done"]'), { timeout: WAIT });
  await page.waitForSelector(sel('tool-call', '[data-tool-name="get_location"][data-status="done"]'), { timeout: WAIT });
  await page.waitForSelector(sel('bgm', '[data-track="3"]'), { timeout: WAIT });
  const answer = await assistantSays(page, /track 3[\s\S]*latitude 35\.68/i);
  assert.match(answer, /longitude 139\.69/);
  assert.equal((await t.streamsRead()).resumes, 1, 'both answers went out in one request, which resumed the agent');
  assert.equal(await count(page, sel('message', '[data-role="assistant"]')), 1, 'the resume continues the turn\'s message');
  await screenshot(page, 'parallel');
  noPageErrors(page);
});

scenario('reload in the middle of a turn: the page shows the rest of it', 'reload-mid-turn', async (t) => {
  // About 10 s of streaming, so that the reload lands in the turn. On a
  // loaded machine the reload can take longer than the turn: the reloaded
  // page's resume then finds it over (204) and proves nothing, so the
  // scenario counts again, longer, in a new chat, until a reload lands in
  // a running turn.
  for (const n of [40, 120, 360]) {
    const context = await t.newContext();
    const page = await openTab(context);
    await send(page, `count slowly to ${n}`);
    await assistantSays(page, /Counting: 1, 2/); // the first words have streamed
    // The reloaded page's resume of the turn (a live tab's wait carries
    // X-Baton-Wait).
    const resume = page.waitForResponse((res) => res.request().method() === 'GET' &&
      /^\/Chat\/[^/]+\/stream$/.test(new URL(res.url()).pathname) && !res.request().headers()['x-baton-wait'], { timeout: WAIT });
    await page.reload();
    await ready(page);
    if ((await resume).status() === 204) {
      t.diagnostic(`counting to ${n}: the turn was over before the reloaded page asked for it; counting longer`);
      continue;
    }
    // The count streams three numbers every 0.7 s (local/agent's offline model).
    await assistantSays(page, new RegExp(`Counting: 1, 2, 3[\\s\\S]*${n}\\. Done counting\\.`), WAIT + n * 250);
    assert.equal(await count(page, sel('message', '[data-role="user"]')), 1, 'the user message, after the reload');
    assert.equal(await count(page, sel('message', '[data-role="assistant"]')), 1, 'the rest of the turn lands in its message');
    // The page shows the last words before the browser reports the replay's
    // request finished, and only a finished GET is waited for: poll for it.
    const deadline = Date.now() + WAIT;
    while ((await t.streamsRead()).replays < 1 && Date.now() < deadline) await page.waitForTimeout(50);
    assert.ok((await t.streamsRead()).replays >= 1, 'the turn was resumed from the server');
    await page.waitForSelector(sel('send', ':enabled'), { timeout: WAIT });
    await screenshot(page, 'reload-mid-turn');
    noPageErrors(page);
    return;
  }
  assert.fail('no reload landed in a running turn, even counting to 360');
});

/** A promise and the function that resolves it. */
function deferred() {
  let resolve;
  const promise = new Promise((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

scenario('a second tab shows a turn made in the first, without a reload', 'live-tab', async (t) => {
  const context = await t.newContext();
  const first = await openTab(context);
  // The second tab's resume on load (GET /Chat/{chatId}/stream without
  // X-Baton-Wait) reaches the server only once a turn runs in the first
  // tab, which started after the second tab loaded the conversation; its
  // live waits only once that turn is over. So the resume alone shows the
  // turn, and the turn's user message must come with it.
  const started = deferred();
  const over = deferred();
  const second = await openTab(context, (page) => page.route((url) => /^\/Chat\/[^/]+\/stream$/.test(url.pathname), async (route) => {
    const request = route.request();
    if (request.method() === 'GET') await (request.headers()['x-baton-wait'] ? over.promise : started.promise);
    await route.fallback().catch(() => {}); // a wait the page gave up meanwhile
  }));
  await send(first, 'count slowly to 10');
  await assistantSays(first, /Counting: 1, 2/);
  started.resolve();
  await showsExactly(second, [/^count slowly to 10/, /Counting: 1, 2, 3[\s\S]*10\. Done counting\./],
    'the second tab, which resumed a turn started after it loaded');
  await assistantSays(first, /10\. Done counting\./);
  over.resolve();
  await second.waitForSelector(sel('send', ':enabled'), { timeout: WAIT });
  await first.waitForSelector(sel('send', ':enabled'), { timeout: WAIT });
  await second.waitForTimeout(500); // its live wait is open

  await send(first, 'what is 12*7?');
  await assistantSays(first, /12\*7 = 84/);
  await assistantSays(second, /12\*7 = 84/);
  await second.waitForSelector(sel('message', '[data-role="user"]:has-text("what is 12*7?")'), { timeout: WAIT });
  assert.equal(await count(second, sel('message')), 4, 'the second tab shows each user message and answer once');

  // A long turn: the second tab shows the first tab's message as soon as
  // the turn starts, while the answer is still on its way.
  await send(first, 'count slowly to 12');
  await second.waitForFunction(() => {
    const texts = (role) => [...document.querySelectorAll(`[data-testid="message"][data-role="${role}"]`)].map((m) => m.innerText);
    return texts('user').some((t) => t.includes('count slowly to 12')) && !texts('assistant').some((t) => /12\. Done counting/.test(t));
  }, null, { timeout: WAIT }).catch((err) => {
    throw new Error(`the second tab did not show the user message while the turn ran: ${err.message}`);
  });
  await screenshot(second, 'live-tab-running');
  await assistantSays(first, /Counting: 1, 2, 3[\s\S]*12\. Done counting\./);
  await assistantSays(second, /Counting: 1, 2, 3[\s\S]*12\. Done counting\./);
  await showsExactly(second, [/^count slowly to 10/, /10\. Done/, /^what is 12\*7/, /= 84/, /^count slowly to 12/, /12\. Done/],
    'the second tab, every user message and answer once');
  await screenshot(second, 'live-tab');
  noPageErrors(first, second);
});

scenario('a long conversation: each POST carries only the newest message, and every one is answered', 'long-chat', async (t) => {
  const context = await t.newContext();
  const page = await openTab(context);
  const posts = recordPosts(page);
  const rounds = 30;
  for (let i = 1; i <= rounds; i++) {
    await send(page, `what is ${i}*7?`);
    await assistantSays(page, new RegExp(`= ${i * 7}\\.`));
    await page.waitForSelector(sel('send', ':not([disabled])'), { timeout: WAIT });
  }
  assert.equal(posts.length, rounds, 'one POST per message');
  for (const req of posts) {
    const body = req.postDataJSON();
    assert.equal(body.messages.length, 1, 'the page sends only the newest message');
    assert.equal(body.messages[0].role, 'user');
    assert.ok((await req.response()).status() < 300, `POST answered ${(await req.response()).status()}`);
  }
  assert.equal(await count(page, sel('message', '[data-role="user"]')), rounds, 'the page shows the whole conversation');
  await screenshot(page, 'long-chat');
  noPageErrors(page);
});

/** What the page shows of the conversation, block by block. */
function conversation(page) {
  return page.$$eval('[data-testid="messages"] > *', (blocks) => blocks.map((el) => {
    if (el.dataset.testid === 'system-message') return { system: el.dataset.kind, text: el.innerText };
    if (el.dataset.testid !== 'message') return { other: el.className };
    return {
      role: el.dataset.role,
      parts: [...el.children].map((part) => (part.dataset.testid === 'tool-call'
        ? {
          tool: part.dataset.toolName,
          input: part.querySelector('.tool-input').textContent,
          status: part.dataset.status,
          label: part.querySelector('.tool-status').textContent,
          output: part.querySelector('.tool-output').textContent,
        }
        : { text: part.textContent })),
    };
  }));
}

// --- regenerate and edit (docs/conversation-control.md) -------------------------

/** The ids and texts of the messages a page shows, in order. */
function shownMessages(page) {
  return page.$$eval('[data-testid="message"]', (els) => els.map((el) => ({
    role: el.dataset.role, id: el.dataset.messageId, text: el.innerText,
  })));
}

/** Waits until the page shows exactly texts (one pattern per message, in order). */
async function showsExactly(page, patterns, what) {
  await page.waitForFunction((sources) => {
    const els = [...document.querySelectorAll('[data-testid="message"]')];
    return els.length === sources.length && els.every((el, i) => new RegExp(sources[i]).test(el.innerText));
  }, patterns.map((p) => p.source), { timeout: WAIT }).catch(async (err) => {
    const shown = (await shownMessages(page)).map((m) => `${m.role}: ${m.text}`).join(' | ');
    throw new Error(`${what}: want ${patterns.join(', ')}; the page shows ${shown}: ${err.message}`);
  });
}

scenario('reserve a table with a form: the A2UI form renders, is filled and sent, the agent confirms, a reload shows it submitted', 'a2ui-form', async (t) => {
  const context = await t.newContext();
  const page = await openTab(context);
  await chooseAgent(page, 'concierge');
  await send(page, 'reserve a table with a form');

  const form = page.locator(sel('surface', '[data-surface-id="reservation"][data-state="form"]'));
  await form.waitFor({ timeout: WAIT });
  assert.equal(await count(page, sel('tool-call', '[data-tool-name="show_surface"]')), 0, 'the surface call shows as a tool card');
  await form.getByLabel('Date').fill('2026-12-24');
  await form.getByLabel('Party size').fill('4');
  await form.getByLabel('Name').fill('Ada');
  await form.getByRole('button', { name: 'Reserve' }).click();

  await assistantSays(page, /Booked: a table for 4 on 2026-12-24 under the name Ada\./);
  const done = page.locator(sel('surface', '[data-surface-id="reservation"][data-state="submitted"]'));
  await done.waitFor({ timeout: WAIT });
  assert.equal(await done.getAttribute('aria-disabled'), 'true', 'the answered form still takes presses');
  assert.equal((await t.streamsRead()).resumes, 1, 'the form\'s answer resumed the turn once');
  assert.equal(await count(page, sel('message', '[data-role="assistant"]')), 1, 'the resume continues the turn\'s message');
  await screenshot(page, 'a2ui-form');

  await page.reload();
  await ready(page);
  const again = page.locator(sel('surface', '[data-surface-id="reservation"][data-state="submitted"]'));
  await again.waitFor({ timeout: WAIT });
  assert.equal(await count(page, sel('surface')), 1, 'the surface is shown once');
  assert.deepEqual(await again.locator('input').evaluateAll((els) => els.map((e) => e.value)), ['2026-12-24', '4', 'Ada'],
    'the reloaded form shows what was sent');
  assert.equal(await again.getAttribute('aria-disabled'), 'true', 'the reloaded form takes presses');
  await assistantSays(page, /under the name Ada/);
  await screenshot(page, 'a2ui-form-reload');
  noPageErrors(page);
});

/** The tool card of a book_table call for people (its input names them). */
const bookingCard = (people, attrs = '') => sel('tool-call', `[data-tool-name="book_table"]:has(.tool-input:has-text('"people":${people},'))${attrs}`);

/** Matches every GET of the conversation (GET /Chat/{chatId}), not its stream. */
const conversationLoads = (url) => /^\/Chat\/[^/]+$/.test(url.pathname);

scenario('a new message or an agent switch cancels the open calls: every tab shows them cancelled, and a press on one a tab was not told about is refused with the reason', 'cancelled', async (t) => {
  const context = await t.newContext();
  const page = await openTab(context);
  const other = await openTab(context);
  await chooseAgent(page, 'concierge');

  // A new message: the server cancels the open approval (its policy), and
  // both tabs say so, with why.
  await send(page, 'book a table for 2');
  await page.waitForSelector(sel('approve'), { timeout: WAIT });
  await other.waitForSelector(bookingCard(2, '[data-status="waiting"]'), { timeout: WAIT });
  await send(page, 'what is 2+2?');
  await assistantSays(page, /2\+2 = 4/);
  for (const [name, tab] of [['the tab that sent', page], ['the other tab', other]]) {
    await tab.waitForSelector(bookingCard(2, '[data-status="cancelled"]'), { timeout: WAIT }).catch((err) => {
      throw new Error(`${name} does not show the approval cancelled: ${err.message}`);
    });
    assert.match(await tab.textContent(`${bookingCard(2)} ${sel('tool-output')}`), /^cancelled: the user sent a new message/);
  }
  assert.equal(await count(page, sel('approve')), 0, 'the cancelled call still offers Approve');

  // An agent switch cancels it too.
  await page.waitForSelector(sel('send', ':enabled'), { timeout: WAIT });
  await send(page, 'book a table for 3');
  await page.waitForSelector(sel('approve'), { timeout: WAIT });
  await page.selectOption(sel('agent'), 'dj');
  await send(page, 'change the music to track 2');
  await page.waitForSelector(sel('bgm', '[data-track="2"]'), { timeout: WAIT });
  for (const tab of [page, other]) {
    await tab.waitForSelector(bookingCard(3, '[data-status="cancelled"]'), { timeout: WAIT });
    assert.match(await tab.textContent(`${bookingCard(3)} ${sel('tool-output')}`), /cancelled when the conversation moved to dj/);
  }

  // A tab that was not told (its loads of the conversation fail while the
  // next turn runs) still shows the approval open: pressing Approve is
  // refused by the server, said, and the card then shows why the call
  // closed; nothing is approved.
  await page.waitForSelector(sel('send', ':enabled'), { timeout: WAIT });
  await chooseAgent(page, 'concierge');
  await send(page, 'book a table for 5');
  await page.waitForSelector(sel('approve'), { timeout: WAIT });
  await page.route(conversationLoads, (route) => (route.request().method() === 'GET' ? route.abort() : route.fallback()));
  await send(page, 'what is 3+3?');
  await assistantSays(page, /3\+3 = 6/);
  await page.waitForSelector(sel('send', ':enabled'), { timeout: WAIT });
  assert.equal(await count(page, bookingCard(5, '[data-status="approval"]')), 1, 'the test did not keep the tab from being told');
  await page.unroute(conversationLoads);
  await page.click(sel('approve'));
  await page.waitForSelector(sel('system-message', '[data-kind="expired"]'), { timeout: WAIT });
  assert.match(await page.innerText(sel('system-message', '[data-kind="expired"]')), /closed before your answer arrived/);
  await page.waitForSelector(bookingCard(5, '[data-status="cancelled"]'), { timeout: WAIT });
  assert.match(await page.textContent(`${bookingCard(5)} ${sel('tool-output')}`), /^cancelled: the user sent a new message/);
  assert.equal(await count(page, sel('message', '[data-role="assistant"]:has-text("Booked")')), 0, 'a cancelled call was booked');
  await screenshot(page, 'cancelled');

  // A form: the same, and a reload shows it closed, not submitted.
  await send(page, 'reserve a table with a form');
  const form = sel('surface', '[data-surface-id="reservation"]');
  await page.waitForSelector(`${form}[data-state="form"]`, { timeout: WAIT });
  await page.route(conversationLoads, (route) => (route.request().method() === 'GET' ? route.abort() : route.fallback()));
  await send(page, 'what is 4+4?');
  await assistantSays(page, /4\+4 = 8/);
  await page.waitForSelector(sel('send', ':enabled'), { timeout: WAIT });
  assert.equal(await page.getAttribute(form, 'data-state'), 'form', 'the test did not keep the tab from being told');
  await page.unroute(conversationLoads);
  await page.locator(form).getByLabel('Date').fill('2026-12-24');
  await page.locator(form).getByRole('button', { name: 'Reserve' }).click();
  await page.waitForSelector(`${form}[data-state="closed"]`, { timeout: WAIT });
  assert.match(await page.textContent(`${form} ${sel('surface-note')}`), /cancelled: the user sent a new message/);
  await other.waitForSelector(`${form}[data-state="closed"]`, { timeout: WAIT });
  await page.reload();
  await ready(page);
  await page.waitForSelector(`${form}[data-state="closed"]`, { timeout: WAIT });
  assert.doesNotMatch(await page.textContent(form), /Submitted/, 'the reloaded form says it was submitted');
  assert.equal(await count(page, sel('message', '[data-role="assistant"]:has-text("Booked")')), 0, 'a cancelled form was booked');
  await screenshot(page, 'cancelled-form');
  noPageErrors(page, other);
});

scenario('a form asked for twice: both are drawn, and each takes only an answer with its required fields filled', 'a2ui-twice', async (t) => {
  const context = await t.newContext();
  const page = await openTab(context);
  await chooseAgent(page, 'concierge');
  await send(page, 'reserve a table with a form');
  const first = page.locator(sel('surface', '[data-surface-id="reservation"][data-state="form"]'));
  await first.waitFor({ timeout: WAIT });
  await first.getByLabel('Date').fill('2026-12-24');
  await first.getByRole('button', { name: 'Reserve' }).click();
  await assistantSays(page, /Booked: a table for 2 on 2026-12-24 under the name Guest\./);
  await page.waitForSelector(sel('send', ':enabled'), { timeout: WAIT });

  // The second form is a surface of its own.
  await send(page, 'reserve a table with a form');
  const second = page.locator(sel('surface', '[data-surface-id="reservation-2"][data-state="form"]'));
  await second.waitFor({ timeout: WAIT }).catch(async (err) => {
    const said = (await shownMessages(page)).map((m) => m.text).join(' | ');
    throw new Error(`no second form: the page shows ${said}: ${err.message}`);
  });
  const reserve = second.getByRole('button', { name: 'Reserve' });
  // Required fields, by A2UI's own checks: Reserve waits for a date, and
  // the page says why; an emptied name says what it wants.
  assert.ok(await reserve.isDisabled(), 'Reserve takes a form without a date');
  assert.match(await second.locator(sel('surface-note')).innerText(), /Fill in the date, the party size and the name/);
  await second.getByLabel('Date').fill('2026-12-25');
  await page.waitForFunction((s) => !document.querySelector(s).disabled,
    `${sel('surface', '[data-surface-id="reservation-2"]')} button`, { timeout: WAIT });
  await second.getByLabel('Name').fill('');
  await second.getByText('Give a name for the booking').waitFor({ timeout: WAIT });
  assert.ok(await reserve.isDisabled(), 'Reserve takes a form without a name');
  await screenshot(page, 'a2ui-twice-blank');

  // A client that runs no checks: its blank answer is refused, and the
  // form still waits.
  const callId = await second.getAttribute('data-call-id');
  const refused = await page.evaluate(async ([callId, sessionId, clientId]) => {
    const action = { name: 'reserve', surfaceId: 'reservation-2', sourceComponentId: 'reserve', timestamp: new Date().toISOString(),
      context: { date: '2026-12-25', people: '2', name: '' } };
    const res = await fetch('/ToolResult', { method: 'POST', headers: await window.batonHeaders({ 'Content-Type': 'application/json' }),
      body: JSON.stringify({ sessionId, clientId, toolCallId: callId, output: { action } }) });
    return { status: res.status, body: await res.json() };
  }, [callId, await page.textContent(sel('session-id')), await page.textContent(sel('client-id'))]);
  assert.equal(refused.status, 400, `a blank name: ${JSON.stringify(refused.body)}`);
  assert.match(refused.body.error.message, /TextField "name": Give a name for the booking/);

  await second.getByLabel('Name').fill('Bo');
  await reserve.click();
  await assistantSays(page, /Booked: a table for 2 on 2026-12-25 under the name Bo\./);
  await page.waitForSelector(sel('surface', '[data-surface-id="reservation-2"][data-state="submitted"]'), { timeout: WAIT });
  assert.equal(await count(page, sel('surface', '[data-state="submitted"]')), 2, 'both forms show as submitted');
  assert.equal(await count(page, sel('message', ':has-text("show_surface failed")')), 0, 'a form was refused');
  await screenshot(page, 'a2ui-twice');
  noPageErrors(page);
});

scenario('regenerate the last answer: a new answer replaces it, and stays after a reload', 'regenerate', async (t) => {
  const context = await t.newContext();
  const page = await openTab(context);
  const posts = recordPosts(page);
  await send(page, 'what is 2*7?');
  await assistantSays(page, /2\*7 = 14/);
  await send(page, 'what is 3*7?');
  await assistantSays(page, /3\*7 = 21/);
  await page.waitForSelector(sel('send', ':enabled'), { timeout: WAIT });
  const before = await shownMessages(page);
  assert.equal(await count(page, sel('regenerate')), 1, 'one Regenerate button, under the last answer');

  await page.click(sel('regenerate'));
  await page.waitForFunction((old) => {
    const answers = [...document.querySelectorAll('[data-testid="message"][data-role="assistant"]')];
    return answers.length === 2 && answers[1].dataset.messageId !== old && /3\*7 = 21/.test(answers[1].innerText);
  }, before[3].id, { timeout: WAIT });
  await page.waitForSelector(sel('send', ':enabled'), { timeout: WAIT });
  const after = await shownMessages(page);
  assert.deepEqual(after.slice(0, 3), before.slice(0, 3), 'the messages before the regenerated answer stay as they were');
  const regen = posts.at(-1).postDataJSON();
  assert.equal(regen.trigger, 'regenerate-message');
  assert.equal(regen.messageId, before[3].id, 'the POST names the answer to replace');
  assert.equal(regen.messages.length, 1, 'the page sends only the newest message');

  await page.reload();
  await ready(page);
  await showsExactly(page, [/what is 2\*7/, /2\*7 = 14/, /what is 3\*7/, /3\*7 = 21/], 'after a reload');
  assert.deepEqual((await shownMessages(page)).map((m) => m.id), after.map((m) => m.id), 'the same ids after a reload');
  await screenshot(page, 'regenerate');
  noPageErrors(page);
});

scenario('edit the first message of three turns: the later turns disappear from both tabs', 'edit', async (t) => {
  const context = await t.newContext();
  const editor = await openTab(context);
  const other = await openTab(context);
  for (const n of [1, 2, 3]) {
    await send(editor, `what is ${n}*7?`);
    await assistantSays(editor, new RegExp(`${n}\\*7 = ${n * 7}`));
    await editor.waitForSelector(sel('send', ':enabled'), { timeout: WAIT });
  }
  const three = [/what is 1\*7/, /1\*7 = 7/, /what is 2\*7/, /2\*7 = 14/, /what is 3\*7/, /3\*7 = 21/];
  await showsExactly(other, three, 'the other tab follows the three turns');
  const firstID = (await shownMessages(editor))[0].id;

  await editor.locator(sel('edit')).first().click();
  await editor.fill(sel('edit-input'), 'what is 5*7?');
  await editor.click(sel('edit-save'));
  const edited = [/what is 5\*7/, /5\*7 = 35/];
  await showsExactly(editor, edited, 'the editing tab');
  await showsExactly(other, edited, 'the other tab');
  assert.equal((await shownMessages(editor))[0].id, firstID, 'the edited message keeps its id');

  await other.reload();
  await ready(other);
  await showsExactly(other, edited, 'the other tab after a reload');
  await screenshot(other, 'edit-other-tab');
  await screenshot(editor, 'edit');
  noPageErrors(editor, other);
});

scenario('Stop in one tab ends the running turn in both tabs', 'stop', async (t) => {
  const context = await t.newContext();
  const first = await openTab(context);
  const second = await openTab(context);
  await second.waitForTimeout(500); // its live wait is open

  // About 14 s of streaming: the stop lands in the middle of it.
  await send(first, 'count slowly to 20');
  await assistantSays(first, /Counting: 1, 2/);
  await second.waitForSelector(sel('message', '[data-role="user"]:has-text("count slowly to 20")'), { timeout: WAIT });
  await first.waitForSelector(sel('stop'), { timeout: WAIT });
  // Pressed in the page itself: the streaming text moves the button, and
  // a click that waits for it to hold still would eat into the 2 s.
  const pressed = Date.now();
  await first.$eval(sel('stop'), (button) => button.click());
  // Both tabs end the message, marked stopped, within 2 s of the press.
  for (const [name, page] of [['the tab that pressed Stop', first], ['the other tab', second]]) {
    await page.waitForSelector(sel('message-stopped'), { timeout: Math.max(1, pressed + 2_000 - Date.now()) }).catch((err) => {
      throw new Error(`${name} did not show the message stopped within 2 s: ${err.message}`);
    });
  }
  t.diagnostic(`both tabs showed the stopped message ${Date.now() - pressed} ms after the press`);
  for (const page of [first, second]) {
    const answer = await assistantSays(page, /Counting: 1, 2/);
    assert.doesNotMatch(answer, /Done counting/, 'the turn was cut short');
    assert.equal(await count(page, sel('message-stopped')), 1, 'one stopped message');
  }
  await screenshot(second, 'stop');

  // The chat takes its next message at once.
  await first.waitForSelector(sel('send', ':enabled'), { timeout: WAIT });
  await send(first, 'what is 12*7?');
  await assistantSays(first, /12\*7 = 84/);
  await assistantSays(second, /12\*7 = 84/);
  noPageErrors(first, second);
}, { timed: true });

/** The value of the progress bar of the call card of tool name, or -1 without one. */
function progressOf(page, name) {
  return page.$eval(sel('tool-call', `[data-tool-name="${name}"]`), (card) => {
    const bar = card.querySelector('[data-testid="tool-progress"]');
    return bar ? Number(bar.value) : -1;
  }).catch(() => -1);
}

scenario('a background playlist: its progress shows in the call\'s card and goes on after a reload, then the agent presents it', 'background', async (t) => {
  const context = await t.newContext();
  const page = await openTab(context);
  await chooseAgent(page, 'dj');
  // Six songs, three seconds each: the reload lands while the work runs.
  await send(page, 'prepare a calm playlist of 6 songs');
  const card = sel('tool-call', '[data-tool-name="prepare_playlist"]');
  await page.waitForSelector(`${card} ${sel('tool-progress')}`, { timeout: WAIT });
  const before = await progressOf(page, 'prepare_playlist');
  assert.ok(before >= 1 && before < 6, `the progress before the reload, ${before} of 6`);
  await turnNotOver(page, 'while the playlist is prepared');
  await screenshot(page, 'background-progress');
  await page.reload();
  await ready(page);
  await page.waitForSelector(`${card} ${sel('tool-progress')}`, { timeout: WAIT });
  await turnNotOver(page, 'after a reload, while the playlist is prepared');
  // The reloaded page shows the progress as stored, then follows it.
  await page.waitForFunction(([c, v]) => {
    const bar = document.querySelector(`${c} [data-testid="tool-progress"]`);
    return bar && Number(bar.value) > v;
  }, [card, before], { timeout: WAIT }).catch((err) => {
    throw new Error(`the reloaded page did not show the progress going on past ${before}: ${err.message}`);
  });
  await assistantSays(page, /Your calm playlist is ready: \w+ \w+(, \w+ \w+){5}\./);
  await page.waitForSelector(`${card}[data-status="done"]`, { timeout: WAIT });
  assert.equal(await count(page, sel('tool-progress')), 0, 'the result replaced the progress');
  assert.equal(await count(page, sel('message', '[data-role="assistant"]')), 1, 'one assistant message for the turn');
  // The turn is over: the answer's controls come.
  await page.waitForSelector(sel('regenerate', ':enabled'), { timeout: WAIT });
  await page.waitForSelector(sel('rating'), { timeout: WAIT });
  assert.ok(await page.isEnabled(sel('edit')), 'Edit is offered again once the turn is over');
  await screenshot(page, 'background-done');
  await page.setViewportSize({ width: 390, height: 844 });
  await screenshot(page, 'background-done-phone');
  noPageErrors(page);
});

/**
 * Checks that page offers none of a finished answer's controls while its
 * turn waits for a background call: no rating, and Regenerate and Edit
 * not pressable.
 */
async function turnNotOver(page, when) {
  assert.equal(await count(page, sel('rating')), 0, `no rating buttons ${when}`);
  assert.equal(await count(page, sel('regenerate', ':enabled')), 0, `no Regenerate to press ${when}`);
  assert.equal(await count(page, sel('edit', ':enabled')), 0, `no Edit to press ${when}`);
}

scenario('a background playlist stopped midway: its work ends, the agent is told it was stopped, the chat goes on', 'background-stop', async (t) => {
  const context = await t.newContext();
  const page = await openTab(context);
  await chooseAgent(page, 'dj');
  await send(page, 'prepare an upbeat playlist of 10 songs');
  const card = sel('tool-call', '[data-tool-name="prepare_playlist"]');
  await page.waitForSelector(`${card} ${sel('tool-progress')}`, { timeout: WAIT });
  // The turn is over, its work is not: Stop ends the work.
  await page.click(sel('stop'));
  await page.waitForSelector(`${card}[data-status="stopped"]`, { timeout: WAIT });
  assert.match(await page.innerText(`${card} ${sel('tool-output')}`), /stopped: the user stopped the turn/,
    'the call\'s answer, which the model reads, says it was stopped');
  await page.waitForSelector(sel('message-stopped'), { timeout: WAIT });
  assert.equal(await count(page, sel('stop')), 0, 'nothing runs any more');
  await screenshot(page, 'background-stopped');
  // The chat takes the next message, and the stopped work gives no result later.
  await send(page, 'change the music to track 2');
  await assistantSays(page, /now playing track 2/);
  await page.reload();
  await ready(page);
  await page.waitForSelector(`${card}[data-status="stopped"]`, { timeout: WAIT });
  assert.doesNotMatch(await page.innerText(sel('log')), /playlist is ready/, 'no playlist after the stop');
  noPageErrors(page);
});

scenario('ask the events agent: the remote agent asks which part of town, the answer goes back to it, the concierge tells what is on', 'remote-agent', async (t) => {
  const context = await t.newContext();
  const page = await openTab(context);
  await send(page, 'ask the events agent what is on tonight');
  // The events agent (an A2A agent of its own, local/events) asks first:
  // its question reaches the page through the ledger, as an MCP server's.
  await page.waitForSelector(sel('input-form'), { timeout: WAIT });
  assert.match(await page.textContent(sel('input-message')), /Which part of town: the old town or the harbour\?/);
  await screenshot(page, 'remote-agent-question');
  await front(page);
  await page.locator(sel('input-field-answer')).fill('the old town');
  await page.click(sel('input-accept'));
  await assistantSays(page, /The events agent says: Tonight in the old town: a string quartet at St\. Mary's/);
  await page.waitForSelector(sel('tool-call', '[data-tool-name="ask_events"][data-status="done"]'), { timeout: WAIT });
  // Its result brings a poster (a file, kept in the chat's file store: the
  // model gets its bytes) and a card (A2UI, shown as a surface of the
  // call's message, under an id of the call's own).
  await assistantSays(page, /With it I received a file of 74 bytes \(image\/png\)/);
  const remoteShown = async (what) => {
    const src = await page.waitForFunction(() => {
      const img = document.querySelector('[data-role="assistant"] [data-testid="message-file"]');
      return img && img.complete && img.naturalWidth === 8 ? img.src : false;
    }, null, { timeout: WAIT }).then((h) => h.jsonValue()).catch((err) => {
      throw new Error(`${what}: the remote's poster is not shown: ${err.message}`);
    });
    assert.match(src, /\/Chat\/[^/?]+\/files\/remote-[^?]+\?/, `${what}: the poster comes from its signed URL`);
    const card = page.locator(sel('surface', '[data-surface-id^="remote-"][data-surface-id$="-tonight"]'));
    await card.waitFor({ timeout: WAIT });
    assert.match(await card.innerText(), /Tonight in the old town[\s\S]*string quartet/, `${what}: the remote's card`);
  };
  await remoteShown('the turn');
  // A reload shows the same conversation, the question answered.
  await page.reload();
  await ready(page);
  await assistantSays(page, /The events agent says: Tonight in the old town/);
  assert.equal(await count(page, sel('input-form')), 0, 'an answered question is still a form');
  await remoteShown('after a reload');
  await screenshot(page, 'remote-agent');
  noPageErrors(page);
});

// An 8×8 PNG, small enough to spell out.
const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAgAAAAICAIAAABLbSncAAAAEUlEQVR4nGMwDL+KFTEMLQkA7rdXQTtkwCoAAAAASUVORK5CYII=', 'base64');

scenario('an attached image reaches the model and is still shown after a reload', 'file', async (t) => {
  const context = await t.newContext();
  const page = await openTab(context);
  await page.setInputFiles(sel('attach-input'), { name: 'dot.png', mimeType: 'image/png', buffer: PNG });
  await page.waitForSelector(sel('attached', ':has-text("dot.png")'), { timeout: WAIT });
  await send(page, 'what is in this picture?');
  await assistantSays(page, new RegExp(`I received a file of ${PNG.length} bytes \\(image/png\\)`));
  await page.waitForSelector(sel('send', ':not([disabled])'), { timeout: WAIT });

  await page.reload();
  await ready(page);
  const shown = () => page.waitForFunction(() => {
    const img = document.querySelector('[data-role="user"] [data-testid="message-file"]');
    return img && img.complete && img.naturalWidth === 8 ? img.src : false;
  }, null, { timeout: WAIT }).then((h) => h.jsonValue()).catch((err) => {
    throw new Error(`the reloaded page does not show the image: ${err.message}`);
  });
  const src = await shown();
  assert.match(src, /\/Chat\/[^/?]+\/files\/[^?]+\?/, 'the image comes from its signed URL, not the data URL the page sent');
  // The URL is the capability: without its signature it fetches nothing.
  const bare = await page.evaluate(async (u) => (await fetch(u.split('?')[0])).status, src);
  assert.equal(bare, 404, 'the file without its URL\'s token');
  assert.equal(await count(page, sel('message', '[data-role="user"]')), 1);
  // A link that fetches nothing, opened in a tab, says why in words, not
  // as the API's JSON error.
  const tab = await context.newPage();
  const opened = await tab.goto(src.replace(/([?&]sig=)[^&]+/, '$1AAAA'));
  assert.equal(opened.status(), 404);
  assert.match(opened.headers()['content-type'] ?? '', /^text\/html/, 'an altered link opened in a tab');
  assert.equal(await tab.textContent('h1'), 'This link to a file is not valid');
  await screenshot(tab, 'file-link-gone');
  await tab.close();

  // An edit keeps the image: the page sends it back as the URL it was
  // given, and the model receives the same file again.
  await page.locator(sel('edit')).first().click();
  await page.fill(sel('edit-input'), 'and now?');
  await page.click(sel('edit-save'));
  await showsExactly(page, [/and now\?/, new RegExp(`I received a file of ${PNG.length} bytes \\(image/png\\)`)], 'the edited chat');
  assert.match(await shown(), /\/Chat\/[^/?]+\/files\/[^?]+\?/, 'the edited message still shows its image');
  await screenshot(page, 'file');
  noPageErrors(page);
});

// --- MCP input (docs/mcp-input.md) ------------------------------------------------

scenario('clear the notes: the notes server asks first, and only the asking tab answers its form', 'mcp-input', async (t) => {
  const context = await t.newContext();
  const page = await openTab(context);
  const other = await openTab(context);
  await send(page, 'note: buy milk');
  await assistantSays(page, /Noted\. Your notes \(MCP session \w+\): buy milk\./);

  // The server's question (asked on the live call: the notes server keeps
  // sessions, so it speaks 2025-11-25) reaches the asking tab as a form;
  // the other tab follows the turn and shows the call, with no form.
  // Declined: nothing is forgotten.
  await send(page, 'clear my notes');
  await page.waitForSelector(sel('input-form'), { timeout: WAIT });
  assert.match(await page.textContent(sel('input-message')), /Forget all 1 notes of this conversation\?/);
  await other.waitForSelector(sel('tool-call', '[data-tool-name="notes_clear_notes"]'), { timeout: WAIT });
  // It shows the question too (the ledger's, as the session does not
  // hold it), waiting for the asking tab.
  await other.waitForSelector(sel('tool-call', '[data-tool-name="baton_input"][data-status="waiting"]'), { timeout: WAIT });
  assert.equal(await count(other, sel('input-form')), 0, 'the other tab shows the form');
  await screenshot(page, 'mcp-input-form');
  await front(page);
  await page.click(sel('input-decline'));
  await assistantSays(page, /the user declined: nothing forgotten\. Your notes \(MCP session \w+\): buy milk\./);
  // The answered question's card says so, not that it needs an answer.
  await page.waitForSelector(sel('tool-call', '[data-tool-name="baton_input"][data-status="done"]'), { timeout: WAIT });

  // Asked again and accepted: the notes are gone.
  await send(page, 'clear my notes');
  const confirm = page.locator(sel('input-field-confirm'));
  await confirm.waitFor({ timeout: WAIT });
  await confirm.check();
  await page.click(sel('input-accept'));
  await assistantSays(page, /all notes forgotten\. No notes yet/);
  await send(page, 'show my notes');
  await assistantSays(page, /^No notes yet \(MCP session \w+\)\.$/m);
  assert.equal(await count(page, sel('input-form')), 0, 'an answered form is still shown');
  await screenshot(page, 'mcp-input');
  noPageErrors(page, other);
});

scenario('clear the notes after a reload: the question asked on the live call comes back, and the answer reaches the waiting tool', 'mcp-input-reload', async (t) => {
  const context = await t.newContext();
  const page = await openTab(context);
  await send(page, 'note: buy milk');
  await assistantSays(page, /Noted\. Your notes \(MCP session \w+\): buy milk\./);

  // The form is open; the page reloads while the tool waits for it.
  await send(page, 'clear my notes');
  await page.waitForSelector(sel('input-form'), { timeout: WAIT });
  // The reloaded page's resumed stream is held until the box is ticked:
  // the form it draws again must keep what the person did.
  let release;
  const held = new Promise((resolve) => { release = resolve; });
  await page.route(/\/Chat\/[^/]+\/stream$/, async (route) => {
    await held;
    await route.continue().catch(() => {}); // the page may have dropped it meanwhile
  });
  await page.reload();
  await ready(page);
  // GET /Chat and the resumed stream show the question again, to this tab.
  const confirm = page.locator(sel('input-field-confirm'));
  await confirm.waitFor({ timeout: WAIT });
  assert.match(await page.textContent(sel('input-message')), /Forget all 1 notes of this conversation\?/);
  await confirm.check();
  await page.$eval(sel('input-form'), (form) => { form.dataset.e2eBefore = 'stream'; });
  release();
  await page.unroute(/\/Chat\/[^/]+\/stream$/);
  if (page.context().major === '6') {
    // AI SDK 6 replaces the message the stream continues: the form is
    // drawn anew (ai 7 updates it in place).
    await page.waitForSelector(`${sel('input-form')}:not([data-e2e-before])`, { timeout: WAIT });
  }
  assert.ok(await confirm.isChecked(), 'the form drawn again from the resumed stream lost the ticked box');
  await page.click(sel('input-accept'));
  await assistantSays(page, /all notes forgotten\. No notes yet/);
  await page.waitForSelector(sel('tool-call', '[data-tool-name="baton_input"][data-status="done"]'), { timeout: WAIT });
  assert.equal(await count(page, sel('input-form')), 0, 'an answered form is still shown');
  await page.waitForSelector(sel('send', ':enabled'), { timeout: WAIT });
  assert.ok((await t.streamsRead()).replays >= 1, 'the reloaded page resumed the turn');
  await screenshot(page, 'mcp-input-reload');
  noPageErrors(page);
});

// --- session affinity (docs/deployment.md) ------------------------------------------

scenario('every request to the functions is credentialed, so it carries Cloud Run\'s affinity cookie from any origin', 'credentials', async (t) => {
  const context = await t.newContext();
  // Records the credentials mode of every fetch the page makes, across
  // reloads of the tab.
  await context.addInitScript(() => {
    const original = window.fetch;
    window.batonFetches = JSON.parse(sessionStorage.getItem('e2e.fetches') ?? '[]');
    window.fetch = (input, init) => {
      const url = new URL(typeof input === 'string' ? input : input.url, location.href);
      window.batonFetches.push({ method: init?.method ?? 'GET', path: url.pathname, credentials: init?.credentials ?? null });
      sessionStorage.setItem('e2e.fetches', JSON.stringify(window.batonFetches));
      return original(input, init);
    };
  });
  const page = await openTab(context);
  await chooseAgent(page, 'dj');
  await send(page, 'change the music to track 2');
  await page.waitForSelector(sel('bgm', '[data-track="2"]'), { timeout: WAIT });
  await assistantSays(page, /track 2/i);
  // The live wait starts again once the turn is over.
  await page.waitForFunction(() => window.batonFetches.filter((f) => /^\/Chat\/[^/]+\/stream$/.test(f.path)).length >= 2, null, { timeout: WAIT });
  // A reload loads the conversation (a new chat's first load asks nothing).
  await page.reload();
  await ready(page);

  const fetches = await page.evaluate(() => window.batonFetches);
  const own = fetches.filter((f) => /^\/(Chat|Turn|ToolResult|Pending)(\/|$)/.test(f.path));
  const kinds = new Set(own.map((f) => `${f.method} ${f.path.replace(/^\/Chat\/[^/]+/, '/Chat/{id}')}`));
  for (const kind of ['POST /Chat', 'GET /Chat/{id}', 'GET /Chat/{id}/stream']) {
    assert.ok(kinds.has(kind), `no ${kind} among the page's requests: ${[...kinds].join(', ')}`);
  }
  assert.deepEqual(own.filter((f) => f.credentials !== 'include'), [], 'requests to the functions without credentials: include');
  const config = fetches.find((f) => f.path === '/config.json');
  assert.equal(config?.credentials, null, 'the page\'s own config is fetched with the default credentials');
  noPageErrors(page);
});

// --- long chats, recovery, limits, sign-in, first screen ------------------------------

/** Whether the conversation shows its end (the newest message). */
function atEnd(page) {
  return page.$eval(sel('log'), (el) => el.scrollHeight - el.scrollTop - el.clientHeight <= 4);
}

/** Runs n quick turns ("what is i*7?") in the page's chat through POST /Turn, waiting out any rate limit. */
function quickTurns(page, n) {
  return page.evaluate(async (n) => {
    const sessionId = document.querySelector('[data-testid="session-id"]').textContent;
    const clientId = document.querySelector('[data-testid="client-id"]').textContent;
    for (let i = 1; i <= n; i++) {
      const res = await fetch('/Turn', {
        method: 'POST',
        headers: await window.batonHeaders({ 'Content-Type': 'application/json', Accept: 'application/json' }),
        body: JSON.stringify({ sessionId, clientId, text: `what is ${i}*7?` }),
      });
      const body = await res.json();
      if (res.status === 429) {
        await new Promise((resolve) => setTimeout(resolve, body.error.retryAfterSeconds * 1000));
        i--;
      } else if (!res.ok) {
        throw new Error(`turn ${i}: ${res.status} ${JSON.stringify(body)}`);
      }
    }
  }, n);
}

scenario('a 60-turn chat reloads whole: the view ends at the newest message, scrolling up reaches the first', 'long-reload', async (t) => {
  const context = await t.newContext();
  const page = await openTab(context);
  await quickTurns(page, 60); // the tab follows them live

  await page.reload();
  await ready(page);
  await assistantSays(page, /60\*7 = 420\./);
  assert.ok(await atEnd(page), 'the reloaded page shows the end of the conversation');
  const firstPage = await count(page, sel('message', '[data-role="user"]'));
  assert.ok(firstPage < 60, `the first page holds ${firstPage} user messages: the test pages nothing`);
  await page.waitForSelector(sel('earlier'), { timeout: WAIT });

  // Scrolling to the top loads earlier messages, a page at a time, and
  // the view stays where the person reads.
  for (let i = 0; i < 10 && await count(page, sel('earlier')); i++) {
    const before = await count(page, sel('message'));
    await page.$eval(sel('log'), (el) => el.scrollTo(0, 0));
    await page.waitForFunction((n) => document.querySelectorAll('[data-testid="message"]').length > n, before, { timeout: WAIT });
    assert.ok(!await atEnd(page), 'loading earlier messages jumped to the end');
  }
  const shown = await shownMessages(page);
  const users = shown.filter((m) => m.role === 'user').map((m) => m.text.trim());
  assert.deepEqual(users, Array.from({ length: 60 }, (_, i) => `what is ${i + 1}*7?`), 'every user message once, in order');
  assert.equal(new Set(shown.map((m) => m.id)).size, shown.length, 'a message shown twice');
  assert.equal(shown.length, 120, 'every message of the chat');
  assert.equal(await count(page, sel('earlier')), 0, 'the first message is shown, yet the page offers earlier ones');
  await screenshot(page, 'long-reload');
  noPageErrors(page);
});

scenario('the view follows the conversation, unless the person scrolled up; an approval below the fold comes into view', 'follow', async (t) => {
  const context = await t.newContext();
  const page = await openTab(context);
  await quickTurns(page, 12); // more than the view holds
  await assistantSays(page, /12\*7 = 84\./);
  assert.ok(await atEnd(page), 'the view does not show the newest of the turns followed live');

  // Scrolled up, a new answer does not move the view: a control jumps to it.
  await send(page, 'count slowly to 8');
  await assistantSays(page, /Counting: 1/);
  await page.$eval(sel('log'), (el) => el.scrollTo(0, 0));
  await page.waitForSelector(sel('jump-latest'), { timeout: WAIT });
  assert.ok(!await atEnd(page), 'the view moved to the end while the person read above');
  await page.click(sel('jump-latest'));
  await assistantSays(page, /8\. Done counting\./);
  await page.waitForFunction(() => {
    const el = document.querySelector('[data-testid="log"]');
    return el.scrollHeight - el.scrollTop - el.clientHeight <= 4;
  }, null, { timeout: WAIT });
  assert.equal(await count(page, sel('jump-latest')), 0, 'the jump control stays at the end');

  // An approval asked while the person reads above is brought into view,
  // with the focus in its form.
  await page.waitForSelector(sel('send', ':enabled'), { timeout: WAIT });
  await page.route((url) => url.pathname === '/Chat', async (route) => {
    if (route.request().method() === 'POST') await new Promise((resolve) => setTimeout(resolve, 1500));
    await route.fallback();
  });
  await send(page, 'book a table for 4');
  await page.$eval(sel('log'), (el) => el.scrollTo(0, 0));
  await page.waitForSelector(sel('approval'), { timeout: WAIT });
  await page.waitForFunction(() => document.activeElement?.closest('[data-testid="approval"]'), null, { timeout: WAIT });
  const visible = await page.$eval(sel('approval'), (form) => {
    const box = form.getBoundingClientRect();
    const log = document.querySelector('[data-testid="log"]').getBoundingClientRect();
    return box.top >= log.top - 1 && box.bottom <= log.bottom + 1;
  });
  assert.ok(visible, 'the approval form is out of view');
  await page.keyboard.press('Enter'); // approves, from the focused field
  await assistantSays(page, /table for 4\b/);
  assert.ok(await atEnd(page), 'the answer to the approval is out of view');
  await screenshot(page, 'follow');
  noPageErrors(page);
});

/**
 * An init script: window.cutStreams() breaks every UI message stream the
 * page is reading, as a lost connection does (the body fails with a
 * TypeError "network error").
 */
function cuttableStreams() {
  const fetch = window.fetch;
  const cuts = new Set();
  window.cutStreams = () => {
    for (const cut of cuts) cut();
    cuts.clear();
  };
  window.fetch = async (input, init) => {
    const res = await fetch(input, init);
    if (!res.body || !(res.headers.get('Content-Type') ?? '').startsWith('text/event-stream')) return res;
    const reader = res.body.getReader();
    let cut;
    const body = new ReadableStream({
      start(controller) {
        cut = () => {
          controller.error(new TypeError('network error'));
          reader.cancel().catch(() => {});
        };
        cuts.add(cut);
      },
      async pull(controller) {
        const { done, value } = await reader.read();
        if (done) {
          cuts.delete(cut);
          controller.close();
        } else {
          controller.enqueue(value);
        }
      },
      cancel(reason) {
        cuts.delete(cut);
        return reader.cancel(reason);
      },
    });
    return new Response(body, { status: res.status, statusText: res.statusText, headers: res.headers });
  };
}

scenario('the connection breaks mid-answer: once the network is back the page resumes the turn and clears its line', 'reconnect', async (t) => {
  const context = await t.newContext();
  await context.addInitScript(cuttableStreams);
  const page = await openTab(context);
  await send(page, 'count slowly to 16');
  await assistantSays(page, /Counting: 1, 2/);
  await context.setOffline(true);
  await page.evaluate(() => window.cutStreams());
  const broken = sel('system-message', '[data-kind="error"]');
  await page.waitForSelector(broken, { timeout: WAIT });
  assert.match(await page.innerText(broken), /connection broke/);
  await page.waitForTimeout(2500); // tries made while offline fail
  await screenshot(page, 'reconnect-offline');
  await context.setOffline(false);
  await assistantSays(page, /Counting: 1, 2, 3[\s\S]*16\. Done counting\./);
  await page.waitForSelector(broken, { state: 'detached', timeout: WAIT });
  await showsExactly(page, [/^count slowly to 16/, /16\. Done counting\./], 'after the network came back');
  await page.waitForSelector(sel('send', ':enabled'), { timeout: WAIT });
  await send(page, 'what is 3*7?');
  await assistantSays(page, /3\*7 = 21/);
  assert.equal(await count(page, sel('system-message')), 0, 'a line is left over');

  // A message sent while the network is down comes back into the box.
  await page.waitForSelector(sel('send', ':enabled'), { timeout: WAIT });
  await context.setOffline(true);
  await send(page, 'what is 9*7?');
  await page.waitForSelector(broken, { timeout: WAIT });
  await context.setOffline(false);
  await page.waitForSelector(sel('system-message', '[data-kind="info"]:has-text("did not reach the agent")'), { timeout: WAIT });
  await page.waitForSelector(broken, { state: 'detached', timeout: WAIT });
  assert.equal(await page.inputValue(sel('composer-input')), 'what is 9*7?');
  await showsExactly(page, [/^count slowly to 16/, /16\. Done counting\./, /^what is 3\*7/, /= 21/], 'the message that never left');
  await screenshot(page, 'reconnect');
  noPageErrors(page);
});

scenario('a refused message (429) is counted down and sent again, and its line goes once it went through', 'rate-limit', async (t) => {
  const context = await t.newContext();
  const page = await openTab(context);
  // The next two new messages are each refused once, as the server
  // refuses a turn over its rate limit: one with a short wait, one with a
  // long one. 90 s reads "2 min" for its first 30 s, so a loaded machine
  // that reads the line a few seconds late still finds it so (60 s read
  // "59 s" one second late).
  const waits = [3, 90];
  const posts = [];
  await page.route((url) => url.pathname === '/Chat', async (route) => {
    const request = route.request();
    if (request.method() !== 'POST') return route.fallback();
    const last = request.postDataJSON().messages.at(-1);
    const again = posts.includes(last.id);
    posts.push(last.id);
    const wait = last.role === 'user' && !again ? waits.shift() : undefined;
    if (wait === undefined) return route.fallback();
    return route.fulfill({
      status: 429, contentType: 'application/json', headers: { 'Retry-After': String(wait) },
      body: JSON.stringify({ error: { code: 'rate_limited', message: 'too many turns: at most 60 a minute per chat', retryAfterSeconds: wait } }),
    });
  });
  const limited = sel('system-message', '[data-kind="limited"]');
  await send(page, 'what is 2*7?');
  await page.waitForSelector(limited, { timeout: WAIT });
  const first = await page.innerText(limited);
  await page.waitForFunction(([s, text]) => document.querySelector(s)?.innerText !== text, [limited, first], { timeout: WAIT });
  assert.match(first, /Too many messages: your message goes again in [23] s/);
  await assistantSays(page, /2\*7 = 14/);
  await page.waitForSelector(limited, { state: 'detached', timeout: WAIT });

  await page.waitForSelector(sel('send', ':enabled'), { timeout: WAIT });
  await send(page, 'what is 4*7?');
  await page.waitForSelector(`${limited} ${sel('retry')}`, { timeout: WAIT });
  assert.match(await page.innerText(limited), /goes again in 2 min/);
  await page.click(`${limited} ${sel('retry')}`);
  await assistantSays(page, /4\*7 = 28/);
  await page.waitForSelector(limited, { state: 'detached', timeout: WAIT });
  await showsExactly(page, [/what is 2\*7/, /= 14/, /what is 4\*7/, /= 28/], 'no unanswered message');
  assert.equal(posts.length, 4, 'each message was posted once refused and once more');
  await screenshot(page, 'rate-limit');
  noPageErrors(page);
});

scenario('Stop while a refused message is counted down: its line goes, and its text is back in the message box', 'rate-limit-stop', async (t) => {
  const context = await t.newContext();
  const page = await openTab(context);
  await send(page, 'what is 2*7?');
  await assistantSays(page, /2\*7 = 14/);
  await page.waitForSelector(sel('send', ':enabled'), { timeout: WAIT });
  // Every new message is refused, as the server refuses a turn over its
  // rate limit, with a long wait.
  let refusing = true;
  const posts = (url) => url.pathname === '/Chat';
  await page.route(posts, (route) => {
    if (route.request().method() !== 'POST' || !refusing) return route.fallback();
    return route.fulfill({
      status: 429, contentType: 'application/json', headers: { 'Retry-After': '48' },
      body: JSON.stringify({ error: { code: 'rate_limited', message: 'too many turns: at most 60 a minute per chat', retryAfterSeconds: 48 } }),
    });
  });
  const limited = sel('system-message', '[data-kind="limited"]');
  await send(page, 'what is 5*7?');
  await page.waitForSelector(`${limited} ${sel('retry')}`, { timeout: WAIT });
  await page.click(sel('stop'));
  await page.waitForSelector(limited, { state: 'detached', timeout: WAIT });
  await page.waitForFunction((s) => document.querySelector(s).value === 'what is 5*7?', sel('composer-input'), { timeout: WAIT })
    .catch(async (err) => {
      throw new Error(`the message box holds ${JSON.stringify(await page.inputValue(sel('composer-input')))}: ${err.message}`);
    });
  await showsExactly(page, [/what is 2\*7/, /= 14/], 'the stopped message, never sent, is not shown as sent');
  await page.waitForSelector(sel('send', ':enabled'), { timeout: WAIT });
  await screenshot(page, 'rate-limit-stop');

  // Sent again, it goes through.
  refusing = false;
  await page.click(sel('send'));
  await assistantSays(page, /5\*7 = 35/);
  await showsExactly(page, [/what is 2\*7/, /= 14/, /what is 5\*7/, /= 35/], 'after sending it again');
  noPageErrors(page);
});

scenario('too large a message or file: said before sending, in sizes a person reads, and a refused one is marked not sent with its text and file kept', 'too-large', async (t) => {
  const context = await t.newContext();
  const page = await openTab(context);
  const posts = recordPosts(page);
  const problem = sel('composer-problem');

  // Over the limits /config.json gives: nothing is sent.
  const long = 'x'.repeat(300 * 1024);
  await send(page, long);
  await page.waitForSelector(problem, { timeout: WAIT });
  assert.equal(await page.innerText(problem), 'Your message is 300 KB; the limit is 256 KB. Shorten it, or send it as a file.');
  assert.equal((await page.inputValue(sel('composer-input'))).length, long.length, 'the text left the message box');
  await page.fill(sel('composer-input'), 'look at this');
  await page.waitForSelector(problem, { state: 'detached', timeout: WAIT });
  await page.setInputFiles(sel('attach-input'), { name: 'big.jpg', mimeType: 'image/jpeg', buffer: Buffer.alloc(Math.round(10.8 * 1024 * 1024)) });
  await page.click(sel('send'));
  await page.waitForSelector(problem, { timeout: WAIT });
  assert.equal(await page.innerText(problem), 'The photo is 10.8 MB; the limit is 10 MB. Pick a smaller one.');
  assert.match(await page.innerText(sel('attached')), /big\.jpg/, 'the photo left the message box');
  assert.equal(await count(page, sel('message')), 0, 'a message too large is shown as sent');
  assert.equal(posts.length, 0, 'a message too large was sent');
  await screenshot(page, 'too-large');

  // A limit only the server knows (here it takes files up to 64 KB): the
  // refused message is marked not sent, and its text and file go back.
  const chatPosts = (url) => url.pathname === '/Chat';
  await page.route(chatPosts, (route) => (route.request().method() !== 'POST' ? route.fallback() : route.fulfill({
    status: 413, contentType: 'application/json',
    body: JSON.stringify({ error: { code: 'too_large', message: 'the file of parts[0] is over the limit of 65536 bytes (BATON_MAX_FILE_BYTES)' } }),
  })));
  await page.setInputFiles(sel('attach-input'), { name: 'dot.png', mimeType: 'image/png', buffer: Buffer.concat([PNG, Buffer.alloc(100 * 1024)]) });
  await page.click(sel('send'));
  await page.waitForSelector(sel('message-unsent'), { timeout: WAIT });
  const said = sel('system-message', '[data-kind="error"]');
  await page.waitForSelector(said, { timeout: WAIT });
  assert.match(await page.innerText(said), /^The photo “dot\.png” is 100\.1 KB; the limit is 64 KB\. It was not sent/);
  await page.waitForFunction((s) => document.querySelector(s).value === 'look at this', sel('composer-input'), { timeout: WAIT });
  assert.match(await page.innerText(sel('attached')), /dot\.png/, 'the file did not come back to the message box');
  await screenshot(page, 'too-large-refused');

  // Sent again once the server takes it: answered, and the unsent one goes.
  await page.unroute(chatPosts);
  await page.click(sel('send'));
  await assistantSays(page, /I received a file of \d+ bytes \(image\/png\)/);
  assert.equal(await count(page, sel('message-unsent')), 0, 'the message not sent is still shown');
  assert.equal(await count(page, sel('message', '[data-role="user"]')), 1, 'the message shows twice');
  noPageErrors(page);
});

scenario('an ID token the server refuses is refreshed once; a sign-in that no longer holds is said plainly', 'token', async (t) => {
  const context = await t.newContext();
  const page = await openTab(context);
  const token = async () => (await page.evaluate(() => window.batonHeaders())).Authorization;
  const old = await token();
  await page.waitForTimeout(1100); // a new token differs from it (issued in another second)
  // The server now refuses the token the page holds, as it refuses one
  // past its hour: the page gets a fresh one and goes on.
  const sent = [];
  const functions = (url) => /^\/(Chat|Turn|ToolResult|Pending)(\/|$)/.test(url.pathname);
  const unauthorized = (route) => route.fulfill({
    status: 401, contentType: 'application/json',
    body: JSON.stringify({ error: { code: 'unauthenticated', message: 'missing or invalid credentials' } }),
  });
  await page.route(functions, (route) => {
    const auth = route.request().headers().authorization;
    sent.push(auth);
    return auth === old ? unauthorized(route) : route.fallback();
  });
  await send(page, 'what is 5*7?');
  await assistantSays(page, /5\*7 = 35/);
  assert.ok(sent.includes(old) && sent.some((a) => a !== old), 'the page did not retry with a fresh token');
  assert.equal(await count(page, sel('system-message')), 0, 'a line about the refused token');

  // The sign-in no longer holds: its refresh is refused, and so is every
  // request. The page says so, once, and stops asking.
  await page.route((url) => url.pathname.includes('securetoken.googleapis.com'), (route) => route.fulfill({
    status: 400, contentType: 'application/json', body: JSON.stringify({ error: { code: 400, message: 'TOKEN_EXPIRED' } }),
  }));
  await page.unroute(functions);
  let asked = 0;
  await page.route(functions, (route) => {
    asked++;
    return unauthorized(route);
  });
  await page.waitForSelector(sel('send', ':enabled'), { timeout: WAIT });
  await send(page, 'what is 6*7?');
  const told = sel('system-message', ':has-text("no longer valid")');
  await page.waitForSelector(told, { timeout: WAIT });
  const after = asked;
  await page.waitForTimeout(5000);
  assert.ok(asked - after <= 1, `the page kept asking after it was told: ${asked - after} more requests in 5 s`);
  assert.equal(await count(page, told), 1, 'told more than once');
  await screenshot(page, 'token-signed-out');

  // "Sign in again" signs in anew.
  const user = await page.textContent(sel('user-id'));
  await page.unrouteAll({ behavior: 'ignoreErrors' });
  await page.click(`${told} ${sel('retry')}`);
  await page.waitForFunction((u) => {
    const el = document.querySelector('[data-testid="user-id"]');
    return el && el.textContent !== u;
  }, user, { timeout: WAIT });
  await ready(page);
  await send(page, 'what is 7*7?');
  await assistantSays(page, /7\*7 = 49/);
  noPageErrors(page);
});

scenario('the first screen: each agent offers what it can do, a new chat asks nothing of the server, a chip fills the box from the keyboard', 'first-screen', async (t) => {
  const context = await t.newContext();
  const consoleErrors = [];
  const page = await openTab(context, (p) => p.on('console', (m) => m.type() === 'error' && consoleErrors.push(m.text())));
  const config = await page.evaluate(() => fetch('/config.json').then((r) => r.json()));
  const chips = () => page.$$eval(sel('suggestion'), (els) => els.map((el) => el.textContent));
  for (const agent of ['dj', 'concierge']) {
    await page.selectOption(sel('agent'), agent);
    assert.deepEqual(await chips(), config.suggestions[agent], `the chips offered with ${agent}`);
  }
  assert.notDeepEqual(config.suggestions.dj, config.suggestions.concierge, 'every agent offers the same');

  // From the keyboard: the chip's text goes into the box, and so does the focus.
  await page.focus(sel('suggestion'));
  await page.keyboard.press('Enter');
  assert.equal(await page.inputValue(sel('composer-input')), config.suggestions.concierge[0]);
  assert.equal(await page.evaluate(() => document.activeElement?.dataset.testid), 'composer-input', 'the focus stayed on the chip');

  // Every agent's chips are things it can do.
  for (const agent of ['dj', 'concierge']) {
    await page.selectOption(sel('agent'), agent);
    await page.locator(sel('suggestion')).filter({ hasText: /weather|track 2/ }).first().click();
    await page.click(sel('send'));
    const answer = await assistantSays(page, agent === 'dj' ? /track 2/i : /Tokyo/);
    assert.doesNotMatch(answer, /has no .* tool/, `${agent} answered its own suggestion with`);
    await page.waitForSelector(sel('send', ':enabled'), { timeout: WAIT });
  }

  await page.click(sel('new-chat'));
  await ready(page);
  await page.reload();
  await ready(page);
  await page.waitForTimeout(1500); // the live wait and the resume have gone out
  assert.deepEqual(consoleErrors, [], 'errors in the console of a new chat');
  await screenshot(page, 'first-screen');
  noPageErrors(page);
});

/** A text turn with the DJ: the chat then exists, and a stream was read with the AI SDK. */
async function hello(page) {
  await chooseAgent(page, 'dj');
  await send(page, 'hello');
  await assistantSays(page, /offline demo model/);
  await page.waitForSelector(sel('send', ':enabled'), { timeout: WAIT });
}

/** Presses Live and waits until the page is live. */
async function goLive(page) {
  await page.click(sel('live'));
  await page.waitForSelector(sel('live', '[data-state="live"]'), { timeout: WAIT });
}

scenario('live mode: the agent hears the microphone and answers aloud, change_bgm runs from typed text, the page comes back after the network went, and a reload shows the spoken messages', 'live', async (t) => {
  const context = await t.newContext();
  await context.grantPermissions(['microphone'], { origin: BASE });
  await context.addInitScript(recordLiveStates);
  const page = await openTab(context);
  await hello(page);

  // The fake microphone plays a tone: the stand-in hears it as speech,
  // says how long it was in the transcription, and answers aloud.
  await goLive(page);
  await page.waitForSelector(sel('message', '[data-role="user"]:has-text("seconds of audio)")'), { timeout: WAIT });
  await assistantSays(page, /^I heard \d+\.\d seconds of audio\./);
  const heard = await page.evaluate(() => window.batonLiveAudio);
  assert.ok(heard.sentFrames > 0, 'no microphone frame went out');
  assert.ok(heard.receivedSamples > 0 && heard.scheduledSeconds > 0, `the page's AudioContext got no voice: ${JSON.stringify(heard)}`);

  // Typed while live, once the agent's answer is over: the page runs
  // change_bgm for the live call, answers it over the socket, and the
  // agent goes on talking.
  await page.waitForSelector(sel('live-status', '[data-speaking="false"]'), { timeout: WAIT });
  await send(page, 'change the music to track 2');
  await page.waitForSelector(sel('tool-call', '[data-tool-name="change_bgm"][data-status="done"]'), { timeout: WAIT });
  await page.waitForSelector(sel('bgm', '[data-track="2"]'), { timeout: WAIT });
  await assistantSays(page, /now playing track 2/);
  const spoken = await page.evaluate(() => window.batonLiveAudio.receivedSamples);
  assert.ok(spoken > heard.receivedSamples, 'the agent said nothing aloud after the tool ran');
  assert.ok(await count(page, sel('message-live')) >= 3, 'the live messages are not marked');
  await screenshot(page, 'live');

  // The network goes: the page leaves its socket for dead and reconnects
  // (the server replaces the conversation the tab left), then goes on.
  await page.waitForSelector(sel('live-status', '[data-speaking="false"]'), { timeout: WAIT });
  await context.setOffline(true);
  await page.waitForFunction(() => window.e2eLiveStates.at(-1) !== 'live', null, { timeout: WAIT });
  await context.setOffline(false);
  await page.waitForFunction(() => window.e2eLiveStates.join(' ').endsWith('live reconnecting live'), null, { timeout: WAIT })
    .catch(async (err) => {
      throw new Error(`the page did not come back live: ${await page.evaluate(() => window.e2eLiveStates.join(' → '))}: ${err.message}`);
    });
  await send(page, 'play track 3');
  await page.waitForSelector(sel('bgm', '[data-track="3"]'), { timeout: WAIT });
  await assistantSays(page, /now playing track 3/);
  await page.waitForSelector(sel('live-status', '[data-speaking="false"]'), { timeout: WAIT });

  await page.click(sel('live'));
  await page.waitForSelector(sel('live-status', '[data-state="ended"]:has-text("you ended it")'), { timeout: WAIT });
  // The page loads the conversation as stored once the segment is over.
  const shown = await shownMessages(page);
  await page.reload();
  await ready(page);
  const exactly = (text) => new RegExp(`^${text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`);
  await showsExactly(page, shown.map((m) => exactly(m.text)), 'the conversation after a reload');
  assert.deepEqual((await shownMessages(page)).map((m) => m.id), shown.map((m) => m.id), 'the messages\' ids after a reload');
  assert.equal(await count(page, sel('tool-call', '[data-tool-name="change_bgm"]')), 2, 'each change_bgm shown once');
  await screenshot(page, 'live-reloaded');
  noPageErrors(page);
});

scenario('live mode: a reload while a browser call of the segment is open ends the segment, and the reloaded tab runs the call', 'live-reload', async (t) => {
  const context = await t.newContext();
  await context.grantPermissions(['microphone', 'geolocation'], { origin: BASE });
  await context.setGeolocation({ latitude: 48.85, longitude: 2.35, accuracy: 20 });
  // On the tab's first load the location never arrives; the reloaded page gets it.
  await context.addInitScript(() => {
    if (sessionStorage.getItem('e2e.geolocation-blocked')) return;
    sessionStorage.setItem('e2e.geolocation-blocked', '1');
    navigator.geolocation.getCurrentPosition = () => {};
  });
  const page = await openTab(context);
  await hello(page);
  await goLive(page);
  await send(page, 'where am I?');
  await page.waitForSelector(sel('tool-call', '[data-tool-name="get_location"][data-status="running"]'), { timeout: WAIT });

  await page.reload();
  await ready(page);
  await assistantSays(page, /You are at latitude 48\.85, longitude 2\.35\./);
  await page.waitForSelector(sel('tool-call', '[data-tool-name="get_location"][data-status="done"]'), { timeout: WAIT });
  assert.equal(await count(page, sel('tool-call', '[data-tool-name="get_location"]')), 1, 'the call is shown once');
  assert.equal(await page.getAttribute(sel('live'), 'data-state'), 'off', 'the reloaded page is live by itself');
  await screenshot(page, 'live-reload');
  noPageErrors(page);
});

/**
 * Routes the page's live sockets through the test: the opens for which
 * refuse(n) (n from 1) is true are answered as the server refuses an ID
 * token it does not take; the others go to the server. Returns the first
 * frame of each open.
 */
async function refuseLiveTokens(page, refuse) {
  const firsts = [];
  await page.routeWebSocket(/\/Chat\/[^/]+\/live/, (ws) => {
    const n = firsts.length + 1;
    firsts.push(null);
    const server = refuse(n) ? null : ws.connectToServer();
    ws.onMessage((m) => {
      if (firsts[n - 1] === null) firsts[n - 1] = JSON.parse(m);
      if (server) {
        server.send(m);
        return;
      }
      ws.send(JSON.stringify({ type: 'error', code: 'unauthenticated', message: 'missing or invalid credentials' }));
      ws.send(JSON.stringify({ type: 'end', reason: 'closed' }));
      ws.close({ code: 1000, reason: 'closed' });
    });
  });
  return firsts;
}

scenario('live mode: an ID token refused at open is refreshed once; a sign-in that no longer holds ends it plainly', 'live-token', async (t) => {
  const context = await t.newContext();
  await context.grantPermissions(['microphone'], { origin: BASE });
  const page = await openTab(context);
  await hello(page);
  await page.waitForTimeout(1100); // a fresh token differs from the page's (issued in another second)

  const firsts = await refuseLiveTokens(page, (n) => n === 1);
  await goLive(page);
  assert.equal(firsts.length, 2, 'opens of the live socket');
  assert.match(firsts[0].auth ?? '', /^[\w-]+\.[\w-]+\./, 'the first frame carries the ID token');
  assert.notEqual(firsts[1].auth, firsts[0].auth, 'the second open carries a fresh token');
  await page.click(sel('live'));
  await page.waitForSelector(sel('live-status', '[data-state="ended"]:has-text("you ended it")'), { timeout: WAIT });

  // Every token refused, and so is the refresh: one refresh, then the
  // page says the sign-in no longer holds, and stops.
  await page.unrouteAll({ behavior: 'ignoreErrors' });
  await page.route((url) => url.pathname.includes('securetoken.googleapis.com'), (route) => route.fulfill({
    status: 400, contentType: 'application/json', body: JSON.stringify({ error: { code: 400, message: 'TOKEN_EXPIRED' } }),
  }));
  const refused = await refuseLiveTokens(page, () => true);
  await page.click(sel('live'));
  await page.waitForSelector(sel('live-status', '[data-state="ended"]:has-text("sign-in no longer holds")'), { timeout: WAIT });
  await page.waitForSelector(sel('system-message', ':has-text("no longer valid")'), { timeout: WAIT });
  await page.waitForTimeout(1500);
  assert.equal(refused.length, 1, 'opens after the refresh failed');
  await screenshot(page, 'live-token');
  noPageErrors(page);
});

scenario('live mode in one tab: a tab opened meanwhile says why it cannot send, until the conversation ends', 'live-elsewhere', async (t) => {
  const context = await t.newContext();
  // No microphone: the fake one would make the conversation take a turn
  // of its own, which ends the stream the second tab follows, whenever
  // the machine lets it. Live mode goes on with typed text.
  await context.addInitScript(() => {
    navigator.mediaDevices.getUserMedia = () => Promise.reject(new DOMException('no microphone in this scenario', 'NotAllowedError'));
  });
  const page = await openTab(context);
  await hello(page);
  await goLive(page);

  // The second tab's resume follows the live conversation: it cannot
  // send, and says why.
  const other = await openTab(context);
  const why = sel('live-elsewhere');
  await other.waitForSelector(why, { timeout: WAIT });
  assert.match(await other.innerText(why), /Another tab is in a live conversation in this chat: Send and Live wait until it ends/);
  assert.ok(await other.isDisabled(sel('send')), 'the second tab can send');
  // Regenerate and Edit would fail as Send would: disabled, saying why.
  for (const control of ['regenerate', 'edit']) {
    assert.ok(await other.isDisabled(sel(control)), `the second tab can press ${control}`);
    assert.match(await other.getAttribute(sel(control), 'title'), /Another tab is in a live conversation in this chat/,
      `${control} says why it waits`);
  }
  await screenshot(other, 'live-elsewhere');
  await other.setViewportSize({ width: 390, height: 844 });
  await screenshot(other, 'live-elsewhere-phone');

  await front(page);
  await page.click(sel('live'));
  await page.waitForSelector(sel('live-status', '[data-state="ended"]'), { timeout: WAIT });
  await other.waitForSelector(why, { state: 'detached', timeout: WAIT });
  await other.waitForSelector(sel('send', ':enabled'), { timeout: WAIT });
  await other.waitForSelector(sel('regenerate', ':enabled'), { timeout: WAIT });
  assert.ok(await other.isEnabled(sel('edit')), 'Edit is offered again once the conversation ended');
  await send(other, 'play track 1');
  await assistantSays(other, /now playing track 1/);
  noPageErrors(page, other);
});

/** Runs axe-core in the page and returns its violations of impact serious or critical, and the others. */
async function axe(page) {
  await page.addScriptTag({ path: axePath });
  return page.evaluate(async () => {
    const result = await window.axe.run(document, { resultTypes: ['violations'] });
    const describe = (v) => `${v.id} (${v.impact}): ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`;
    return {
      severe: result.violations.filter((v) => ['serious', 'critical'].includes(v.impact)).map(describe),
      other: result.violations.filter((v) => !['serious', 'critical'].includes(v.impact)).map(describe),
    };
  });
}

scenario('accessibility: axe-core finds nothing serious or critical with an open approval or form, on a desktop and on a phone; forms take the focus and hand it on once answered from the keyboard', 'a11y', async (t) => {
  const context = await t.newContext();
  const page = await openTab(context);
  const problems = []; // each check's failure, so that one run tells them all
  const focused = () => page.evaluate(() => {
    const el = document.activeElement;
    return el?.closest('[data-testid="surface"]') ? 'surface' : el?.closest('[data-testid="approval"]') ? 'approval'
      : el?.dataset.testid ?? el?.tagName.toLowerCase();
  });
  const empty = await axe(page);
  await chooseAgent(page, 'dj');
  await send(page, 'change the music to track 2');
  await assistantSays(page, /track 2/i);
  await chooseAgent(page, 'concierge');
  await send(page, 'book a table for 4');
  await page.waitForSelector(sel('approval'), { timeout: WAIT });
  const desktop = await axe(page);
  await page.setViewportSize({ width: 390, height: 844 });
  const phone = await axe(page);
  await screenshot(page, 'a11y-phone');
  await page.setViewportSize({ width: 820, height: 760 });

  // Approved from the keyboard: the focus, in the form, goes to the card
  // that says how the call went, not to the page's body.
  await page.waitForFunction(() => document.activeElement?.closest('[data-testid="approval"]'), null, { timeout: WAIT });
  await page.keyboard.press('Enter');
  await assistantSays(page, /table for 4\b/);
  const approved = await focused();
  if (approved !== 'tool-call') problems.push(`after approving from the keyboard the focus is on ${approved}, not the call's card`);

  // A form takes the focus as an approval does; its heading follows the
  // page's order.
  await send(page, 'reserve a table with a form');
  await page.waitForSelector(sel('surface', '[data-state="form"]'), { timeout: WAIT });
  await page.waitForFunction(() => document.activeElement?.closest('[data-testid="surface"]'), null, { timeout: WAIT }).catch(async () => {
    problems.push(`the form did not take the focus (it is on ${await focused()})`);
  });
  const form = await axe(page);
  await page.setViewportSize({ width: 390, height: 844 });
  const formPhone = await axe(page);
  await screenshot(page, 'a11y-form-phone');
  await page.setViewportSize({ width: 820, height: 760 });
  for (const [name, found] of [['a new chat', empty], ['the conversation', desktop], ['a phone', phone], ['an open form', form],
    ['an open form on a phone', formPhone]]) {
    for (const v of found.severe) problems.push(`axe-core, serious or critical, on ${name}: ${v}`);
    for (const v of found.other) problems.push(`axe-core on ${name}: ${v}`);
  }

  // Sent from the keyboard: the focus stays with the form, which says it
  // was submitted.
  const surface = page.locator(sel('surface'));
  await surface.getByLabel('Date').fill('2026-12-24');
  await surface.getByRole('button', { name: 'Reserve' }).focus();
  await page.keyboard.press('Enter');
  await assistantSays(page, /Booked: a table for 2 on 2026-12-24/);
  await page.waitForSelector(sel('surface', '[data-state="submitted"]'), { timeout: WAIT });
  const sent = await focused();
  if (sent !== 'surface') problems.push(`after sending the form from the keyboard the focus is on ${sent}, not the form`);
  assert.deepEqual(problems, [], 'accessibility problems');
  noPageErrors(page);
});

// --- a person's chats and data (docs/data.md) -----------------------------------

/** The sidebar's entry of the chat whose title matches re. */
function chatEntry(page, re) {
  return page.locator(sel('chat-item')).filter({ has: page.locator(sel('chat-title'), { hasText: re }) });
}

/** Waits until the sidebar's entry titled re is in the state wanted ('idle', 'waiting', …). */
async function entryState(page, re, state) {
  await chatEntry(page, re).and(page.locator(`[data-state="${state}"]`)).waitFor({ timeout: WAIT });
}

/** The files of a ZIP (stored or deflated, as Go's archive/zip writes them), by name. */
function unzip(buf) {
  const eocd = buf.lastIndexOf(Buffer.from([0x50, 0x4b, 0x05, 0x06]));
  assert.ok(eocd >= 0, 'not a ZIP: no end of central directory');
  const files = new Map();
  let at = buf.readUInt32LE(eocd + 16);
  for (let n = buf.readUInt16LE(eocd + 10); n > 0; n--) {
    assert.equal(buf.readUInt32LE(at), 0x02014b50, 'a central directory entry');
    const method = buf.readUInt16LE(at + 10);
    const size = buf.readUInt32LE(at + 20);
    const nameLen = buf.readUInt16LE(at + 28);
    const skip = nameLen + buf.readUInt16LE(at + 30) + buf.readUInt16LE(at + 32);
    const name = buf.toString('utf8', at + 46, at + 46 + nameLen);
    const local = buf.readUInt32LE(at + 42);
    const start = local + 30 + buf.readUInt16LE(local + 26) + buf.readUInt16LE(local + 28);
    const data = buf.subarray(start, start + size);
    files.set(name, method === 8 ? inflateRawSync(data) : data);
    at += 46 + skip;
  }
  return files;
}

scenario('the chat list: titles, what waits for the person in each chat and across them, a chat opened from another tab, rename, delete after a confirmation, the drawer on a phone', 'chats', async (t) => {
  const context = await t.newContext();
  const page = await openTab(context);
  await page.setViewportSize({ width: 1280, height: 800 });
  assert.ok(await page.isVisible(sel('sidebar')), 'the chat list is beside the chat on a wide screen');

  // A chat with an approval left open, then a second chat: each gets its
  // title from the offline model, and the first says what waits in it.
  await chooseAgent(page, 'concierge');
  await send(page, 'book a table for 4');
  await page.waitForSelector(sel('approve'), { timeout: WAIT });
  await entryState(page, /^A table reservation$/, 'waiting');
  assert.match(await chatEntry(page, /^A table reservation$/).locator(sel('chat-state')).textContent(), /Waiting for you: 1 approval/);
  await page.click(sel('new-chat'));
  await ready(page);
  await send(page, "what's the weather in Tokyo?");
  await assistantSays(page, /Tokyo/);
  await entryState(page, /^Weather in Tokyo$/, 'idle');
  const titles = () => page.locator(sel('chat-title')).allTextContents();
  assert.deepEqual(await titles(), ['Weather in Tokyo', 'A table reservation'], 'most recent activity first');
  assert.equal(await page.textContent(sel('waiting-total')), '1', 'the count of what waits across chats');

  // Another tab (another device of the same person): the approval is the
  // first tab's to answer, which its list says; opened there, the chat
  // shows the call waiting without buttons.
  const other = await openTab(context);
  await other.setViewportSize({ width: 1280, height: 800 });
  await entryState(other, /^A table reservation$/, 'waiting');
  assert.match(await chatEntry(other, /^A table reservation$/).locator(sel('chat-state')).textContent(), /1 on another tab/);
  assert.equal(await count(other, sel('waiting-total')), 0, 'nothing this tab can answer is counted');
  await chatEntry(other, /^A table reservation$/).locator(sel('chat-open')).click();
  await other.waitForSelector(sel('tool-call', '[data-tool-name="book_table"][data-status="waiting"]'), { timeout: WAIT });
  assert.equal(await count(other, sel('approve')), 0, 'another device answers a call only its asker may');
  await screenshot(other, 'chats-other-tab');

  // The first tab follows the profile's chat; it answers, and the list says so.
  await front(page);
  await page.waitForSelector(sel('approve'), { timeout: WAIT });
  await page.click(sel('approve'));
  await assistantSays(page, /table for 4\b/);
  await entryState(page, /^A table reservation$/, 'idle');
  await page.waitForSelector(sel('waiting-total'), { state: 'detached', timeout: WAIT });
  await front(other);
  await other.reload();
  await ready(other);
  await entryState(other, /^A table reservation$/, 'idle');

  // Rename: kept, and shown after a reload.
  await front(page);
  await chatEntry(page, /^Weather in Tokyo$/).locator(sel('chat-rename')).click();
  await page.fill(sel('rename-input'), '  Tokyo trip ');
  await page.keyboard.press('Enter');
  await chatEntry(page, /^Tokyo trip$/).waitFor({ timeout: WAIT });
  await page.reload();
  await ready(page);
  await chatEntry(page, /^Tokyo trip$/).waitFor({ timeout: WAIT });
  const renamed = await chatEntry(page, /^Tokyo trip$/).getAttribute('data-chat-id');

  // Delete: asked first; a cancel keeps the chat, a confirmation deletes it
  // and everything in it.
  const desktop = await axe(page);
  await chatEntry(page, /^Tokyo trip$/).locator(sel('chat-delete')).click();
  await page.waitForSelector(sel('confirm-delete-chat'), { timeout: WAIT });
  const dialog = await axe(page);
  await page.keyboard.press('Escape');
  await page.waitForSelector(sel('confirm-delete-chat'), { state: 'detached', timeout: WAIT });
  assert.equal(await chatEntry(page, /^Tokyo trip$/).count(), 1, 'a cancelled deletion deleted');
  await chatEntry(page, /^Tokyo trip$/).locator(sel('chat-delete')).click();
  await page.click(sel('confirm-delete-chat-ok'));
  await chatEntry(page, /^Tokyo trip$/).waitFor({ state: 'detached', timeout: WAIT });
  await page.reload();
  await ready(page);
  await chatEntry(page, /^A table reservation$/).waitFor({ timeout: WAIT });
  assert.deepEqual(await titles(), ['A table reservation'], 'the chats after the deletion');
  const gone = await page.evaluate(async (id) => (await fetch(`/Chat/${id}`, { headers: await window.batonHeaders() })).status, renamed);
  assert.equal(gone, 404, 'GET /Chat/{chatId} of the deleted chat');

  // A phone: the list is a drawer, opened from the header, closed by a pick or Escape.
  await page.setViewportSize({ width: 390, height: 844 });
  await page.waitForSelector(sel('sidebar'), { state: 'hidden', timeout: WAIT }); // closed at first on a phone
  await page.click(sel('chats-toggle'));
  await page.waitForSelector(sel('sidebar', '[data-open="true"]'), { state: 'visible', timeout: WAIT });
  const phone = await axe(page);
  await screenshot(page, 'chats-drawer');
  await page.keyboard.press('Escape');
  await page.waitForSelector(sel('sidebar'), { state: 'hidden', timeout: WAIT });
  await page.click(sel('chats-toggle'));
  await chatEntry(page, /^A table reservation$/).locator(sel('chat-open')).click();
  await page.waitForSelector(sel('sidebar'), { state: 'hidden', timeout: WAIT });
  await assistantSays(page, /table for 4\b/);
  assert.equal(await page.textContent(sel('session-id')), await chatEntry(page, /^A table reservation$/).getAttribute('data-chat-id'));

  const problems = [];
  for (const [name, found] of [['the list', desktop], ['the deletion\'s confirmation', dialog], ['the drawer on a phone', phone]]) {
    for (const v of found.severe) problems.push(`axe-core, serious or critical, on ${name}: ${v}`);
  }
  assert.deepEqual(problems, [], 'accessibility problems');
  noPageErrors(page, other);
});

scenario('a person\'s data: an answer rated and kept after a reload, "Download my data" saves a ZIP with the chat and the rating, "Delete my data" deletes every chat after a confirmation', 'my-data', async (t) => {
  const context = await t.newContext();
  const page = await openTab(context);
  await hello(page);
  const chatId = await page.textContent(sel('session-id'));

  // A rating: pressed, kept after a reload, replaced, taken back.
  await page.click(sel('rate-up'));
  await page.waitForSelector(sel('rating', '[data-rating="up"]'), { timeout: WAIT });
  await page.reload();
  await ready(page);
  await page.waitForSelector(sel('rating', '[data-rating="up"]'), { timeout: WAIT });
  assert.equal(await page.getAttribute(sel('rate-up'), 'aria-pressed'), 'true');
  await page.click(sel('rate-down'));
  await page.waitForSelector(sel('rating', '[data-rating="down"]'), { timeout: WAIT });

  // The download: a ZIP with the chat's messages and the rating. The data
  // menu is at the foot of the chat list, a drawer at this width.
  await page.click(sel('chats-toggle'));
  await page.waitForSelector(sel('sidebar', '[data-open="true"]'), { state: 'visible', timeout: WAIT });
  await page.click(sel('account-menu'));
  const menu = await axe(page);
  const [download] = await Promise.all([page.waitForEvent('download', { timeout: WAIT }), page.click(sel('download-data'))]);
  assert.match(download.suggestedFilename(), /\.zip$/);
  const files = unzip(await readFile(await download.path()));
  assert.ok(files.has('README.txt') && files.has('chats.ndjson'), `the export's files: ${[...files.keys()]}`);
  const chats = files.get('chats.ndjson').toString().trim().split('\n').map((l) => JSON.parse(l));
  assert.deepEqual(chats.map((c) => c.id), [chatId], 'the chats exported');
  const messages = files.get(`${chats[0].dir}/messages.ndjson`)?.toString() ?? '';
  assert.match(messages, /"hello"/, 'the user\'s message is in the export');
  assert.match(messages, /offline demo model/, 'the answer is in the export');
  assert.match(messages, /"rating":"down"/, 'the rating is in the export');
  await page.waitForSelector(sel('page-notice', '[data-kind="info"]'), { timeout: WAIT });

  // Delete my data: asked first, then every chat goes.
  await page.keyboard.press('Escape');
  await page.waitForSelector(sel('sidebar'), { state: 'hidden', timeout: WAIT });
  await page.click(sel('page-notice-dismiss'));
  await page.click(sel('chats-toggle'));
  await page.click(sel('account-menu'));
  await page.click(sel('delete-data'));
  await page.waitForSelector(sel('confirm-delete-data'), { timeout: WAIT });
  const dialog = await axe(page);
  await screenshot(page, 'delete-data');
  await page.click(sel('confirm-delete-data-ok'));
  await page.waitForSelector(sel('page-notice', '[data-kind="info"]'), { timeout: WAIT });
  assert.match(await page.textContent(sel('page-notice')), /All your data was deleted|being deleted/);
  await page.waitForSelector(sel('no-chats'), { state: 'attached', timeout: WAIT });
  assert.equal(await count(page, sel('chat-item', `[data-chat-id="${chatId}"]`)), 0, 'the deleted chat is still listed');
  assert.notEqual(await page.textContent(sel('session-id')), chatId, 'a new chat after the deletion');
  await page.reload();
  await ready(page);
  await page.waitForSelector(sel('no-chats'), { state: 'attached', timeout: WAIT });
  const gone = await page.evaluate(async (id) => (await fetch(`/Chat/${id}`, { headers: await window.batonHeaders() })).status, chatId);
  assert.equal(gone, 404, 'GET /Chat/{chatId} after the deletion');

  const problems = [];
  for (const [name, found] of [['the data menu', menu], ['the deletion\'s confirmation', dialog]]) {
    for (const v of found.severe) problems.push(`axe-core, serious or critical, on ${name}: ${v}`);
  }
  assert.deepEqual(problems, [], 'accessibility problems');
  noPageErrors(page);
});

// --- the operator's console (/admin) --------------------------------------------

/**
 * Leaves the lease of user's only session an hour past its term, held by a
 * holder that died: written to the Firestore emulator the runner uses
 * (FIRESTORE_EMULATOR_HOST, which go test ./local passes on; by hand, the
 * address the runner logs as "emulator started"). Returns the holder.
 */
async function leaveLeaseStuck(user) {
  const host = process.env.FIRESTORE_EMULATOR_HOST;
  assert.ok(host, 'FIRESTORE_EMULATOR_HOST names the runner\'s Firestore emulator, where the stuck lease is left');
  const headers = { Authorization: 'Bearer owner', 'Content-Type': 'application/json' };
  const sessions = `http://${host}/v1/projects/baton-local/databases/(default)/documents/baton/baton/users/${user}/sessions`;
  const { documents = [] } = await (await fetch(sessions, { headers })).json();
  assert.equal(documents.length, 1, 'the user has one session');
  const fence = Number(documents[0].fields.lease?.mapValue?.fields?.fence?.integerValue ?? 0) + 1;
  const holder = 'ghost-tab/died-an-hour-ago';
  const lease = { holder: { stringValue: holder }, fence: { integerValue: String(fence) },
    expires: { timestampValue: new Date(Date.now() - 3600_000).toISOString() } };
  const resp = await fetch(`http://${host}/v1/${documents[0].name}?updateMask.fieldPaths=lease`, {
    method: 'PATCH', headers, body: JSON.stringify({ fields: { lease: { mapValue: { fields: lease } } } }),
  });
  assert.equal(resp.status, 200, `the stuck lease was not written: ${await resp.text()}`);
  return holder;
}

/** Opens the console in a new tab of context and signs in as the local operator. */
async function openConsole(context) {
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (err) => errors.push(err.message));
  page.errors = errors;
  await page.goto(`${BASE}/admin/`);
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  await page.getByRole('heading', { name: /^Overview of / }).waitFor({ timeout: WAIT });
  return page;
}

scenario('the operator\'s console: find the chat whose approval waits, find it stuck when its holder died, read its timeline, release its lease, approve it for the user, and the user\'s next turn goes on; axe finds nothing serious', 'console', async (t) => {
  const context = await t.newContext();
  const page = await openTab(context);
  await chooseAgent(page, 'concierge');
  await send(page, 'book a table for 4');
  await page.waitForSelector(sel('approve'), { timeout: WAIT });
  const { user } = await ids(page);

  const ops = await openConsole(await t.newContext());
  const overview = await axe(ops);
  await screenshot(ops, 'console-overview');
  // The chats waiting for an answer, filtered by the user.
  await ops.getByRole('link', { name: 'Chats', exact: true }).click();
  await ops.getByRole('button', { name: 'Waiting for an answer' }).click();
  await ops.getByLabel('User').fill(user);
  await ops.getByRole('button', { name: 'Filter' }).click();
  // The list unfiltered can still show while the filtered page loads: the
  // row is this user's (other scenarios leave approvals waiting too).
  const row = ops.locator('tbody tr', { hasText: 'book_table (approval, pending)' }).filter({ hasText: user });
  await row.waitFor({ timeout: WAIT });
  const list = await axe(ops);
  await screenshot(ops, 'console-waiting');
  // The chat's holder dies with the lease taken: the stuck-lease list
  // finds the chat; the other stuck lists have nothing of this user.
  const holder = await leaveLeaseStuck(user);
  for (const name of ['Stuck: call', 'Stuck: cleanup']) {
    await ops.getByRole('button', { name }).click();
    await ops.getByText('No chat in this state.').waitFor({ timeout: WAIT });
  }
  await ops.getByRole('button', { name: 'Stuck: lease' }).click();
  const stuck = ops.locator('tbody tr', { hasText: holder }).filter({ hasText: user });
  await stuck.waitFor({ timeout: WAIT });
  await screenshot(ops, 'console-stuck');
  await stuck.getByRole('link').nth(1).click();
  // The timeline: the message, the call, its record, the lease expired.
  await ops.getByRole('heading', { name: /^Chat / }).waitFor({ timeout: WAIT });
  await ops.locator('.timeline .entry.call-paused', { hasText: 'book_table' }).waitFor({ timeout: WAIT });
  await ops.locator('.timeline .entry.message', { hasText: 'book a table for 4' }).waitFor({ timeout: WAIT });
  await ops.locator('dd', { hasText: `expired (held by ${holder}` }).waitFor({ timeout: WAIT });
  const timeline = await axe(ops);
  await screenshot(ops, 'console-timeline');
  // Released (after the console's confirmation), fenced: the chat is free.
  ops.once('dialog', (d) => d.accept());
  await ops.getByRole('button', { name: 'Release the lease' }).click();
  await ops.locator('dd', { hasText: /^released, fence \d+$/ }).waitFor({ timeout: WAIT });
  await ops.getByRole('button', { name: 'Approve' }).click();
  await ops.locator('.timeline .entry.call-settled', { hasText: 'by operator:operator@baton.local' }).waitFor({ timeout: WAIT });
  await screenshot(ops, 'console-approved');

  // The user's tab: the booking went through, and the next turn goes on.
  await page.reload();
  await ready(page);
  await assistantSays(page, /table for 4\b/);
  await send(page, 'thanks, what time is it?');
  await assistantSays(page, /time|o'clock|\d:\d\d/i);
  // The action is in the record.
  await ops.getByRole('link', { name: 'Actions', exact: true }).click();
  await ops.locator('tbody tr', { hasText: 'answer' }).filter({ hasText: 'done' }).first().waitFor({ timeout: WAIT });
  const actions = await axe(ops);
  await screenshot(ops, 'console-actions');
  for (const [name, found] of [['the overview', overview], ['the chats', list], ['a timeline', timeline], ['the actions', actions]]) {
    assert.deepEqual(found.severe, [], `axe-core's serious and critical findings on ${name}`);
  }
  noPageErrors(page, ops);
});
