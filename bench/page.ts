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
 * `npm run bench:page -- --lm [--rounds K] [--base DIR]`: the language stage instead — arith-team
 * (or `--lm-preset NAME`), seed 1, opened from a share link; click Step stage → the stage row drawn (the end of the frame
 * that first has it; the next animation frame, which a task queued after that frame such as the
 * autosave delays, is printed beside it), stages 1 and 2 (the first one included), against `npm run sat` on the same preset, seed
 * and stages with --profile, whose tables total each stage's wall time (start-up and J₀ are left
 * out on both sides); beside the wall time, the CPU time of every thread over each stage (the
 * browser's processes, from /proc; the CLI's own count, printed with --profile), whose ratio is
 * not shared out by the machine's load (`--lm-threads`: the page's by process type and thread). The page waits 5 s after it has opened before the first click, as a newcomer
 * reads it (`--lm-read S`); `--lm-stages N` times N stages (default 2). Page and CLI alternate, K rounds
 * (default 3), the order flipped every round; each page stage's J is checked against the CLI's.
 * With `--base DIR` the other build's page and CLI are timed in the same rounds too, and each page's
 * ratio is to its own build's CLI. `--lm-hide` adds a
 * page with every chart and the game view hidden (the link's panel flags; the stage table stays,
 * as it is what is timed): what drawing costs the stage. Each page's line says how many agents'
 * workers had finished their warm-up at the first click (`warmed`). `--lm-unminified` builds this
 * checkout's page without minifying, and `--js-flags '…'` passes V8 flags to the browser (with
 * DEBUG=pw:browser and '--trace-opt --trace-deopt', what each isolate compiles in which stage:
 * each click's time is printed); their timings are for reading, not for comparing.
 *
 * `--lm-profile` (the language stage, one page, no CLI): per stage, each thread's busy time from a
 * Chromium trace, V8's compile and GC events by thread (their CPU time), CPU profiles of the main
 * thread and of each agent worker.
 *
 * `npm run bench:page -- --run-only --base DIR [--rounds K]`: Run's rate alone, this build and DIR's
 * alternated K rounds (default 10), the order flipped every round.
 *
 * `npm run bench:page -- --run-profile [--base DIR]`: where Run's time goes — this checkout (or DIR)
 * built unminified, Run on climbing under a Chromium trace and a CPU profile of the main thread.
 *
 * Prints a table; timings go to docs/performance.md by hand.
 */
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { Page } from 'playwright-core';
import { build, preview } from 'vite';
import { encodeShare, makeShareState } from '../src/app/share';
import { PANEL_NAMES } from '../src/app/panels';
import { presetConfig } from '../src/sat/presets';
import { CHROMIUM_ARGS, openPlayground, ROOT, settled, type Playground } from '../tests/e2e/harness';
import { childrenCpu, cliProfile } from './measure';

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

/**
 * Clicks `testid` in the page; ms until `want` stage rows are drawn: [the end of the frame that
 * first has them (a message posted from that frame's animation callback runs once the frame's
 * rendering is done, before any task queued after it such as the autosave's), the next animation
 * frame after that one (which a long task after the frame delays)].
 */
function clickUntilRowPainted(p: Page, testid: string, want: number): Promise<[number, number]> {
  return p.evaluate(`new Promise((resolve) => {
    const t0 = performance.now();
    document.querySelector('[data-testid="${testid}"]').click();
    const tick = () => {
      if (document.querySelectorAll('[data-testid="stage-row"]').length < ${want}) return requestAnimationFrame(tick);
      // Both: the message (end of this frame) and the next frame; on a loaded machine either may come first.
      let painted = 0;
      let next = 0;
      const both = () => painted && next && resolve([painted, next]);
      const ch = new MessageChannel();
      ch.port1.onmessage = () => {
        painted = performance.now() - t0;
        ch.port1.close();
        both();
      };
      ch.port2.postMessage(null);
      requestAnimationFrame(() => {
        next = performance.now() - t0;
        both();
      });
    };
    requestAnimationFrame(tick);
  })`) as Promise<[number, number]>;
}

/** Clicks `testid` in the page; ms until `want` stage rows are in the DOM and the frame after is painted. */
async function clickUntilRows(p: Page, testid: string, want: number): Promise<number> {
  return (await clickUntilRowPainted(p, testid, want))[1];
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

  into.runRate.push(await runRate(pg, url));
}

