/**
 * The CPU backend's threads in the page (src/backend/cpu/threads.ts), in Chromium through
 * ./harness.ts (`vite preview` with vite.config.ts's COOP/COEP headers): the page is cross-origin
 * isolated; a language team's agent workers each start helper threads for the SIMD matmuls, report
 * more than one thread ready (window.satPlayground.cpuThreads, from the worker's AgentApi) and split
 * matmuls over them during an agent step; the agents' backend line does not say "one CPU thread".
 * On a machine whose browser reports one core, one thread is what the page must report instead.
 *
 * Not here: the threads' numerics (tests/threads.test.ts, in Node), the rest of the page
 * (tests/e2e/playground.test.ts).
 */
import { describe, expect, it } from 'vitest';
import { playgroundForFile, settled } from './harness';

const playground = playgroundForFile();

interface Threads {
  threads: number;
  ready: number;
  jobs: number;
  shares: number;
  why: string;
}

describe('CPU threads in the page', () => {
  it('the page is cross-origin isolated and a language agent’s worker splits its matmuls over more than one thread', async () => {
    const pg = playground();
    const p = await pg.freshPage();
    await p.goto(pg.url, { waitUntil: 'load' });
    expect(await p.evaluate(() => globalThis.crossOriginIsolated)).toBe(true);
    await settled(p);
    await p.getByTestId('preset-arith-team').click();
    await p.waitForFunction(() => document.querySelector('[data-testid="agent-0"]')?.textContent?.includes('arithmetic-S'), undefined, { timeout: 120_000 });
    await settled(p);
    const cores = await p.evaluate(() => navigator.hardwareConcurrency);
    const threads = (): Promise<Threads> => p.evaluate(() => (globalThis as unknown as { satPlayground: { cpuThreads(a: number): Promise<Threads> } }).satPlayground.cpuThreads(0));
    const want = Math.min(cores, 4);
    // Helpers start in the background; wait for them (never for the first matmuls).
    await p.waitForFunction(
      async (w) => ((await (globalThis as unknown as { satPlayground: { cpuThreads(a: number): Promise<Threads> } }).satPlayground.cpuThreads(0)) as Threads).ready >= w,
      want,
      { timeout: 60_000, polling: 250 },
    );
    const before = await threads();
    console.log(`page: ${cores} cores; agent 0's CPU threads ${JSON.stringify(before)}; workers ${p.workers().map((w) => w.url().slice(0, 5)).join(',')}`);
    expect(before.threads).toBe(want);
    expect(before.why).toBe('');
    expect(await p.getByTestId('agent-0-backend').getAttribute('title')).not.toMatch(/one CPU thread/);
    await p.getByTestId('step-agent').click();
    await p.waitForFunction(() => Number(document.querySelector('[data-testid="timeline"]')?.getAttribute('data-points')) === 1, undefined, { timeout: 180_000 });
    await settled(p);
    const after = await threads();
    console.log(`after an agent step: ${JSON.stringify(after)}`);
    if (want > 1) {
      expect(after.ready).toBeGreaterThan(1);
      expect(after.jobs, 'matmuls split during the step').toBeGreaterThan(before.jobs);
      expect(after.shares - before.shares).toBeGreaterThan(after.jobs - before.jobs);
    } else {
      expect(after.ready).toBe(1);
    }
    await p.context().close();
    expect(pg.errors).toEqual([]);
  }, 400_000);
});
