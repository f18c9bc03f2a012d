/**
 * The verdicts' shared marks beyond the J chart and Compare orders, read back in a real browser
 * (./harness.ts): the Claims view draws each claim's and each test's verdict with the certificate
 * mark of its like (holds as held, does not hold as not held, not established as undecided) and
 * keys them with the same legend; Sweep δ states its verdict on √δ by claim 5's rule with the same
 * mark and key; and on the page as drawn, "not checked" never looks like "not held" (nor like
 * "undecided") in the J chart's key.
 *
 * Not here: a language team's ✓ wording, held-out noise and marks on the J chart and Compare orders
 * (./verdicts.test.ts), Check bound's ± (./firstscreen.test.ts), the words in Node
 * (tests/verdicts-marks.test.ts).
 */
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Locator } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { CLAIM_VERDICT_ORDER, CLAIM_VERDICTS, type ClaimVerdict } from '../../src/sat/verdicts';
import { type ClaimsReport, verdictOf } from '../../src/studies/claims';
import { playgroundForFile, ROOT, settled } from './harness';

const pg = playgroundForFile();
const committed = JSON.parse(readFileSync(join(ROOT, 'src/app/claims/data.json'), 'utf8')) as ClaimsReport;
const flat = (t: string) => t.replace(/\s+/g, ' ').trim();

/** The drawn look of a mark's circle: what a reader sees (radius, fill, outline, dash). */
async function look(mark: Locator): Promise<string> {
  return mark.evaluate((c) => ['r', 'fill', 'stroke', 'stroke-width', 'stroke-dasharray'].map((a) => c.getAttribute(a) ?? '').join(' '));
}

/** Every chip under `root`: its verdict and the mark drawn in it. */
async function chips(root: Locator): Promise<{ verdict: string; mark: string | null }[]> {
  return root.locator('[data-claim-verdict]').evaluateAll((cs) => cs.map((c) => ({ verdict: c.getAttribute('data-claim-verdict')!, mark: c.querySelector('[data-verdict]')?.getAttribute('data-verdict') ?? null })));
}

describe('the shared verdict marks', () => {
  it('the Claims view: every verdict drawn with its like\u2019s mark, and the key of the three', async () => {
    const p = await pg().freshPage();
    await p.goto(pg().url, { waitUntil: 'load' });
    await settled(p);
    // The J chart's key, on the page as drawn: not checked is its own mark, unlike not held and undecided.
    const jKey = p.getByTestId('chart-j').locator('[data-testid="verdict-legend"]');
    await p.getByTestId('step-stage').click();
    await p.waitForFunction(() => document.querySelectorAll('[data-testid="stage-row"]').length >= 1, undefined, { timeout: 120_000 });
    await settled(p);
    const keyLook = async (v: string) => look(jKey.locator(`[data-verdict-key="${v}"] [data-verdict="${v}"]`));
    const unchecked = await keyLook('unchecked');
    expect(unchecked).not.toBe(await keyLook('not held'));
    expect(unchecked).not.toBe(await keyLook('undecided'));
    expect(unchecked).not.toMatch(/#c62828/i);
    const heldLook = await keyLook('held');

    await p.getByTestId('open-claims').click();
    const view = p.getByTestId('claims-view');
    await view.waitFor();
    const key = p.getByTestId('claims-key');
    const words = (await key.locator('[data-verdict-key] .verdict-word').allInnerTexts()).map(flat);
    expect(words).toEqual([...CLAIM_VERDICT_ORDER]);
    for (const v of CLAIM_VERDICT_ORDER) {
      const k = key.locator(`[data-verdict-key="${v}"]`);
      expect(await k.locator('[data-verdict]').getAttribute('data-verdict'), v).toBe(CLAIM_VERDICTS[v].mark);
      expect(await k.getAttribute('title'), v).toBe(CLAIM_VERDICTS[v].legend);
    }
    // Each claim's chip (the summary's and the card's) and each test's carry the mark of their verdict.
    const drawn = await chips(view);
    const want = committed.claims.flatMap((c) => [c.verdict, c.verdict, ...c.tests.map((t) => t.verdict)]);
    expect(drawn.map((c) => c.verdict).sort()).toEqual([...want].sort());
    for (const c of drawn) expect(c.mark, c.verdict).toBe(CLAIM_VERDICTS[c.verdict as ClaimVerdict].mark);
    for (const c of committed.claims) expect(await p.getByTestId(`claim-${c.id}-verdict`).innerText()).toBe(c.verdict);
    mkdirSync(join(ROOT, 'test-results'), { recursive: true });
    await view.locator('.claims-head').screenshot({ path: join(ROOT, 'test-results/claims-key.png') });
    await p.getByTestId('claim-3').screenshot({ path: join(ROOT, 'test-results/claim-3.png') });
    // The mark of "holds" is drawn as the J chart's "held" (its radius scales with the glyph).
    const holds = view.locator('[data-claim-verdict="holds"] [data-verdict="held"]');
    expect(await holds.count(), 'the committed claims include one that holds').toBeGreaterThan(0);
    expect((await look(holds.first())).split(' ').slice(1)).toEqual(heldLook.split(' ').slice(1));
    expect(pg().errors).toEqual([]);
    await p.context().close();
  }, 300_000);

  it('Sweep δ: its verdict on √δ by claim 5\u2019s rule, with the shared mark and key', async () => {
    const p = await pg().freshPage();
    await p.goto(pg().url, { waitUntil: 'load' });
    await settled(p);
    const chart = p.getByTestId('chart-violation');
    await p.getByTestId('sweep-delta').click();
    await p.getByTestId('sweep-verdict').waitFor({ timeout: 240_000 });
    await settled(p);
    const fit = await chart.getByTestId('violation-fit').innerText();
    const m = fit.match(/p 95 % CI \[(\S+), (\S+)\]/);
    expect(m, fit).not.toBeNull();
    const num = (s: string) => Number(s.replace('\u2212', '-'));
    const want = verdictOf({ lo: num(m![1]!), hi: num(m![2]!) }, 'contains', 0.5, 0);
    const [chip] = await chips(chart.getByTestId('sweep-verdict'));
    expect(chip).toEqual({ verdict: want, mark: CLAIM_VERDICTS[want].mark });
    expect(flat(await chart.getByTestId('sweep-verdict').innerText())).toBe(`grows like √δ (p = ½)? ${want}`);
    const words = (await chart.locator('[data-testid="verdict-legend"] [data-verdict-key] .verdict-word').allInnerTexts()).map(flat);
    expect(words).toEqual([...CLAIM_VERDICT_ORDER]);
    console.log(`[e2e verdict-marks] Sweep δ: ${fit} → ${want}`);
    mkdirSync(join(ROOT, 'test-results'), { recursive: true });
    await chart.screenshot({ path: join(ROOT, 'test-results/sweep-verdict.png') });
    expect(pg().errors).toEqual([]);
    await p.context().close();
  }, 300_000);
});
