/**
 * The page's session after an imported file asks for a checkpoint this browser lacks: the card's
 * "missing checkpoint" seat is the file's, so a later import of a file that seats no checkpoint
 * (one written before seats were recorded, without the field) clears it — the banner does not stay
 * through later successful imports. Driven from Node with the team in-process (arith-team shrunk,
 * the shipped model read from disk) and no checkpoint storage, so every named checkpoint is missing.
 *
 * Not here: the whole flow in the browser (tests/e2e/hfmodel.test.ts).
 */
import { describe, expect, it } from 'vitest';
import { Session } from '../src/app/session';
import { createPlaygroundStore } from '../src/app/store';
import { loadFromDisk } from '../src/cli/models';
import { createLlmExperiment } from '../src/sat/llmExperiment';
import { presetConfig } from '../src/sat/presets';

const cfg = presetConfig('arith-team', { agents: 2, batch: 2, group: 2, evalEpisodes: 8, epochs: 1, geoIters: 0, maxNew: 3 });

describe('a missing checkpoint asked for by one import', () => {
  it('is no longer shown once a file that seats none is imported', async () => {
    const store = createPlaygroundStore();
    const session = new Session(store, async (c) => {
      const exp = await createLlmExperiment(c, loadFromDisk);
      const infos = await Promise.all(exp.team.map((a) => a.info()));
      return { exp, agents: infos.map((info, index) => ({ ...info, index })), backend: 'test', workers: null, terminate() {} };
    }, null);
    await session.openConfig(cfg, 'arith-team', 'test');
    const plain = session.sessionState()!;
    const { checkpoints: _, ...older } = plain; // a file written before seats were recorded

    await session.restoreSession({ ...plain, checkpoints: [{ agent: 1, name: 'tiny@1a2b3c4d', hash: '1a2b3c4d'.repeat(8), quant: 'q8' }] }, 'file A');
    expect(store.getState().seats).toEqual([expect.objectContaining({ agent: 1, missing: true })]);
    expect(store.getState().error).toContain('which this browser does not keep');

    await session.restoreSession(older, 'file B');
    expect(store.getState().seats.filter((s) => s.missing)).toEqual([]);
  }, 120_000);
});
