// Live mode's audio (docs/live.md, "The demo page"): the microphone goes out as 16-bit
// little-endian mono PCM at 16 kHz (capture-worklet.js downsamples it from
// the AudioContext's own rate), and the model's voice, the same PCM at
// 24 kHz, is played on the same context, each piece scheduled to start
// where the previous one ends, so that pieces arriving in bursts play
// without gaps. A small lead (the jitter buffer) is kept before the first
// piece of an answer; each time the queue runs dry mid-answer the lead
// grows, up to half a second.

import captureUrl from './capture-worklet.js?url';

const VOICE_RATE = 24000;
const LEAD_MIN = 0.1; // s
const LEAD_MAX = 0.5; // s
// The queue ran dry mid-answer when a piece comes less than this after the
// previous one ended; later than that, it is a new answer.
const SAME_ANSWER = 0.6; // s

/**
 * What live mode's audio did in this tab, for the browser scenarios and
 * anyone curious (window.batonLiveAudio): frames sent, samples of voice
 * received and scheduled, and how often playback ran dry mid-answer.
 */
export const audioStats = { sentFrames: 0, receivedSamples: 0, scheduledSeconds: 0, gaps: 0, interrupted: 0, contextRate: 0 };
if (typeof window !== 'undefined') window.batonLiveAudio = audioStats;

/**
 * One AudioContext for a live segment: the microphone's capture and the
 * model's voice. Create it in the click that starts live mode (browsers
 * start audio only after a person's gesture).
 */
export class Voice {
  constructor() {
    this.ctx = new AudioContext();
    audioStats.contextRate = this.ctx.sampleRate;
    this.out = this.ctx.createGain();
    this.out.connect(this.ctx.destination);
    this.next = 0; // when the queued voice ends, in the context's time
    this.lead = LEAD_MIN;
    this.playing = new Set();
    this.stream = null;
  }

  /**
   * Opens the microphone and calls onFrame with each 100 ms frame of
   * 16 kHz PCM (an ArrayBuffer). Throws when the microphone is refused or
   * missing.
   */
  async listen(onFrame) {
    this.ctx.resume().catch(() => {});
    const stream = await navigator.mediaDevices.getUserMedia({
      audio: { channelCount: 1, echoCancellation: true, noiseSuppression: true, autoGainControl: true },
    });
    if (this.ctx.state === 'closed') {
      for (const track of stream.getTracks()) track.stop(); // the segment ended meanwhile
      return;
    }
    this.stream = stream;
    await this.ctx.audioWorklet.addModule(captureUrl);
    const source = this.ctx.createMediaStreamSource(this.stream);
    const capture = new AudioWorkletNode(this.ctx, 'baton-capture', { channelCount: 1, channelCountMode: 'explicit' });
    capture.port.onmessage = (e) => onFrame(e.data);
    // The worklet runs only while it leads to the output: through silence.
    const mute = this.ctx.createGain();
    mute.gain.value = 0;
    source.connect(capture).connect(mute).connect(this.ctx.destination);
  }

  /** Queues a piece of the model's voice (24 kHz PCM, an ArrayBuffer). */
  play(pcm) {
    const samples = new Int16Array(pcm, 0, pcm.byteLength >> 1);
    if (samples.length === 0) return;
    audioStats.receivedSamples += samples.length;
    const buffer = this.ctx.createBuffer(1, samples.length, VOICE_RATE);
    const channel = buffer.getChannelData(0);
    for (let i = 0; i < samples.length; i++) channel[i] = samples[i] / 0x8000;
    const now = this.ctx.currentTime;
    if (this.next < now) {
      if (this.next > 0 && now - this.next < SAME_ANSWER) {
        audioStats.gaps++;
        this.lead = Math.min(this.lead * 1.5, LEAD_MAX);
      }
      this.next = now + this.lead;
    }
    const source = this.ctx.createBufferSource();
    source.buffer = buffer;
    source.connect(this.out);
    source.onended = () => this.playing.delete(source);
    source.start(this.next);
    this.playing.add(source);
    this.next += buffer.duration;
    audioStats.scheduledSeconds += buffer.duration;
  }

  /** Drops the voice queued: the person spoke into the answer. */
  interrupt() {
    for (const source of this.playing) source.stop();
    this.playing.clear();
    this.next = 0;
    audioStats.interrupted++;
  }

  /** Stops the microphone and the voice. */
  close() {
    for (const track of this.stream?.getTracks() ?? []) track.stop();
    this.ctx.close().catch(() => {});
  }
}
