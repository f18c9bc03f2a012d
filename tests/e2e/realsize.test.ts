/**
 * Browser test: a team of three checkpoint seats in the page (docs/models.md "A real-size team"),
 * on the small-shape random checkpoint (tests/helpers/hfCheckpoint.ts; a 135M-class folder is
 * seated the same way). The same folder is picked on the three agents' cards; Step stage shows the
 * stage's progress — "Stage 1: …" with its bar, then the time left — with Cancel; Cancel stops the
 * stage and puts the team back where it started (no stage row, no agent step, the notice says
 * so); Step stage again runs the stage to the very row a page that never cancelled draws; and each
 * seat's card shows the tokens/s its worker measured.
 *
 * Not here: the plan behind the bar and the worker-side Cancel in Node (tests/stage-progress.test.ts).
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { encodeShare, makeShareState, type ShareCheckpoint } from '../../src/app/share';
import { hfFolderHash } from '../../src/model/hfLoad';
import { presetConfig } from '../../src/sat/presets';
import { hfCheckpoint, writeHfFolder } from '../helpers/hfCheckpoint';
import { playgroundAndFolder, settled, type Playground } from './harness';

let pg: Playground;
let dir: string;
playgroundAndFolder('sat-realsize-', (p, d) => {
  pg = p;
  dir = d;
});

const rows = 'document.querySelectorAll(\'[data-testid="stage-row"]\').length';

/** Three seats, and a stage long enough (a few seconds) to watch and cancel. */
const cfg = presetConfig('arith-team', { batch: 4, group: 4, evalEpisodes: 64, certEpisodes: 64, geoIters: 0, epochs: 2, maxNew: 3, stages: 3 });

async function openLink(p: Page, checkpoints?: readonly ShareCheckpoint[]): Promise<void> {
  await p.goto('about:blank');
  await p.goto(pg.url + (await encodeShare(makeShareState(cfg, { preset: 'arith-team', ...(checkpoints ? { checkpoints } : {}) }))), { waitUntil: 'load' });
  await p.getByText(/Opened a shared experiment/).waitFor({ timeout: 120_000 });
  await settled(p);
}

describe('a team of three checkpoint seats in the page', () => {
  it('seats a folder in three seats; a stage shows its progress and time left; Cancel puts the team back; the stage then runs as if never cancelled; cards show tokens/s', async () => {
    const ck = hfCheckpoint();
    writeHfFolder(join(dir, 'tiny-llama'), ck.files);
    const hash = await hfFolderHash(ck.files);
    const name = `tiny-llama@${hash.slice(0, 8)}`;

    const p = await pg.freshPage();
    await openLink(p);
    for (const j of [0, 1, 2]) {
      await p.getByTestId(`checkpoint-${j}-input`).setInputFiles(join(dir, 'tiny-llama'));
      await p.getByTestId(`checkpoint-${j}-name`).waitFor({ timeout: 120_000 });
      await settled(p);
    }
    for (const j of [0, 1, 2]) expect(await p.getByTestId(`agent-${j}`).innerText()).toContain(`${name}#${j}`);

    // Step stage: the stage's own progress, its bar, then the time left at its pace; then Cancel.
    await p.getByTestId('step-stage').click();
    const label = p.locator('[data-testid="progress"] .work-label');
    await p.waitForFunction(() => /^Stage 1: /.test(document.querySelector('[data-testid="progress"] .work-label')?.textContent ?? ''), undefined, { timeout: 60_000 });
    expect(await p.locator('[data-testid="progress"] [role="progressbar"]').count()).toBe(1);
    await p.getByTestId('progress-left').waitFor({ timeout: 60_000 });
    expect(await p.getByTestId('progress-left').innerText()).toMatch(/^\d+ % · about \d+ (s|min) left$/);
    const seen = await label.innerText();
    expect(seen).toMatch(/^Stage 1: (the |agent \d of 3: )/);
    await p.getByTestId('cancel').click();
    await p.getByText(/Stage 1 was cancelled: the team is back where it started/).waitFor({ timeout: 120_000 });
    await settled(p);
    expect(await p.evaluate(rows)).toBe(0);
    expect(await p.getByTestId('where').innerText()).toBe('Ready: stage 1 of 3 next');

    // The same stage again, to its end.
    await p.getByTestId('step-stage').click();
    await p.waitForFunction(`${rows} === 1`, undefined, { timeout: 180_000 });
    await settled(p);
    const row = await p.getByTestId('stage-row').first().innerText();
    for (const j of [0, 1, 2]) {
      await p.getByTestId(`checkpoint-${j}-speed`).waitFor({ timeout: 10_000 });
      expect(await p.getByTestId(`checkpoint-${j}-speed`).innerText()).toMatch(/^samples [\d,.]+ tokens\/s \([\d,.]+ new tokens\/s\), measured here$/);
    }

    // A page that never cancelled: the same stage row.
    await openLink(p, [0, 1, 2].map((agent) => ({ agent, name, hash })));
    for (const j of [0, 1, 2]) expect(await p.getByTestId(`checkpoint-${j}-name`).innerText()).toBe(`checkpoint ${name}`);
    await p.getByTestId('step-stage').click();
    await p.waitForFunction(`${rows} === 1`, undefined, { timeout: 180_000 });
    await settled(p);
    expect(await p.getByTestId('stage-row').first().innerText()).toBe(row);
    expect(pg.errors).toEqual([]);
    await p.context().close();
  }, 600_000);
});
