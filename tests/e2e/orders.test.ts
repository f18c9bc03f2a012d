/**
 * Compare orders on a language team, in a real browser (./harness.ts: a production build, vite
 * preview, Debian's Chromium): arith-team shrunk to two agents and small batches, opened from a
 * share link made in Node by the page's own encoder and replayed to the end of stage 1, compares
 * σ = fixed and σ = reverse over the next stage in the agents' Web Workers — the progress line
 * names the order and the agent step of each of the four agent steps and offers Cancel — and the order chart shows two series,
 * each point with its held-out 95 % interval (error bars, "±" in the legend), each order's bars at
 * their own x. The user's own
 * experiment is as it was: its next stage gives the stage table a fresh page shows after the same
 * link and the same step without any comparison. Sweep δ (the same machinery) runs seven radii
 * over three seeds from stage 1 onto the violation chart, and the experiment again steps on as
 * the fresh page's.
 *
 * Not here: the comparison's numbers against in-process runs, and Cancel's exact stopping point
 * (tests/orders-lm.test.ts); tabular comparisons (tests/e2e/playground.test.ts).
 */
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { encodeShare, makeShareState } from '../../src/app/share';
import { presetConfig } from '../../src/sat/presets';
import { agentWorkers, playgroundForFile, points, settled } from './harness';

const pg = playgroundForFile();

/** arith-team, two agents, small batches (the preset's own lr schedule, δ, β and retry factor). */
const cfg = presetConfig('arith-team', { agents: 2, stages: 2, batch: 4, group: 8, evalEpisodes: 32, certEpisodes: 16, lr: 2e-3, geoIters: 0 });

/** A fresh page on the link, replayed to the end of stage 1. */
async function openAtStage1(link: string): Promise<Page> {
  const p = await pg().freshPage();
  await p.goto(link, { waitUntil: 'load' });
  await p.getByText(/replayed it to stage 1/).waitFor({ timeout: 120_000 });
  await settled(p);
  expect(await p.locator('[data-testid="stage-row"]').count()).toBe(1);
  return p;
}

/** Every number of the stage table, in order: the run's fingerprint. */
async function tableValues(p: Page): Promise<string[]> {
  return p.locator('[data-testid="stage-row"] [data-value]').evaluateAll((cells) => cells.map((c) => c.getAttribute('data-value') ?? ''));
}

async function stepStage(p: Page): Promise<void> {
  await p.getByTestId('step-stage').click();
  await p.waitForFunction(() => document.querySelectorAll('[data-testid="stage-row"]').length === 2, undefined, { timeout: 120_000 });
  await settled(p);
}

/** The experiment on `p` is as it was: its next stage equals a fresh page's on the same link that ran no side run. Closes both. */
async function expectAsIfNothingHappened(p: Page, link: string): Promise<void> {
  await stepStage(p);
  const other = await openAtStage1(link);
  await stepStage(other);
  expect(await tableValues(p)).toEqual(await tableValues(other));
  await other.context().close();
  await p.context().close();
  expect(pg().errors).toEqual([]);
}

