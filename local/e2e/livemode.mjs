// What the live-mode scenarios share (scenarios.test.mjs, live-restart.mjs).
//
// Chromium's fake microphone: the browser is
// launched with --use-fake-device-for-media-stream (a fake device),
// --use-fake-ui-for-media-stream (no permission prompt) and
// --use-file-for-fake-audio-capture=<WAV>%noloop (the device plays the
// file once, then silence). The WAV is written here: silence, a 440 Hz
// tone the Gemini Live stand-in hears as speech, and silence, which ends
// the person's turn (the stand-in answers with how many seconds it
// heard).

import { writeFileSync } from 'node:fs';

/** Writes 16-bit mono PCM at rate as a WAV file: lead s of silence, tone s of tone, tail s of silence. */
export function writeToneWav(path, { rate = 48000, lead = 0.3, tone = 1.5, tail = 1.5 } = {}) {
  const n = Math.round((lead + tone + tail) * rate);
  const pcm = Buffer.alloc(2 * n);
  for (let i = 0; i < n; i++) {
    const t = i / rate;
    const v = t >= lead && t < lead + tone ? Math.round(8000 * Math.sin(2 * Math.PI * 440 * t)) : 0;
    pcm.writeInt16LE(v, 2 * i);
  }
  const header = Buffer.alloc(44);
  header.write('RIFF', 0);
  header.writeUInt32LE(36 + pcm.length, 4);
  header.write('WAVEfmt ', 8);
  header.writeUInt32LE(16, 16); // the fmt chunk's size
  header.writeUInt16LE(1, 20); // PCM
  header.writeUInt16LE(1, 22); // mono
  header.writeUInt32LE(rate, 24);
  header.writeUInt32LE(2 * rate, 28); // bytes a second
  header.writeUInt16LE(2, 32); // bytes a frame
  header.writeUInt16LE(16, 34); // bits a sample
  header.write('data', 36);
  header.writeUInt32LE(pcm.length, 40);
  writeFileSync(path, Buffer.concat([header, pcm]));
}

/** The Chromium flags of a fake microphone playing the WAV at path once. */
export function fakeMicArgs(path) {
  return ['--use-fake-device-for-media-stream', '--use-fake-ui-for-media-stream', `--use-file-for-fake-audio-capture=${path}%noloop`];
}

/**
 * An init script: records in window.e2eLiveStates each state the Live
 * button shows (connecting, live, reconnecting, ended), in order.
 */
export function recordLiveStates() {
  window.e2eLiveStates = [];
  new MutationObserver(() => {
    const state = document.querySelector('[data-testid="live"]')?.dataset.state;
    if (state && window.e2eLiveStates.at(-1) !== state) window.e2eLiveStates.push(state);
  }).observe(document, { subtree: true, childList: true, attributes: true, attributeFilter: ['data-state'] });
}
