/**
 * The token inspector in a real browser (docs/method.md §9b.1): a shrunk arith-team opened from a
 * share link made here, one agent step, then the inspector opens on that language step; hovering
 * a token shows its numbers, and those numbers equal the agent's own, recomputed in this test: the
 * same config and seed run in-process here (a run is fixed by its seed, and workers give the same
 * numbers as in-process agents bit for bit), the updated agent's parameters taken before and after
 * its update, and every hovered token's log π_new, log π_cur, ratio, clip decision and KL
 * recomputed from the model's forward pass (tests/helpers/inspectRef.ts). The keyboard reaches the
 * tokens (Tab, ←/→, Enter opens the next-token chart, Escape closes it), the chart's bar for the
 * sampled token shows the recomputed probabilities; once the agent has updated again, its first
 * step still inspects to the same recomputed numbers (from the parameters that step left). The
 * transcripts page through that step's whole batch, a row's link opens its episode in the
 * inspector, and the advantage filters keep only the episodes they name. A screenshot of the inspector goes to test-results/ (or
 * docs/inspector.png with UPDATE_SCREENSHOT=1, for the README).
 *
 * Not here: every token and both objectives against the recomputation (tests/inspect.test.ts).
 */
import { mkdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeShare, makeShareState } from '../../src/app/share';
import { fixed3 } from '../../src/app/format';
import { loadModel } from '../../src/model/weights';
import type { Config } from '../../src/sat/config';
import { planLlm } from '../../src/sat/experiment';
import { createLlmExperiment, lmAgent } from '../../src/sat/llmExperiment';
import { presetConfig } from '../../src/sat/presets';
import type { AgentBatch } from '../../src/sat/types';
import { updateAgent, type UpdatePlan } from '../../src/sat/update';
import { stepThrough } from '../../src/sat/experiment';
import { clippedByTheBook, logPolicyRows, referenceNumbers, type RefToken } from '../helpers/inspectRef';
import type { Page } from 'playwright-core';
import { openPlayground, type Playground, points, ROOT, settled, SETUP_TIMEOUT_MS } from './harness';

const SCREENSHOT = join(ROOT, process.env.UPDATE_SCREENSHOT === '1' ? 'docs/inspector.png' : 'test-results/inspector.png');

/** arith-team shrunk to run in seconds: two agents, tiny batches, few certification episodes. */
const cfg: Config = presetConfig('arith-team', { agents: 2, batch: 4, group: 4, evalEpisodes: 8, geoIters: 0, probeEpisodes: 4, epochs: 1, maxNew: 3, stages: 3, certEpisodes: 8, lr: 2e-3 });

const load = async (name: string) => new Uint8Array(readFileSync(join(ROOT, 'public/models', `${name}.safetensors`)));

/** The page's first agent step, run here: which agent moved, its batch, and every token's numbers. */
async function firstStepHere(): Promise<{ agent: number; batch: AgentBatch; tokens: RefToken[]; u: Float64Array; epsLow: number; epsHigh: number }> {
  const exp = await createLlmExperiment(cfg, load);
  let seen: { plan: UpdatePlan; before: Float64Array; after: Float64Array; agent: number } | null = null;
  for (const a of exp.team) {
    // The stage loop calls an agent's own `update` when it has one: here, updateAgent itself, watched.
    (a as { update?: (p: UpdatePlan) => ReturnType<typeof updateAgent> }).update = async (plan) => {
      const before = (await a.snapshot()).params;
      const r = await updateAgent(a, plan);
      seen ??= { plan, before, after: (await a.snapshot()).params, agent: a.index };
      return r;
    };
  }
  const step = await stepThrough(exp).next();
  if (step.done || !seen) throw new Error('the first agent step did not run');
  const s = seen as { plan: UpdatePlan; before: Float64Array; after: Float64Array; agent: number };
  expect(step.value.agent).toBe(s.agent);
  const init = planLlm(cfg).agents[s.agent]!;
  const twin = lmAgent(init, loadModel(await load(init.modelFile))).model;
  const batch = s.plan.batch;
  const ref = referenceNumbers(batch, logPolicyRows(twin, s.before, batch, cfg.temperature), logPolicyRows(twin, s.after, batch, cfg.temperature));
  return { agent: s.agent, batch, ...ref, epsLow: cfg.epsLow, epsHigh: cfg.epsHigh };
}

