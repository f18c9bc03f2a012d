/**
 * One visual language for the verdicts beyond the J chart and Compare orders (src/sat/verdicts.ts,
 * src/app/charts/VerdictMark.tsx), rendered in Node: a claim's verdict (the Claims view, Sweep δ)
 * is drawn with the certificate mark of its like and keyed by the same legend; Check bound's "±"
 * is said with what it is; the swap card's held / not held carry their marks.
 *
 * Not here: the ✓'s words and the held-out noise (tests/certificate-verdicts.test.ts), reading the
 * marks back in a browser (tests/e2e/verdict-marks.test.ts, tests/e2e/verdicts.test.ts).
 */
import { createElement as h } from 'react';
import { renderToString } from 'react-dom/server';
import { describe, expect, it } from 'vitest';
import { ViolationChart } from '../src/app/charts/ViolationChart';
import { ClaimsView } from '../src/app/components/ClaimsView';
import { SwapCard } from '../src/app/components/SwapCard';
import type { StageRecord, SwapSummary } from '../src/sat/stage';
import committed from '../src/app/claims/data.json';
import { heldVerdict, HELD_Z } from '../src/sat/heldCheck';
import { presetConfig } from '../src/sat/presets';
import { type ClaimsReport, VERDICTS as CLAIM_WORDS, verdictOf } from '../src/studies/claims';
import { deltaSweep } from '../src/studies/deltaSweep';
import { CHECK_RULE, checkPlusMinus, CLAIM_VERDICT_ORDER, CLAIM_VERDICTS, undecidedOrUnchecked, VERDICTS, type ClaimVerdict } from '../src/sat/verdicts';

/** Each chip's verdict word and the mark drawn inside it, in page order. */
function chips(html: string): { verdict: string; mark: string }[] {
  return [...html.matchAll(/data-claim-verdict="([^"]+)"[^>]*>.*?data-verdict="([^"]+)"/g)].map((m) => ({ verdict: m[1]!, mark: m[2]! }));
}

/** The legend's keys: each key's name and the mark drawn in it. */
function keys(html: string): { key: string; mark: string }[] {
  return [...html.matchAll(/data-verdict-key="([^"]+)".*?data-verdict="([^"]+)"/g)].map((m) => ({ key: m[1]!, mark: m[2]! }));
}

describe('a claim verdict borrows the certificate mark of its like', () => {
  it('holds as held, does not hold as not held, not established as undecided; never the not-checked dot', () => {
    expect([...CLAIM_VERDICT_ORDER]).toEqual([...CLAIM_WORDS]);
    expect(CLAIM_VERDICT_ORDER.map((v) => CLAIM_VERDICTS[v].mark)).toEqual(['held', 'not held', 'undecided']);
    const drawn = CLAIM_VERDICT_ORDER.map((v) => JSON.stringify(VERDICTS[CLAIM_VERDICTS[v].mark].mark));
    expect(new Set(drawn).size).toBe(3);
  });

  it('the Claims view: every chip carries its verdict\u2019s mark, and the key lists the three', () => {
    const report = committed as unknown as ClaimsReport;
    const html = renderToString(h(ClaimsView, { onClose: () => {} }));
    const got = chips(html);
    // The summary's chip, the card's chip and one per test, for every claim.
    const want = report.claims.flatMap((c) => [c.verdict, c.verdict, ...c.tests.map((t) => t.verdict)]);
    expect(got.map((c) => c.verdict).sort()).toEqual([...want].sort());
    for (const c of got) expect(c.mark, c.verdict).toBe(CLAIM_VERDICTS[c.verdict as ClaimVerdict].mark);
    const key = html.slice(html.indexOf('data-testid="claims-key"'));
    expect(keys(key).slice(0, 3)).toEqual(CLAIM_VERDICT_ORDER.map((v) => ({ key: v, mark: CLAIM_VERDICTS[v].mark })));
    expect(html).not.toMatch(/claim-verdict (holds|fails|open)/);
  });
});