/** Run ▶ at `fast` for RUN_STAGES stages from a fresh climbing page; stages/s. */
async function runRate(pg: Playground, url: string): Promise<number> {
  const q = await pg.freshPage({ width: 1280, height: 800 });
  await openClimbing(q, url);
  await q.getByTestId('speed').selectOption('fast');
  const [runMs] = await clickUntilDrawn(q, 'run', RUN_STAGES);
  await q.context().close();
  return RUN_STAGES / (runMs / 1000);
}

/**
 * `--run-only --base DIR [--rounds K]`: Run's rate alone, the two builds alternated K rounds
 * (default 10), the order flipped every round; each round's rates and load, then the medians.
 */
async function mainRunOnly(): Promise<void> {
  const baseDir = arg('--base');
  if (!baseDir) throw new Error('--run-only needs --base DIR');
  const rounds = Number(arg('--rounds') ?? 10);
  const pg = await openPlayground();
  const other = await serveOther(resolve(baseDir));
  try {
    const sides = [
      { name: 'base', url: other.url, rates: [] as number[] },
      { name: 'this', url: pg.url, rates: [] as number[] },
    ];
    for (let r = 0; r < rounds; r++) {
      for (const s of r % 2 === 0 ? sides : [...sides].reverse()) s.rates.push(await runRate(pg, s.url));
      console.log(`round ${r + 1}: base ${sides[0]!.rates[r]!.toFixed(1)}, this ${sides[1]!.rates[r]!.toFixed(1)} stages/s (this ÷ base ${(sides[1]!.rates[r]! / sides[0]!.rates[r]!).toFixed(2)}), load ${uptime()}`);
    }
    const ratios = sides[1]!.rates.map((x, i) => x / sides[0]!.rates[i]!);
    console.log(`Run, ${RUN_STAGES} stages at fast, median of ${rounds}: base ${median(sides[0]!.rates).toFixed(1)}, this ${median(sides[1]!.rates).toFixed(1)} stages/s; median ratio ${median(ratios).toFixed(2)}`);
  } finally {
    await other.close();
    await pg.close();
  }
}

/** Builds the checkout at `root` for production and serves it; returns its URL and a closer. */
async function serveOther(root: string, minify = true): Promise<{ url: string; close: () => Promise<void> }> {
  const outDir = mkdtempSync(join(tmpdir(), 'sat-bench-base-'));
  const configFile = join(root, 'vite.config.ts');
  const saved = process.env.NODE_ENV;
  process.env.NODE_ENV = 'production';
  try {
    await build({ root, configFile, mode: 'production', logLevel: 'warn', build: { outDir, emptyOutDir: true, sourcemap: false, minify } });
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

/** `--lm-hide`'s hidden panels: every chart, the game view, the timeline and the transcripts (panels.ts). */
const LM_HIDDEN = PANEL_NAMES.filter((n) => !['table', 'settings', 'team', 'files', 'claims'].includes(n));

/** The language comparison's preset (`--lm-preset NAME`, default arith-team), seed and stages timed. */
const LM_PRESET = arg('--lm-preset') ?? 'arith-team';
const LM_SEED = 1;
/** Stages timed by `--lm` (`--lm-stages N`, to see how the ratio settles as the workers warm up). */
const LM_STAGES = Number(arg('--lm-stages') ?? 2);
/** Seconds between the opened page and the first click (`--lm-read S`; default 5). */
const LM_READ_MS = 1000 * Number(arg('--lm-read') ?? 5);

/**
 * Opens arith-team (seed 1) from a share link, then clicks Step stage LM_STAGES times; per stage,
 * ms from the click to the frame after its row is drawn, the CPU ms every browser process spent
 * meanwhile, and the row's J as the page shows it.
 */
async function pageLmStages(pg: Playground, url: string, hide: readonly string[] = []): Promise<{ ms: number[]; next: number[]; cpu: number[]; j: string[]; warmed: number }> {
  const p = await pg.freshPage({ width: 1280, height: 800 });
  const link = await encodeShare(makeShareState(presetConfig(LM_PRESET, { seed: LM_SEED }), { preset: LM_PRESET, hide }));
  await p.goto(url + link, { waitUntil: 'load' });
  await p.getByText(/Opened a shared experiment/).waitFor({ timeout: 300_000 });
  await settled(p);
  // A newcomer reads the opened page before the first click; a build may use that time (its agents'
  // workers warm up in the background).
  await p.waitForTimeout(LM_READ_MS);
  // How many agents' workers finished their warm-up before the first click (boot.ts `warmed`).
  const warmed = Number(await p.evaluate('window.satPlayground?.warmed?.() ?? 0'));
  const ms: number[] = [];
  const next: number[] = [];
  const j: string[] = [];
  const cpu: number[] = [];
  for (let k = 1; k <= LM_STAGES; k++) {
    if (arg('--js-flags')) console.log(`stage ${k} clicked at ${new Date().toISOString()}`);
    const cpu0 = childrenCpu();
    const [painted, nextFrame] = await clickUntilRowPainted(p, 'step-stage', k);
    const cpu1 = childrenCpu();
    const by = [...cpu1].map(([key, ms]) => [key, ms - (cpu0.get(key) ?? 0)] as const).filter(([, ms]) => ms > 0).sort((x, y) => y[1] - x[1]);
    cpu.push(by.reduce((t, [, ms]) => t + ms, 0));
    if (process.argv.includes('--lm-threads')) console.log(`  stage ${k} CPU by thread: ${by.slice(0, 10).map(([key, ms]) => `${key} ${ms.toFixed(0)}`).join(', ')}`);
    ms.push(painted);
    next.push(nextFrame);
    j.push(Number(await p.locator('[data-testid="stage-row"]').nth(k - 1).getByTestId('cell-j').getAttribute('data-value')).toFixed(3));
    await settled(p);
  }
  await p.context().close();
  return { ms, next, cpu, j, warmed };
}

/**
 * `npm run sat -- --profile` on the same preset, seed and stages (tsx, as the script runs it): per
 * stage, the wall time its profile table totals (the stage loop from its first phase to its end;
 * the counting it adds is a few wrapped calls), and each row's J.
 */
async function cliLmStages(root = ROOT): Promise<{ ms: number[]; cpu: number[]; j: string[] }> {
  const r = await cliProfile(root, ['--preset', LM_PRESET, '--seed', String(LM_SEED), '--stages', String(LM_STAGES)]);
  if (r.ms.length !== LM_STAGES) throw new Error(`npm run sat printed ${r.ms.length} stage profiles, not ${LM_STAGES}`);
  return r;
}

/** One trace event of Chromium's tracing (the fields read here). */
interface TraceEvent {
  name: string;
  ph: string;
  pid: number;
  tid: number;
  ts: number;
  dur?: number;
  /** Thread (CPU) duration, µs, where the event has one. */
  tdur?: number;
  args?: { name?: string; data?: { functionName?: string; url?: string; lineNumber?: number } };
}

/** A V8 CPU profile (the fields read here). */
interface CpuProfile {
  startTime?: number;
  nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number } }[];
  samples: number[];
  timeDeltas: number[];
}