/** The inspector's 4-significant-digit form, with the page's minus sign. */
const four = (x: number) => x.toPrecision(4).replace(/-/g, '\u2212');

/** Hovers the first `count` tokens listed; each one's numbers in the readout equal the recomputation. Returns how many were clipped. */
async function hoverMatches(p: Page, ref: Awaited<ReturnType<typeof firstStepHere>>, count: number): Promise<number> {
  const tokens = p.getByTestId('inspector-token');
  const details = p.getByTestId('inspector-details');
  let clippedSeen = 0;
  for (let i = 0; i < count; i++) {
    const tok = tokens.nth(i);
    const k = Number(await tok.getAttribute('data-k'));
    await tok.hover();
    await p.waitForFunction((kk) => document.querySelector('[data-testid="inspector-details"]')?.getAttribute('data-k') === String(kk), k);
    const want = ref.tokens[k]!;
    const e = ref.batch.episodeOf[k]!;
    const attr = async (name: string) => Number(await details.getAttribute(name));
    expect(Math.abs((await attr('data-logp-new')) - want.logpNew)).toBeLessThan(1e-9);
    expect(Math.abs((await attr('data-logp-cur')) - want.logpCur)).toBeLessThan(1e-9);
    expect(Math.abs((await attr('data-ratio')) - want.ratio)).toBeLessThan(1e-9 * want.ratio);
    expect(Math.abs((await attr('data-kl')) - want.kl)).toBeLessThan(1e-9);
    // The default objective is `sequence`: the clip decision is the episode's, on r_e = exp(u_e).
    const clip = clippedByTheBook(Math.exp(ref.u[e]!), ref.batch.adv[e]!, ref.epsLow, ref.epsHigh);
    expect(await attr('data-clipped')).toBe(clip ? 1 : 0);
    if (clip) clippedSeen++;
    // And as the page writes them.
    expect(await p.getByTestId('inspector-logp-new').innerText()).toBe(four(want.logpNew));
    expect(await p.getByTestId('inspector-logp-cur').innerText()).toBe(four(want.logpCur));
    expect(await p.getByTestId('inspector-ratio').innerText()).toBe(four(want.ratio));
    expect(await p.getByTestId('inspector-clipped').innerText()).toBe(clip ? 'clipped' : 'not clipped');
  }
  return clippedSeen;
}

let pg: Playground;
let url = '';

beforeAll(async () => {
  pg = await openPlayground();
  url = pg.url;
}, SETUP_TIMEOUT_MS);

afterAll(async () => {
  await pg?.close();
});

