/**
 * Browser test of teaching with the page (Debian's Chromium via ./harness.ts):
 *
 * - Projector mode: at 1280×720, after two stages, every text drawn on the first screen is at
 *   least 16 px (payoff tables, bar labels, axis ticks, timeline numbers), chart titles larger, the
 *   preset's question and Reveal on the first screen, the header one line on a table and a
 *   language preset; the toggle is remembered across a reload and a link's `projector` key opens
 *   it. The default mode's smallest text is at least 13 px.
 * - The coordination lesson: on its default seed Reveal prints the lesson's claim as shown.
 * - The address bar is the state: after a step it holds the link of that step; the address opened
 *   in a fresh browser replays to the same stage with the same J; another preset is a history
 *   entry of its own, and Back opens the run before it again.
 *
 * Not here: the lessons' claims on every preset in Node (tests/lessons.test.ts), the first
 * screen's layout in the default mode (firstscreen.test.ts).
 */
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { decodeShare, encodeShare, makeShareState } from '../../src/app/share';
import { presetConfig } from '../../src/sat/presets';
import { inViewport, playgroundForFile, ROOT, settled, stepStages, textSizes, TINY_ARITH_TEAM, type TextSize } from './harness';

const pg = playgroundForFile();

/** Screenshots go to test-results/ (ignored), or with UPDATE_SCREENSHOT=1 to docs/ for the README. */
const shot = (name: string) => join(ROOT, process.env.UPDATE_SCREENSHOT === '1' ? 'docs' : 'test-results', name);

async function open(p: Page, hash = ''): Promise<void> {
  await p.goto(pg().url + hash, { waitUntil: 'load' });
  await settled(p);
}

async function link(preset: string, opts: { projector?: boolean; hide?: string[] } = {}): Promise<string> {
  return encodeShare(makeShareState(presetConfig(preset), { preset, ...opts }));
}


const smallest = (xs: readonly TextSize[]) => Math.min(...xs.map((x) => x.size));
const below = (xs: readonly TextSize[], px: number) => xs.filter((x) => x.size < px).slice(0, 8).map((x) => `${x.size}px "${x.text}" ${x.where}`).join('; ');

/** The header is one line: no taller than its tallest single item plus its padding. */
async function headerOneLine(p: Page): Promise<void> {
  const h = await p.locator('header.header').evaluate((el) => {
    const cs = getComputedStyle(el);
    const kids = [...el.children].map((c) => c.getBoundingClientRect());
    const tops = kids.map((b) => Math.round(b.top));
    return { height: el.getBoundingClientRect().height - parseFloat(cs.paddingTop) - parseFloat(cs.paddingBottom), tallest: Math.max(...kids.map((b) => b.height)), rows: new Set(tops.map((t) => Math.round(t / 10))).size, lede: el.querySelector('.lede')!.getBoundingClientRect().height, ledeLine: parseFloat(getComputedStyle(el.querySelector('.lede')!).lineHeight) };
  });
  expect(h.height, JSON.stringify(h)).toBeLessThanOrEqual(h.tallest + 1);
  expect(h.lede, JSON.stringify(h)).toBeLessThanOrEqual(h.ledeLine * 1.2);
}