describe('Sweep δ: the sweep\u2019s verdict on √δ, by claim 5\u2019s rule, with the shared mark and key', () => {
  it('three intervals of p give the three verdicts, each drawn with its mark', async () => {
    const sweep = (await deltaSweep({ base: presetConfig('delta-sweep'), deltas: [0.001, 0.005, 0.02, 0.1], seeds: [1, 2, 3], stages: 1 }))!;
    expect(sweep.fit, 'the delta-sweep preset violates at these radii').not.toBeNull();
    const cases: [number, number][] = [[0.3, 0.7], [0.6, 0.9], [-0.1, 0.7]];
    const seen = new Set<string>();
    for (const [lo, hi] of cases) {
      const r = { ...sweep, ci: { lo, hi, level: 0.95, resamples: 200, used: 3 } };
      const want = verdictOf({ lo, hi }, 'contains', 0.5, 0);
      seen.add(want);
      const html = renderToString(h(ViolationChart, { points: [], sweep: r }));
      const verdictAt = html.indexOf('data-testid="sweep-verdict"');
      expect(verdictAt, `[${lo}, ${hi}]`).toBeGreaterThan(0);
      expect(chips(html.slice(verdictAt))[0]).toEqual({ verdict: want, mark: CLAIM_VERDICTS[want].mark });
      expect(keys(html.slice(html.indexOf('data-testid="verdict-legend"'))).map((k) => k.key)).toEqual([...CLAIM_VERDICT_ORDER]);
    }
    expect([...seen].sort()).toEqual([...CLAIM_VERDICT_ORDER].sort());
    // No interval (one seed): no verdict and no key.
    const none = renderToString(h(ViolationChart, { points: [], sweep: { ...sweep, ci: null } }));
    expect(none).not.toContain('sweep-verdict');
    expect(none).not.toContain('verdict-legend');
  }, 60_000);
});

describe('Check bound: what its ± is and how it decides', () => {
  it('one standard error of the paired estimate, not the 95 % half-width; the rule names the same z as heldCheck', () => {
    expect(checkPlusMinus(2048)).toBe('± one standard error of the paired estimate, about a 68 % interval; 2,048 pairs');
    // The rule's words agree with heldVerdict on either side of each edge.
    const se = 0.01;
    const at = (gap: number) => heldVerdict(0.1 + gap, 0.1, se, 2048).state;
    expect(at(-HELD_Z * se)).toBe('held');
    expect(at(-HELD_Z * se + 1e-6)).toBe('undecided');
    expect(at(HELD_Z * se + 1e-6)).toBe('not held');
    expect(CHECK_RULE.held).toBe(`the bound is at least ${HELD_Z} standard errors below the estimate`);
    expect(CHECK_RULE['not held']).toBe(`the bound is more than ${HELD_Z} standard errors above the estimate`);
    expect(CHECK_RULE.undecided).toMatch(new RegExp(`within ${HELD_Z} standard errors`));
  });
});

describe('the swap card: its floor held or not, with the mark', () => {
  const swap: SwapSummary = {
    agent: 1, incoming: 'best response', stage0: true, delta0: 0.1, klQuantiles: { q50: 0.01, q90: 0.05, q99: 0.09 },
    outsideBefore: 0.4, outsideAfter: 0, lambdaHist: [3, 2, 1, 0, 0, 0], jBefore: 0.5, jAfter: 0.45, certRadius: 0.1, certFloor: -0.2,
  };
  const card = (s: SwapSummary, maxNew: number | null) => renderToString(h(SwapCard, { records: [{ stage: 3, swap: s } as unknown as StageRecord], maxNew }));
  const heldPart = (html: string) => html.slice(html.indexOf('data-testid="swap-held"'));
  const words = (html: string) => heldPart(html).replace(/^[^>]*>/, '').replace(/<[^>]*>|<!-- -->/g, '');

  it('a fall within the floor is held, one past it not held, each drawn with its verdict\u2019s mark', () => {
    for (const [jAfter, want] of [[0.45, 'held'], [0.25, 'not held']] as const) {
      const html = heldPart(card({ ...swap, jAfter }, null));
      expect(html).toMatch(new RegExp(`^data-testid="swap-held">.*?data-verdict="${want}"`));
      expect(words(card({ ...swap, jAfter }, null))).toMatch(new RegExp(`^ ${want === 'held' ? 'Held' : 'Not held'}\\.`));
    }
    // A language team's J is held-out: the card says what it judged the floor against.
    expect(words(card(swap, 3))).toMatch(/^ Held on held-out J \(an estimate, with its noise\)\./);
  });
});

describe('counts leave not checked and undecided apart', () => {
  it('"2 not checked, 1 undecided", either alone, nothing for none', () => {
    expect(undecidedOrUnchecked(1, 2)).toBe('2 not checked, 1 undecided');
    expect(undecidedOrUnchecked(0, 3)).toBe('3 not checked');
    expect(undecidedOrUnchecked(4, 0)).toBe('4 undecided');
    expect(undecidedOrUnchecked(0, 0)).toBe('');
  });
});
