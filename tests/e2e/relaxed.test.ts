/**
 * The CPU backend's relaxed-SIMD build (scripts/build-wasm.mjs) in Chromium, which has relaxed SIMD
 * (Node 20 does not run it exactly, so Node's tests cover the other builds): in a worker of a
 * cross-origin-isolated page, the backend must load the relaxed build with two threads, and its
 * int8-activation products — quantActs + linQ8a / linQ4a, alone and as matmulForwardMany — must equal
 * the TypeScript twin bit for bit on fresh random inputs (tests/helpers/relaxedCheck.ts; the seed is
 * printed, RELAXED_SEED=<n> replays it). Served from a routed origin with COOP / COEP, no server.
 *
 * Not here: the other builds against the twin (tests/simd.test.ts, tests/threads.test.ts).
 */
import { build } from 'esbuild';
import { chromium } from 'playwright-core';
import { afterAll, describe, expect, it } from 'vitest';
import { ensureChromium } from '../../scripts/ensure-chromium.mjs';
import { freshSeed } from '../helpers/freshSeed';
import type { RelaxedCheck } from '../helpers/relaxedCheck';
import { CHROMIUM_ARGS } from './harness';

const SEED = freshSeed('tests/e2e/relaxed.test.ts', 'RELAXED_SEED');
const ORIGIN = 'http://localhost:4399';
const ISOLATED = { 'Cross-Origin-Opener-Policy': 'same-origin', 'Cross-Origin-Embedder-Policy': 'require-corp' };
let close: (() => Promise<void>) | null = null;
afterAll(async () => close?.());

describe('the relaxed-SIMD kernels in Chromium', () => {
  it('load in an isolated page’s worker, on two threads, and equal the TypeScript twin bit for bit', async () => {
    const bundle = await build({
      entryPoints: [new URL('../helpers/relaxedWorker.ts', import.meta.url).pathname],
      bundle: true,
      write: false,
      format: 'esm',
      platform: 'browser',
      target: 'chrome120',
      logLevel: 'warning',
    });
    const browser = await chromium.launch({ executablePath: await ensureChromium(), args: CHROMIUM_ARGS });
    close = () => browser.close();
    const page = await browser.newPage();
    await page.route(`${ORIGIN}/**`, (route) => {
      const js = route.request().url().endsWith('/worker.js');
      return route.fulfill({
        status: 200,
        headers: { ...ISOLATED, 'Content-Type': js ? 'text/javascript' : 'text/html' },
        body: js ? bundle.outputFiles[0]!.text : '<!doctype html><title>relaxed</title>',
      });
    });
    await page.goto(`${ORIGIN}/`);
    expect(await page.evaluate(() => globalThis.crossOriginIsolated), 'the page is cross-origin isolated').toBe(true);
    const res = await page.evaluate(
      (seed) =>
        new Promise<RelaxedCheck | { error: string }>((done) => {
          const w = new Worker('/worker.js', { type: 'module' });
          w.onmessage = (e) => done(e.data);
          w.onerror = (e) => done({ error: e.message });
          w.postMessage(seed);
        }),
      SEED,
    );
    if ('error' in res) throw new Error(`the worker failed: ${res.error}`);
    console.log(`[relaxed] build ${res.build}, ${res.ready} threads, ${res.jobs} split jobs, ${res.compared} outputs compared`);
    expect(res.build, 'Chromium runs the relaxed-SIMD build').toBe('relaxed');
    expect(res.ready).toBe(2);
    expect(res.jobs, 'some products were split over the threads').toBeGreaterThan(0);
    expect(res.compared).toBeGreaterThan(50_000);
    expect(res.mismatches, `${res.mismatchCount} products differ from the twin`).toEqual([]);
  });
});
