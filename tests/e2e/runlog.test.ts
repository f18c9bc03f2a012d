/**
 * Real runs, out and back in, in Chromium: "Export for a real run" on a tabular game says why no
 * engine takes it; on a language team it lists each engine's command, shows the verl overrides
 * with the page's β, downloads the SAT-style YAML and a zip with the scripts, the data and
 * reward.py, and an edited YAML imports back. Import takes a verl file-logger fixture and a TeamTR
 * console fixture (tests/fixtures/bridge/logs) and the charts read back the logs' numbers; a bad
 * log is refused without losing the open run; a saved run and a `?run=` link open it again. At
 * 1280×720, in both modes, an imported log opens scrolled into view with its J and KL charts on
 * the first screen, and no y-axis label runs past its chart's left edge. A log longer than a chart
 * draws (5,000 steps) is drawn thinned and says so, its one-step spike kept; a short one is not; the
 * verl driver's team log is named for it and shows its agents' order.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { unzipSync, strFromU8 } from 'fflate';
import { describe, expect, it } from 'vitest';
import { encodeShare, makeShareState } from '../../src/app/share';
import { parseConfig } from '../../src/sat/config';
import { presetConfig } from '../../src/sat/presets';
import { readRunLog } from '../../src/bridge/runLog';
import { runLogParam } from '../../src/bridge/runLogFile';
import type { Page } from 'playwright-core';
import { inViewport, playgroundForFile, points, settled } from './harness';

const pg = playgroundForFile();
const LOGS = join(import.meta.dirname, '../fixtures/bridge/logs');
const log = (f: string) => ({ name: f, mimeType: 'text/plain', buffer: readFileSync(join(LOGS, f)) });

describe('Export for a real run (browser)', () => {
  it('a tabular game: every engine says why; a language team: commands, overrides, the YAML, the zip, and the YAML back', async () => {
    let p = await pg().freshPage();
    await p.goto(pg().url, { waitUntil: 'load' });
    await settled(p);
    await p.getByTestId('export-recipe').click();
    await p.getByTestId('recipe-engines').waitFor();
    expect(await p.getByTestId('recipe-engine-verl').innerText()).toMatch(/not exported — task: "climbing" is a tabular game/);
    expect(await p.getByTestId('recipe-verl').count()).toBe(0);
    await p.context().close();

    // A link opens in a fresh page: on the same page a new hash is not a new load.
    const cfg = parseConfig({ ...presetConfig('arith-team'), protocol: 'independent' });
    p = await pg().freshPage();
    await p.goto(pg().url + (await encodeShare(makeShareState(cfg, { preset: 'arith-team' }))), { waitUntil: 'load' });
    await p.getByText(/Opened a shared experiment/).waitFor({ timeout: 120_000 });
    await settled(p);
    await p.getByTestId('export-recipe').click();
    const verl = p.getByTestId('recipe-verl');
    await verl.waitFor();
    expect(await verl.inputValue()).toMatch(/^actor_rollout_ref\.rollout\.name=vllm$/m);
    expect(await verl.inputValue()).toMatch(new RegExp(`^actor_rollout_ref\\.actor\\.kl_loss_coef=${await p.getByTestId('cfg-beta').inputValue()}$`, 'm'));
    for (const k of ['satTrainer', 'verl', 'teamtr']) expect(await p.getByTestId(`recipe-engine-${k}`).getAttribute('data-ok')).toBe('true');
    expect(await p.getByTestId('recipe-differs-verl').innerText()).toMatch(/^runs differently from the playground: delta, aClip, maxNew, objective, beta, agents/);
    const [zipDl] = await Promise.all([p.waitForEvent('download'), p.getByTestId('recipe-zip').click()]);
    expect(zipDl.suggestedFilename()).toBe('arith-team.real-run.zip');
    const zip = unzipSync(new Uint8Array(readFileSync(await zipDl.path())));
    expect(Object.keys(zip)).toEqual(expect.arrayContaining(['arith-team/arith-team.sat.yaml', 'arith-team/arith-team.verl.sh', 'arith-team/arith-team.teamtr.sh', 'arith-team/arith-team.data/reward.py', 'arith-team/arith-team.data/train.verl.jsonl']));
    expect(strFromU8(zip['arith-team/arith-team.data/val.verl.jsonl']!).trim().split('\n')).toHaveLength(cfg.evalEpisodes);
    const [download] = await Promise.all([p.waitForEvent('download'), p.getByTestId('recipe-download').click()]);
    const yaml = readFileSync(await download.path(), 'utf8');
    expect(download.suggestedFilename()).toBe('arith-team.sat.yaml');
    expect(yaml).toMatch(/^\s+mode: static$/m);
    const edited = yaml.replace(/kl_coef: [^\n]+/, 'kl_coef: 0.37').replace(/target_kl: [^\n]+/, 'target_kl: 0.0123');
    await p.getByTestId('import').setInputFiles({ name: 'real-run.sat.yaml', mimeType: 'application/yaml', buffer: Buffer.from(edited) });
    await p.getByText(/Opened the settings of “real-run\.sat\.yaml”/).waitFor({ timeout: 120_000 });
    await settled(p);
    expect(await p.getByTestId('cfg-beta').inputValue()).toBe('0.37');
    expect(await p.getByTestId('cfg-delta').inputValue()).toBe('0.0123');
    await p.getByTestId('import').setInputFiles({ name: 'other.yaml', mimeType: 'application/yaml', buffer: Buffer.from('trainer: {}\n') });
    const banner = p.getByTestId('error');
    await banner.waitFor({ state: 'visible' });
    expect(await banner.innerText()).toMatch(/no "sat" section.*not changed/s);
    expect(await p.getByTestId('cfg-beta').inputValue()).toBe('0.37');
    await p.context().close();
  }, 360_000);
});

describe('a real run\'s logs in the playground (browser)', () => {
  it('a verl log and a TeamTR log: the charts read back their numbers; a bad log loses nothing; saved and linked runs open again', async () => {
    const p = await pg().freshPage();
    await p.goto(pg().url, { waitUntil: 'load' });
    await settled(p);

    await p.getByTestId('import').setInputFiles(log('verl-file.jsonl'));
    await p.getByTestId('runlog').waitFor();
    expect(await p.getByTestId('notice').innerText()).toMatch(/Opened the run log “verl-file\.jsonl”: 5 steps, 1 problem skipped/);
    expect(await p.getByTestId('runlog-warnings').innerText()).toMatch(/line 6: not JSON/);
    expect(await points(p, 'run-j')).toBe(5);
    expect(await p.getByTestId('run-j-last').innerText()).toBe('step 4: J 0.5625 train reward 0.5125');
    expect(await points(p, 'run-kl')).toBe(4);
    expect(await p.getByTestId('run-kl-readout').innerText()).toBe('last: 0.0016');
    expect(await p.getByTestId('run-clip-last').innerText()).toBe('last: 0.0400');
    expect(await points(p, 'run-timeline')).toBe(0);
    expect(await p.getByTestId('run-timeline-empty').innerText()).toMatch(/One policy: this log has no per-agent steps/);
    expect(await p.locator('[data-testid="run-j"] svg .recharts-line').count()).toBeGreaterThan(0);

    await p.getByTestId('import').setInputFiles(log('teamtr-console.log'));
    await p.getByText(/Opened the run log “teamtr-console\.log”: 4 steps/).waitFor();
    expect(await p.getByTestId('runlog').innerText()).toMatch(/Imported run: teamtr-console\.log \(verl-console, teamtr, 4 steps, 3 agents\)/);
    expect(await p.getByTestId('run-j-last').innerText()).toBe('step 3: J 0.4100 train reward 0.3700');
    expect(await points(p, 'run-kl')).toBe(3);
    expect(await p.getByTestId('run-kl-readout').innerText()).toBe('last: 0.0012, 0.0024, 0.0036');
    expect(await p.getByTestId('run-clip-last').innerText()).toBe('last: 0.0300, 0.0350, 0.0400');
    expect(await points(p, 'run-timeline')).toBe(3);
    expect(await p.locator('[data-testid="run-timeline-rows"] li[data-step="2"] .runlog-chip').allInnerTexts()).toEqual(['0', '1', '2']);

    // A file that is no run log: refused with its reason, the open run and the experiment untouched.
    await p.getByTestId('import').setInputFiles({ name: 'notes.txt', mimeType: 'text/plain', buffer: Buffer.from('hello\nworld\n') });
    const banner = p.getByTestId('error');
    await banner.waitFor({ state: 'visible' });
    expect(await banner.innerText()).toMatch(/“notes\.txt”: “notes\.txt” is not a run log the playground reads.*Your current experiment was not changed/s);
    expect(await points(p, 'run-kl')).toBe(3);
    expect(await p.getByTestId('preset-title').innerText()).toContain('Climbing game');

    // Saved as a file, and opened again from it.
    const [saved] = await Promise.all([p.waitForEvent('download'), p.getByTestId('runlog-save').click()]);
    expect(saved.suggestedFilename()).toBe('teamtr-console.satrun.json');
    await p.getByTestId('runlog-close').click();
    expect(await p.getByTestId('runlog').count()).toBe(0);
    await p.getByTestId('import').setInputFiles({ name: 'teamtr-console.satrun.json', mimeType: 'application/json', buffer: readFileSync(await saved.path()) });
    await p.getByTestId('runlog').waitFor();
    expect(await p.getByTestId('run-kl-readout').innerText()).toBe('last: 0.0012, 0.0024, 0.0036');
    await p.context().close();

    // A link carries the run where it fits.
    const q = await pg().freshPage();
    const param = runLogParam(readRunLog(readFileSync(join(LOGS, 'sat-trainer.log'), 'utf8'), 'sat-trainer.log'))!;
    await q.goto(`${pg().url}?run=${param}`, { waitUntil: 'load' });
    await q.getByTestId('runlog').waitFor();
    expect(await q.getByTestId('run-kl-readout').innerText()).toMatch(/agent 0: δ 0\.1000, violation rate 50\.0 %/);
    expect(await q.getByTestId('run-j-last').innerText()).toBe('step 2: lower bound -13.0001');
    expect(await points(q, 'run-timeline')).toBe(2);
    await q.context().close();
  }, 240_000);
});

/** Every y-axis tick label of the imported run's charts lies inside its chart's SVG (none clipped at the left). */
async function yLabelsInside(p: Page): Promise<number> {
  const out = await p.locator('[data-testid="runlog"] svg.recharts-surface').evaluateAll((svgs) =>
    svgs.flatMap((svg) => {
      const left = svg.getBoundingClientRect().left;
      return [...svg.querySelectorAll('.recharts-yAxis-tick-labels text')].map((t) => ({ text: t.textContent ?? '', over: left - t.getBoundingClientRect().left }));
    }),
  );
  expect(out.length).toBeGreaterThan(0);
  for (const t of out) expect(t.over, `y label "${t.text}" starts ${t.over.toFixed(1)} px left of its chart`).toBeLessThanOrEqual(0.5);
  return out.length;
}