describe('token inspector (browser)', () => {
  it('opens on a language step; hover shows log π_new, log π_cur, ratio, clip and KL equal to the agent\'s own recomputed here; keyboard reachable', async () => {
    const t0 = Date.now();
    const here = firstStepHere();
    const p = await pg.freshPage();
    await p.goto(url + (await encodeShare(makeShareState(cfg, { preset: 'arith-team' }))), { waitUntil: 'load' });
    await p.getByText(/Opened a shared experiment/).waitFor({ timeout: 120_000 });
    await settled(p);
    // Each agent's worker warms up on a scratch copy of its model (team.ts) before the step: the
    // numbers below are the agent's own all the same.
    await p.waitForFunction((n) => (globalThis as unknown as { satPlayground: { warmed(): number } }).satPlayground.warmed() >= n, cfg.agents, { timeout: 120_000, polling: 200 });
    await p.getByTestId('step-agent').click();
    await p.waitForFunction(() => Number(document.querySelector('[data-testid="timeline"]')?.getAttribute('data-points')) === 1, undefined, { timeout: 120_000 });
    await settled(p);
    const ref = await here;
    const toggle = p.getByTestId('inspect-tokens');
    expect(await toggle.innerText()).toBe(`Inspect agent ${ref.agent}'s tokens (stage 1)`);
    await toggle.click();
    const tokens = p.getByTestId('inspector-token');
    await tokens.first().waitFor({ timeout: 60_000 });
    const n = await tokens.count();
    expect(n).toBeGreaterThan(0);
    expect(await p.getByTestId('inspector-summary').innerText()).toContain(`${ref.batch.obs.length} tokens in ${ref.batch.nEpisodes} episodes`);

    // Hover: the readout shows the hovered token's numbers, equal to the recomputation.
    const hovered = Math.min(n, 8);
    const clippedSeen = await hoverMatches(p, ref, hovered);
    console.log(`inspector: ${n} tokens on the page, ${hovered} hovered and matched the recomputation (${clippedSeen} clipped)`);

    // Colour: by default w·Ã·log r (how the update moved the token); chosen, w·Ã·r (advantage × ratio).
    const colourOf = async (i: number) => Number(await tokens.nth(i).getAttribute('data-colour'));
    for (const [mode, value] of [
      ['moved', (k: number, e: number) => ref.batch.weight[e]! * ref.batch.adv[e]! * Math.log(ref.tokens[k]!.ratio)],
      ['term', (k: number, e: number) => ref.batch.weight[e]! * ref.batch.adv[e]! * ref.tokens[k]!.ratio],
    ] as const) {
      await p.getByTestId('inspector-colour').selectOption(mode);
      for (let i = 0; i < hovered; i++) {
        const k = Number(await tokens.nth(i).getAttribute('data-k'));
        const want = value(k, ref.batch.episodeOf[k]!);
        expect(Math.abs((await colourOf(i)) - want), `${mode} colour of token ${k}`).toBeLessThan(1e-9 * Math.max(1, Math.abs(want)));
      }
    }
    await p.getByTestId('inspector-colour').selectOption('moved');

    // Keyboard: Tab from the toggle reaches the colour choice, then the filters, the episode box and
    // the pager, then the tokens as one stop; → moves; Enter opens the chart; Escape closes it.
    await p.mouse.move(0, 0);
    await toggle.focus();
    await p.keyboard.press('Tab');
    await p.waitForFunction(() => document.activeElement?.getAttribute('data-testid') === 'inspector-colour');
    const stops: string[] = [];
    for (let i = 0; i < 8 && stops[stops.length - 1] !== 'inspector-token'; i++) {
      await p.keyboard.press('Tab');
      stops.push(await p.evaluate(() => document.activeElement?.getAttribute('data-testid') ?? ''));
    }
    expect(stops).toEqual(['inspector-filter-adv', 'inspector-filter-reward', 'inspector-jump', 'inspector-jump-go', 'inspector-next', 'inspector-token']);
    const k0 = await tokens.nth(0).getAttribute('data-k');
    await p.waitForFunction((kk) => document.querySelector('[data-testid="inspector-details"]')?.getAttribute('data-k') === kk, k0);
    const second = n > 1 ? 1 : 0;
    await p.keyboard.press('ArrowRight');
    const k1 = Number(await tokens.nth(second).getAttribute('data-k'));
    await p.waitForFunction((kk) => document.activeElement?.getAttribute('data-k') === String(kk), k1);
    await p.keyboard.press('Enter');
    const dist = p.getByTestId('inspector-dist');
    await dist.waitFor();
    const bars = p.getByTestId('inspector-bar');
    expect(await bars.count()).toBe(9); // the 8 likeliest tokens under either policy, and the rest
    const a = ref.batch.actions[k1]!;
    const want = ref.tokens[k1]!;
    const mine = p.locator(`[data-testid="inspector-bar"][data-token="${a}"]`);
    expect(await mine.innerText()).toContain(`${fixed3(want.pCur[a]!)} → ${fixed3(want.pNew[a]!)}`);
    expect(await mine.innerText()).toContain('▸');
    mkdirSync(dirname(SCREENSHOT), { recursive: true });
    await p.getByTestId('inspector').screenshot({ path: SCREENSHOT });
    await p.keyboard.press('Escape');
    await dist.waitFor({ state: 'detached' });

    // An older step: once agent `ref.agent` has updated again (stage 2), its stage-1 step says so.
    await p.getByTestId('step-stage').click();
    await p.waitForFunction(() => document.querySelectorAll('[data-testid="stage-row"]').length === 1, undefined, { timeout: 120_000 });
    await settled(p);
    await p.getByTestId('step-agent').click();
    await p.waitForFunction(() => Number(document.querySelector('[data-testid="timeline"]')?.getAttribute('data-points')) === 3, undefined, { timeout: 120_000 });
    await settled(p);
    expect(await points(p, 'timeline')).toBe(3);
    // The stage-1 step again, after its agent has moved: recomputed from the parameters it left,
    // the same numbers as when it was the latest.
    await p.locator(`[data-testid="timeline-cell"][data-stage="1"][data-agent="${ref.agent}"]`).click();
    await p.locator(`[data-testid="inspector-body"][data-step="1.${ref.agent}"] [data-testid="inspector-token"]`).first().waitFor({ timeout: 60_000 });
    expect(await p.getByTestId('inspector-summary').innerText()).toContain(`${ref.batch.obs.length} tokens in ${ref.batch.nEpisodes} episodes`);
    await hoverMatches(p, ref, hovered);

    // The transcripts of that step: the whole batch it trained on, a page at a time.
    const N = cfg.batch * cfg.group;
    expect(await p.getByTestId('transcripts-batch').innerText()).toMatch(new RegExp(`the step trained on ${N} episodes`));
    const rows = p.getByTestId('transcript-row');
    expect(await rows.count()).toBe(12);
    await p.getByTestId('transcripts-next').click();
    expect(await rows.count()).toBe(N - 12);
    // A row's "tokens" opens its episode in the inspector: the same prompt, marked.
    const row = rows.nth(1);
    const e = Number(await row.getAttribute('data-e'));
    expect(e).toBe(13);
    const prompt = await row.locator('td.prompt code').first().innerText();
    await row.getByTestId('transcript-inspect').click();
    const marked = p.locator('[data-testid="inspector-episode"][data-target="1"]');
    await marked.waitFor();
    expect(Number(await marked.getAttribute('data-e'))).toBe(e);
    expect(await marked.innerText()).toContain(prompt);
    expect(await p.getByTestId('inspector-jump').inputValue()).toBe(String(e + 1));
    // The advantage filter keeps the episodes with Ã > 0 only; the jump box finds episode 1.
    await p.getByTestId('inspector-filter-adv').selectOption('positive');
    const listed = p.getByTestId('inspector-episode');
    const advs = await listed.evaluateAll((els) => els.map((x) => Number(x.getAttribute('data-adv'))));
    const positive = Array.from(ref.batch.adv).filter((a) => a > 0).length;
    expect(await p.getByTestId('inspector-listed').innerText()).toMatch(new RegExp(`^${positive} of \\d+ episodes listed`));
    expect(advs.length).toBeGreaterThan(0);
    for (const a of advs) expect(a).toBeGreaterThan(0);
    await p.getByTestId('transcripts-prev').click();
    await p.getByTestId('transcripts-adv').selectOption('positive');
    for (const r of await rows.all()) expect(Number(await r.getAttribute('data-advantage'))).toBeGreaterThan(0);
    expect(pg.errors).toEqual([]);
    await p.context().close();
    console.log(`inspector page test: ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  }, 240_000);
});
