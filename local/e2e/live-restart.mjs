// Live mode survives a runner restart mid-call: driven by local's
// TestLiveSurvivesRestart, which runs the local runner as a process of its
// own (BATON_URL, development identity) and kills it when told.
//
//   BATON_URL=http://127.0.0.1:PORT node live-restart.mjs
//
// The page goes live and asks "where am I?"; the page's location is held
// unanswered (a test hook), so the get_location call stays open. This
// script then prints "kill <user> <chat>" and waits for a line
// "restarted" on its stdin: meanwhile the runner was SIGKILLed and
// started again on the same port. The page must reconnect by itself
// (showing "reconnecting"), show the call again without running it again,
// and, once the location comes, answer it once; the agent then speaks
// the location. The script ends the segment, prints "ok" and exits 0; any
// failure exits 1. The Go test then reads the stored conversation.

import assert from 'node:assert/strict';
import { mkdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { chromium } from 'playwright-core';
import { fakeMicArgs, recordLiveStates, writeToneWav } from './livemode.mjs';

const BASE = (process.env.BATON_URL || 'http://127.0.0.1:8080').replace(/\/$/, '');
const OUT = join(import.meta.dirname, 'test-output');
const WAIT = 30_000;
// The dead runner's hold on the chat lapses within 15 s (DESIGN.md,
// invariant 7); the page's next try may come up to 5 s after that.
const RECONNECT_WAIT = 45_000;
const sel = (id, attrs = '') => `[data-testid="${id}"]${attrs}`;

const lines = createInterface({ input: process.stdin });
const nextLine = () => new Promise((resolve) => lines.once('line', resolve));

/** The page's test hook: the location waits for e2eReleaseLocation(). */
function holdLocation() {
  window.e2eLocationCalls = 0;
  const waiting = [];
  navigator.geolocation.getCurrentPosition = (ok) => {
    window.e2eLocationCalls++;
    waiting.push(ok);
  };
  window.e2eReleaseLocation = () => {
    for (const ok of waiting.splice(0)) ok({ coords: { latitude: 48.85, longitude: 2.35, accuracy: 20 } });
  };
}

async function main(browser) {
  const context = await browser.newContext({ viewport: { width: 820, height: 760 } });
  await context.grantPermissions(['microphone'], { origin: BASE });
  await context.addInitScript(holdLocation);
  await context.addInitScript(recordLiveStates);
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (err) => errors.push(err.message));
  await page.goto(BASE);
  await page.waitForSelector(sel('app', '[data-ready="true"]'), { timeout: WAIT });
  if (await page.locator(`${sel('agent')} option[value="dj"]`).count()) await page.selectOption(sel('agent'), 'dj');

  await page.click(sel('live'));
  await page.waitForSelector(sel('live', '[data-state="live"]'), { timeout: WAIT });
  await page.fill(sel('composer-input'), 'where am I?');
  await page.click(sel('send'));
  const call = sel('tool-call', '[data-tool-name="get_location"]');
  await page.waitForSelector(`${call}[data-status="running"]`, { timeout: WAIT });
  assert.equal(await page.evaluate(() => window.e2eLocationCalls), 1, 'get_location ran once');

  const user = await page.textContent(sel('user-id'));
  const chat = await page.textContent(sel('session-id'));
  console.log(`kill ${user} ${chat}`);
  assert.equal((await nextLine())?.trim(), 'restarted');

  // The page comes back by itself and shows the call, still its own to answer.
  await page.waitForFunction(() => window.e2eLiveStates.includes('reconnecting') && window.e2eLiveStates.at(-1) === 'live',
    null, { timeout: RECONNECT_WAIT }).catch(async (err) => {
    throw new Error(`the page did not come back live: states ${await page.evaluate(() => window.e2eLiveStates.join(' → '))}: ${err.message}`);
  });
  await page.waitForSelector(`${call}[data-status="running"]`, { timeout: WAIT });
  await page.screenshot({ path: join(OUT, 'live-restart-reconnected.png') });

  await page.evaluate(() => window.e2eReleaseLocation());
  await page.waitForFunction(() => [...document.querySelectorAll('[data-testid="message"][data-role="assistant"]')]
    .some((m) => /You are at latitude 48\.85, longitude 2\.35/.test(m.innerText)), null, { timeout: WAIT });
  await page.waitForSelector(`${call}[data-status="done"]`, { timeout: WAIT });
  await page.waitForSelector(sel('live-status', '[data-speaking="false"]'), { timeout: WAIT });
  assert.equal(await page.evaluate(() => window.e2eLocationCalls), 1, 'get_location ran again after the restart');

  await page.click(sel('live'));
  await page.waitForSelector(sel('live-status', '[data-state="ended"]'), { timeout: WAIT });
  assert.equal(await page.locator(call).count(), 1, 'the call is shown once');
  await page.screenshot({ path: join(OUT, 'live-restart.png') });
  assert.deepEqual(errors, [], 'uncaught errors in the page');
  await context.close();
}

mkdirSync(OUT, { recursive: true });
const mic = join(tmpdir(), `baton-e2e-mic-${process.pid}.wav`);
writeToneWav(mic, { tone: 0, lead: 0.5, tail: 0 }); // silence: the call is typed
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking',
    '--disable-component-update', '--disable-sync', ...fakeMicArgs(mic)],
});
try {
  await main(browser);
  console.log('ok');
} catch (err) {
  console.error(err);
  process.exitCode = 1;
} finally {
  await browser.close();
  rmSync(mic, { force: true });
  lines.close();
}
