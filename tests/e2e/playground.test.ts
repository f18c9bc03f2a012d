/**
 * End-to-end test of the playground page in a real browser (Debian's Chromium via playwright-core,
 * never `playwright install`), opened by ./harness.ts (a production build served by `vite preview`).
 * It drives the page at 1280×800 as a user would:
 * the default preset opens with its table agents in the tab (a language team gets one Web Worker per agent); Step agent, Step stage, Run/Pause and the
 * keyboard move the timeline and fill every chart (the waterfall says "certified improvement", the
 * stage table ticks certified stages ✓); a share link opened in a fresh browser context
 * replays identical metrics; a language plug-and-play swap (arith-pnp) runs in the agents' workers and
 * shows its card; malformed links each show their own message and open the defaults;
 * a reload restores the last agent step from IndexedDB (one part per stage there); export → import
 * round-trips and a damaged file is refused (the export for a real run: tests/e2e/runlog.test.ts); at 1280×720 and 1920×1080 the step controls,
 * the team and the timeline are on the first screen (screenshots in test-results/); a bad setting
 * names itself. A screenshot of the first screen at 1280×720 after a few stages goes to
 * test-results/ (or docs/screenshot.png with UPDATE_SCREENSHOT=1, for the README).
 *
 * If /usr/bin/chromium is missing the harness installs it (scripts/ensure-chromium.mjs) when
 * running as root; otherwise the test fails with the command to run. It never skips.
 *
 * Not here: the SAT maths (unit tests in tests/*.test.ts) or WebGPU kernels.
 */
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeShare, makeShareState } from '../../src/app/share';
import { presetConfig } from '../../src/sat/presets';
import { agentWorkers, openPlayground, type Playground, points, ROOT, settled, SETUP_TIMEOUT_MS } from './harness';

/**
 * Where the screenshot goes: test-results/ (ignored by git) on every run, so `npm test` leaves the
 * tree clean; `UPDATE_SCREENSHOT=1 npm run test:e2e` refreshes the README's docs/screenshot.png.
 */
const SCREENSHOT = join(ROOT, process.env.UPDATE_SCREENSHOT === '1' ? 'docs/screenshot.png' : 'test-results/playground.png');

let pg: Playground;
let page: Page;
let url = '';
/** Uncaught exceptions and console errors seen on the pages; the test expects none. */
let pageErrors: string[] = [];

beforeAll(async () => {
  pg = await openPlayground();
  url = pg.url;
  pageErrors = pg.errors;
  page = await pg.freshPage();
}, SETUP_TIMEOUT_MS);

afterAll(async () => {
  await pg?.close();
});

const rows = () => page.locator('[data-testid="stage-row"]');
/** Every number of the stage table (J, ΔJ, bound, KL quantiles), in order: the run's fingerprint. */
async function tableValues(p: Page): Promise<string[]> {
  return p.locator('[data-testid="stage-row"] [data-value]').evaluateAll((cells) => cells.map((c) => c.getAttribute('data-value') ?? ''));
}
async function stepsInTimeline(p: Page): Promise<number> {
  return points(p, 'timeline');
}