describe('projector mode', () => {
  it('at 1280×720 the default mode draws no text under 13 px; projector mode none under 16 px, titles larger, the question on the first screen', async () => {
    const p = await pg().freshPage({ width: 1280, height: 720 });
    await open(p);
    await stepStages(p, 2);
    await p.mouse.move(0, 0);
    const plain = await textSizes(p);
    console.log(`default mode, climbing after 2 stages: ${plain.length} texts on the first screen, smallest ${smallest(plain)} px`);
    expect(smallest(plain), below(plain, 13)).toBeGreaterThanOrEqual(13);
    expect(await p.locator('.app').getAttribute('data-projector')).toBe('off');

    await p.getByTestId('projector-toggle').click();
    await settled(p);
    await p.mouse.move(0, 0);
    const big = await textSizes(p);
    console.log(`projector mode, climbing after 2 stages: ${big.length} texts on the first screen, smallest ${smallest(big)} px`);
    expect(smallest(big), below(big, 16)).toBeGreaterThanOrEqual(16);
    // The numbers a class reads are among them: timeline cells, axis ticks, payoff cells, bar labels.
    for (const sel of ['.timeline-cell', '.j-tick-value', 'table.payoff td', '.game-bar-label']) {
      const px = await p.locator(sel).first().evaluate((el) => parseFloat(getComputedStyle(el).fontSize));
      expect(px, sel).toBeGreaterThanOrEqual(16);
    }
    const title = await p.locator('.chart-title').first().evaluate((el) => parseFloat(getComputedStyle(el).fontSize));
    expect(title).toBeGreaterThan(16);
    for (const id of ['worksheet-question', 'worksheet-reveal', 'step-agent', 'timeline']) await inViewport(p, id, 720);
    await headerOneLine(p);
    await p.screenshot({ path: shot('projector.png') });

    // Remembered in this browser: a reload opens it again; the toggle turns it off for good.
    await p.reload({ waitUntil: 'load' });
    await settled(p);
    expect(await p.locator('.app').getAttribute('data-projector')).toBe('on');
    const address = await p.evaluate(() => location.href);
    await p.getByTestId('projector-toggle').click();
    // The address bar follows the mode (addressBar.ts): the link without the flag replaces it.
    await p.waitForFunction((a) => location.href !== a, address, { timeout: 30_000 });
    await p.reload({ waitUntil: 'load' });
    await settled(p);
    expect(await p.locator('.app').getAttribute('data-projector')).toBe('off');
    // A reload before the address caught up with a toggle: on again (the address gets the flag),
    // then the toggle's effect on storage alone, as a click just before the reload leaves it — the
    // tab's choice outranks its own address's old flag (boot.ts).
    const off = await p.evaluate(() => location.href);
    await p.getByTestId('projector-toggle').click();
    await p.waitForFunction((a) => location.href !== a, off, { timeout: 30_000 });
    await p.evaluate(() => {
      localStorage.setItem('sat-playground.projector', 'off');
      sessionStorage.setItem('sat-playground.projector.tab', 'off');
    });
    await p.reload({ waitUntil: 'load' });
    await settled(p);
    expect(await p.locator('.app').getAttribute('data-projector')).toBe('off');
    expect(pg().errors).toEqual([]);
    await p.context().close();
  });

  it('a link with the projector key opens it, on a language preset too, with a one-line header', async () => {
    const p = await pg().freshPage({ width: 1280, height: 720 });
    await p.goto(pg().url + (await link('arith-team', { projector: true })), { waitUntil: 'load' });
    await p.waitForFunction(() => !/Starting/.test(document.querySelector('[data-testid="backend"]')?.textContent ?? 'Starting'));
    expect(await p.locator('.app').getAttribute('data-projector')).toBe('on');
    await headerOneLine(p);
    const big = await textSizes(p);
    expect(smallest(big), below(big, 16)).toBeGreaterThanOrEqual(16);
    for (const id of ['worksheet-question', 'worksheet-reveal']) await inViewport(p, id, 720);
    await p.context().close();
  });
});

describe('the coordination lesson in the page', () => {
  it('on its default seed Reveal after 10 stages says the lesson shows', async () => {
    const p = await pg().freshPage({ width: 1280, height: 800 });
    await open(p, await link('coordination'));
    await stepStages(p, 10);
    await p.getByTestId('worksheet-reveal').click();
    const lesson = p.getByTestId('worksheet-lesson');
    expect(await lesson.getAttribute('data-holds')).toBe('true');
    expect(await p.getByTestId('worksheet-answer').innerText()).toMatch(/^This run: Yes: J is 9\.\d{3} after stage 10/);
    await p.context().close();
  });
});

/** A shrunk arith-team (two agents, tiny batches) opened from its link, settled. */
async function openTinyTeam(): Promise<Page> {
  const p = await pg().freshPage({ width: 1280, height: 800 });
  await p.goto(pg().url + (await encodeShare(makeShareState(TINY_ARITH_TEAM, { preset: 'arith-team' }))), { waitUntil: 'load' });
  await p.getByText(/Opened a shared experiment/).waitFor({ timeout: 120_000 });
  await settled(p);
  return p;
}

/** The link in the address bar, decoded (fails the test when it is not one). */
async function addressState(p: Page) {
  const r = await decodeShare(new URL(p.url()).hash);
  if (!r.ok) throw new Error(`the address bar holds no link: ${p.url()} (${r.error})`);
  return r.state;
}

