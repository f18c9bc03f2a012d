/**
 * A swap stage is announced before it starts, in Chromium: a shrunk arith-pnp whose swap is due at
 * stage 2 says nothing at the start, and once stage 1 is done says that the next step starts stage 2
 * with the swap — agent 1's seat, the incoming model, Stage-0 — and its expected cost against a
 * normal stage (the ratio measured on arith-pnp, SwapCard.tsx SWAP_STAGE_COST).
 */
import { describe, expect, it } from 'vitest';
import { SWAP_STAGE_COST } from '../../src/app/components/SwapCard';
import { encodeShare, makeShareState } from '../../src/app/share';
import { presetConfig } from '../../src/sat/presets';
import { playgroundForFile, settled } from './harness';

const pg = playgroundForFile();

describe('a swap stage is announced (browser)', () => {
  it('arith-pnp, swap at stage 2: announced after stage 1, with its cost against a normal stage', async () => {
    const cfg = presetConfig('arith-pnp', { swapAt: 2, batch: 2, group: 4, evalEpisodes: 8, certEpisodes: 8, probeEpisodes: 4, geoIters: 0, epochs: 1, stages: 3 });
    const p = await pg().freshPage({ width: 1280, height: 720 });
    await p.goto(pg().url + (await encodeShare(makeShareState(cfg, { preset: 'arith-pnp' }))), { waitUntil: 'load' });
    await p.getByText(/Opened a shared experiment/).waitFor({ timeout: 120_000 });
    await settled(p);
    const note = p.getByTestId('swap-next');
    expect(await note.count()).toBe(0);
    await p.getByTestId('step-stage').click();
    await p.waitForFunction(() => document.querySelectorAll('[data-testid="stage-row"]').length === 1, undefined, { timeout: 120_000 });
    await settled(p);
    await note.waitFor();
    const text = await note.innerText();
    expect(text).toMatch(/^The next step starts stage 2 with a plug-and-play swap: agent 1's seat gets the arithmetic-M model, projected by Stage-0 into KL ≤ δ₀ = 0\.1 of the agent it replaces and distilled on the token states of a fresh 8-episode rollout, before the stage's first update\./);
    expect(text).toContain(`about ${SWAP_STAGE_COST.ratio}× a normal stage (measured on the arith-pnp preset: the distillation is most of it)`);
    const box = await note.boundingBox();
    expect(box!.y + box!.height).toBeLessThanOrEqual(720); // on the first screen
    expect(pg().errors).toEqual([]);
    await p.context().close();
  }, 240_000);
});
