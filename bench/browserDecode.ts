/**
 * `npm run bench:browser`: decoding at SmolLM-135M's shape in Chromium — the engine the page's agent
 * workers run — where the CPU backend loads its relaxed-SIMD build (Node 20, which the other benches
 * use, does not run relaxed SIMD exactly, so it never loads it). Workers of one cross-origin-isolated
 * page (served from a routed origin with COOP / COEP, like tests/e2e/relaxed.test.ts), each holding
 * one random-weight model at two threads: Q8 and Q4 with int8 activations on the relaxed build and
 * on the shared build, and f32 (exact). The timed calls alternate between the workers, round by
 * round, so every row sees the same load; one greedy `generate` per call (16-token prompts; 1, 4
 * and 16 prompts, `--tokens` new tokens each, default 16); medians over `--rounds` (default 3)
 * after a warm-up call. Prints tokens/s per row, relaxed ÷ shared, and each ÷ f32.
 *
 * Not here: the peers (bench/hf.ts, in Node), correctness (tests/e2e/relaxed.test.ts).
 */
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { build } from 'esbuild';
import { chromium } from 'playwright-core';
import { ensureChromium } from '../scripts/ensure-chromium.mjs';
import { CHROMIUM_ARGS } from '../tests/e2e/harness';
import { markdownTable } from './report';

const { values } = parseArgs({ options: { rounds: { type: 'string', default: '3' }, tokens: { type: 'string', default: '16' }, threads: { type: 'string', default: '2' } } });
const rounds = Number(values.rounds), tokens = Number(values.tokens), threads = Number(values.threads);
const ORIGIN = 'http://localhost:4398';
const ROWS = [
  { name: 'q8, int8 act., relaxed SIMD', storage: 'q8', relaxed: true },
  { name: 'q8, int8 act., shared build', storage: 'q8', relaxed: false },
  { name: 'q4, int8 act., relaxed SIMD', storage: 'q4', relaxed: true },
  { name: 'q4, int8 act., shared build', storage: 'q4', relaxed: false },
  { name: 'f32 (the same f32 kernels in every build)', storage: 'f32', relaxed: true },
] as const;
const PROMPTS = [1, 4, 16];

const bundle = await build({ entryPoints: [new URL('./browserDecodeWorker.ts', import.meta.url).pathname], bundle: true, write: false, format: 'esm', platform: 'browser', target: 'chrome120', logLevel: 'warning' });
const browser = await chromium.launch({ executablePath: await ensureChromium(), args: CHROMIUM_ARGS });
const page = await browser.newPage();
await page.route(`${ORIGIN}/**`, (route) => {
  const js = route.request().url().endsWith('/worker.js');
  return route.fulfill({
    status: 200,
    headers: { 'Cross-Origin-Opener-Policy': 'same-origin', 'Cross-Origin-Embedder-Policy': 'require-corp', 'Content-Type': js ? 'text/javascript' : 'text/html' },
    body: js ? bundle.outputFiles[0]!.text : '<!doctype html><title>bench</title>',
  });
});
await page.goto(`${ORIGIN}/`);
const load0 = loadavg()[0]!;
// The page keeps its workers in an array; `call(i, msg)` posts to worker i and resolves with its answer.
await page.evaluate(() => {
  const g = globalThis as unknown as { workers: Worker[]; call(i: number, m: unknown): Promise<unknown> };
  g.workers = [];
  g.call = (i, m) => new Promise((done) => {
    const w = g.workers[i]!;
    w.onmessage = (e) => done(e.data);
    w.postMessage(m);
  });
});
const call = (i: number, m: unknown): Promise<{ ms?: number; build?: string; ready?: number; error?: string }> =>
  page.evaluate(([i, m]) => (globalThis as unknown as { call(i: number, m: unknown): Promise<never> }).call(i as number, m), [i, m] as const);
const builds: string[] = [];
for (const [i, row] of ROWS.entries()) {
  await page.evaluate(() => (globalThis as unknown as { workers: Worker[] }).workers.push(new Worker('/worker.js', { type: 'module' })));
  const r = await call(i, { relaxed: row.relaxed, storage: row.storage, threads });
  if (r.error) throw new Error(`${row.name}: ${r.error}`);
  builds.push(`${r.build}, ${r.ready} threads`);
  for (const S of PROMPTS) await call(i, { prompts: S, tokens: 2 }); // warm-up
}
const ms: number[][][] = ROWS.map(() => PROMPTS.map(() => []));
for (let k = 0; k < rounds; k++) {
  for (const [p, S] of PROMPTS.entries()) {
    const order = k % 2 === 0 ? ROWS.map((_, i) => i) : ROWS.map((_, i) => ROWS.length - 1 - i);
    for (const i of order) {
      const r = await call(i, { prompts: S, tokens });
      if (r.error) throw new Error(`${ROWS[i]!.name}: ${r.error}`);
      ms[i]![p]!.push(r.ms!);
    }
  }
}
const load1 = loadavg()[0]!;
await browser.close();
const median = (a: number[]): number => [...a].sort((x, y) => x - y)[a.length >> 1]!;
const tps = (i: number, p: number): number => (PROMPTS[p]! * tokens) / (median(ms[i]![p]!) / 1000);
const f32 = ROWS.length - 1;
const rows = ROWS.map((row, i) => [
  `${row.name} (${builds[i]})`,
  ...PROMPTS.map((_, p) => tps(i, p).toFixed(1)),
  ...PROMPTS.map((_, p) => (row.storage === 'f32' ? '—' : `${row.relaxed ? `${(tps(i, p) / tps(i + 1, p)).toFixed(2)}×` : '—'} / ${(tps(i, p) / tps(f32, p)).toFixed(2)}×`)),
]);
console.log(`Chromium, ${threads} threads a worker, ${tokens} new tokens a prompt, medians of ${rounds} rounds; load ${load0.toFixed(1)} → ${load1.toFixed(1)}`);
console.log(markdownTable(['tokens/s', ...PROMPTS.map((S) => `${S} prompt${S > 1 ? 's' : ''}`), ...PROMPTS.map((S) => `÷ shared build / ÷ f32, ${S}`)], rows, [false, ...PROMPTS.map(() => true), ...PROMPTS.map(() => true)]));