describe('the address bar is the state', () => {
  it('every step writes it; a fresh browser replays it to the same stage; Back returns to the run before', async () => {
    const p = await pg().freshPage({ width: 1280, height: 800 });
    await open(p);
    await p.getByTestId('step-agent').click();
    await settled(p);
    await p.waitForFunction(() => location.hash.length > 4);
    expect((await addressState(p)).step).toEqual({ stage: 1, agent: 0 });
    await stepStages(p, 2);
    await expect.poll(async () => (await addressState(p)).step, { timeout: 5000 }).toEqual({ stage: 2 });
    const address = p.url();
    const j = await p.evaluate(() => (globalThis as unknown as { satPlayground: { state(): { stages: { jAfter: number }[] } } }).satPlayground.state().stages.map((s) => s.jAfter));

    const q = await pg().freshPage({ width: 1280, height: 800 });
    await q.goto(address, { waitUntil: 'load' });
    await q.waitForFunction(() => document.querySelectorAll('[data-testid="stage-row"]').length === 2);
    await settled(q);
    expect(await q.evaluate(() => (globalThis as unknown as { satPlayground: { state(): { stages: { jAfter: number }[] } } }).satPlayground.state().stages.map((s) => s.jAfter))).toEqual(j);
    await q.context().close();

    // Another preset: a new history entry; Back opens the climbing run at stage 2 again.
    await p.getByTestId('preset-coordination').click();
    await settled(p);
    await expect.poll(async () => (await addressState(p)).preset, { timeout: 5000 }).toBe('coordination');
    await p.goBack();
    await expect.poll(() => p.url(), { timeout: 5000 }).toBe(address);
    await p.waitForFunction(() => document.querySelectorAll('[data-testid="stage-row"]').length === 2 && document.querySelector('[data-testid="preset-climbing"]')?.getAttribute('aria-selected') === 'true');
    await settled(p);
    expect(pg().errors).toEqual([]);
    await p.context().close();
  });
});

describe('the lesson-link builder', () => {
  it('builds a reduced lesson link whose page is the preview: preset, seed, stage, hidden panels, the question kept without the gallery', async () => {
    const p = await pg().freshPage({ width: 1280, height: 800 });
    await p.context().grantPermissions(['clipboard-read', 'clipboard-write']);
    await open(p);
    await p.getByTestId('lesson-link-open').click();
    await p.getByTestId('lesson-preset').selectOption('coordination');
    await p.getByTestId('lesson-seed').fill('4');
    await p.getByTestId('lesson-stage').fill('3');
    for (const h of ['preset', 'settings', 'team', 'waterfall']) await p.getByTestId(`lesson-hide-${h}`).check();
    const question = 'Which optimum will the two agents pick, and why do they agree?';
    await p.getByTestId('lesson-question').fill(question);
    const frame = p.getByTestId('lesson-preview');
    await frame.waitFor();
    await expect.poll(async () => (await frame.getAttribute('src'))?.replace('?lesson-preview', ''), { timeout: 5000 }).toBe(await p.getByTestId('lesson-link').inputValue());
    const link = await p.getByTestId('lesson-link').inputValue();
    const r = await decodeShare(new URL(link).hash);
    expect(r.ok && r.state).toMatchObject({ preset: 'coordination', config: { seed: 4 }, step: { stage: 3 }, hide: ['preset', 'settings', 'team', 'waterfall'], question });
    await p.getByTestId('lesson-copy').click();
    expect(await p.evaluate(() => navigator.clipboard.readText())).toBe(link);

    // The preview is that page: three stages replayed, the gallery and panels gone, the question there.
    const preview = p.frameLocator('[data-testid="lesson-preview"]');
    await preview.locator('[data-testid="stage-row"]').nth(2).waitFor({ timeout: 60_000 });
    await p.waitForTimeout(500);
    await p.screenshot({ path: shot('lesson-builder.png') });
    expect(await preview.getByTestId('teacher-question').innerText()).toContain(question);
    expect(await preview.getByTestId('worksheet-question').count()).toBe(1);
    expect(await preview.getByTestId('presets').count()).toBe(0);
    expect(await preview.locator('[data-testid="chart-waterfall"]').count()).toBe(0);

    // And so is the page a class opens from the link, in a browser of its own.
    const q = await pg().freshPage({ width: 1280, height: 720 });
    await q.goto(link, { waitUntil: 'load' });
    await q.waitForFunction(() => document.querySelectorAll('[data-testid="stage-row"]').length === 3);
    await settled(q);
    expect(await q.getByTestId('teacher-question').innerText()).toContain(question);
    expect(await q.getByTestId('presets').count()).toBe(0);
    expect(await q.evaluate(() => (globalThis as unknown as { satPlayground: { state(): { config: { seed: number }; preset: string } } }).satPlayground.state().config.seed)).toBe(4);
    // The preview did not replace the teacher's own autosaved run (climbing).
    await p.reload({ waitUntil: 'load' });
    await settled(p);
    expect(await p.locator('[data-testid="preset-climbing"]').getAttribute('aria-selected')).toBe('true');
    expect(pg().errors).toEqual([]);
    await q.context().close();
    await p.context().close();
  });
});