describe('an imported run log opens in view (browser)', () => {
  it('at 1280×720 its J and KL charts are on the first screen, y labels unclipped; in projector mode too', async () => {
    for (const projector of [false, true]) {
      const p = await pg().freshPage({ width: 1280, height: 720 });
      await p.goto(pg().url, { waitUntil: 'load' });
      await settled(p);
      if (projector && (await p.locator('.app.projector').count()) === 0) await p.getByTestId('projector-toggle').click();
      await p.locator('.app.projector').count().then((n) => expect(n).toBe(projector ? 1 : 0));
      await p.getByTestId('import').setInputFiles(log('verl-file.jsonl'));
      await p.getByTestId('runlog').waitFor();
      await p.waitForFunction(() => document.querySelectorAll('[data-testid="runlog"] svg.recharts-surface').length >= 3);
      await p.waitForTimeout(300); // the scroll settles
      await inViewport(p, 'run-j', 720);
      await inViewport(p, 'run-kl', 720);
      const n = await yLabelsInside(p);
      console.log(`run log in view (${projector ? 'projector' : 'default'} mode): J and KL charts on the first screen, ${n} y labels inside their charts`);
      await p.context().close();
    }
  }, 120_000);
});

describe('a long run log and a verl team log (browser)', () => {
  it('past 1,200 steps each chart draws its runs\' extremes and says so, a spike kept; a short log draws every step, unlabelled; a verl team log is named and its order shown', async () => {
    const p = await pg().freshPage();
    await p.goto(pg().url, { waitUntil: 'load' });
    await settled(p);
    // 5,000 steps: the training reward and the update's KL every step (the KL once 9, at step 3,333), J every tenth.
    const lines = Array.from({ length: 5_000 }, (_, i) => JSON.stringify({ step: i + 1, data: { 'critic/score/mean': (i % 97) / 100, 'actor/ppo_kl': i === 3_332 ? 9 : 0.001 * (1 + Math.sin(i / 40)), 'actor/pg_clipfrac': 0.02, ...(i % 10 === 0 ? { 'val-core/arith/acc/mean@1': i / 5_000 } : {}) } }));
    await p.getByTestId('import').setInputFiles({ name: 'long.jsonl', mimeType: 'text/plain', buffer: Buffer.from(lines.join('\n')) });
    await p.getByText(/Opened the run log “long\.jsonl”: 5000 steps/).waitFor();
    for (const id of ['run-j', 'run-kl', 'run-clip']) {
      expect(await p.getByTestId(`${id}-thinned`).innerText(), id).toMatch(/^Drawn: [\d,]+ of 5,000 steps — each line keeps its first, last, lowest and highest value in every run of \d+(–\d+)? steps\.$/);
      const n = await points(p, id);
      expect(n, id).toBeGreaterThan(0);
      expect(n, id).toBeLessThanOrEqual(1_200);
    }
    // the one-step spike is drawn: the KL axis reaches it (the KL chart is drawn in a task after the J chart's)
    await p.locator('[data-testid="run-kl"] .recharts-yAxis-tick-labels text').first().waitFor();
    const klTicks = (await p.locator('[data-testid="run-kl"] .recharts-yAxis-tick-labels text').allTextContents()).map((t) => Number(t.replace('\u2212', '-')));
    expect(Math.max(...klTicks)).toBeGreaterThanOrEqual(9);
    // the readouts are the last step's, from every step
    expect(await p.getByTestId('run-j-last').innerText()).toBe(`step 5000: train reward ${(4_999 % 97 / 100).toFixed(4)}`);

    await p.getByTestId('import').setInputFiles(log('verl-file.jsonl'));
    await p.getByText(/Opened the run log “verl-file\.jsonl”/).waitFor();
    expect(await points(p, 'run-j')).toBe(5);
    expect(await p.locator('[data-testid$="-thinned"]').count()).toBe(0);
    // the grid's vertical lines at the step axis' ticks and the plot's edges
    const ticks = await p.locator('[data-testid="run-j"] .recharts-xAxis-tick-labels text').count();
    expect(ticks).toBeGreaterThan(1);
    expect(await p.locator('[data-testid="run-j"] .recharts-cartesian-grid-vertical line').count()).toBeGreaterThanOrEqual(ticks);

    // The exported verl driver's team log, agents trained in the order 2, 0, 1.
    const order = [2, 0, 1];
    const team = [{ step: 0, data: { 'val-core/arith/acc/mean@1': 0.1 } }, ...[1, 2].map((s) => ({ step: s, data: { ...Object.fromEntries(order.map((a) => [`agent${a}/actor/ppo_kl`, s + a / 10])), 'val-core/arith/acc/mean@1': s / 10 } }))];
    await p.getByTestId('import').setInputFiles({ name: 'arith.verl-team-log.jsonl', mimeType: 'text/plain', buffer: Buffer.from(team.map((l) => JSON.stringify(l)).join('\n')) });
    await p.getByText(/Opened the run log “arith\.verl-team-log\.jsonl”/).waitFor();
    expect(await p.getByTestId('runlog').innerText()).toMatch(/Imported run: arith\.verl-team-log\.jsonl \(verl-jsonl, a verl team log from the exported driver, 3 steps, 3 agents\)/);
    expect(await p.locator('[data-testid="run-timeline-rows"] li[data-step="2"] .runlog-chip').allInnerTexts()).toEqual(['2', '0', '1']);
    await p.context().close();
  }, 240_000);
});