describe('Compare orders on a language team (arith-team, two agents)', () => {
  it('two orders from stage 1 in the workers, two series with CIs; the experiment steps on as if nothing happened', async () => {
    const link = pg().url + (await encodeShare(makeShareState(cfg, { preset: 'arith-team', step: { stage: 1 } })));
    const p = await openAtStage1(link);
    expect(agentWorkers(p).length).toBe(2);
    expect(await p.getByTestId('compare-orders').getAttribute('title')).toMatch(/next 1 stage from where your team stands.*fixed, reverse/);
    // Every progress line shown, recorded as it is drawn (the comparison may take under a second).
    await p.evaluate(() => {
      const seen: string[] = [];
      (window as unknown as { seen: string[] }).seen = seen;
      new MutationObserver(() => {
        const el = document.querySelector('[data-testid="progress"]');
        if (el) seen.push(`${el.textContent ?? ''}${document.querySelector('[data-testid="cancel"]') ? ' [Cancel]' : ''}`);
      }).observe(document.body, { subtree: true, childList: true, characterData: true });
    });
    const t0 = Date.now();
    await p.getByTestId('compare-orders').click();
    await p.waitForFunction(() => Number(document.querySelector('[data-testid="chart-orders"]')?.getAttribute('data-points')) > 0, undefined, { timeout: 120_000 });
    await settled(p);
    const ms = Date.now() - t0;
    // Progress named the order and the agent step, with Cancel, for all four agent steps.
    const seen = await p.evaluate(() => (window as unknown as { seen: string[] }).seen);
    for (const want of ['σ = fixed (1 of 2), stage 1 of 1, agent step 1 of 2', 'σ = fixed (1 of 2), stage 1 of 1, agent step 2 of 2', 'σ = reverse (2 of 2), stage 1 of 1, agent step 1 of 2', 'σ = reverse (2 of 2), stage 1 of 1, agent step 2 of 2']) {
      expect(seen.some((t) => t.includes(`Comparing orders: ${want}`) && t.endsWith('[Cancel]')), want).toBe(true);
    }
    const chart = p.getByTestId('chart-orders');
    expect(await points(p, 'chart-orders')).toBe(2); // one stage per order
    const keys = await chart.locator('.order-key').allInnerTexts();
    expect(keys).toHaveLength(2);
    // A language stage's bound is not checked unless asked: said so, never counted as not held.
    expect(keys[0]).toMatch(/^σ = fixed: J \d\.\d{3} ± \d\.\d{3}, bound not checked$/);
    expect(keys[1]).toMatch(/^σ = reverse: J \d\.\d{3} ± \d\.\d{3}, bound not checked$/);
    // …and drawn so: each order's stage a small grey "not checked" dot, no red "not held" ring.
    expect(await chart.locator('.recharts-surface [data-verdict="unchecked"]').count()).toBe(2);
    expect(await chart.locator('.recharts-surface [data-verdict="not held"]').count()).toBe(0);
    // The key under the plot: each mark with its word, what it means in its title.
    const unchecked = chart.locator('[data-testid="verdict-legend"] [data-verdict-key="unchecked"]');
    expect(await unchecked.locator('.verdict-word').innerText()).toBe('not checked');
    expect(await unchecked.getAttribute('title')).toMatch(/not checked: the bound was not tested/);
    expect(await unchecked.locator('[data-verdict="unchecked"]').count()).toBe(1);
    // The J chart of the same language team: its stage's mark is "not checked", its legend says
    // what a ✓ proves, and the run line says the 95 % is per stage.
    const jChart = p.getByTestId('chart-j');
    expect(await jChart.locator('.j-dots [data-verdict="unchecked"]').count()).toBe(1);
    expect(await jChart.locator('.j-dots [data-verdict="not held"]').count()).toBe(0);
    const tick = jChart.getByTestId('per-stage-note');
    expect(await tick.locator('.verdict-word').innerText()).toBe('certified, 95 % per stage');
    expect(await tick.getAttribute('title')).toMatch(/✓ certified: J on the training problems rose by at least the lower bound, which is above 0 \(95 %, for that stage\)/);
    expect(await tick.getAttribute('title')).toMatch(/the 95 % is per stage: over 1 stage with no real change about 0\.1 would show a ✓/);
    // The line is held-out J with its noise, said in the readout and the stage's tooltip; a ✓
    // there says what it proves (when the stage certified).
    expect(await jChart.getByTestId('j-now').innerText()).toMatch(/^held-out J now \d\.\d{3} ± \d\.\d{3}$/);
    await jChart.locator('svg.j-svg').focus();
    expect(await jChart.getByTestId('j-tip-dj').innerText()).toMatch(/^held-out ΔJ −?\d\.\d{3} ± \d\.\d{3} \(the held-out J's noise\)$/);
    const sentence = jChart.getByTestId('j-certified-sentence');
    if ((await jChart.locator('.j-cert-marks [data-certified="true"]').count()) > 0) {
      expect(await sentence.innerText()).toMatch(/^✓ J on the training problems rose by at least \d\.\d+ \(95 %\), for this stage\.$/);
    } else expect(await sentence.count()).toBe(0);
    console.log(`[e2e orders] J chart of arith-team stage 1: "${await jChart.getByTestId('j-now').innerText()}", tooltip "${await jChart.getByTestId('j-tip-dj').innerText()}", certified: ${await sentence.count()}`);
    await jChart.locator('svg.j-svg').blur();
    for (const k of [0, 1]) expect(Number(await p.getByTestId(`order-final-${k}`).getAttribute('data-ci'))).toBeGreaterThan(0);
    expect(await chart.locator('.recharts-errorBar').count()).toBeGreaterThanOrEqual(2);
    // Each order's bar sits at its own x, so the bars do not hide one another.
    const xs = await chart.locator('.recharts-errorBar').evaluateAll((bars) => bars.map((b) => Math.round(b.getBoundingClientRect().x + b.getBoundingClientRect().width / 2)));
    expect(new Set(xs).size, `bar centres ${xs.join(', ')}`).toBe(xs.length);
    expect(await p.getByTestId('notice').innerText()).toMatch(/Compared 2 orders from stage 1.*your experiment is as it was/);
    console.log(`[e2e orders] two orders of one arith-team stage (2 agents) compared in ${(ms / 1000).toFixed(1)} s: ${keys.join('; ')}`);

    await expectAsIfNothingHappened(p, link);
  }, 300_000);

  it('Sweep δ runs from stage 1 in the workers onto the violation chart; the experiment steps on as if nothing happened', async () => {
    const link = pg().url + (await encodeShare(makeShareState(cfg, { preset: 'arith-team', step: { stage: 1 } })));
    const p = await openAtStage1(link);
    const before = await points(p, 'chart-violation');
    const t0 = Date.now();
    await p.getByTestId('sweep-delta').click();
    await p.getByTestId('notice').getByText(/Swept 7 radii δ over 3 of 3 seeds, one stage each from stage 1; your experiment is as it was/).waitFor({ timeout: 180_000 });
    await settled(p);
    const ms = Date.now() - t0;
    expect(await points(p, 'chart-violation')).toBeGreaterThan(before);
    expect(await p.getByTestId('chart-violation').innerText()).toMatch(/δ sweep \(arithmetic team of 2\), lr ∝ √δ/);
    console.log(`[e2e orders] δ sweep of arith-team (2 agents), 7 radii × 3 seeds × 1 stage, in ${(ms / 1000).toFixed(1)} s`);
    await expectAsIfNothingHappened(p, link);
  }, 300_000);
});
