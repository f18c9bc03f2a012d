/**
 * End-to-end test of the playground page in a real browser (Debian's Chromium via playwright-core,
 * never `playwright install`). It builds the app with Vite's JS API into a temporary folder, serves
 * it with `vite preview` on a free 127.0.0.1 port, and drives it at 1280×800: the header and the
 * default preset are visible, a bad seed gives a banner naming the setting, a 3-stage run fills
 * three rows with finite J values (a screenshot of that page is saved to docs/screenshot.png for
 * the README), and a long run can be cancelled without the page freezing.
 *
 * If /usr/bin/chromium is missing it is installed by scripts/ensure-chromium.mjs when running as
 * root; otherwise the test fails with the command to run. It never skips.
 *
 * Not here: the SAT maths (unit tests in tests/*.test.ts) or WebGPU kernels.
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { type Browser, type Page, chromium } from 'playwright-core';
import { build, preview, type PreviewServer } from 'vite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureChromium } from '../../scripts/ensure-chromium.mjs';

const ROOT = resolve(import.meta.dirname, '../..');
const CONFIG_FILE = join(ROOT, 'vite.config.ts');
/**
 * Where the screenshot goes: test-results/ (ignored by git) on every run, so `npm test` leaves the
 * tree clean; `UPDATE_SCREENSHOT=1 npm run test:e2e` refreshes the README's docs/screenshot.png.
 */
const SCREENSHOT = join(ROOT, process.env.UPDATE_SCREENSHOT === '1' ? 'docs/screenshot.png' : 'test-results/playground.png');
const CHROMIUM_ARGS = [
  '--headless=new',
  '--no-sandbox',
  '--enable-unsafe-webgpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
  '--disable-quic',
];

let outDir = '';
let server: PreviewServer | undefined;
let browser: Browser | undefined;
let page: Page;
let url = '';
/** Uncaught exceptions and console errors seen on the page; the test expects none. */
const pageErrors: string[] = [];

/** Builds as production would, whatever NODE_ENV Vitest set (it would otherwise bundle dev React). */
async function buildApp(dir: string): Promise<void> {
  const saved = process.env.NODE_ENV;
  process.env.NODE_ENV = 'production';
  try {
    await build({ root: ROOT, configFile: CONFIG_FILE, mode: 'production', logLevel: 'warn', build: { outDir: dir, emptyOutDir: true, sourcemap: false } });
  } finally {
    if (saved === undefined) delete process.env.NODE_ENV;
    else process.env.NODE_ENV = saved;
  }
}

beforeAll(async () => {
  const executablePath = await ensureChromium();
  outDir = mkdtempSync(join(tmpdir(), 'sat-e2e-dist-'));
  await buildApp(outDir);
  server = await preview({ root: ROOT, configFile: CONFIG_FILE, logLevel: 'warn', build: { outDir }, preview: { host: '127.0.0.1', port: 0, strictPort: true, open: false } });
  const addr = server.httpServer.address() as AddressInfo | null;
  if (!addr || typeof addr !== 'object') throw new Error('vite preview did not report a listening address');
  url = `http://127.0.0.1:${addr.port}/`;
  browser = await chromium.launch({ executablePath, args: CHROMIUM_ARGS, timeout: 60_000 });
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, deviceScaleFactor: 1 });
  page = await context.newPage();
  page.on('pageerror', (e) => pageErrors.push(`pageerror: ${e.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error') pageErrors.push(`console.error: ${m.text()}`);
  });
  page.setDefaultTimeout(30_000);
}, 15 * 60_000); // room for a first-time `apt-get install chromium`

afterAll(async () => {
  await browser?.close();
  await server?.close();
  if (outDir) rmSync(outDir, { recursive: true, force: true });
});

const rows = () => page.locator('[data-testid="stage-row"]');
const progressText = () => page.getByTestId('progress').innerText();

describe('playground page in Chromium', () => {
  it('opens on the climbing preset with the header and the backend visible', async () => {
    await page.goto(url, { waitUntil: 'load' });
    await page.getByRole('heading', { name: 'SAT Playground' }).waitFor({ state: 'visible' });
    const lede = page.getByTestId('lede');
    expect(await lede.isVisible()).toBe(true);
    expect(await lede.innerText()).toMatch(/Sequential Agent Tuning.*Run stages/s);
    expect(await page.getByTestId('backend').innerText()).toContain('Backend: CPU (tabular agents)');
    expect(await page.getByTestId('preset').inputValue()).toBe('climbing');
    expect(await page.getByTestId('preset').isVisible()).toBe(true);
    expect(await page.getByTestId('preset-title').innerText()).toContain('Climbing game, 3 agents');
    expect(await page.getByTestId('empty').isVisible()).toBe(true);
  });

  it('names the setting when the seed is out of range, and keeps the page usable', async () => {
    await page.getByTestId('seed').fill('-5');
    await page.getByTestId('run').click();
    const banner = page.getByTestId('error');
    await banner.waitFor({ state: 'visible' });
    expect(await banner.innerText()).toContain('"seed"');
    expect(await rows().count()).toBe(0);
    await page.getByTestId('seed').fill('1');
    await page.getByRole('button', { name: 'Dismiss' }).click();
    await banner.waitFor({ state: 'detached' });
  });

  it('runs 3 stages into 3 rows with finite J values, and saves the README screenshot', async () => {
    await page.getByTestId('stages').fill('3');
    await page.getByTestId('run').click();
    await page.waitForFunction(() => document.querySelectorAll('[data-testid="stage-row"]').length === 3);
    await page.getByText('Done: stage 3 / 3').waitFor();
    expect(await rows().count()).toBe(3);

    const jCells = page.getByTestId('cell-j');
    const values = (await jCells.evaluateAll((cells) => cells.map((c) => c.getAttribute('data-value')))).map(Number);
    expect(values).toHaveLength(3);
    for (const v of values) expect(Number.isFinite(v)).toBe(true);
    for (const text of await jCells.allInnerTexts()) expect(text).toMatch(/^\u2212?\d+\.\d{3}$/);
    // Three agents: a σ of three chips and three KL columns per row.
    const first = rows().first();
    expect(await first.locator('td.order .agent-chip').count()).toBe(3);
    expect(await page.getByTestId('run-caption').innerText()).toMatch(/climbing · seed 1 · 3 agents/);

    await page.mouse.move(0, 0); // no hover highlight in the picture
    mkdirSync(join(ROOT, 'docs'), { recursive: true });
    await page.screenshot({ path: SCREENSHOT, fullPage: false });
  });

  it('cancels a long run between stages without freezing the page', async () => {
    await page.getByTestId('stages').fill('10000');
    await page.getByTestId('run').click();
    await page.waitForFunction(() => document.querySelectorAll('[data-testid="stage-row"]').length >= 2);
    expect(await progressText()).toMatch(/Running… stage \d+ \/ 10000/);
    const t0 = Date.now();
    await page.getByTestId('cancel').click();
    await page.getByText(/Cancelled after stage \d+ \/ 10000/).waitFor();
    expect(Date.now() - t0).toBeLessThan(5_000);
    const done = Number(/stage (\d+) \//.exec(await progressText())![1]);
    expect(await rows().count()).toBe(done);
    expect(done).toBeLessThan(10000);
    expect(await page.getByTestId('run').isEnabled()).toBe(true);
    expect(pageErrors).toEqual([]);
  });
});
