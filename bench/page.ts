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
 * `npm run bench:page -- --base DIR [--rounds K]`: also builds the checkout at DIR (another git
 * worktree of this repository, with node_modules) and measures the two builds in turn, K rounds
 * (default 3), so both see the same load; the table then has a column per build, medians over
 * every round.
 *
 * Prints a table; timings go to docs/performance.md by hand.
 */
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { Page } from 'playwright-core';
import { build, preview } from 'vite';
import { openPlayground, settled, type Playground } from '../tests/e2e/harness';

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

/** One build's figures over the rounds it ran. */
interface Sample {
  first: number[];
  inView: number[];
  all: number[];
  runRate: number[];
}

/** One round on the build served at `url`: 10 page stages after 2 warm-up, then Run for 30 stages. */
async function round(pg: Playground, url: string, into: Sample): Promise<void> {
  const p = await pg.freshPage({ width: 1280, height: 800 });
  await openClimbing(p, url);
  for (let k = 1; k <= WARMUP + STAGES; k++) {
    const [ms, msInView, msAll] = await clickUntilDrawn(p, 'step-stage', k);
    if (k > WARMUP) {
      into.first.push(ms);
      into.inView.push(msInView);
      into.all.push(msAll);
    }
    await settled(p);
  }
  await p.context().close();

  const q = await pg.freshPage({ width: 1280, height: 800 });
  await openClimbing(q, url);
  await q.getByTestId('speed').selectOption('fast');
  const [runMs] = await clickUntilDrawn(q, 'run', RUN_STAGES);
  into.runRate.push(RUN_STAGES / (runMs / 1000));
  await q.context().close();
}

/** Builds the checkout at `root` for production and serves it; returns its URL and a closer. */
async function serveOther(root: string): Promise<{ url: string; close: () => Promise<void> }> {
  const outDir = mkdtempSync(join(tmpdir(), 'sat-bench-base-'));
  const configFile = join(root, 'vite.config.ts');
  const saved = process.env.NODE_ENV;
  process.env.NODE_ENV = 'production';
  try {
    await build({ root, configFile, mode: 'production', logLevel: 'warn', build: { outDir, emptyOutDir: true, sourcemap: false } });
  } finally {
    if (saved === undefined) delete process.env.NODE_ENV;
    else process.env.NODE_ENV = saved;
  }
  const server = await preview({ root, configFile, logLevel: 'warn', build: { outDir }, preview: { host: '127.0.0.1', port: 0, strictPort: true, open: false } });
  const addr = server.httpServer.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${addr.port}/`,
    close: async () => {
      await server.close();
      rmSync(outDir, { recursive: true, force: true });
    },
  };
}

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

async function main(): Promise<void> {
  const baseDir = arg('--base');
  const rounds = Number(arg('--rounds') ?? (baseDir ? 3 : 1));
  const loads: number[] = [loadavg()[0] ?? NaN];
  const pg = await openPlayground();
  const other = baseDir ? await serveOther(resolve(baseDir)) : null;
  try {
    const assets = join(pg.distDir, 'assets');
    const mainChunk = readdirSync(assets).find((f) => /^index-.*\.js$/.test(f));
    const mainKb = mainChunk ? statSync(join(assets, mainChunk)).size / 1000 : NaN;
    const builds: { name: string; url: string; s: Sample }[] = [
      ...(other ? [{ name: `base (${baseDir})`, url: other.url, s: { first: [], inView: [], all: [], runRate: [] } }] : []),
      { name: 'this checkout', url: pg.url, s: { first: [], inView: [], all: [], runRate: [] } },
    ];
    for (let r = 0; r < rounds; r++) {
      for (const b of builds) {
        await round(pg, b.url, b.s);
        loads.push(loadavg()[0] ?? NaN);
      }
    }

    const range = (xs: number[]) => `${Math.min(...xs).toFixed(1)}–${Math.max(...xs).toFixed(1)}`;
    const n = rounds * STAGES;
    const rows: string[][] = [
      ['', ...builds.map((b) => b.name)],
      [`page stage to first screen drawn (median of ${n})`, ...builds.map((b) => `${median(b.s.first).toFixed(1)} ms`)],
      ['  range', ...builds.map((b) => `${range(b.s.first)} ms`)],
      [`page stage to every chart in view drawn (median of ${n})`, ...builds.map((b) => `${median(b.s.inView).toFixed(1)} ms`)],
      ['  range', ...builds.map((b) => `${range(b.s.inView)} ms`)],
      [`page stage to every chart drawn, off screen too (median of ${n})`, ...builds.map((b) => `${median(b.s.all).toFixed(1)} ms`)],
      ['  range', ...builds.map((b) => `${range(b.s.all)} ms`)],
      [`Run, ${RUN_STAGES} stages at fast (median of ${rounds})`, ...builds.map((b) => `${median(b.s.runRate).toFixed(1)} stages/s`)],
      ['  each round', ...builds.map((b) => b.s.runRate.map((x) => x.toFixed(1)).join(', '))],
    ];
    const w = rows[0]!.map((_, c) => Math.max(...rows.map((r) => (r[c] ?? '').length)));
    for (const r of rows) console.log(r.map((x, c) => (c === 0 ? x.padEnd(w[c]!) : x.padStart(w[c]!))).join('  '));
    console.log(`main chunk (this checkout): ${mainKb.toFixed(1)} kB (${mainChunk})`);
    console.log(`load average (1 min) at start and after each round: ${loads.map((l) => l.toFixed(2)).join(' → ')} on ${cpus().length} cores`);
    for (const b of builds) console.log(`${b.name}, first screen (ms): ${b.s.first.map((t) => t.toFixed(0)).join(' ')}`);
    if (pg.errors.length > 0) console.log(`page errors:\n${pg.errors.join('\n')}`);
  } finally {
    await other?.close();
    await pg.close();
  }
}

await main();
