/**
 * A real run's episodes in Chromium, in the transcripts view ("What did the agents say?"): Import
 * takes a generation dump written the way TeamTR's trainer writes them
 * (tests/fixtures/bridge/logs/teamtr-generations/2.jsonl, chain episodes as the exported rollout
 * prompts them) and shows its replies there — each with its prompt, the reply credited to the
 * agent whose turn it was, and the run's reward — filtered by agent, reward and text; a dump of
 * two steps (the same writer's fields, made here) pages through a step's replies and switches
 * step; a verl dump (one policy, a NaN score) replaces it and says what it kept without a score.
 * There is one episodes view: no second table of imported replies; beside a language run's own
 * episodes a switch picks whose are shown.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { encodeShare, makeShareState } from '../../src/app/share';
import { presetConfig } from '../../src/sat/presets';
import { playgroundForFile, settled } from './harness';

const pg = playgroundForFile();
const LOGS = join(import.meta.dirname, '../fixtures/bridge/logs');
const dump = (f: string) => ({ name: f.split('/').pop()!, mimeType: 'application/jsonl', buffer: readFileSync(join(LOGS, f)) });

/** TeamTR's writer's fields (verl/trainer/ppo/ray_trainer.py `_write_generations`): two steps of 15 replies, agent j = e mod 3. */
function twoSteps(): { name: string; mimeType: string; buffer: Buffer } {
  const lines: string[] = [];
  for (const step of [4, 5]) {
    for (let e = 0; e < 15; e++) {
      const j = e % 3;
      const prompt = `user\nReply with the integer result only.\n${e}+${step}=${Array.from({ length: j }, (_, i) => `<a${i}>${e + step}<sep>`).join('')}<a${j}>\nassistant\n`;
      lines.push(JSON.stringify({ input: prompt, output: `${e + step + (e % 2)}`, score: e % 2 === 0 ? 1 : 0, step }));
    }
  }
  return { name: 'two-steps.jsonl', mimeType: 'application/jsonl', buffer: Buffer.from(lines.join('\n') + '\n') };
}

