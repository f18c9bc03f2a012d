/**
 * The verdicts' one visual language (src/sat/verdicts.ts): what a ✓ says, the per-stage note, the
 * noise of a held-out point, and Compare orders' rows and legend keeping "not checked" apart from
 * "not held" (a language stage checked by nobody used to count as not held).
 *
 * Not here: drawing in a browser (tests/e2e/orders.test.ts reads the marks back).
 */
import { describe, expect, it } from 'vitest';
import { HELD_CODE, HELD_OF_CODE, orderRows, orderSummary } from '../src/app/charts/series';
import { parseConfig } from '../src/sat/config';
import type { StageRecord } from '../src/sat/stage';
import { certifiedSentence, perStageNote, VERDICT_ORDER, VERDICTS, withNoise } from '../src/sat/verdicts';
import { tinyStages, tinyTeam } from './helpers/tinyTeam';

describe('verdict words', () => {
  it('a ✓ says what it proves, at which level, and the 95 % is per stage', () => {
    expect(certifiedSentence(0.0012, 0.05, false)).toBe('J on the training problems rose by at least 0.001 (95 %)');
    expect(certifiedSentence(0.00042, 0.1, true)).toBe('J rose by at least 0.00042 (90 %)');
    expect(perStageNote(30, 0.05)).toBe('the 95 % is per stage: over 30 stages with no real change about 1.5 would show a ✓');
    expect(withNoise(-0.004, 0.03)).toBe('−0.004 ± 0.030');
    expect(withNoise(0.25, 0)).toBe('0.250');
  });

  it('every verdict has a glyph and a legend; not checked is drawn unlike not held', () => {
    for (const v of VERDICT_ORDER) expect(VERDICTS[v].glyph.length).toBeGreaterThan(0);
    const a = VERDICTS.unchecked.mark!;
    const b = VERDICTS['not held'].mark!;
    expect([a.fill, a.stroke, a.r]).not.toEqual([b.fill, b.stroke, b.r]);
    expect(a.stroke).not.toBe(b.stroke);
  });
});

describe('Compare orders on a language team', () => {
  it('an unchecked stage is coded and counted as not checked, not as not held', async () => {
    const cfg = parseConfig({ task: 'arithmetic', agents: 2, maxNew: 2, batch: 3, group: 4, epochs: 1, geoIters: 0, probeEpisodes: 12, seed: 3, certEpisodes: 16 });
    const { env, team } = tinyTeam({ agents: 2, maxNew: 2, temperature: 1, topK: 0, seed: 9 });
    const [exact] = await tinyStages(env, team, cfg, 1);
    // As a language stage with held-out J and no check records it.
    const rec: StageRecord = { ...exact!, evaluation: { ...exact!.evaluation, exact: false, ci: 0.03 }, held: { state: 'unchecked', estimate: Number.NaN, se: Number.NaN, pairs: 0 } };
    const rows = orderRows([{ label: 'σ = fixed', stages: [rec] }]);
    expect(rows[1]!.h0).toBe(HELD_CODE.unchecked);
    expect(HELD_OF_CODE[rows[1]!.h0!]).toBe('unchecked');
    expect(orderSummary([{ label: 'σ = fixed', stages: [rec] }])[0]).toMatchObject({ held: 0, checked: 0, stages: 1 });
    const held: StageRecord = { ...rec, held: { state: 'held', estimate: 0.01, se: 0.001, pairs: 2048 } };
    expect(orderRows([{ label: 'x', stages: [held] }])[1]!.h0).toBe(HELD_CODE.held);
    expect(orderSummary([{ label: 'x', stages: [held, rec] }])[0]).toMatchObject({ held: 1, checked: 1, stages: 2 });
  });
});