/** Self time per function ("name file:line"), ms. */
function selfTimes(profile: CpuProfile): Map<string, number> {
  const self = new Map<string, number>();
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  profile.samples.forEach((id, i) => {
    const f = byId.get(id)!.callFrame;
    const what = `${f.functionName || '(anonymous)'} ${f.url.split('/').pop()}:${f.lineNumber}`;
    self.set(what, (self.get(what) ?? 0) + (profile.timeDeltas[i] ?? 0) / 1000);
  });
  return self;
}

/**
 * `--lm-profile`: where the page's language stage goes. Opens arith-team as `pageLmStages` does and,
 * per stage, records a Chromium trace (every thread: the page's main thread, each agent's worker,
 * their kernel helpers) and a V8 CPU profile of the main thread; prints per thread its busy time
 * (top-level tasks) and the main thread's heaviest functions by self time.
 */
async function profileLm(pg: Playground): Promise<void> {
  const p = await pg.freshPage({ width: 1280, height: 800 });
  const link = await encodeShare(makeShareState(presetConfig(LM_PRESET, { seed: LM_SEED }), { preset: LM_PRESET }));
  await p.goto(pg.url + link, { waitUntil: 'load' });
  await p.getByText(/Opened a shared experiment/).waitFor({ timeout: 300_000 });
  await settled(p);
  await p.waitForTimeout(LM_READ_MS); // as pageLmStages: the workers warm up meanwhile
  const cdp = await p.context().newCDPSession(p);
  await cdp.send('Profiler.enable');
  await cdp.send('Profiler.setSamplingInterval', { interval: 500 });
  // The agents' workers, each profiled through its own (non-flattened) target session.
  const workerSessions: string[] = [];
  let nextId = 1;
  const pendingReplies = new Map<number, (r: unknown) => void>();
  cdp.on('Target.attachedToTarget', (e: { sessionId: string; targetInfo: { type: string; url: string } }) => {
    if (e.targetInfo.type === 'worker' && !e.targetInfo.url.startsWith('blob:')) workerSessions.push(e.sessionId);
  });
  cdp.on('Target.receivedMessageFromTarget', (e: { message: string }) => {
    const m = JSON.parse(e.message) as { id?: number; result?: unknown };
    if (m.id !== undefined) pendingReplies.get(m.id)?.(m.result);
  });
  const toWorker = (sessionId: string, method: string, params: object = {}): Promise<unknown> => {
    const id = nextId++;
    const reply = new Promise((r) => pendingReplies.set(id, r));
    void cdp.send('Target.sendMessageToTarget', { sessionId, message: JSON.stringify({ id, method, params }) });
    return reply;
  };
  await cdp.send('Target.setAutoAttach', { autoAttach: true, waitForDebuggerOnStart: false, flatten: false });
  await new Promise((r) => setTimeout(r, 500));
  for (const w of workerSessions) {
    await toWorker(w, 'Profiler.enable');
    await toWorker(w, 'Profiler.setSamplingInterval', { interval: 500 });
  }
  console.log(`agent workers attached: ${workerSessions.length}`);
  for (let k = 1; k <= LM_STAGES; k++) {
    for (const w of workerSessions) await toWorker(w, 'Profiler.start');
    await pg.browser.startTracing(p, { categories: ['toplevel', 'devtools.timeline', 'disabled-by-default-devtools.timeline', '__metadata', 'v8', 'disabled-by-default-v8.compile', 'disabled-by-default-v8.gc'] });
    await cdp.send('Profiler.start');
    const t0 = Date.now();
    await p.getByTestId('step-stage').click();
    await p.waitForFunction((want) => document.querySelectorAll('[data-testid="stage-row"]').length >= want, k, { timeout: 600_000, polling: 16 });
    const wall = Date.now() - t0;
    const workerProfiles = await Promise.all(workerSessions.map((w) => toWorker(w, 'Profiler.stop'))) as { profile: CpuProfile }[];
    const { profile } = (await cdp.send('Profiler.stop')) as { profile: CpuProfile };
    const trace = JSON.parse((await pg.browser.stopTracing()).toString('utf8')) as { traceEvents: TraceEvent[] };
    const names = new Map<string, string>();
    for (const e of trace.traceEvents) if (e.ph === 'M' && e.name === 'thread_name') names.set(`${e.pid}:${e.tid}`, e.args?.name ?? '?');
    const busy = new Map<string, number>();
    for (const e of trace.traceEvents) {
      if (e.ph !== 'X' || e.name !== 'RunTask' || !e.dur) continue;
      const key = `${e.pid}:${e.tid}`;
      busy.set(key, (busy.get(key) ?? 0) + e.dur / 1000);
    }
    console.log(`\nstage ${k}: ${wall} ms click → row (load ${uptime()}); threads' busy time (top-level tasks):`);
    for (const [key, ms] of [...busy].sort((x, y) => y[1] - x[1]).slice(0, 8)) console.log(`  ${(names.get(key) ?? key).padEnd(28)} ${ms.toFixed(0).padStart(7)} ms`);
    // The page's main thread (the busiest renderer main) and the workers of its process: how much
    // of the stage had a worker computing, only the main thread, or nothing at all (waiting).
    const main = [...busy].filter(([key]) => names.get(key) === 'CrRendererMain').sort((x, y) => y[1] - x[1])[0]?.[0];
    const pid = main?.split(':')[0];
    const tasks = trace.traceEvents.filter((e) => e.ph === 'X' && e.name === 'RunTask' && e.dur && `${e.pid}` === pid);
    const span = (list: TraceEvent[]) => list.map((e) => [e.ts, e.ts + e.dur!] as const);
    const workers = span(tasks.filter((e) => names.get(`${e.pid}:${e.tid}`) === 'DedicatedWorker thread'));
    const mainTasks = span(tasks.filter((e) => `${e.pid}:${e.tid}` === main));
    const all = [...workers, ...mainTasks];
    const t0us = Math.min(...all.map((x) => x[0]));
    const t1us = Math.max(...all.map((x) => x[1]));
    const ms1 = 1000; // 1 ms bins
    const nb = Math.ceil((t1us - t0us) / ms1);
    const wb = new Uint8Array(nb);
    const mb = new Uint8Array(nb);
    for (const [a, b] of workers) for (let i = Math.floor((a - t0us) / ms1); i < Math.ceil((b - t0us) / ms1); i++) wb[i] = 1;
    for (const [a, b] of mainTasks) for (let i = Math.floor((a - t0us) / ms1); i < Math.ceil((b - t0us) / ms1); i++) mb[i] = 1;
    let w = 0;
    let mOnly = 0;
    let none = 0;
    for (let i = 0; i < nb; i++) {
      if (wb[i]) w++;
      else if (mb[i]) mOnly++;
      else none++;
    }
    // V8's own work by thread kind (compiling, GC): CPU ms of the outermost V8 events of each name.
    const v8 = new Map<string, number>();
    for (const e of trace.traceEvents) {
      if (e.ph !== 'X' || !/^V8\.|^MinorGC|^MajorGC|^v8\./.test(e.name) || `${e.pid}` !== pid) continue;
      const key = `${(names.get(`${e.pid}:${e.tid}`) ?? '?').replace(/\d+$/, '')} / ${e.name}`;
      v8.set(key, (v8.get(key) ?? 0) + (e.tdur ?? e.dur ?? 0) / 1000);
    }
    console.log(`  V8 events in the renderer by thread (nested counted in parents too): ${[...v8].sort((x, y) => y[1] - x[1]).slice(0, 24).map(([n, ms]) => `${n} ${ms.toFixed(0)}`).join(', ')}`);
    console.log(`  1 ms bins over ${nb} ms: a worker busy ${w}, only the main thread ${mOnly}, neither ${none}`);
    const byName = new Map<string, number>();
    for (const e of trace.traceEvents) if (e.ph === 'X' && e.dur && `${e.pid}:${e.tid}` === main && e.name !== 'RunTask') byName.set(e.name, (byName.get(e.name) ?? 0) + e.dur / 1000);
    console.log(`  main thread events (nested ones counted in their parents too): ${[...byName].sort((x, y) => y[1] - x[1]).slice(0, 14).map(([n, ms]) => `${n} ${ms.toFixed(0)}`).join(', ')}`);
    const self = selfTimes(profile);
    const total = [...self.values()].reduce((x, y) => x + y, 0);
    const idle = (self.get('(idle) :-1') ?? 0) + (self.get('(program) :-1') ?? 0);
    console.log(`  main thread, sampled: ${total.toFixed(0)} ms, of which idle/program ${idle.toFixed(0)} ms; heaviest by self time:`);
    for (const [what, ms] of [...self].sort((x, y) => y[1] - x[1]).slice(0, 25)) console.log(`    ${ms.toFixed(0).padStart(6)} ms  ${what}`);
    const chunks = new Map<string, number>();
    for (const [what, ms] of self) {
      const chunk = what.split(' ').pop()!.split(':')[0]!;
      chunks.set(chunk, (chunks.get(chunk) ?? 0) + ms);
    }
    workerProfiles.forEach(({ profile: wp }, i) => {
      const ws = selfTimes(wp);
      const top = [...ws].sort((x, y) => y[1] - x[1]).slice(0, 12).map(([what, ms]) => `${what.replace(/ .*\//, ' ')} ${ms.toFixed(0)}`);
      console.log(`  worker ${i}: ${[...ws.values()].reduce((x, y) => x + y, 0).toFixed(0)} ms sampled: ${top.join(' | ')}`);
    });
    console.log(`  main thread by script: ${[...chunks].sort((x, y) => y[1] - x[1]).slice(0, 8).map(([c, ms]) => `${c || '(native)'} ${ms.toFixed(0)}`).join(', ')}`);
    await settled(p);
  }
  await p.context().close();
}