describe('a real run\'s episodes in the transcripts view (browser)', () => {
  it('a TeamTR dump: every reply with its agent, filtered; two steps page and switch; a verl dump replaces it', async () => {
    const p = await pg().freshPage();
    await p.goto(pg().url, { waitUntil: 'load' });
    await settled(p);
    const view = p.getByTestId('transcripts');
    expect(await view.count()).toBe(0); // a table game: no episodes until a dump comes
    await p.getByTestId('import').setInputFiles(dump('teamtr-generations/2.jsonl'));
    await view.waitFor();
    expect(await p.getByTestId('notice').innerText()).toMatch(/Opened the generation dump “2\.jsonl”: 6 replies of 1 step, in the transcripts view/);
    expect(await p.getByTestId('transcripts-batch').innerText()).toMatch(/Imported 2\.jsonl: step 2, 6 replies \(6 in 1 step; each credited to the agent whose turn marker ends its prompt\)/);
    expect(await p.getByTestId('transcripts-summary').innerText()).toBe('Mean reward per step and agent: step 2 agent 0 1.000 (2); step 2 agent 1 1.000 (2); step 2 agent 2 1.000 (2)');
    expect(await p.getByTestId('generations').count()).toBe(0); // the old second table is gone
    const rows = p.getByTestId('transcript-row');
    expect(await rows.count()).toBe(6);
    await p.getByTestId('transcripts-agent').selectOption('1');
    expect(await rows.count()).toBe(2);
    const second = await rows.nth(1).locator('td').allInnerTexts();
    expect(second[1]).toMatch(/3\+4=<a0>8<sep><a1>\nassistant\n?$/);
    expect(second[2]).toMatch(/agent 1\s+é 7<sep>/);
    expect(second.slice(3)).toEqual(['—', '1.000']);
    await p.getByTestId('transcripts-agent').selectOption('all');
    await p.getByTestId('transcripts-text').fill('<a2>');
    expect(await rows.count()).toBe(2);
    expect(await p.getByTestId('transcripts-count').innerText()).toBe('2 of 6 episodes, page 1 of 1');
    expect(await p.getByTestId('runlog').count()).toBe(0);

    // Two steps: the first step's 15 replies over two pages, then the second step's, filtered by reward.
    await p.getByTestId('import').setInputFiles(twoSteps());
    await p.getByText(/Opened the generation dump “two-steps\.jsonl”: 30 replies of 2 steps/).waitFor();
    await p.waitForFunction(() => document.querySelector('[data-testid="transcripts-count"]')?.textContent === '15 of 15 episodes, page 1 of 2');
    expect(await rows.count()).toBe(12);
    await p.getByTestId('transcripts-next').click();
    expect(await rows.count()).toBe(3);
    expect(await rows.nth(2).locator('td').nth(1).innerText()).toMatch(/14\+4=<a0>18<sep><a1>18<sep><a2>\nassistant\n?$/);
    await p.getByTestId('transcripts-step').selectOption('5');
    expect(await p.getByTestId('transcripts-count').innerText()).toBe('15 of 15 episodes, page 1 of 2');
    await p.getByTestId('transcripts-reward').selectOption('0');
    expect(await p.getByTestId('transcripts-count').innerText()).toBe('7 of 15 episodes, page 1 of 1');
    for (const r of await rows.all()) expect(await r.getAttribute('data-reward')).toBe('0');
    expect(await rows.first().locator('td').nth(1).innerText()).toMatch(/1\+5=<a0>6<sep><a1>\nassistant\n?$/);

    await p.getByTestId('import').setInputFiles(dump('verl-generations/3.jsonl'));
    await p.getByText(/Opened the generation dump “3\.jsonl”: 4 replies/).waitFor();
    expect(await p.getByTestId('transcripts-batch').innerText()).toMatch(/Imported 3\.jsonl: step 3, 4 replies \(4 in 1 step; one policy\)/);
    expect(await p.getByTestId('transcripts-warnings').innerText()).toMatch(/3\.jsonl line 4: its score is not a number; the row is kept without one/);
    expect(await p.getByTestId('transcripts-agent').count()).toBe(0);
    expect(await rows.count()).toBe(4);
    const verl = await rows.nth(1).locator('td').allInnerTexts();
    expect(verl[1]).toMatch(/2\+5=\nassistant\n?\s*truth 7$/);
    expect(verl.slice(2)).toEqual([expect.stringMatching(/the policy\s+The answer is 7\.$/), '—', '0.000']);
    expect(await p.getByTestId('preset-title').innerText()).toContain('Climbing game');
    await p.getByTestId('transcripts-close-imported').click();
    expect(await view.count()).toBe(0);
    await p.context().close();
  }, 240_000);

  it('beside a language run\'s own episodes: one view, a switch between the run\'s and the dump\'s', async () => {
    const cfg = presetConfig('arith-team', { agents: 2, batch: 4, group: 4, evalEpisodes: 8, probeEpisodes: 4, epochs: 1, maxNew: 3, stages: 3, certEpisodes: 8, geoIters: 0 });
    const p = await pg().freshPage();
    await p.goto(pg().url + (await encodeShare(makeShareState(cfg, { preset: 'arith-team' }))), { waitUntil: 'load' });
    await p.getByText(/Opened a shared experiment/).waitFor({ timeout: 120_000 });
    await settled(p);
    await p.getByTestId('step-agent').click();
    await p.waitForFunction(() => Number(document.querySelector('[data-testid="timeline"]')?.getAttribute('data-points')) === 1, undefined, { timeout: 120_000 });
    await settled(p);
    const rows = p.getByTestId('transcript-row');
    expect(await p.getByTestId('transcripts-batch').innerText()).toMatch(/the step trained on 16 episodes/);
    expect(await p.getByTestId('transcripts-source-imported').count()).toBe(0);
    await p.getByTestId('import').setInputFiles(dump('teamtr-generations/2.jsonl'));
    await p.getByTestId('transcripts-source-imported').waitFor();
    expect(await p.getByTestId('transcripts').count()).toBe(1);
    expect(await p.getByTestId('transcripts-source-imported').getAttribute('aria-pressed')).toBe('true');
    expect(await rows.count()).toBe(6);
    expect(await p.getByTestId('inspect-tokens').count()).toBe(0); // the dump's replies have no inspection
    await p.getByTestId('transcripts-source-run').click();
    expect(await rows.count()).toBe(12);
    expect(await p.getByTestId('transcripts-count').innerText()).toBe('16 of 16 episodes, page 1 of 2');
    expect(await p.getByTestId('inspect-tokens').count()).toBe(1);
    expect(pg().errors).toEqual([]);
    await p.context().close();
  }, 240_000);
});
