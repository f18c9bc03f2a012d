/**
 * What every browser test of the page shares: build the app with Vite's JS API into a temporary
 * folder (as production would), serve it with `vite preview` on a free 127.0.0.1 port, and open
 * Debian's Chromium through playwright-core (never `playwright install`; scripts/ensure-chromium.mjs
 * installs it when running as root, or fails with the command to run). A page records its uncaught
 * exceptions and console errors in `errors`, which a test expects to be empty at its end.
 *
 * Each test file opens its own playground (`openPlayground` in beforeAll, `close` in afterAll), and
 * the files of one test run share one build: the first file to open a playground builds into the
 * folder the global setup provides (tests/setup/global.ts), the others serve what it wrote.
 *
 * Not here: what a test does on the page (tests/e2e/*.test.ts).
 */
import { existsSync, mkdtempSync, renameSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { type Browser, type Page, chromium } from 'playwright-core';
import { build, preview, type PreviewServer } from 'vite';
import { afterAll, beforeAll, expect, inject } from 'vitest';
import { ensureChromium } from '../../scripts/ensure-chromium.mjs';
import { presetConfig } from '../../src/sat/presets';

export const ROOT = resolve(import.meta.dirname, '../..');
const CONFIG_FILE = join(ROOT, 'vite.config.ts');
export const CHROMIUM_ARGS = [
  '--headless=new',
  '--no-sandbox',
  '--enable-unsafe-webgpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
  '--disable-quic',
];
/** Generous: CI runs every test file at once on 2 cores. */
export const PAGE_TIMEOUT_MS = 60_000;
/** Room for a first-time `apt-get install chromium` in beforeAll. */
export const SETUP_TIMEOUT_MS = 15 * 60_000;

export interface Playground {
  readonly url: string;
  /** The built page's folder (its assets/ hold the chunks). */
  readonly distDir: string;
  readonly browser: Browser;
  /** Uncaught exceptions and console errors of every page opened through `freshPage`. */
  readonly errors: string[];
  /** A page in a fresh browser context (its own IndexedDB, so no autosave leaks between pages). */
  /**
   * A new page in a context of its own. A language team's builder is folded by default; unless
   * `teamFolded`, the page starts with it unfolded, as a user who opened it once has it (the fold
   * remembers), so tests can reach the cards.
   */
  freshPage(viewport?: { width: number; height: number }, o?: { teamFolded?: boolean }): Promise<Page>;
  close(): Promise<void>;
}

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

/** The folder the test run's global setup provides for its one build; null outside Vitest (bench scripts). */
function runBuildRoot(): string | null {
  try {
    return inject('e2eBuildRoot');
  } catch {
    return null;
  }
}

/**
 * The page's build: in a test run, built once into the run's folder and then reused (a file builds
 * into a folder of its own and renames it into place, so two files building at once both end up
 * serving one complete build); outside one, a temporary build of its own (`own`, removed on close).
 */
async function pageBuild(): Promise<{ readonly dir: string; readonly own: boolean }> {
  const root = runBuildRoot();
  if (root === null) {
    const dir = mkdtempSync(join(tmpdir(), 'sat-e2e-dist-'));
    await buildApp(dir);
    return { dir, own: true };
  }
  const dist = join(root, 'dist');
  if (existsSync(join(dist, 'index.html'))) return { dir: dist, own: false };
  const mine = mkdtempSync(join(root, 'building-'));
  const t0 = performance.now();
  await buildApp(mine);
  console.log(`[e2e] built the page for this run in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  try {
    renameSync(mine, dist);
  } catch (e) {
    if (!existsSync(join(dist, 'index.html'))) throw e;
    rmSync(mine, { recursive: true, force: true }); // another file's build landed first
  }
  return { dir: dist, own: false };
}

/** Builds (once per run), serves and opens the browser; call in beforeAll with SETUP_TIMEOUT_MS. */
export async function openPlayground(): Promise<Playground> {
  const executablePath = await ensureChromium();
  const { dir: outDir, own } = await pageBuild();
  const server: PreviewServer = await preview({
    root: ROOT,
    configFile: CONFIG_FILE,
    logLevel: 'warn',
    build: { outDir },
    preview: { host: '127.0.0.1', port: 0, strictPort: true, open: false },
  });
  const addr = server.httpServer.address() as AddressInfo | null;
  if (!addr || typeof addr !== 'object') throw new Error('vite preview did not report a listening address');
  const browser = await chromium.launch({ executablePath, args: CHROMIUM_ARGS, timeout: PAGE_TIMEOUT_MS });
  const errors: string[] = [];
  return {
    url: `http://127.0.0.1:${addr.port}/`,
    distDir: outDir,
    browser,
    errors,
    async freshPage(viewport = { width: 1280, height: 800 }, o = {}) {
      const ctx = await browser.newContext({ viewport, deviceScaleFactor: 1 });
      if (!o.teamFolded) {
        await ctx.addInitScript(() => {
          try {
            localStorage.setItem('sat-playground.fold.team-lm', 'open');
          } catch {
            // about:blank and other opaque origins have no storage; the playground's own pages do
          }
        });
      }
      const p = await ctx.newPage();
      p.on('pageerror', (e) => errors.push(`pageerror: ${e.message}`));
      p.on('console', (m) => {
        if (m.type() === 'error') errors.push(`console.error: ${m.text()}`);
      });
      p.setDefaultTimeout(PAGE_TIMEOUT_MS);
      return p;
    },
    async close() {
      await browser.close();
      await server.close();
      if (own) rmSync(outDir, { recursive: true, force: true });
    },
  };
}

/**
 * For a test file that needs only the playground: opens it in beforeAll and closes it in afterAll
 * (vitest hooks registered here); the returned function gives it to the tests.
 */
export function playgroundForFile(): () => Playground {
  let pg: Playground | undefined;
  beforeAll(async () => {
    pg = await openPlayground();
  }, SETUP_TIMEOUT_MS);
  afterAll(async () => {
    await pg?.close();
  });
  return () => pg!;
}

/**
 * playgroundForFile with a scratch folder beside it (model folders the test writes): both made in
 * beforeAll and handed to `ready`, both removed in afterAll.
 */
export function playgroundAndFolder(prefix: string, ready: (pg: Playground, dir: string) => void): void {
  let pg: Playground | undefined;
  let dir: string | undefined;
  beforeAll(async () => {
    pg = await openPlayground();
    dir = mkdtempSync(join(tmpdir(), prefix));
    ready(pg, dir);
  }, SETUP_TIMEOUT_MS);
  afterAll(async () => {
    await pg?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });
}

/** arith-team shrunk to two agents and tiny batches, so a stage runs in about a second (checkpoint-seat tests). */
export const TINY_ARITH_TEAM = presetConfig('arith-team', { agents: 2, batch: 2, group: 2, evalEpisodes: 8, geoIters: 0, probeEpisodes: 4, epochs: 1, maxNew: 3, stages: 3 });

/** Waits until the session is idle again (no step or long work in flight) and every chart shows the latest step (no chart grid lags the store: ChartsPanel's data-pending). */
export async function settled(p: Page): Promise<void> {
  await p.waitForFunction(() => {
    const b = document.querySelector('[data-testid="step-agent"]') as HTMLButtonElement | null;
    const r = document.querySelector('[data-testid="run"]') as HTMLButtonElement | null;
    return !!b && !!r && !document.querySelector('[data-testid="progress"]') && r.textContent?.includes('Run') && (!b.disabled || r.disabled) && !document.querySelector('[data-pending]');
  });
}

/**
 * The page's agent workers (one per agent): its Web Workers less the CPU kernels' helper threads,
 * which each language agent's worker starts from a blob: URL (src/backend/cpu/threads.ts).
 */
export function agentWorkers(p: Page): ReturnType<Page['workers']> {
  return p.workers().filter((w) => !w.url().startsWith('blob:'));
}

/** Number of plotted points a chart reports (data-points). */
export async function points(p: Page, id: string): Promise<number> {
  return Number(await p.getByTestId(id).getAttribute('data-points'));
}

/** One visible text run on the first screen: its computed font size and where it is. */
export interface TextSize {
  readonly size: number;
  readonly text: string;
  readonly where: string;
}

/**
 * The computed font size of every non-empty text node drawn inside the viewport (HTML and SVG
 * alike; screen-reader-only text and hidden elements left out), for the readability checks.
 */
export async function textSizes(p: Page): Promise<TextSize[]> {
  return p.evaluate(() => {
    const out: { size: number; text: string; where: string }[] = [];
    const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
      const t = n.textContent?.trim();
      const el = n.parentElement;
      if (!t || !el || el.closest('.sr-only, script, style, option') || !el.checkVisibility({ visibilityProperty: true, opacityProperty: true })) continue;
      const range = document.createRange();
      range.selectNodeContents(n);
      const b = range.getBoundingClientRect();
      if (b.width === 0 || b.height === 0 || b.bottom <= 0 || b.top >= innerHeight || b.right <= 0 || b.left >= innerWidth) continue;
      const cls = el.getAttribute('class')?.split(' ')[0];
      out.push({ size: parseFloat(getComputedStyle(el).fontSize), text: t.slice(0, 40), where: `${el.tagName.toLowerCase()}${cls ? `.${cls}` : ''} at y ${Math.round(b.top)}` });
    }
    return out;
  });
}

/** Clicks Step stage n times, each time until the stage table has one more row and the page settled. */
export async function stepStages(p: Page, n: number): Promise<void> {
  const start = await p.locator('[data-testid="stage-row"]').count();
  for (let k = 1; k <= n; k++) {
    await p.getByTestId('step-stage').click();
    await p.waitForFunction((want) => document.querySelectorAll('[data-testid="stage-row"]').length === want, start + k);
    await settled(p);
  }
}

/** The element's box lies inside the viewport (its top and bottom both on the first screen). */
export async function inViewport(p: Page, testid: string, height: number): Promise<void> {
  const box = await p.getByTestId(testid).first().boundingBox();
  expect(box, testid).not.toBeNull();
  expect(box!.y, `${testid} top`).toBeGreaterThanOrEqual(0);
  expect(box!.y + box!.height, `${testid} bottom (${box!.y + box!.height} > ${height})`).toBeLessThanOrEqual(height);
}
