/**
 * The CPU backend's threads in the page (src/backend/cpu/threads.ts), in Chromium through
 * ./harness.ts (`vite preview` with vite.config.ts's COOP/COEP headers): the page is cross-origin
 * isolated; a language team's agent workers each start helper threads for the SIMD matmuls, report
 * more than one thread ready (window.satPlayground.cpuThreads, from the worker's AgentApi) and split
 * matmuls over them during an agent step; the agents' backend line does not say "one CPU thread".
 * On a machine whose browser reports one core, one thread is what the page must report instead.
 * Served without the two headers (a static host that does not send them; here the same server with
 * the headers stripped by page.route), the page is not isolated, its agents run on one thread, and
 * it says so: the console, and the agent's backend line (hover text).
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

type Page = Awaited<ReturnType<ReturnType<typeof playground>['freshPage']>>;

/** Agent `a`'s CPU kernel threads, from its worker (window.satPlayground.cpuThreads). */
const agentThreads = (p: Page, a = 0): Promise<Threads> =>
  p.evaluate((i) => (globalThis as unknown as { satPlayground: { cpuThreads(a: number): Promise<Threads> } }).satPlayground.cpuThreads(i), a);

/** Opens the page, says whether it is cross-origin isolated, then seats the arith-team preset (language agents). */
async function openLanguageTeam(p: Page, url: string): Promise<boolean> {
  await p.goto(url, { waitUntil: 'load' });
  const isolated = await p.evaluate(() => globalThis.crossOriginIsolated);
  await settled(p);
  await p.getByTestId('preset-arith-team').click();
  await p.waitForFunction(() => document.querySelector('[data-testid="agent-0"]')?.textContent?.includes('arithmetic-S'), undefined, { timeout: 120_000 });
  await settled(p);
  return isolated;
}

/** Steps one agent and waits until the session is idle. */
async function stepAgent(p: Page): Promise<void> {
  await p.getByTestId('step-agent').click();
  await p.waitForFunction(() => Number(document.querySelector('[data-testid="timeline"]')?.getAttribute('data-points')) === 1, undefined, { timeout: 180_000 });
  await settled(p);
}

describe('CPU threads in the page', () => {
  it('the page is cross-origin isolated and a language agent’s worker splits its matmuls over more than one thread', async () => {
    const pg = playground();
    const p = await pg.freshPage();
    expect(await openLanguageTeam(p, pg.url)).toBe(true);
    const cores = await p.evaluate(() => navigator.hardwareConcurrency);
    const threads = (): Promise<Threads> => agentThreads(p);
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
    await stepAgent(p);
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

  it('served without COOP/COEP (a plain static host), the page works on one thread per agent and says so', async () => {
    const pg = playground();
    const p = await pg.freshPage();
    // The same server, with the two isolation headers taken off every response.
    await p.route('**/*', async (route) => {
      const res = await route.fetch();
      const headers = { ...res.headers() };
      delete headers['cross-origin-opener-policy'];
      delete headers['cross-origin-embedder-policy'];
      await route.fulfill({ response: res, headers });
    });
    const infos: string[] = [];
    p.on('console', (m) => {
      if (m.text().includes('[cpu backend]')) infos.push(m.text());
    });
    expect(await openLanguageTeam(p, pg.url)).toBe(false);
    const t = await agentThreads(p);
    expect(t.threads).toBe(1);
    expect(t.why).toMatch(/no SharedArrayBuffer/);
    expect(await p.getByTestId('agent-0-backend').innerText()).toBe('WebAssembly SIMD kernels'); // the header's words
    expect(await p.getByTestId('agent-0-backend').getAttribute('title')).toMatch(/one CPU thread: no SharedArrayBuffer/);
    expect(infos.some((x) => /one thread: no SharedArrayBuffer/.test(x)), infos.join('\n')).toBe(true);
    await stepAgent(p);
    expect((await agentThreads(p)).jobs).toBe(0);
    await p.context().close();
    expect(pg.errors).toEqual([]);
  }, 400_000);
});