/**
 * `--run-profile [--base DIR]`: where Run's time goes on climbing. This checkout (or DIR) built
 * unminified, Run ▶ at `fast` for RUN_STAGES stages from a fresh page under a Chromium trace and a
 * V8 CPU profile of the main thread; prints the wall time, the main thread's busy time (top-level
 * tasks) and idle gaps, the trace's heaviest main-thread events and the heaviest functions and
 * scripts by self time.
 */
async function profileRun(pg: Playground, root: string): Promise<void> {
  const built = await serveOther(root, false);
  try {
    const p = await pg.freshPage({ width: 1280, height: 800 });
    await openClimbing(p, built.url);
    await p.getByTestId('speed').selectOption('fast');
    const cdp = await p.context().newCDPSession(p);
    await cdp.send('Profiler.enable');
    await cdp.send('Profiler.setSamplingInterval', { interval: 200 });
    await pg.browser.startTracing(p, { categories: ['toplevel', 'devtools.timeline', 'disabled-by-default-devtools.timeline', '__metadata'] });
    await cdp.send('Profiler.start');
    // Until the last stage's row is painted, as Run's rate counts it (not the charts catching up after).
    const runMs = await clickUntilRows(p, 'run', RUN_STAGES);
    const { profile } = (await cdp.send('Profiler.stop')) as { profile: CpuProfile };
    const trace = JSON.parse((await pg.browser.stopTracing()).toString('utf8')) as { traceEvents: TraceEvent[] };
    console.log(`Run, ${RUN_STAGES} stages at fast: ${runMs.toFixed(0)} ms, ${(RUN_STAGES / (runMs / 1000)).toFixed(1)} stages/s (load ${uptime()})`);
    const names = new Map<string, string>();
    for (const e of trace.traceEvents) if (e.ph === 'M' && e.name === 'thread_name') names.set(`${e.pid}:${e.tid}`, e.args?.name ?? '?');
    const busy = new Map<string, number>();
    for (const e of trace.traceEvents) if (e.ph === 'X' && e.name === 'RunTask' && e.dur) busy.set(`${e.pid}:${e.tid}`, (busy.get(`${e.pid}:${e.tid}`) ?? 0) + e.dur / 1000);
    const main = [...busy].filter(([key]) => names.get(key) === 'CrRendererMain').sort((x, y) => y[1] - x[1])[0]?.[0];
    const tasks = trace.traceEvents.filter((e) => e.ph === 'X' && e.name === 'RunTask' && e.dur && `${e.pid}:${e.tid}` === main).sort((a, b) => a.ts - b.ts);
    const long = tasks.filter((e) => e.dur! >= 5000).length;
    console.log(`main thread: ${tasks.length} tasks, busy ${(busy.get(main!) ?? 0).toFixed(0)} ms; tasks ≥ 5 ms: ${long}; longest ${Math.max(...tasks.map((e) => e.dur!)) / 1000} ms`);
    // The longest tasks: when (ms after the first task) and what they hold.
    const t0 = tasks[0]?.ts ?? 0;
    for (const t of [...tasks].sort((a, b) => b.dur! - a.dur!).slice(0, 5)) {
      const inner = trace.traceEvents.filter((e) => e.ph === 'X' && e.dur && `${e.pid}:${e.tid}` === main && e.ts >= t.ts && e.ts + e.dur <= t.ts + t.dur! && e !== t && e.dur >= 2000);
      console.log(`  task at ${((t.ts - t0) / 1000).toFixed(0)} ms, ${(t.dur! / 1000).toFixed(0)} ms: ${inner.slice(0, 8).map((e) => `${e.name}${e.args?.data?.functionName ? `(${e.args.data.functionName})` : ''} ${(e.dur! / 1000).toFixed(0)}`).join(', ')}`);
    }
    {
      // What the longest task ran: the CPU profile's samples inside it (the two share one clock), inclusive.
      const longest = [...tasks].sort((a, b) => b.dur! - a.dur!)[0]!;
      const byIdL = new Map(profile.nodes.map((n) => [n.id, n]));
      const parentL = new Map<number, number>();
      for (const n of profile.nodes as { id: number; children?: number[] }[]) for (const c of n.children ?? []) parentL.set(c, n.id);
      let at = profile.startTime ?? 0;
      const inclL = new Map<string, number>();
      profile.samples.forEach((id, i) => {
        at += profile.timeDeltas[i] ?? 0;
        if (at < longest.ts || at > longest.ts + longest.dur!) return;
        const seen = new Set<string>();
        for (let n: number | undefined = id; n !== undefined; n = parentL.get(n)) {
          const f = byIdL.get(n)!.callFrame;
          const what = `${f.functionName || '(anonymous)'} ${f.url.split('/').pop()}:${f.lineNumber}`;
          if (!seen.has(what)) inclL.set(what, (inclL.get(what) ?? 0) + (profile.timeDeltas[i] ?? 0) / 1000);
          seen.add(what);
        }
      });
      console.log(`  the longest task's functions, inclusive: ${[...inclL].sort((x, y) => y[1] - x[1]).slice(0, 45).map(([w, ms]) => `${w} ${ms.toFixed(0)}`).join(' | ')}`);
    }
    const byName = new Map<string, number>();
    for (const e of trace.traceEvents) if (e.ph === 'X' && e.dur && `${e.pid}:${e.tid}` === main && e.name !== 'RunTask') byName.set(e.name, (byName.get(e.name) ?? 0) + e.dur / 1000);
    console.log(`main thread events (nested ones in their parents too): ${[...byName].sort((x, y) => y[1] - x[1]).slice(0, 18).map(([n, ms]) => `${n} ${ms.toFixed(0)}`).join(', ')}`);
    // What the animation frames ran: the script calls inside each FireAnimationFrame.
    const mainEvents = trace.traceEvents.filter((e) => e.ph === 'X' && e.dur && `${e.pid}:${e.tid}` === main);
    const frames = mainEvents.filter((e) => e.name === 'FireAnimationFrame');
    const inFrames = new Map<string, number>();
    for (const f of frames) {
      for (const e of mainEvents) {
        if (e.name !== 'FunctionCall' || e.ts < f.ts || e.ts + e.dur! > f.ts + f.dur!) continue;
        const d = e.args?.data;
        const what = `${d?.functionName || '(anonymous)'} ${d?.url?.split('/').pop()}:${d?.lineNumber}`;
        inFrames.set(what, (inFrames.get(what) ?? 0) + e.dur! / 1000);
      }
    }
    for (const name of ['Paint', 'Layout', 'UpdateLayoutTree', 'PrePaint', 'Commit', 'FunctionCall', 'TimerFire', 'EventDispatch']) {
      const es = mainEvents.filter((e) => e.name === name);
      console.log(`  ${name}: ${es.length} events, ${(es.reduce((t, e) => t + e.dur!, 0) / 1000).toFixed(0)} ms, longest ${(Math.max(0, ...es.map((e) => e.dur!)) / 1000).toFixed(1)} ms`);
    }
    console.log(`animation frames: ${frames.length}, ${frames.reduce((t, e) => t + e.dur!, 0) / 1000} ms; their calls: ${[...inFrames].sort((x, y) => y[1] - x[1]).slice(0, 8).map(([w, ms]) => `${w} ${ms.toFixed(0)}`).join(', ')}`);
    const self = selfTimes(profile);
    console.log('heaviest by self time:');
    for (const [what, ms] of [...self].sort((x, y) => y[1] - x[1]).slice(0, 40)) console.log(`  ${ms.toFixed(0).padStart(6)} ms  ${what}`);
    const chunks = new Map<string, number>();
    for (const [what, ms] of self) {
      const chunk = what.split(' ').pop()!.split(':')[0]!;
      chunks.set(chunk, (chunks.get(chunk) ?? 0) + ms);
    }
    console.log(`by script: ${[...chunks].sort((x, y) => y[1] - x[1]).slice(0, 10).map(([c, ms]) => `${c || '(native)'} ${ms.toFixed(0)}`).join(', ')}`);
    // Inclusive time of a few functions of interest (each sample counted once per function on its stack).
    const byId = new Map(profile.nodes.map((n) => [n.id, n]));
    const parent = new Map<number, number>();
    for (const n of profile.nodes as { id: number; children?: number[] }[]) for (const c of n.children ?? []) parent.set(c, n.id);
    const incl = new Map<string, number>();
    profile.samples.forEach((id, i) => {
      const seen = new Set<string>();
      for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
        const f = byId.get(at)!.callFrame;
        const what = `${f.functionName || '(anonymous)'} ${f.url.split('/').pop()}:${f.lineNumber}`;
        if (seen.has(what)) continue;
        seen.add(what);
        incl.set(what, (incl.get(what) ?? 0) + (profile.timeDeltas[i] ?? 0) / 1000);
      }
    });
    console.log('heaviest by inclusive time:');
    for (const [what, ms] of [...incl].sort((x, y) => y[1] - x[1]).slice(0, 40)) console.log(`  ${ms.toFixed(0).padStart(6)} ms  ${what}`);
    // React components (capitalised names) and a few calls of interest, inclusive.
    const named = [...incl].filter(([what]) => /^([A-Z]\w*|save|flush|tellListeners|recordFrame|takeBoundary|runStage|play) /.test(what));
    console.log(`components and calls, inclusive: ${named.sort((x, y) => y[1] - x[1]).slice(0, 40).map(([w, ms]) => `${w.split(' ')[0]} ${ms.toFixed(0)}`).join(', ')}`);
    await p.context().close();
  } finally {
    await built.close();
  }
}

