/**
 * The verdicts' words and marks on a language team, in a real browser (./harness.ts): arith-team
 * with two agents at the preset's own budgets, seed 1 — a stage 1 whose certificate clears 0 while
 * its held-out J falls by less than its noise (`npm run sat -- --preset arith-team --set agents=2
 * --set stages=1 --set geoIters=0 --set seed=1` shows the same row), the case a class misreads.
 * The J chart says its line is held-out J with its 95 % interval, the stage's tooltip gives the
 * held-out ΔJ with that noise and a ✓ that says what it proves; the stage's mark is "not checked"
 * (a small grey dot), never "not held"; the key under the plot names every mark. Compare orders
 * draws its language stages with the same "not checked" mark and key, and so does the stage table.
 *
 * Not here: the words themselves in Node (tests/certificate-verdicts.test.ts), Check bound
 * (tests/e2e/firstscreen.test.ts), the order chart's numbers (tests/e2e/orders.test.ts).
 */
import { describe, expect, it } from 'vitest';
import { encodeShare, makeShareState } from '../../src/app/share';
import { fixed3, signed3 } from '../../src/app/format';
import { presetConfig } from '../../src/sat/presets';
import { playgroundForFile, points, settled } from './harness';

const pg = playgroundForFile();
const cfg = presetConfig('arith-team', { agents: 2, stages: 2, geoIters: 0, seed: 1 });

/** Text as read aloud: a mark and its word in a flex row come back on two lines. */
const flat = (t: string) => t.replace(/\s+/g, ' ').trim();

describe('the verdicts on a language team', () => {
  it('a ✓ beside a held-out fall: the words, the noise and the marks on the J chart and Compare orders', async () => {
    const p = await pg().freshPage();
    await p.goto(pg().url + (await encodeShare(makeShareState(cfg, { preset: 'arith-team' }))), { waitUntil: 'load' });
    await p.getByText(/Opened a shared experiment/).waitFor({ timeout: 120_000 });
    await settled(p);
    await p.getByTestId('step-stage').click();
    await p.waitForFunction(() => document.querySelectorAll('[data-testid="stage-row"]').length === 1, undefined, { timeout: 240_000 });
    await settled(p);
    // The stage table's numbers: J, ΔJ (held-out), the bound.
    const [j, dJ, lower] = (await p.locator('[data-testid="stage-row"] td[data-value]').evaluateAll((c) => c.slice(0, 3).map((x) => Number(x.getAttribute('data-value'))))) as [number, number, number];
    expect(lower, 'the seed was chosen for a certified stage 1').toBeGreaterThan(0);
    // The stage table: the same "not checked" mark in the row, and a key with a mark of its own for it.
    expect(await p.locator('[data-testid="stage-row"] .held [data-verdict]').getAttribute('data-verdict')).toBe('unchecked');
    const tableKeys = p.locator('.table-section .how-to-read [data-verdict-key]');
    expect(await tableKeys.evaluateAll((ks) => ks.map((k) => k.getAttribute('data-verdict-key')))).toEqual(['held', 'not held', 'unchecked', 'certified']);
    expect(await tableKeys.nth(2).locator('[data-verdict="unchecked"]').count()).toBe(1);
    expect(await tableKeys.nth(3).innerText()).toMatch(/^✓ certified: J on the training problems rose by at least the lower bound, which is above 0 \(95 %, for that stage\)\.$/);
    const jChart = p.getByTestId('chart-j');
    await jChart.scrollIntoViewIfNeeded();
    const now = await jChart.getByTestId('j-now').innerText();
    expect(now).toMatch(new RegExp(`^held-out J now ${fixed3(j)} ± (\\d\\.\\d{3})$`));
    const noise = now.match(/± (\d\.\d{3})$/)![1]!;
    expect(flat(await jChart.getByTestId('j-held-count').innerText())).toBe('held in 0 of 0 stages (1 not checked)');
    expect(Number(noise)).toBeGreaterThan(0);
    // The tooltip of stage 1 (focus shows the last stage): held-out ΔJ with the same noise, and the ✓'s sentence.
    await jChart.locator('svg.j-svg').focus();
    expect(await jChart.getByTestId('j-tip-dj').innerText()).toBe(`held-out ΔJ ${signed3(dJ).replace(/^\+/, '')} ± ${noise} (the held-out J's noise)`);
    expect(flat(await jChart.getByTestId('j-certified-sentence').innerText())).toMatch(new RegExp(`^✓ J on the training problems rose by at least ${lower >= 0.001 ? fixed3(lower) : '\\d\\.\\d+'} \\(95 %\\), for this stage\\.$`));
    await jChart.locator('svg.j-svg').blur();
    // The marks: a ✓ above a "not checked" dot; no "not held" ring.
    expect(await jChart.locator('.j-cert-marks [data-certified="true"]').count()).toBe(1);
    expect(await jChart.locator('.j-dots [data-verdict="unchecked"]').count()).toBe(1);
    expect(await jChart.locator('.j-dots [data-verdict="not held"]').count()).toBe(0);
    // The key: every mark with its word; the ✓'s says its 95 % is per stage.
    const keys = jChart.locator('[data-testid="verdict-legend"] [data-verdict-key] .verdict-word');
    expect((await keys.allInnerTexts()).map(flat)).toEqual(['held', 'not held', 'undecided', 'not checked', 'certified, 95 % per stage']);
    expect(await jChart.locator('[data-verdict-key="certified"]').innerText()).toMatch(/^✓/);
    expect(await jChart.locator('[data-verdict-key="unchecked"] [data-verdict="unchecked"]').count()).toBe(1);
    expect(await jChart.getByTestId('per-stage-note').getAttribute('title')).toMatch(/J on the training problems rose by at least the lower bound.*the 95 % is per stage: over 1 stage with no real change about 0\.1 would show a ✓/);

    // Compare orders: its language stages carry the same "not checked" mark and key.
    await p.getByTestId('compare-orders').click();
    await p.waitForFunction(() => Number(document.querySelector('[data-testid="chart-orders"]')?.getAttribute('data-points')) > 0, undefined, { timeout: 240_000 });
    await settled(p);
    const orders = p.getByTestId('chart-orders');
    expect(await points(p, 'chart-orders')).toBe(2);
    expect(await orders.locator('.recharts-surface [data-verdict="unchecked"]').count()).toBe(2);
    expect(await orders.locator('.recharts-surface [data-verdict="not held"]').count()).toBe(0);
    const orderKeys = orders.locator('[data-testid="verdict-legend"] [data-verdict-key] .verdict-word');
    expect((await orderKeys.allInnerTexts()).map(flat)).toEqual(['held', 'not held', 'undecided', 'not checked']);
    for (const k of [0, 1]) expect(await orders.getByTestId(`order-held-${k}`).innerText()).toBe('bound not checked');
    console.log(`[e2e verdicts] arith-team (2 agents) seed 1 stage 1: J ${fixed3(j)} ± ${noise}, ΔJ ${signed3(dJ)}, lower ${lower}`);
    expect(pg().errors).toEqual([]);
    await p.context().close();
  }, 600_000);
});
