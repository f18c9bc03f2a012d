/**
 * A real run's episodes in Chromium: Import takes a generation dump written the way TeamTR's
 * trainer writes them (tests/fixtures/bridge/logs/teamtr-generations/2.jsonl, chain episodes as
 * the exported rollout prompts them) and shows its replies under the charts — each with its step,
 * the agent whose turn it was, its score and prompt — paged and filtered by agent and text; a
 * verl dump (one policy, a NaN score) replaces it and says what it kept without a score.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { playgroundForFile, settled } from './harness';

const pg = playgroundForFile();
const LOGS = join(import.meta.dirname, '../fixtures/bridge/logs');
const dump = (f: string) => ({ name: f.split('/').pop()!, mimeType: 'application/jsonl', buffer: readFileSync(join(LOGS, f)) });

describe('a real run\'s episodes in the playground (browser)', () => {
  it('a TeamTR dump: every reply with its agent, filtered; a verl dump replaces it', async () => {
    const p = await pg().freshPage();
    await p.goto(pg().url, { waitUntil: 'load' });
    await settled(p);
    await p.getByTestId('import').setInputFiles(dump('teamtr-generations/2.jsonl'));
    await p.getByTestId('generations').waitFor();
    expect(await p.getByTestId('notice').innerText()).toMatch(/Opened the generation dump “2\.jsonl”: 6 replies of 1 step, under the charts/);
    expect(await p.getByTestId('generations').innerText()).toMatch(/Imported episodes: 2\.jsonl \(6 replies, 1 step, 3 agents/);
    expect(await p.getByTestId('generations-summary').innerText()).toBe('Mean score per step and agent: step 2 agent 0 1.000 (2); step 2 agent 1 1.000 (2); step 2 agent 2 1.000 (2)');
    const rows = p.locator('[data-testid="generations-rows"] tbody tr');
    expect(await rows.count()).toBe(6);
    await p.getByTestId('generations-agent').selectOption('1');
    expect(await rows.count()).toBe(2);
    const second = await rows.nth(1).locator('td').allInnerTexts();
    expect(second.slice(0, 4)).toEqual(['2', '1', '1.000', '—']);
    expect(second[4]).toMatch(/3\+4=<a0>8<sep><a1>\nassistant\n?$/);
    expect(second[5]).toBe('é 7<sep>');
    await p.getByTestId('generations-agent').selectOption('');
    await p.getByTestId('generations-text').fill('<a2>');
    expect(await rows.count()).toBe(2);
    expect(await p.getByTestId('generations-count').innerText()).toBe('2 replies, page 1 of 1');
    expect(await p.getByTestId('runlog').count()).toBe(0);

    await p.getByTestId('import').setInputFiles(dump('verl-generations/3.jsonl'));
    await p.getByText(/Opened the generation dump “3\.jsonl”: 4 replies/).waitFor();
    expect(await p.getByTestId('generations').innerText()).toMatch(/Imported episodes: 3\.jsonl \(4 replies, 1 step, one policy\)/);
    expect(await p.getByTestId('generations-warnings').innerText()).toMatch(/3\.jsonl line 4: its score is not a number; the row is kept without one/);
    expect(await p.getByTestId('generations-agent').count()).toBe(0);
    expect(await rows.count()).toBe(4);
    expect(await rows.nth(1).locator('td').allInnerTexts()).toEqual(['3', '—', '0.000', '7', expect.stringMatching(/2\+5=\nassistant\n?$/), 'The answer is 7.']);
    expect(await p.getByTestId('preset-title').innerText()).toContain('Climbing game');
    await p.getByTestId('generations-close').click();
    expect(await p.getByTestId('generations').count()).toBe(0);
    await p.context().close();
  }, 240_000);
});