describe('playground page in Chromium', () => {
  it('opens on the climbing preset, its table agents in the tab (no worker to wait for), the backend said', async () => {
    await page.goto(url, { waitUntil: 'load' });
    await page.getByRole('heading', { name: 'SAT Playground' }).waitFor({ state: 'visible' });
    expect(await page.getByTestId('lede').innerText()).toMatch(/Sequential Agent Tuning.*Step agent/s);
    expect(await page.getByTestId('preset-title').innerText()).toContain('Climbing game, 3 agents');
    await settled(page);
    // The team builder is folded away on a table game: its one line names every agent.
    for (let i = 0; i < 3; i++) expect(await page.getByTestId(`agent-${i}`).count()).toBe(1);
    expect(await page.getByTestId('team-summary').innerText()).toMatch(/agent 0.*agent 1.*agent 2/s);
    expect(agentWorkers(page).length).toBe(0);
    expect(await page.getByTestId('backend').innerText()).toBe('3 agents in this tab · tables in TypeScript');
    expect(await page.getByTestId('agent-0-backend').textContent()).toBe('tables in TypeScript'); // in the folded team builder, in the header's words
    expect(await stepsInTimeline(page)).toBe(0);
  });

  it('Step agent moves the timeline and draws that step\'s advantages and KL', async () => {
    await page.getByTestId('step-agent').click();
    await page.waitForFunction(() => Number(document.querySelector('[data-testid="timeline"]')?.getAttribute('data-points')) === 1);
    await settled(page);
    expect(await points(page, 'chart-adv')).toBeGreaterThan(0);
    expect(await points(page, 'chart-kl')).toBeGreaterThan(0);
    expect(await points(page, 'chart-beta')).toBe(1);
    expect(await rows().count()).toBe(0);
  });

  it('keyboard: A steps agents (closing stage 1), S steps a stage', async () => {
    await page.locator('body').click({ position: { x: 5, y: 5 } });
    await page.keyboard.press('a');
    await page.waitForFunction(() => Number(document.querySelector('[data-testid="timeline"]')?.getAttribute('data-points')) === 2);
    await settled(page);
    await page.keyboard.press('ArrowRight');
    await page.waitForFunction(() => document.querySelectorAll('[data-testid="stage-row"]').length === 1);
    await settled(page);
    expect(await points(page, 'chart-j')).toBeGreaterThanOrEqual(1);
    expect(await points(page, 'chart-waterfall')).toBeGreaterThan(0);
    await page.keyboard.press('s');
    await page.waitForFunction(() => document.querySelectorAll('[data-testid="stage-row"]').length === 2);
    await settled(page);
    expect(await stepsInTimeline(page)).toBe(6);
  });

  it('Step stage and Run / Pause add stages; every chart has data', async () => {
    await page.getByTestId('step-stage').click();
    await page.waitForFunction(() => document.querySelectorAll('[data-testid="stage-row"]').length === 3);
    await settled(page);
    // At `normal` (a pause between agent steps) Pause can catch the run: at `fast` a quiet machine
    // runs all 30 climbing stages within a frame or two, before the click.
    await page.getByTestId('speed').selectOption('normal');
    await page.getByTestId('run').click();
    await page.waitForFunction(() => document.querySelectorAll('[data-testid="stage-row"]').length >= 5);
    await page.getByTestId('run').click(); // Pause
    await settled(page);
    const n = await rows().count();
    await page.waitForTimeout(300);
    expect(await rows().count()).toBe(n); // paused means paused
    for (const id of ['chart-j', 'chart-waterfall', 'chart-adv', 'chart-kl', 'chart-beta']) {
      expect(await points(page, id), id).toBeGreaterThan(0);
    }
    // The climbing game climbs: the certificate promises an improvement, and the page says so.
    expect(await page.getByTestId('certified-note').innerText()).toMatch(/certified improvement/);
    expect(await page.getByTestId('chart-waterfall').innerText()).toMatch(/in-sample gain/);
    const certCells = page.locator('[data-testid="stage-row"] [data-testid="cell-cert"][data-certified="1"]');
    expect(await certCells.count()).toBeGreaterThan(0);
    expect(await certCells.first().innerText()).toContain('✓');
    const certified = Number(await page.getByTestId('certified-count').getAttribute('data-value'));
    expect(certified).toBe(await certCells.count());
    expect(await page.getByTestId('certified-count').innerText()).toContain(`certified in ${certified} of ${n} stages`);
    const values = (await page.getByTestId('cell-j').evaluateAll((cells) => cells.map((c) => Number(c.getAttribute('data-value')))));
    for (const v of values) expect(Number.isFinite(v)).toBe(true);
    await page.mouse.move(0, 0);
    mkdirSync(join(ROOT, 'docs'), { recursive: true });
    // The README's picture is the first screen on a projector: 1280×720.
    await page.setViewportSize({ width: 1280, height: 720 });
    await page.evaluate(() => window.scrollTo(0, 0));
    await page.screenshot({ path: SCREENSHOT });
    await page.setViewportSize({ width: 1280, height: 800 });
  });

  it('compares update orders on the same seed, and sweeps δ onto the violation chart', async () => {
    await page.getByTestId('compare-orders').click();
    await page.waitForFunction(() => Number(document.querySelector('[data-testid="chart-orders"]')?.getAttribute('data-points')) > 0, undefined, { timeout: 120_000 });
    await settled(page);
    expect(await page.getByTestId('chart-orders').innerText()).toMatch(/reverse/);
    await page.getByTestId('sweep-delta').click();
    await page.waitForFunction(() => Number(document.querySelector('[data-testid="chart-violation"]')?.getAttribute('data-points')) > 0, undefined, { timeout: 120_000 });
    await settled(page);
  }, 300_000);

  it('a share link opened in a fresh page replays identical metrics', async () => {
    // One agent step into the next stage, so the link carries a mid-stage step.
    await page.getByTestId('step-agent').click();
    await settled(page);
    await page.getByTestId('copy-link').click();
    const link = await page.getByTestId('share-link').inputValue();
    expect(link).toMatch(/#v1\./);
    const want = await tableValues(page);
    const wantSteps = await stepsInTimeline(page);
    const other = await pg.freshPage();
    await other.goto(link, { waitUntil: 'load' });
    await other.getByText(/Opened a shared experiment/).waitFor({ timeout: 120_000 });
    await settled(other);
    expect(await tableValues(other)).toEqual(want);
    expect(await stepsInTimeline(other)).toBe(wantSteps);
    await other.context().close();
  });

  it('a teacher\'s link: hidden controls stay hidden; the plug-and-play swap shows its card', async () => {
    // Made by the page's own encoder, in Node: the link format is the contract.
    const hash = await encodeShare(makeShareState(presetConfig('relay-pnp'), { preset: 'relay-pnp', step: { stage: 8 }, hide: ['preset', 'lr', 'seed'] }));
    const p = await pg.freshPage();
    await p.goto(url + hash, { waitUntil: 'load' });
    await p.getByText(/replayed it to stage 8/).waitFor({ timeout: 120_000 });
    await settled(p);
    expect(await p.getByTestId('presets').count()).toBe(0);
    expect(await p.getByTestId('cfg-lr').count()).toBe(0);
    expect(await p.getByTestId('cfg-seed').count()).toBe(0);
    expect(await p.getByTestId('cfg-delta').count()).toBe(1);
    expect(await p.locator('[data-testid="stage-row"]').count()).toBe(8);
    const card = p.getByTestId('swap-card');
    expect(await card.innerText()).toMatch(/Before stage 8, agent 1.*best response/s);
    expect(await p.getByTestId('swap-outside').innerText()).toBe('0 %');
    await p.context().close();
  });

  it('a language preset loads its model into the workers and steps an agent, with transcripts', async () => {
    const p = await pg.freshPage();
    await p.goto(url, { waitUntil: 'load' });
    await settled(p);
    await p.getByTestId('preset-arith-team').click();
    await p.waitForFunction(() => document.querySelector('[data-testid="agent-0"]')?.textContent?.includes('arithmetic-S'), undefined, { timeout: 120_000 });
    await settled(p);
    expect(agentWorkers(p).length).toBe(3);
    // backend = auto on a machine whose only WebGPU adapter is software: the CPU, and the page says why.
    // Said once, short; the reason is on hover.
    expect(await p.getByTestId('agent-0-backend').innerText()).toMatch(/^(WebAssembly SIMD kernels|CPU kernels in TypeScript \(no WebAssembly SIMD here\))$/); // the header's words
    expect(await p.getByTestId('agent-0-backend').getAttribute('title')).toMatch(/cpu \(TypeScript\) — the only WebGPU adapter is a software one/);
    await p.getByTestId('step-agent').click();
    await p.waitForFunction(() => Number(document.querySelector('[data-testid="timeline"]')?.getAttribute('data-points')) === 1, undefined, { timeout: 180_000 });
    await settled(p);
    expect(await points(p, 'transcripts')).toBeGreaterThan(0);
    expect(await p.getByTestId('transcripts').innerText()).toMatch(/agent 0/);
    // The team builder seats a larger model in one chair: agent 1 becomes an M.
    await p.getByTestId('model-1').selectOption('M');
    await p.getByTestId('team-apply').click();
    await p.waitForFunction(() => document.querySelector('[data-testid="agent-1"]')?.textContent?.includes('arithmetic-M'), undefined, { timeout: 120_000 });
    await settled(p);
    expect(await p.getByTestId('agent-0').innerText()).toContain('arithmetic-S');
    expect(await p.getByTestId('cfg-agentModels').inputValue()).toBe('S,M,S');
    await p.context().close();
  }, 300_000);

  it('arith-pnp swaps agent 1 for the M model in the page: the swap card, then the next stage trains the new seat', async () => {
    // The preset's own swap (agent 1 ← arithmetic-M, Stage-0), moved to stage 2 and shrunk so it runs in seconds.
    const cfg = presetConfig('arith-pnp', { swapAt: 2, stages: 3, batch: 2, group: 2, evalEpisodes: 8, geoIters: 0, probeEpisodes: 4, epochs: 1 });
    const p = await pg.freshPage();
    await p.goto(url + (await encodeShare(makeShareState(cfg, { preset: 'arith-pnp' }))), { waitUntil: 'load' });
    await p.getByText(/Opened a shared experiment/).waitFor({ timeout: 120_000 });
    await settled(p);
    expect(await p.getByTestId('agent-1').innerText()).toContain('arithmetic-S');
    expect(await p.getByTestId('swap-card').count()).toBe(0);
    for (const k of [1, 2]) {
      await p.getByTestId('step-stage').click();
      // The swap runs before stage 2's first agent step, with its own progress line.
      if (k === 2) await p.getByText(/Swapping agent 1's seat for the arithmetic-M model, projected by Stage-0/).waitFor({ timeout: 120_000 });
      await p.waitForFunction((n) => document.querySelectorAll('[data-testid="stage-row"]').length === n, k, { timeout: 240_000 });
      await settled(p);
    }
    const card = p.getByTestId('swap-card');
    expect(await card.innerText()).toMatch(/Before stage 2, agent 1.*arithmetic-M.*projected by Stage-0/s);
    // The floor −min(1, m·√(maxNew·δ₀/2))·A: a finite radius is known (Stage-0), so not the trivial bound.
    expect(await p.getByTestId('swap-cert').innerText()).toMatch(/Certified: the swap cannot have lowered J by more than 0\.[0-9]+ — each token of its messages is within KL δ₀ = 0\.1 .* so a message of at most maxNew = 3 tokens is within 3\.0e−1 \(= 3·δ₀\)/);
    // The radius is the bound Stage-0 guarantees per message, recomputed here: maxNew · δ₀ (docs/certificate.md §8), never "≤ δ₀".
    expect(Number(await p.getByTestId('swap-radius').getAttribute('data-value'))).toBeCloseTo(cfg.maxNew * cfg.stage0Delta, 12);
    // The stage after the swap trained agent 1's new seat: its row has a finite J and agent 1 took a step in it.
    expect(Number.isFinite(Number(await p.getByTestId('cell-j').nth(1).getAttribute('data-value')))).toBe(true);
    expect(await points(p, 'timeline')).toBe(6);
    await p.context().close();
  }, 600_000);

  it('on a projector (1280×720) and a full-HD screen the first screen shows the step controls, the team and the timeline', async () => {
    for (const [width, height] of [[1280, 720], [1920, 1080]] as const) {
      const p = await pg.freshPage({ width, height }, { teamFolded: true });
      await p.goto(url + (await encodeShare(makeShareState(presetConfig('arith-team'), { preset: 'arith-team' }))), { waitUntil: 'load' });
      await p.waitForFunction(() => document.querySelector('[data-testid="agent-0"]')?.textContent?.includes('arithmetic-S'), undefined, { timeout: 120_000 });
      await settled(p);
      mkdirSync(join(ROOT, 'test-results'), { recursive: true });
      await p.screenshot({ path: join(ROOT, 'test-results', `first-screen-${width}x${height}.png`) });
      // The team is its one-line summary (folded by default: its cards hold the model choices).
      expect(await p.getByTestId('fold-team-lm').evaluate((d) => (d as HTMLDetailsElement).open)).toBe(false);
      for (const id of ['step-agent', 'step-stage', 'run', 'team-summary', 'timeline']) {
        const box = await p.getByTestId(id).boundingBox();
        expect(box, id).not.toBeNull();
        expect(box!.y + box!.height, `${id} bottom at ${width}×${height}`).toBeLessThanOrEqual(height);
      }
      // The backend is said once, short, in the header; its reason is on hover.
      const backend = p.getByTestId('backend');
      expect(await backend.innerText()).toMatch(/^3 Web Workers · WebAssembly SIMD kernels, \d+ threads each$/);
      expect(await backend.getAttribute('title')).toMatch(/only WebGPU adapter is a software one/);
      await p.context().close();
    }
  }, 300_000);

  it('language agents run on WebGPU in Chromium; a device destroyed mid-stage is recovered', async () => {
    // backend = webgpu: this machine's only adapter is SwiftShader, which `auto` passes over (slower than the CPU kernels).
    const cfg = presetConfig('arith-team', { backend: 'webgpu', agents: 2, batch: 2, group: 2, evalEpisodes: 8, geoIters: 0, probeEpisodes: 4, epochs: 1, maxNew: 3, stages: 3, certEpisodes: 32 });
    const p = await pg.freshPage();
    await p.goto(url + (await encodeShare(makeShareState(cfg, { preset: 'arith-team' }))), { waitUntil: 'load' });
    await p.getByText(/Opened a shared experiment/).waitFor({ timeout: 120_000 });
    await settled(p);
    expect(await p.getByTestId('backend').innerText()).toMatch(/^2 Web Workers · WebGPU, /);
    for (const i of [0, 1]) {
      expect(await p.getByTestId(`agent-${i}-backend`).innerText()).toMatch(/^WebGPU/);
      expect(await p.getByTestId(`agent-${i}-memory`).innerText()).toMatch(/^GPU \d/);
    }
    await p.getByTestId('step-stage').click();
    await p.waitForFunction(() => document.querySelectorAll('[data-testid="stage-row"]').length === 1, undefined, { timeout: 180_000 });
    await settled(p);
    expect(Number.isFinite(Number(await p.getByTestId('cell-j').first().getAttribute('data-value')))).toBe(true);
    // Mid-stage: agent 0 of stage 2 moves, then agent 1's device is destroyed (as a driver reset would).
    await p.getByTestId('step-agent').click();
    await p.waitForFunction(() => Number(document.querySelector('[data-testid="timeline"]')?.getAttribute('data-points')) === 3, undefined, { timeout: 180_000 });
    await settled(p);
    expect(await p.evaluate(() => (globalThis as unknown as { satPlayground: { loseDevice(i: number): Promise<boolean> } }).satPlayground.loseDevice(1))).toBe(true);
    await p.getByTestId('step-agent').click();
    const banner = p.getByTestId('error');
    await banner.waitFor({ state: 'visible', timeout: 180_000 });
    await settled(p);
    expect(await banner.innerText()).toMatch(/Agent 1's GPU device was lost \(destroyed/);
    expect(await banner.innerText()).toMatch(/back at the last completed agent step/);
    expect(await points(p, 'timeline')).toBe(3);
    // Fresh devices: the stage goes on and completes.
    await p.getByTestId('step-agent').click();
    await p.waitForFunction(() => document.querySelectorAll('[data-testid="stage-row"]').length === 2, undefined, { timeout: 180_000 });
    await settled(p);
    expect(await p.getByTestId('agent-1-backend').innerText()).toMatch(/^WebGPU/);
    await p.context().close();
  }, 600_000);

  it('long work shows its progress and Cancel stops it where it is', async () => {
    const p = await pg.freshPage();
    const hash = await encodeShare(makeShareState(presetConfig('climbing', { stages: 3000 }), { preset: 'climbing', step: { stage: 3000 } }));
    await p.goto(url + hash, { waitUntil: 'load' });
    const work = p.getByTestId('progress');
    await work.getByText(/Replaying the link: agent step \d+ of 9000/).waitFor();
    await p.waitForFunction(() => document.querySelectorAll('[data-testid="stage-row"]').length >= 3);
    await work.getByTestId('cancel').click();
    await settled(p);
    const n = await p.locator('[data-testid="stage-row"]').count();
    expect(n).toBeGreaterThanOrEqual(3);
    expect(n).toBeLessThan(3000);
    await p.waitForTimeout(300);
    expect(await p.locator('[data-testid="stage-row"]').count()).toBe(n); // stopped, not paused in the background
    expect(await p.getByTestId('notice').innerText()).toMatch(new RegExp(`replay to stage 3000 stopped at stage ${n}`));
    await p.getByTestId('step-stage').click(); // and the page is usable
    await p.waitForFunction((k) => document.querySelectorAll('[data-testid="stage-row"]').length === k + 1, n);
    await p.context().close();
  });

  it('malformed links each say what was wrong and open the defaults', async () => {
    const bad: [string, RegExp][] = [
      ['#v9.abc', /version/i],
      ['#v1.%%%%', /base64|characters/i],
      ['#v1.' + 'A'.repeat(5000), /long/i],
      ['#hello', /does not start with/],
      ['#v1.AAAA', /deflate|compress|corrupt|damaged/i],
    ];
    for (const [hash, message] of bad) {
      const p = await pg.freshPage();
      await p.goto(url + hash, { waitUntil: 'load' });
      const banner = p.getByTestId('error');
      await banner.waitFor({ state: 'visible' });
      const text = await banner.innerText();
      expect(text, hash.slice(0, 20)).toMatch(message);
      expect(text).toMatch(/default settings/);
      await settled(p);
      expect(await p.getByTestId('preset-title').innerText()).toContain('Climbing game, 3 agents');
      await p.context().close();
    }
  });

  it('a reload restores the last agent step from IndexedDB, where each stage is a part of its own', async () => {
    await page.waitForTimeout(300); // let the last autosave land
    const want = await tableValues(page);
    const wantSteps = await stepsInTimeline(page);
    // What IndexedDB holds: a manifest, the head, the boundary and one part per finished stage (src/app/autosave.ts).
    const storedKeys = () =>
      page.evaluate(
        () =>
          new Promise<string[]>((done, fail) => {
            const open = indexedDB.open('sat-playground');
            open.onerror = () => fail(open.error);
            open.onsuccess = () => {
              const req = open.result.transaction('autosave', 'readonly').objectStore('autosave').getAllKeys();
              req.onerror = () => fail(req.error);
              req.onsuccess = () => {
                open.result.close();
                done(req.result.map(String));
              };
            };
          }),
      );
    const keys = await storedKeys();
    const finished = await rows().count();
    expect(finished).toBeGreaterThan(2);
    expect(keys.sort()).toEqual(['boundary', 'head', 'manifest', ...Array.from({ length: finished }, (_, i) => `stage:${i + 1}`)].sort());
    await page.goto(url, { waitUntil: 'load' }); // no hash: the autosave
    await page.getByText(/Restored your last experiment/).waitFor();
    await settled(page);
    expect(await tableValues(page)).toEqual(want);
    expect(await stepsInTimeline(page)).toBe(wantSteps);
    // A new experiment's first write drops the old one's later stage parts in its own transaction.
    await page.getByTestId('reset').click();
    await settled(page);
    for (let k = 1; k <= 2; k++) {
      await page.getByTestId('step-stage').click();
      await page.waitForFunction((n) => document.querySelectorAll('[data-testid="stage-row"]').length === n, k);
      await settled(page);
    }
    await page.waitForTimeout(300); // let the last autosave land
    expect((await storedKeys()).sort()).toEqual(['boundary', 'head', 'manifest', 'stage:1', 'stage:2']);
  });

  it('export → import round-trips; a damaged file is refused with its reason', async () => {
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByTestId('export').click()]);
    const bytes = readFileSync(await download.path());
    const want = await tableValues(page);
    const wantRows = await rows().count();
    const damaged = Buffer.from(bytes);
    damaged[damaged.length >> 1] = damaged[damaged.length >> 1]! ^ 0xff;
    await page.getByTestId('import').setInputFiles({ name: 'damaged.satexp', mimeType: 'application/octet-stream', buffer: damaged });
    const banner = page.getByTestId('error');
    await banner.waitFor({ state: 'visible' });
    expect(await banner.innerText()).toMatch(/checksum|damaged|corrupt/i);
    // Said once: the file's own message says the experiment is unchanged, nothing repeats it.
    expect(await banner.innerText()).toMatch(/the experiment on the page is unchanged\.\s*×?$/);
    expect(await banner.innerText()).not.toMatch(/not changed/);
    expect(await tableValues(page)).toEqual(want);
    await page.getByRole('button', { name: 'Dismiss' }).first().click();
    await page.getByTestId('reset').click();
    await settled(page);
    expect(await rows().count()).toBe(0);
    await page.getByTestId('import').setInputFiles({ name: 'good.satexp', mimeType: 'application/octet-stream', buffer: bytes });
    await page.waitForFunction((n) => document.querySelectorAll('[data-testid="stage-row"]').length === n, wantRows);
    await settled(page);
    expect(await tableValues(page)).toEqual(want);
    // A successful import says what it opened.
    expect(await page.getByTestId('notice').innerText()).toMatch(new RegExp(`Opened “good\\.satexp”: climbing, seed \\d+, ${wantRows} stages.*restored exactly as exported`));
  });

  it('reordering σ in the team builder trains agents in the new order', async () => {
    await page.getByTestId('fold-team').locator('summary.fold-summary').click();
    await page.getByRole('button', { name: 'move agent 2 earlier' }).click();
    await page.getByRole('button', { name: 'move agent 2 earlier' }).click();
    expect(await page.getByTestId('cfg-order').inputValue()).toBe('custom');
    expect(await page.getByTestId('cfg-customOrder').inputValue()).toBe('2,0,1');
    await page.getByTestId('team-apply').click();
    await settled(page);
    await page.getByTestId('step-stage').click();
    await page.waitForFunction(() => document.querySelectorAll('[data-testid="stage-row"]').length === 1);
    await settled(page);
    const chips = await rows().first().locator('td.order .agent-chip').allInnerTexts();
    expect(chips.map((t) => t.trim())).toEqual(['2', '0', '1']);
  });

  it('names the setting when a value is out of range, and changes nothing', async () => {
    const before = await tableValues(page);
    await page.getByTestId('fold-settings').locator('summary.fold-summary').click();
    await page.getByTestId('cfg-seed').fill('-5');
    await page.getByTestId('apply').click();
    const banner = page.getByTestId('error');
    await banner.waitFor({ state: 'visible' });
    expect(await banner.innerText()).toContain('"seed"');
    expect(await tableValues(page)).toEqual(before);
    expect(pageErrors).toEqual([]);
  });
});
