/**
 * The page on a tablet in portrait and with many actions, in Chromium: at 768×1024 the gallery (with
 * the preset's question) and the settings are drawers opened from the top of the page, hidden
 * (and out of the Tab order) until then; the 6-action game view of the delta-sweep preset keeps
 * each agent's bars on one line, inside the view, at 768×1024 and at 1280×720 in both modes; after
 * Sweep δ the violation chart's legend sits above its plot, clear of the y axis's labels.
 */
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { encodeShare, makeShareState } from '../../src/app/share';
import { presetConfig } from '../../src/sat/presets';
import { inViewport, playgroundForFile, settled } from './harness';

const pg = playgroundForFile();

async function open(p: Page, preset?: string, projector = false): Promise<void> {
  const hash = preset ? await encodeShare(makeShareState(presetConfig(preset), { preset, projector })) : '';
  await p.goto(pg().url + hash, { waitUntil: 'load' });
  await settled(p);
}

/** Every agent's bars on one line (one top), the row inside the game view; returns the rows checked. */
async function barsOnOneLine(p: Page): Promise<number> {
  const rows = await p.locator('[data-testid^="game-bars-"]').evaluateAll((els) => {
    const view = document.querySelector('[data-testid="game-view"]')!.getBoundingClientRect();
    return els.map((row) => {
      const tops = [...row.querySelectorAll('.game-bar')].map((b) => Math.round(b.getBoundingClientRect().top));
      const chip = row.querySelector('.agent-chip')!.getBoundingClientRect();
      const r = row.getBoundingClientRect();
      return { id: row.getAttribute('data-testid'), bars: tops.length, lines: new Set(tops).size, chipBottom: chip.bottom, barsTop: Math.min(...tops), right: r.right, viewRight: view.right };
    });
  });
  for (const r of rows) {
    expect(r.bars, r.id!).toBe(6);
    expect(r.lines, `${r.id}: its bars on ${r.lines} lines`).toBe(1);
    expect(r.right, `${r.id} ends at ${r.right}, the game view at ${r.viewRight}`).toBeLessThanOrEqual(r.viewRight + 0.5);
  }
  return rows.length;
}

describe('a tablet in portrait, and many actions (browser)', () => {
  it('768×1024: the gallery and the settings are drawers opened from the top', async () => {
    const p = await pg().freshPage({ width: 768, height: 1024 });
    await open(p);
    const drawer = p.getByTestId('controls-drawer');
    expect(await drawer.getAttribute('data-open')).toBe('0');
    expect(await p.getByTestId('preset-title').isVisible()).toBe(false);
    await inViewport(p, 'open-gallery', 200);
    await inViewport(p, 'open-settings', 200);
    await p.getByTestId('open-gallery').click();
    await p.getByTestId('preset-title').waitFor({ state: 'visible' });
    await p.waitForTimeout(250); // the drawer slides in
    await inViewport(p, 'preset-title', 1024);
    await inViewport(p, 'worksheet-question', 1024);
    await p.keyboard.press('Escape');
    await p.getByTestId('preset-title').waitFor({ state: 'hidden' });
    await p.getByTestId('open-settings').click();
    await p.getByTestId('apply').waitFor({ state: 'visible' });
    await p.waitForTimeout(250);
    await inViewport(p, 'apply', 1024);
    await inViewport(p, 'cfg-seed', 1024);
    await p.getByTestId('close-drawer').click();
    await p.getByTestId('apply').waitFor({ state: 'hidden' });
    // The run comes first: the step controls and the J chart on the first screen.
    await inViewport(p, 'step-agent', 1024);
    expect(pg().errors).toEqual([]);
    await p.context().close();
  });

  it('the 6-action game view keeps each agent on one line, at 768×1024 and at 1280×720 in both modes', async () => {
    for (const [w, h, projector] of [[768, 1024, false], [1280, 720, false], [1280, 720, true]] as const) {
      const p = await pg().freshPage({ width: w, height: h });
      await open(p, 'delta-sweep', projector);
      await p.getByTestId('game-bars-3').waitFor();
      const n = await barsOnOneLine(p);
      console.log(`game view ${w}×${h}${projector ? ' projector' : ''}: ${n} agents' 6 bars each on one line`);
      await p.context().close();
    }
  }, 120_000);

  it('after Sweep δ the violation chart\'s legend is clear of its y axis labels', async () => {
    const p = await pg().freshPage({ width: 1280, height: 800 });
    await open(p, 'delta-sweep');
    await p.getByTestId('sweep-delta').click();
    await p.getByTestId('progress').waitFor({ timeout: 60_000 });
    await p.getByTestId('progress').waitFor({ state: 'detached', timeout: 240_000 });
    await settled(p);
    const chart = p.getByTestId('chart-violation');
    await chart.scrollIntoViewIfNeeded();
    const legend = await chart.locator('.recharts-legend-wrapper .recharts-default-legend').boundingBox();
    expect(legend).not.toBeNull();
    const labels = await chart.locator('.recharts-yAxis-tick-labels text').evaluateAll((ts) => ts.map((t) => ({ text: t.textContent, top: t.getBoundingClientRect().top })));
    expect(labels.length).toBeGreaterThan(1);
    const items = await chart.locator('.recharts-legend-item').count();
    for (const l of labels) expect(l.top, `y label "${l.text}" at ${l.top} under the legend ending at ${legend!.y + legend!.height}`).toBeGreaterThanOrEqual(legend!.y + legend!.height - 0.5);
    console.log(`Sweep δ legend: ${items} entries, ${legend!.height.toFixed(0)} px tall, above all ${labels.length} y labels`);
    expect(pg().errors).toEqual([]);
    await p.context().close();
  }, 300_000);
});