/** `uptime`'s load averages, as it prints them. */
const uptime = () => loadavg().map((l) => l.toFixed(2)).join(', ');

async function mainLm(): Promise<void> {
  const baseDir = arg('--base');
  const rounds = Number(arg('--rounds') ?? 3);
  const pg = await openPlayground();
  const other = baseDir ? await serveOther(resolve(baseDir)) : null;
  // `--lm-unminified`: this checkout's page built without minifying (readable names in V8's logs and profiles).
  const plain = process.argv.includes('--lm-unminified') ? await serveOther(ROOT, false) : null;
  const sides = [
    ...(other ? [{ name: 'base page', run: () => pageLmStages(pg, other.url) }, { name: 'base cli', run: () => cliLmStages(resolve(baseDir!)) }] : []),
    { name: 'page', run: () => pageLmStages(pg, plain?.url ?? pg.url) },
    ...(process.argv.includes('--lm-hide') ? [{ name: 'page, drawing hidden', run: () => pageLmStages(pg, pg.url, LM_HIDDEN) }] : []),
    { name: 'cli', run: () => cliLmStages() },
  ];
  const got = new Map(sides.map((s) => [s.name, [] as { ms: number[]; next?: number[]; cpu: number[]; j: string[]; load: string }[]]));
  try {
    for (let r = 0; r < rounds; r++) {
      for (const s of r % 2 === 0 ? sides : [...sides].reverse()) {
        const load = uptime();
        const x = await s.run();
        got.get(s.name)!.push({ ...x, load });
        const nf = (x as { next?: number[] }).next;
        const warmed = (x as { warmed?: number }).warmed;
        const next = (nf ? `   (next frame ${nf.map((t) => t.toFixed(0)).join(' ')})` : '') + (warmed !== undefined ? `   warmed ${warmed}` : '');
        console.log(`round ${r + 1} ${s.name.padEnd(9)} stages ${x.ms.map((t) => t.toFixed(0).padStart(6)).join(' ')} ms${next}   CPU ${x.cpu.map((t) => t.toFixed(0)).join(' ')} ms   J ${x.j.join(' ')}   load ${load}`);
      }
    }
    // Each page against its own build's CLI in the same round: the base page against the base CLI.
    const cliOf = (name: string) => got.get(name.startsWith('base') ? 'base cli' : 'cli')!;
    console.log(`\n${LM_PRESET}, seed ${LM_SEED}: stage wall time, click → the frame drawing the row done (page) vs the stage loop's wall time (CLI --profile); medians of ${rounds} rounds, ratio = page / its build's CLI per round`);
    for (let k = 0; k < LM_STAGES; k++) {
      const clis = [...got].filter(([n]) => n.endsWith('cli')).map(([n, xs]) => `${n} ${median(xs.map((x) => x.ms[k]!)).toFixed(0)} ms`);
      const parts = [...got].filter(([n]) => !n.endsWith('cli')).map(([n, xs]) => {
        const ratios = xs.map((x, r) => x.ms[k]! / cliOf(n)[r]!.ms[k]!);
        const nextRatios = xs.map((x, r) => x.next![k]! / cliOf(n)[r]!.ms[k]!);
        return `${n} ${median(xs.map((x) => x.ms[k]!)).toFixed(0)} ms (×${median(ratios).toFixed(2)}; ${ratios.map((q) => q.toFixed(2)).join(' ')}; next frame ×${median(nextRatios).toFixed(2)})`;
      });
      console.log(`stage ${k + 1}: ${clis.join('   ')}   ${parts.join('   ')}`);
    }
    console.log(`\nCPU time per stage, every thread of every process (the browser's; the CLI's one process): medians of ${rounds} rounds, ratio = page / its build's CLI per round`);
    for (let k = 0; k < LM_STAGES; k++) {
      const clis = [...got].filter(([n]) => n.endsWith('cli')).map(([n, xs]) => `${n} ${median(xs.map((x) => x.cpu[k]!)).toFixed(0)} ms`);
      const parts = [...got].filter(([n]) => !n.endsWith('cli')).map(([n, xs]) => {
        const ratios = xs.map((x, r) => x.cpu[k]! / cliOf(n)[r]!.cpu[k]!);
        return `${n} ${median(xs.map((x) => x.cpu[k]!)).toFixed(0)} ms (×${median(ratios).toFixed(2)}; ${ratios.map((q) => q.toFixed(2)).join(' ')})`;
      });
      console.log(`stage ${k + 1}: ${clis.join('   ')}   ${parts.join('   ')}`);
    }
    console.log(`load (uptime) now: ${uptime()} on ${cpus().length} cores`);
    if (pg.errors.length > 0) console.log(`page errors:\n${pg.errors.join('\n')}`);
  } finally {
    await other?.close();
    await plain?.close();
    await pg.close();
  }
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

// `--js-flags '...'`: V8 flags for the browser (a diagnosis, e.g. '--trace-opt --trace-deopt' with
// DEBUG=pw:browser to read what each isolate compiles; timings taken so are not comparable).
if (arg('--js-flags')) CHROMIUM_ARGS.push(`--js-flags=${arg('--js-flags')}`);

if (process.argv.includes('--run-profile')) {
  const pg = await openPlayground();
  try {
    await profileRun(pg, resolve(arg('--base') ?? ROOT));
  } finally {
    await pg.close();
  }
} else if (process.argv.includes('--lm-profile')) {
  const pg = await openPlayground();
  try {
    await profileLm(pg);
  } finally {
    await pg.close();
  }
} else if (process.argv.includes('--run-only')) await mainRunOnly();
else await (process.argv.includes('--lm') ? mainLm() : main());
