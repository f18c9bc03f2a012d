/**
 * The formula cards and the worksheet prompt on the real page (Chromium, ./harness.ts): the climbing
 * preset opens, its "predict, then run" Reveal first asks for stages (and hides again); one stage is stepped; the
 * waterfall's, the KL chart's and the J chart's cards open (KaTeX and its fonts load from the built
 * page itself, nothing from elsewhere), and every number in them — its data-value — equals what the
 * page shows for that metric elsewhere: the charts' readouts (their data-metric / data-value), the
 * stage table's cells, the waterfall's bar labels. Clicking a term marks the chart highlighted and
 * draws its bar or series highlighted; clicking it again clears it. After five stages the Reveal
 * answers from the run, in agreement with the stage table. A screenshot of the waterfall with its card goes
 * to test-results/formula-card.png (docs/formula-card.png with UPDATE_SCREENSHOT=1, for the README).
 *
 * Not here: the formulas against the metrics in Node (tests/formulas.test.ts), the worksheet's
 * answers against hand counts (tests/worksheet.test.ts), the rest of the page (playground.test.ts).
 */
import { mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openPlayground, type Playground, ROOT, settled, SETUP_TIMEOUT_MS } from './harness';

const SCREENSHOT = join(ROOT, process.env.UPDATE_SCREENSHOT === '1' ? 'docs/formula-card.png' : 'test-results/formula-card.png');

let pg: Playground;
let page: Page;

beforeAll(async () => {
  pg = await openPlayground();
  page = await pg.freshPage();
}, SETUP_TIMEOUT_MS);

afterAll(async () => {
  await pg?.close();
});

interface CardNumber {
  readonly metric: string;
  readonly value: string;
  readonly term: string;
  readonly text: string;
}

/** Opens a chart's formula card and reads its typeset numbers. */
async function openCard(chart: Locator): Promise<CardNumber[]> {
  const card = chart.getByTestId('formula-card');
  if (!(await card.evaluate((d) => (d as HTMLDetailsElement).open))) await card.locator('summary').click();
  await card.getByTestId('formula-tex').waitFor({ state: 'visible' });
  return card.locator('[data-metric]').evaluateAll((els) =>
    els.map((e) => ({ metric: e.getAttribute('data-metric') ?? '', value: e.getAttribute('data-value') ?? '', term: e.getAttribute('data-term') ?? '', text: (e.textContent ?? '').trim() })),
  );
}

/** The page's own numbers for each metric outside the formula cards: readouts with data-metric. */
async function pageNumbers(p: Page): Promise<Map<string, Set<string>>> {
  const pairs = await p.locator('[data-metric]').evaluateAll((els) =>
    els.filter((e) => !e.closest('.formula-card')).map((e) => [e.getAttribute('data-metric') ?? '', e.getAttribute('data-value') ?? ''] as const),
  );
  const out = new Map<string, Set<string>>();
  for (const [k, v] of pairs) out.set(k, (out.get(k) ?? new Set()).add(v));
  return out;
}

/** The stage table's last row as metric → data-value: J, ΔJ, the bound, then each agent's KL quantile. */
async function lastRow(p: Page, nAgents: number): Promise<Map<string, string>> {
  const vals = await p.locator('[data-testid="stage-row"]').last().locator('td[data-value]').evaluateAll((c) => c.map((x) => x.getAttribute('data-value') ?? ''));
  const keys = ['team/J', 'team/dJ', 'cert/lower', ...Array.from({ length: nAgents }, (_, j) => `agent/${j}/kl_q`)];
  expect(vals).toHaveLength(keys.length);
  return new Map(keys.map((k, i) => [k, vals[i]!]));
}

const stageRows = (p: Page) => p.locator('[data-testid="stage-row"]').count();

