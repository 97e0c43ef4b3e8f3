// The tools this page runs for the agent. Each returns {output: object} or
// {error: string}, exactly what ToolResult takes.

const TRACKS = {
  // Frequencies (Hz) of a short looped melody; 0 is a rest.
  1: { title: 'Morning', beat: 0.32, notes: [523, 659, 784, 659, 587, 698, 880, 698] },
  2: { title: 'Night drive', beat: 0.24, notes: [220, 0, 330, 262, 220, 0, 196, 247] },
  3: { title: 'Waltz', beat: 0.28, notes: [392, 494, 587, 0, 440, 523, 659, 0, 349] },
};

export const browserTools = {
  change_bgm: async (input) => {
    const track = Number(input?.track);
    if (!Number.isInteger(track) || !TRACKS[track]) return { error: 'track must be 1, 2 or 3' };
    playTrack(track);
    return { output: { playing: track } };
  },
  get_location: () => getLocation(),
};

export function isBrowserTool(name) {
  return Object.hasOwn(browserTools, name);
}

export async function runBrowserTool(name, input) {
  try {
    return await browserTools[name](input);
  } catch (err) {
    return { error: `${name} failed in the browser: ${err?.message ?? err}` };
  }
}

// --- get_location -----------------------------------------------------------

const GEO_ERRORS = {
  1: 'the user denied access to their location',
  2: 'the location is unavailable',
  3: 'timed out while reading the location',
};

function getLocation() {
  return new Promise((resolve) => {
    if (!navigator.geolocation) {
      resolve({ error: 'this browser has no geolocation (it needs https or localhost)' });
      return;
    }
    // The API's timeout does not count the time a permission prompt is open.
    const watchdog = setTimeout(() => resolve({ error: 'nobody answered the location prompt' }), 120_000);
    navigator.geolocation.getCurrentPosition(
      (pos) => {
        clearTimeout(watchdog);
        const { latitude, longitude, accuracy } = pos.coords;
        resolve({ output: { latitude, longitude, accuracy } });
      },
      (err) => {
        clearTimeout(watchdog);
        resolve({ error: GEO_ERRORS[err.code] ?? `geolocation failed: ${err.message}` });
      },
      { timeout: 20_000, maximumAge: 60_000 },
    );
  });
}

// --- background music ---------------------------------------------------------

let audio = null; // {ctx, gain, timer}

function indicator() {
  return document.querySelector('[data-testid="bgm"]');
}

/** Switches the music to track n (1..3), or stops it for n = 0. */
export function playTrack(n) {
  stopSound();
  const el = indicator();
  el.dataset.track = String(n);
  const label = el.querySelector('[data-testid="bgm-label"]');
  label.textContent = n ? `Now playing: Track ${n}` : 'Music off';
  label.title = n ? `“${TRACKS[n].title}”, played by this page` : '';
  el.querySelector('[data-testid="bgm-stop"]').hidden = !n;
  if (n) startSound(TRACKS[n]);
  sessionStorage.setItem('baton.bgm', String(n));
}

/** Resumes the track this tab played before a reload. */
export function restoreTrack() {
  const n = Number(sessionStorage.getItem('baton.bgm'));
  if (TRACKS[n]) playTrack(n);
}

// Quiet oscillator tones; any failure (no audio device, autoplay policy)
// leaves the visible indicator as the proof.
function startSound(track) {
  try {
    const ctx = audio?.ctx ?? new AudioContext();
    const gain = ctx.createGain();
    gain.gain.value = 0.04;
    gain.connect(ctx.destination);
    if (ctx.state === 'suspended') {
      ctx.resume().catch(() => {});
      // Browsers start audio only after a user gesture on the page.
      document.addEventListener('pointerdown', () => ctx.resume().catch(() => {}), { once: true });
    }
    let i = 0;
    const tick = () => {
      const f = track.notes[i++ % track.notes.length];
      if (!f || ctx.state !== 'running') return;
      const osc = ctx.createOscillator();
      const env = ctx.createGain();
      const t = ctx.currentTime;
      osc.type = 'triangle';
      osc.frequency.value = f;
      env.gain.setValueAtTime(1, t);
      env.gain.exponentialRampToValueAtTime(0.01, t + track.beat * 0.9);
      osc.connect(env).connect(gain);
      osc.start(t);
      osc.stop(t + track.beat);
    };
    audio = { ctx, gain, timer: setInterval(tick, track.beat * 1000) };
  } catch {
    audio = null;
  }
}

function stopSound() {
  if (!audio) return;
  clearInterval(audio.timer);
  try {
    audio.gain.disconnect();
  } catch {
    // already disconnected
  }
  audio.timer = null;
}
