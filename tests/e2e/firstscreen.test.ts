/**
 * Browser test of the first five minutes (Debian's Chromium via ./harness.ts): what a teacher
 * projects and a newcomer meets.
 *
 * - The first screen: at 1280×720 and 1920×1080 the step controls, the timeline, the J chart and
 *   the game view are in the viewport after a stage; no horizontal scroll at 1024×768 or 768×1024.
 * - Usable at once on a table game: Step agent is enabled with no agent worker started (the time
 *   it took is printed, not asserted: timings go to docs/performance.md).
 * - The game view moves as you step; Overlay simultaneous draws the same seed's other run.
 * - Numbers true: a stage in which every agent was rejected (router, stage 1) draws ΔJ as 0, says
 *   why nothing moved, and the J axis never repeats a label; the backend line with and without
 *   cross-origin isolation (the headers stripped in the browser); the address bar after Copy link
 *   and after the next step;
 *   scheme = simultaneous stepped and shown as one joint step.
 * - The stage table of a 4-agent team fits the content column at 1024×768.
 * - A lesson layout: `<panel>_hide` link flags take panels away.
 * - The main chunk (the built index-*.js every visit loads first) is at most 500 kB: the charts,
 *   an imported run's view, KaTeX and the Claims view load as chunks of their own.
 * - axe-core: no serious or critical violation on the opening page, with a formula card open, and
 *   on a language preset with the token inspector open.
 * - Check bound on a language stage: "not checked" until asked, then the verdict of a CRN estimate.
 *   The stage's waterfall: each agent's share as a bar in its colour, keyed "diagnostics, not the
 *   certificate" beside the team-level bound; the J chart's ✓ and the timeline's title agree with
 *   it (certified or not, then held / not held / undecided with the estimate); its formula card is
 *   the team-level one with the stage's c and N. A screenshot of the
 *   waterfall goes to test-results/waterfall-language.png.
 *
 * Not here: the playground's other behaviour (playground.test.ts) or the formula cards' numbers
 * (formulas.test.ts).
 */
import { mkdirSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { term } from '../../src/app/charts/fmt';
import { decodeShare, encodeShare, makeShareState } from '../../src/app/share';
import { agentColor } from '../../src/app/theme';
import { presetConfig } from '../../src/sat/presets';
import { agentWorkers, inViewport, playgroundForFile, points, ROOT, settled, stepStages } from './harness';

const pg = playgroundForFile();

async function open(p: Page, hash = ''): Promise<void> {
  await p.goto(pg().url + hash, { waitUntil: 'load' });
  await settled(p);
}

async function link(preset: string, overrides: Record<string, unknown> = {}, opts: { hide?: string[]; step?: { stage: number } } = {}): Promise<string> {
  return encodeShare(makeShareState(presetConfig(preset, overrides), { preset, ...opts }));
}


/** Serious and critical axe-core violations, each with the elements it names (so a failure says where). */
async function axe(p: Page): Promise<{ id: string; impact: string; nodes: string[] }[]> {
  await p.addScriptTag({ path: join(ROOT, 'node_modules/axe-core/axe.min.js') });
  const r = await p.evaluate(async () => {
    const a = (globalThis as unknown as { axe: { run(ctx: unknown, o: unknown): Promise<{ violations: { id: string; impact: string; nodes: { target: string[]; failureSummary?: string }[] }[] }> } }).axe;
    const out = await a.run(document, { resultTypes: ['violations'] });
    return out.violations.map((v) => ({ id: v.id, impact: v.impact, nodes: v.nodes.map((n) => `${n.target.join(' ')}: ${n.failureSummary ?? ''}`) }));
  });
  return r.filter((v) => v.impact === 'serious' || v.impact === 'critical');
}

describe('the first five minutes', () => {
  it('the main chunk is at most 500 kB', () => {
    const assets = join(pg().distDir, 'assets');
    const main = readdirSync(assets).filter((f) => /^index-[\w-]+\.js$/.test(f));
    expect(main).toHaveLength(1);
    const kB = statSync(join(assets, main[0]!)).size / 1000;
    console.log(`main chunk ${main[0]}: ${kB.toFixed(1)} kB`);
    expect(kB).toBeLessThanOrEqual(500);
  });

  it('opens usable on the climbing game with no worker to wait for', async () => {
    const p = await pg().freshPage({ width: 1280, height: 720 });
    const t0 = Date.now();
    await p.goto(pg().url, { waitUntil: 'load' });
    await p.waitForFunction(() => !(document.querySelector('[data-testid="step-agent"]') as HTMLButtonElement | null)?.disabled);
    console.log(`time to usable (climbing, 1280×720, load included): ${Date.now() - t0} ms`);
    expect(agentWorkers(p).length).toBe(0);
    expect(await p.getByTestId('backend').innerText()).toBe('3 agents in this tab · tables in TypeScript');
    // vite preview sends COOP/COEP: isolated, so no warning.
    expect(await p.evaluate(() => crossOriginIsolated)).toBe(true);
    expect(await p.getByTestId('backend-warn').count()).toBe(0);
    await p.context().close();
  });

  for (const [width, height] of [[1280, 720], [1920, 1080]] as const) {
    it(`at ${width}×${height} the step controls, timeline, J chart and game view are on the first screen`, async () => {
      const p = await pg().freshPage({ width, height });
      await open(p);
      await stepStages(p, 2);
      await p.mouse.move(0, 0);
      await p.screenshot({ path: join(ROOT, 'test-results', `first-screen-climbing-${width}x${height}.png`) });
      for (const id of ['step-agent', 'step-stage', 'run', 'timeline', 'game-view']) await inViewport(p, id, height);
      // The J chart's plot itself, not just its title.
      const plot = await p.getByTestId('chart-j').locator('.chart-plot').boundingBox();
      expect(plot!.y + plot!.height).toBeLessThanOrEqual(height);
      expect(await points(p, 'chart-j')).toBe(2);
      // The header is one or two lines.
      const header = await p.locator('header.header').boundingBox();
      expect(header!.height).toBeLessThanOrEqual(64);
      // Settings and the team builder are folded away.
      expect(await p.getByTestId('fold-settings').evaluate((d) => (d as HTMLDetailsElement).open)).toBe(false);
      expect(await p.getByTestId('fold-team').evaluate((d) => (d as HTMLDetailsElement).open)).toBe(false);
      await p.context().close();
    });
  }

  for (const [width, height] of [[1024, 768], [768, 1024]] as const) {
    it(`at ${width}×${height} nothing scrolls sideways and the badge is whole`, async () => {
      const p = await pg().freshPage({ width, height });
      await open(p);
      await stepStages(p, 1);
      expect(await p.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(width);
      const badge = p.getByTestId('backend');
      expect(await badge.evaluate((e) => e.scrollWidth <= e.clientWidth)).toBe(true);
      await p.context().close();
    });
  }

  it('at 1024×768 the stage table of a 4-agent team shows every column without a sideways scroll', async () => {
    const p = await pg().freshPage({ width: 1024, height: 768 });
    await open(p, await link('delta-sweep'));
    await p.getByText(/Opened a shared experiment/).waitFor();
    await settled(p);
    await stepStages(p, 1);
    expect(await p.locator('[data-testid="stage-row"] td[data-backtracks]').count()).toBe(4);
    const fit = await p.locator('.table-wrap').evaluate((w) => ({ scroll: w.scrollWidth, client: w.clientWidth }));
    expect(fit.scroll, `table ${fit.scroll} px in ${fit.client} px`).toBeLessThanOrEqual(fit.client);
    await p.context().close();
  });

  it('the game view moves as you step: bars, the most likely play, the payoff table', async () => {
    const p = await pg().freshPage();
    await open(p);
    const game = p.getByTestId('game-view');
    // The game view draws once the team is built: wait for its first grid, then count.
    await game.getByTestId('payoff-table').first().waitFor();
    expect(await game.getByTestId('payoff-table').count()).toBe(3); // 3 agents: one grid per action of agent 2
    expect(await game.getByTestId('payoff-top').count()).toBe(1);
    const before = await game.getByTestId('game-bars').innerText();
    await p.getByTestId('step-agent').click();
    await p.waitForFunction(() => Number(document.querySelector('[data-testid="timeline"]')?.getAttribute('data-points')) === 1);
    await settled(p);
    expect(await game.innerText()).toMatch(/stage 1, after agent 0/);
    expect(await game.getByTestId('game-bars').innerText()).not.toBe(before);
    await p.context().close();
  });

  it('Overlay simultaneous draws the same seed with scheme = simultaneous on the J chart', async () => {
    const p = await pg().freshPage();
    await open(p, await link('coordination'));
    await stepStages(p, 2);
    await p.getByTestId('compare-simultaneous').click();
    await p.getByTestId('j-overlay').waitFor();
    await settled(p);
    expect(await p.getByTestId('j-overlay').innerText()).toMatch(/simultaneous, same seed: J −?\d+\.\d{3} at stage 20/);
    expect(await p.locator('[data-testid="chart-j"] .j-overlay-line').count()).toBe(1);
    await p.context().close();
  });

  it('a stage in which every agent was rejected draws no noise and says why nothing moved', async () => {
    const p = await pg().freshPage();
    await open(p, await link('router'));
    await stepStages(p, 1);
    expect(await p.getByTestId('stage-still').innerText()).toMatch(/Nothing moved in stage 1: every agent's update left its trust region .* 5 backtracks/s);
    const wf = p.getByTestId('chart-waterfall');
    expect(await wf.locator('[data-metric="team/dJ"]').innerText()).not.toMatch(/e−1[0-9]/);
    const labels = await wf.locator('.recharts-yAxis .recharts-cartesian-axis-tick-value').allInnerTexts();
    expect(new Set(labels).size).toBe(labels.length);
    expect(labels.join(' ')).not.toMatch(/e−1[0-9]/);
    const jLabels = await p.getByTestId('chart-j').locator('.j-y-axis .j-tick-value').allTextContents();
    expect(jLabels.length).toBeGreaterThan(1);
    expect(new Set(jLabels).size).toBe(jLabels.length);
    await p.context().close();
  });

  it('without cross-origin isolation the backend line warns, visibly', async () => {
    const p = await pg().freshPage();
    await p.route('**/*', async (route) => {
      const r = await route.fetch();
      const headers = { ...r.headers() };
      delete headers['cross-origin-opener-policy'];
      delete headers['cross-origin-embedder-policy'];
      await route.fulfill({ response: r, headers });
    });
    await open(p);
    expect(await p.evaluate(() => crossOriginIsolated)).toBe(false);
    const warn = p.getByTestId('backend-warn');
    // The line is drawn once the team is built, which may come after the controls settle.
    await warn.waitFor({ state: 'visible', timeout: 30_000 });
    expect(await warn.isVisible()).toBe(true);
    expect(await warn.innerText()).toMatch(/Not cross-origin isolated/);
    expect(await warn.getAttribute('title')).toMatch(/table games do not need threads/);
    await p.context().close();
  });

  it('Copy link writes the address bar too; the next step writes its own link there', async () => {
    const p = await pg().freshPage();
    await p.context().grantPermissions(['clipboard-read', 'clipboard-write']);
    await open(p);
    await stepStages(p, 1);
    await p.getByTestId('copy-link').click();
    await p.getByTestId('share-link').waitFor();
    const shared = await p.getByTestId('share-link').inputValue();
    expect(p.url()).toBe(shared);
    expect(await p.evaluate(() => navigator.clipboard.readText())).toBe(shared);
    await p.getByTestId('step-agent').click();
    await settled(p);
    await p.waitForFunction((old) => location.href !== old, shared);
    const r = await decodeShare(new URL(p.url()).hash);
    expect(r.ok && r.state.step).toEqual({ stage: 2, agent: 0 });
    await p.context().close();
  });

  it('scheme = simultaneous is one joint step: one click moves every agent, cells and the table say so', async () => {
    const p = await pg().freshPage();
    await open(p, await link('climbing', { scheme: 'simultaneous' }));
    expect(await p.getByTestId('step-agent').innerText()).toMatch(/Step \(joint\)/);
    await p.getByTestId('step-agent').click();
    await p.waitForFunction(() => document.querySelectorAll('[data-testid="stage-row"]').length === 1);
    await settled(p);
    expect(await points(p, 'timeline')).toBe(3);
    const cells = await p.locator('[data-testid="timeline-cell"]').allInnerTexts();
    expect(cells.map((c) => c.trim())).toEqual(['=', '=', '=']);
    expect(await p.locator('[data-testid="stage-row"] td.order').innerText()).toBe('all at once');
    expect(await p.getByTestId('where').innerText()).toBe('Stage 1 of 30 done (joint steps)');
    await p.context().close();
  });

  it('a lesson layout: <panel>_hide flags take the settings, the team and charts away', async () => {
    const p = await pg().freshPage();
    await open(p, await link('coordination', {}, { hide: ['settings', 'team', 'waterfall', 'advantages', 'kl', 'beta', 'violation', 'orders', 'table', 'files', 'claims'] }));
    // The charts arrive in a lazily loaded chunk: wait for the one kept before counting the hidden ones.
    await p.getByTestId('chart-j').waitFor();
    await p.getByTestId('game-view').waitFor();
    for (const id of ['fold-settings', 'fold-team', 'chart-waterfall', 'chart-adv', 'chart-kl', 'chart-beta', 'chart-violation', 'chart-orders', 'copy-link', 'open-claims', 'empty']) {
      expect(await p.getByTestId(id).count(), id).toBe(0);
    }
    for (const id of ['presets', 'step-agent', 'game-view', 'chart-j']) expect(await p.getByTestId(id).count(), id).toBe(1);
    await p.context().close();
  });

  it('axe-core: no serious or critical violation on the opening page and with a formula card open', async () => {
    const p = await pg().freshPage();
    await open(p);
    expect(await axe(p)).toEqual([]);
    await stepStages(p, 1);
    const card = p.getByTestId('chart-waterfall').getByTestId('formula-card');
    await card.locator('summary').first().click();
    await card.getByTestId('formula-tex').waitFor({ state: 'visible' });
    expect(await axe(p)).toEqual([]);
    expect(pg().errors).toEqual([]);
    await p.context().close();
  });

  it('axe-core: no serious or critical violation on a language preset with the token inspector open', async () => {
    const p = await pg().freshPage();
    const cfg = { batch: 2, group: 2, evalEpisodes: 8, geoIters: 0, probeEpisodes: 4, epochs: 1 };
    await p.goto(pg().url + (await link('arith-team', cfg)), { waitUntil: 'load' });
    await p.getByText(/Opened a shared experiment/).waitFor({ timeout: 120_000 });
    await settled(p);
    await p.getByTestId('step-agent').click();
    await p.waitForFunction(() => Number(document.querySelector('[data-testid="timeline"]')?.getAttribute('data-points')) === 1, undefined, { timeout: 180_000 });
    await settled(p);
    expect(await p.getByTestId('game-episode').count()).toBe(1);
    await p.getByTestId('inspect-tokens').click();
    await p.getByTestId('inspector-token').first().waitFor({ timeout: 120_000 });
    expect(await axe(p)).toEqual([]);
    await p.context().close();
  }, 300_000);

  it('Check bound on a language stage: not checked, then tested against a 2,048-pair estimate', async () => {
    const p = await pg().freshPage();
    const cfg = { agents: 2, batch: 2, group: 2, evalEpisodes: 8, geoIters: 0, probeEpisodes: 4, epochs: 1, maxNew: 3 };
    await p.goto(pg().url + (await link('arith-team', cfg)), { waitUntil: 'load' });
    await p.getByText(/Opened a shared experiment/).waitFor({ timeout: 120_000 });
    await settled(p);
    const check = p.getByTestId('check-bound');
    expect(await check.isDisabled()).toBe(true); // no stage yet
    await p.getByTestId('step-stage').click();
    await p.waitForFunction(() => document.querySelectorAll('[data-testid="stage-row"]').length === 1, undefined, { timeout: 180_000 });
    await settled(p);
    const heldCell = p.locator('[data-testid="stage-row"] .held .sr-only');
    expect(await heldCell.innerText()).toBe('not checked');
    // The waterfall: the team-level bound, then each agent's share as a pale, dashed bar in its colour.
    const wf = p.getByTestId('chart-waterfall');
    await wf.scrollIntoViewIfNeeded();
    await p.waitForFunction(() => document.querySelectorAll('[data-testid="chart-waterfall"] [data-agent-share]').length === 2, undefined, { timeout: 60_000 });
    await settled(p);
    const bars = await wf.locator('[data-agent-share]').evaluateAll((gs) => gs.map((g) => {
      const path = g.querySelector('path');
      return { agent: Number(g.getAttribute('data-agent-share')), value: Number(g.getAttribute('data-value')), stroke: path?.getAttribute('stroke') ?? null, dash: path?.getAttribute('stroke-dasharray') ?? null, height: path?.getBoundingClientRect().height ?? 0 };
    }));
    expect(bars.map((b) => b.agent).sort()).toEqual([0, 1]);
    for (const b of bars) {
      // A share of 0 (a rejected agent, or float noise) draws no bar at all.
      if (b.value === 0) expect(b.height, `agent ${b.agent}`).toBe(0);
      else expect([b.stroke, Boolean(b.dash), b.height > 0], `agent ${b.agent}`).toEqual([agentColor(b.agent), true, true]);
    }
    const key = await wf.getByTestId('agent-shares').innerText();
    expect(key).toBe(`per-agent bars: diagnostics, not the certificate — ${bars.map((b) => `agent ${b.agent} ${term(b.value)}`).join(', ')}`);
    expect(await wf.locator('.recharts-label-list text').count()).toBe(7 + 2);
    mkdirSync(join(ROOT, 'test-results'), { recursive: true });
    await wf.screenshot({ path: join(ROOT, 'test-results/waterfall-language.png') });
    // Its formula card is the team-level form's, with this stage's truncation c and batch size N.
    const card = wf.getByTestId('formula-card');
    expect(await card.getAttribute('data-formula')).toBe('waterfall-team');
    await card.locator('summary').first().click();
    await card.getByTestId('formula-tex').waitFor({ state: 'visible', timeout: 60_000 });
    expect(Number(await card.locator('[data-metric="cert/clip"]').first().getAttribute('data-value'))).toBe(presetConfig('arith-team', cfg).certClip);
    const episodes = (await wf.getByTestId('team-bound').innerText()).match(/^team-level bound: ([\d,]+) episodes/)![1]!.replace(/,/g, '');
    expect(await card.locator('[data-metric="cert/episodes"]').first().getAttribute('data-value')).toBe(episodes);
    // Certified or not, the J chart's ✓, the timeline's title and the waterfall say the same.
    const certified = (await wf.getByTestId('certified-note').count()) === 1;
    const header = p.locator('[data-testid="timeline"] [role="columnheader"][data-certified]');
    expect(await header.getAttribute('data-certified')).toBe(certified ? '1' : '0');
    expect(await p.getByTestId('chart-j').locator('[data-certified="true"]').count()).toBe(certified ? 1 : 0);
    expect(await header.getAttribute('title')).toBe(`stage 1: ${certified ? 'certified improvement (bound above 0), ' : ''}certificate not checked`);
    // While it checks: its progress (rollout k of 2) with Cancel, and the status line never "stepping".
    await p.evaluate(() => {
      const seen: string[] = [];
      (window as unknown as { seen: string[] }).seen = seen;
      new MutationObserver(() => {
        const el = document.querySelector('[data-testid="progress"]');
        if (el) seen.push(`${el.textContent ?? ''}${document.querySelector('[data-testid="cancel"]') ? ' [Cancel]' : ''} | ${document.querySelector('[data-testid="where"]')?.textContent ?? ''}`);
      }).observe(document.body, { subtree: true, childList: true, characterData: true });
    });
    await check.click();
    await p.getByTestId('notice').getByText(/^Stage 1: lower bound/).waitFor({ timeout: 240_000 });
    await settled(p);
    const seen = await p.evaluate(() => (window as unknown as { seen: string[] }).seen);
    expect(seen.some((t) => /^Checking stage 1's bound: the final team's 2,048 episodes \(rollout 1 of 2/.test(t) && t.includes('[Cancel]')), seen.join('\n')).toBe(true);
    expect(seen.some((t) => /rollout 2 of 2.*1 of 2 · about \d+ (s|min) left.*\[Cancel\]/.test(t)), seen.join('\n')).toBe(true);
    expect(seen.filter((t) => /stepping/.test(t)), 'the status line while checking').toEqual([]);
    const notice = await p.getByTestId('notice').innerText();
    expect(notice).toMatch(/^Stage 1: lower bound −?\d+\.\d{3} against ΔJ ≈ [+−]?\d+\.\d{3} ± \S+ \(± one standard error of the paired estimate, about a 68 % interval; 2,048 pairs\): (held|not held|undecided) \(the bound is (at least 2 standard errors below|more than 2 standard errors above|within 2 standard errors of) the estimate/);
    const verdict = notice.match(/pairs\): (held|not held|undecided)/)![1]!;
    expect(await heldCell.innerText()).toBe(verdict);
    expect(await header.getAttribute('title')).toMatch(new RegExp(`^stage 1: ${certified ? 'certified improvement \\(bound above 0\\), ' : ''}certificate ${verdict} \\(ΔJ estimated [+−]?\\d+\\.\\d{3} ± \\d+\\.\\d{3}, ± one standard error of the paired estimate, about a 68 % interval; 2,048 pairs\\)$`));
    expect(await check.isDisabled()).toBe(true); // checked once
    await p.context().close();
  }, 600_000);
});
