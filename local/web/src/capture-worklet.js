// The microphone's path to live mode (voice.js loads this file into the
// AudioContext's worklet scope): the context's samples, at its own rate
// (sampleRate, a global of the scope), become 16-bit mono PCM at 16 kHz,
// posted to the page in frames of 100 ms. Each output sample is the mean
// of the input samples it stands for (a box filter: enough low-pass for
// speech at the usual 44.1 or 48 kHz).

const RATE = 16000;
const FRAME = RATE / 10; // samples in a posted frame

class Capture extends AudioWorkletProcessor {
  constructor() {
    super();
    this.step = sampleRate / RATE; // input samples per output sample
    this.due = this.step; // input samples until the next output sample
    this.sum = 0;
    this.n = 0;
    this.frame = new Int16Array(FRAME);
    this.len = 0;
  }

  process(inputs) {
    const channel = inputs[0]?.[0];
    if (!channel) return true;
    for (let i = 0; i < channel.length; i++) {
      this.sum += channel[i];
      this.n++;
      this.due -= 1;
      if (this.due > 0) continue;
      this.due += this.step;
      const v = Math.max(-1, Math.min(1, this.sum / this.n));
      this.sum = 0;
      this.n = 0;
      this.frame[this.len++] = v < 0 ? v * 0x8000 : v * 0x7fff;
      if (this.len === FRAME) {
        this.port.postMessage(this.frame.buffer, [this.frame.buffer]);
        this.frame = new Int16Array(FRAME);
        this.len = 0;
      }
    }
    return true;
  }
}

registerProcessor('baton-capture', Capture);