describe('formula cards and the worksheet prompt in Chromium', () => {
  it('the preset card asks its question; Reveal before any stage asks for stages first', async () => {
    await page.goto(pg.url, { waitUntil: 'load' });
    await settled(page);
    expect(await page.getByTestId('preset-title').innerText()).toContain('Climbing game');
    expect(await page.getByTestId('worksheet-question').innerText()).toMatch(/\?$/);
    await page.getByTestId('worksheet-reveal').click();
    const a = page.getByTestId('worksheet-answer');
    expect(await a.getAttribute('data-ready')).toBe('false');
    expect(await a.innerText()).toMatch(/Run 5 more stages first/);
    await page.getByTestId('worksheet-hide').click();
    expect(await page.getByTestId('worksheet-answer').count()).toBe(0);
    await page.getByTestId('worksheet-reveal').click(); // shown again, and it stays open while stages run
  });

  it('after one stage, the waterfall card\'s numbers are the page\'s: readouts, stage table, bar labels', async () => {
    await page.getByTestId('step-stage').click();
    await page.waitForFunction(() => document.querySelectorAll('[data-testid="stage-row"]').length === 1);
    await settled(page);
    const chart = page.getByTestId('chart-waterfall');
    const nums = await openCard(chart);
    expect(nums.map((n) => n.metric)).toEqual(['cert/gain', 'cert/shift', 'cert/bias', 'cert/finite', 'cert/lower', 'team/dJ']);
    const shown = await pageNumbers(page);
    const row = await lastRow(page, 3);
    for (const n of nums) {
      expect(Number.isFinite(Number(n.value)), n.metric).toBe(true);
      if (shown.has(n.metric)) expect([...shown.get(n.metric)!], n.metric).toContain(n.value);
      if (row.has(n.metric)) expect(n.value, n.metric).toBe(row.get(n.metric));
    }
    expect(shown.has('cert/lower') && shown.has('team/dJ')).toBe(true);
    // The bars' labels, left to right: in-sample gain, gain, −shift, −bias, −finite, = bound, real ΔJ.
    const labels = await chart.locator('.recharts-label-list text').evaluateAll((ts) => ts.map((t) => (t.textContent ?? '').trim()));
    expect(labels).toHaveLength(7);
    const byTerm = Object.fromEntries(nums.map((n) => [n.term, n]));
    expect(labels[1]).toBe(byTerm.gain!.text.replace(/\s/g, ''));
    for (const [k, t] of [[2, 'shift'], [3, 'bias'], [4, 'finite']] as const) {
      const v = Number(byTerm[t]!.value);
      expect(labels[k]!.replace(/^−/, ''), t).toBe(byTerm[t]!.text.replace(/[()\s]/g, '').replace(/^−/, ''));
      if (v > 0) expect(labels[k]!.startsWith('−'), t).toBe(true);
    }
    expect(labels[5]).toBe(byTerm.lower!.text.replace(/\s/g, ''));
    expect(labels[6]).toBe(byTerm.realised!.text.replace(/\s/g, ''));
  });

  it('KaTeX, its stylesheet and its fonts come from the built page itself', async () => {
    await page.evaluate(() => document.fonts.ready);
    // Every resource the page loaded, from the browser's own record (Resource Timing).
    const requests = await page.evaluate(() => [location.href, ...performance.getEntriesByType('resource').map((e) => e.name)]);
    const katex = requests.filter((u) => /katex/i.test(u));
    expect(katex.some((u) => /\/assets\/katexRender-[^/]+\.js$/.test(u))).toBe(true);
    expect(katex.some((u) => /\/assets\/katexRender-[^/]+\.css$/.test(u))).toBe(true);
    expect(katex.some((u) => /\/assets\/KaTeX_[^/]+\.woff2$/.test(u))).toBe(true);
    for (const u of requests) expect(u.startsWith(pg.url) || u.startsWith('data:') || u.startsWith('blob:'), u).toBe(true);
  });

  it('clicking a term highlights its bar; clicking it again clears it', async () => {
    const chart = page.getByTestId('chart-waterfall');
    const gain = chart.locator('.formula-card [data-term="gain"]');
    await gain.click();
    await expect.poll(() => chart.getAttribute('data-highlight')).toBe('gain');
    expect(await gain.getAttribute('aria-pressed')).toBe('true');
    expect(await chart.locator('svg [data-highlighted="gain"]').count()).toBe(1);
    expect(await chart.locator('svg [data-highlighted]').count()).toBe(1);
    mkdirSync(dirname(SCREENSHOT), { recursive: true });
    await chart.screenshot({ path: SCREENSHOT });
    await gain.click();
    await expect.poll(() => chart.getAttribute('data-highlight')).toBe(null);
    expect(await chart.locator('svg [data-highlighted]').count()).toBe(0);
    // The same by keyboard: the numbers are buttons.
    await chart.locator('.formula-card [data-term="realised"]').focus();
    await page.keyboard.press('Enter');
    await expect.poll(() => chart.getAttribute('data-highlight')).toBe('realised');
    expect(await chart.locator('svg [data-highlighted="realised"]').count()).toBe(1);
  });

  it('the KL card and the J card equal their readouts and the stage table; their terms highlight the δ line and the floors', async () => {
    const kl = page.getByTestId('chart-kl');
    const klNums = await openCard(kl);
    expect(klNums.map((n) => n.metric.replace(/^agent\/\d+\//, ''))).toEqual(['kl_q', 'delta', 'viol_rate', 'kl_mean', 'kl_max']);
    const shown = await pageNumbers(page);
    const row = await lastRow(page, 3);
    for (const n of klNums) expect([...(shown.get(n.metric) ?? [])], n.metric).toEqual([n.value]);
    const q = klNums[0]!;
    expect(q.value).toBe(row.get(q.metric)); // the step in view is the stage's last: its KL quantile is in the table
    await kl.locator('.formula-card [data-term="delta"]').click();
    await expect.poll(() => kl.getAttribute('data-highlight')).toBe('delta');

    const j = page.getByTestId('chart-j');
    const jNums = await openCard(j);
    expect(jNums.map((n) => n.metric)).toEqual(['team/J', 'team/dJ', 'cert/lower']);
    for (const n of jNums) expect(n.value, n.metric).toBe(row.get(n.metric));
    expect([...(shown.get('team/J') ?? [])]).toEqual([row.get('team/J')]);
    await j.locator('.formula-card [data-term="floor"]').click();
    await expect.poll(() => j.getAttribute('data-highlight')).toBe('floor');
    expect(await j.locator('svg [data-highlighted="floor"]').count()).toBeGreaterThanOrEqual(1);
  });

  it('the cards follow the run: after five stages they show stage 5, and Reveal answers from the run', async () => {
    for (let k = 2; k <= 5; k++) {
      await page.getByTestId('step-stage').click();
      await page.waitForFunction((n) => document.querySelectorAll('[data-testid="stage-row"]').length === n, k);
      await settled(page);
    }
    expect(await stageRows(page)).toBe(5);
    const row = await lastRow(page, 3);
    const jNums = await openCard(page.getByTestId('chart-j'));
    for (const n of jNums) expect(n.value, n.metric).toBe(row.get(n.metric));
    const a = page.getByTestId('worksheet-answer');
    await expect.poll(() => a.getAttribute('data-ready')).toBe('true');
    // The climbing question: did J fall in stages 1–5? The table's ΔJ column says.
    const dJs = await page.locator('[data-testid="stage-row"]').evaluateAll((rows) => rows.map((r) => Number(r.querySelectorAll('td[data-value]')[1]!.getAttribute('data-value'))));
    const fell = dJs.map((d, i) => (d < -1e-9 ? i + 1 : 0)).filter((s) => s > 0);
    const text = await a.innerText();
    expect(text).toMatch(fell.length === 0 ? /This run: No: J rose or stayed level/ : /This run: Yes: J fell in stage/);
    const worst = Math.min(...dJs);
    expect(text.replace(/\u2212/g, '-')).toContain(worst.toFixed(3));
    expect(pg.errors).toEqual([]);
  });
});