describe('nothing silently thrown away', () => {
  it('Apply with a history keeps the old run dashed on the J chart until dismissed; the folded team line shows the applied δ', async () => {
    const p = await pg().freshPage({ width: 1280, height: 800 });
    await open(p);
    await stepStages(p, 2);
    const before = await p.evaluate(() => (globalThis as unknown as { satPlayground: { state(): { stages: { jAfter: number }[] } } }).satPlayground.state().stages.map((s) => s.jAfter));
    await p.getByTestId('fold-settings').locator('summary.fold-summary').click();
    await p.getByTestId('cfg-delta').fill('0.2');
    await p.getByTestId('apply').click();
    await settled(p);
    expect(await p.locator('[data-testid="stage-row"]').count()).toBe(0);
    expect(await p.getByTestId('previous-kept').innerText()).toMatch(/before Apply \(delta 0\.5 → 0\.2\) \(2 stages, J \d\.\d{3}\)/);
    await stepStages(p, 1);
    const overlay = p.getByTestId('j-overlay');
    await overlay.waitFor();
    expect(await overlay.innerText()).toMatch(new RegExp(`before Apply \\(delta 0\\.5 → 0\\.2\\): J ${before[1]!.toFixed(3)} at stage 2`));
    expect(await p.locator('[data-testid="chart-j"] .j-overlay-line').count()).toBe(1);
    expect(await p.getByTestId('team-summary').innerText()).toMatch(/δ = 0\.2\b/);
    await p.getByTestId('dismiss-previous').click();
    expect(await p.getByTestId('j-overlay').count()).toBe(0);
    // Another preset is another game: nothing of this one is drawn over it.
    await p.getByTestId('preset-penalty').click();
    await settled(p);
    expect(await p.getByTestId('j-overlay').count()).toBe(0);
    expect(pg().errors).toEqual([]);
    await p.context().close();
  });

  it('Check bound leaves the token inspector as it was: the latest agent step is still inspectable', async () => {
    const p = await openTinyTeam();
    await p.getByTestId('step-stage').click();
    await p.waitForFunction(() => document.querySelectorAll('[data-testid="stage-row"]').length === 1, undefined, { timeout: 180_000 });
    await settled(p);
    await p.getByTestId('check-bound').click();
    await p.getByTestId('notice').getByText(/^Stage 1: lower bound/).waitFor({ timeout: 240_000 });
    await settled(p);
    await p.getByTestId('inspect-tokens').click();
    await p.getByTestId('inspector-token').first().waitFor({ timeout: 60_000 });
    expect(await p.getByText(/Nothing to inspect/).count()).toBe(0);
    expect(pg().errors).toEqual([]);
    await p.context().close();
  }, 480_000);
});

describe('long work says so', () => {
  it('Sweep δ shows its progress, the time left and Cancel, and Cancel stops it', async () => {
    const p = await pg().freshPage({ width: 1280, height: 800 });
    await open(p, await link('delta-sweep'));
    const t0 = Date.now();
    await p.getByTestId('sweep-delta').click();
    const left = p.getByTestId('progress-left');
    await left.waitFor({ timeout: 60_000 });
    console.log(`Sweep δ: time left first shown ${Date.now() - t0} ms after the click: "${await left.innerText()}"`);
    expect(await left.innerText()).toMatch(/^\d+ of \d+ · about \d+ (s|min) left$/);
    await p.getByTestId('progress').getByTestId('cancel').click();
    await settled(p);
    expect(await p.getByTestId('progress').count()).toBe(0);
    expect(pg().errors).toEqual([]);
    await p.context().close();
  });
});

describe('the second five minutes', () => {
  it('a skip link is the first Tab stop and lands on Step agent; settings read in words, numbers in number boxes', async () => {
    const p = await pg().freshPage({ width: 1280, height: 800 });
    await open(p);
    await p.waitForFunction(() => location.hash.startsWith('#v1.'));
    const before = p.url();
    await p.keyboard.press('Tab');
    expect(await p.evaluate(() => document.activeElement?.getAttribute('data-testid'))).toBe('skip-link');
    await p.keyboard.press('Enter');
    expect(await p.evaluate(() => document.activeElement?.getAttribute('data-testid'))).toBe('step-agent');
    expect(p.url()).toBe(before); // the address bar still holds the link, not an anchor
    await p.getByTestId('fold-settings').locator('summary.fold-summary').click();
    const label = p.locator('.field-label[data-key="taskSeed"]');
    expect((await label.innerText()).toLowerCase()).toContain('task seed');
    for (const k of ['seed', 'lr', 'taskSeed', 'penaltyK']) expect(await p.getByTestId(`cfg-${k}`).getAttribute('type'), k).toBe('number');
    expect(await p.getByTestId('cfg-customOrder').getAttribute('type')).toBe('text');
    expect(pg().errors).toEqual([]);
    await p.context().close();
  });

  it('the team cards name the backend in the header\'s words (a language team on the CPU kernels)', async () => {
    const p = await openTinyTeam();
    const header = await p.getByTestId('backend').innerText();
    const card = await p.getByTestId('agent-0-backend').innerText();
    expect(card).toMatch(/^(WebAssembly SIMD kernels|WebGPU|CPU kernels in TypeScript)/);
    expect(header, `header "${header}", card "${card}"`).toContain(card);
    await p.context().close();
  });
});
