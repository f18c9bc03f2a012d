/**
 * The page's speed as a newcomer waits for it (`npm run bench:page`): the production build served
 * and opened in Debian's Chromium exactly as the browser tests do (tests/e2e/harness.ts).
 *
 * - Page stage: on climbing, click Step stage → the new stage row and the J chart's new point are
 *   in the DOM (the first screen), then → no chart in view lags (no `data-pending` outside
 *   `data-offscreen`), then → the charts off screen have caught up too (no `data-pending`), each
 *   once a frame has been painted; timed inside the page (performance.now, click to the animation
 *   frame after), median and range of 10 stages after 2 warm-up stages.
 * - Run: a fresh climbing page at speed "fast", Run ▶ for 30 stages (click → 30 rows drawn); stages/s.
 * - The main chunk's size (the built index-*.js), and the machine's load (os.loadavg) before and after.
 *
 * Prints a table; timings go to docs/performance.md by hand.
 */
import { readdirSync, statSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { openPlayground, settled } from '../tests/e2e/harness';

const WARMUP = 2;
const STAGES = 10;
const RUN_STAGES = 30;

/**
 * Clicks `testid` in the page and resolves, in ms: when `want` stage rows exist and the J chart has
 * `want` points (the first screen), when no chart in view lags, and when no chart at all lags.
 */
async function clickUntilDrawn(p: Page, testid: string, want: number): Promise<[number, number, number]> {
  // A string, not a function: tsx would wrap a function's inner arrows in a helper the page lacks.
  return p.evaluate(`new Promise((resolve) => {
    const want = ${want};
    const done = () =>
      document.querySelectorAll('[data-testid="stage-row"]').length >= want &&
      Number(document.querySelector('[data-testid="chart-j"]')?.getAttribute('data-points')) >= want;
    const t0 = performance.now();
    document.querySelector('[data-testid="${testid}"]').click();
    let first = 0;
    let seen = 0;
    const tick = () => {
      const now = performance.now() - t0;
      if (!first && done()) first = now;
      // Every chart in view drawn: nothing on screen lags the store.
      if (first && !seen && !document.querySelector('[data-pending]:not([data-offscreen])')) seen = now;
      // Every chart drawn: nothing lags the store, off-screen charts caught up too.
      if (!seen || document.querySelector('[data-pending]')) return requestAnimationFrame(tick);
      // The frame with the new DOM is painted before the next animation frame starts.
      requestAnimationFrame(() => resolve([first, seen, performance.now() - t0]));
    };
    requestAnimationFrame(tick);
  })`);
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const at = (i: number) => s[i] ?? NaN;
  return s.length % 2 ? at((s.length - 1) / 2) : (at(s.length / 2 - 1) + at(s.length / 2)) / 2;
};

async function openClimbing(p: Page, url: string): Promise<void> {
  await p.goto(url, { waitUntil: 'load' });
  await settled(p);
  await p.getByTestId('chart-j').waitFor();
}

async function main(): Promise<void> {
  const [load0 = NaN] = loadavg();
  const pg = await openPlayground();
  try {
    const assets = join(pg.distDir, 'assets');
    const mainChunk = readdirSync(assets).find((f) => /^index-.*\.js$/.test(f));
    const mainKb = mainChunk ? statSync(join(assets, mainChunk)).size / 1000 : NaN;

    const p = await pg.freshPage({ width: 1280, height: 800 });
    await openClimbing(p, pg.url);
    const times: number[] = [];
    const inView: number[] = [];
    const all: number[] = [];
    for (let k = 1; k <= WARMUP + STAGES; k++) {
      const [ms, msInView, msAll] = await clickUntilDrawn(p, 'step-stage', k);
      if (k > WARMUP) {
        times.push(ms);
        inView.push(msInView);
        all.push(msAll);
      }
      await settled(p);
    }
    await p.context().close();

    const q = await pg.freshPage({ width: 1280, height: 800 });
    await openClimbing(q, pg.url);
    await q.getByTestId('speed').selectOption('fast');
    const [runMs] = await clickUntilDrawn(q, 'run', RUN_STAGES);
    await q.context().close();
    const [load1 = NaN] = loadavg();

    const rows: [string, string][] = [
      ['page stage to first screen drawn (median of 10)', `${median(times).toFixed(1)} ms`],
      ['  range', `${Math.min(...times).toFixed(1)}–${Math.max(...times).toFixed(1)} ms`],
      ['page stage to every chart in view drawn (median of 10)', `${median(inView).toFixed(1)} ms`],
      ['  range', `${Math.min(...inView).toFixed(1)}–${Math.max(...inView).toFixed(1)} ms`],
      ['page stage to every chart drawn, off screen too (median of 10)', `${median(all).toFixed(1)} ms`],
      ['  range', `${Math.min(...all).toFixed(1)}–${Math.max(...all).toFixed(1)} ms`],
      [`Run, ${RUN_STAGES} stages at fast`, `${(RUN_STAGES / (runMs / 1000)).toFixed(1)} stages/s (${runMs.toFixed(0)} ms)`],
      ['main chunk', `${mainKb.toFixed(1)} kB (${mainChunk})`],
      ['load average (1 min) before → after', `${load0.toFixed(2)} → ${load1.toFixed(2)} on ${cpus().length} cores`],
    ];
    const w = Math.max(...rows.map((r) => r[0].length));
    for (const [k, v] of rows) console.log(`${k.padEnd(w)}  ${v}`);
    console.log(`first screen (ms): ${times.map((t) => t.toFixed(0)).join(' ')}`);
    console.log(`every chart in view (ms): ${inView.map((t) => t.toFixed(0)).join(' ')}`);
    console.log(`every chart (ms): ${all.map((t) => t.toFixed(0)).join(' ')}`);
    if (pg.errors.length > 0) console.log(`page errors:\n${pg.errors.join('\n')}`);
  } finally {
    await pg.close();
  }
}

await main();
