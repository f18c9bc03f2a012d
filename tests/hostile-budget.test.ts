/**
 * The budgeted input check (src/workers/budget.ts) with real workers: the CLI's worker thread
 * (src/cli/inputCheck.ts) answers a check as the in-process reader does, rebuilds a refusal with
 * its class, and a check past its time budget is terminated and refused naming the input and the
 * budget; a worker that dies past its heap limit is refused naming the memory budget. The page's
 * Web Worker runs the same jobs (tests/e2e/hostile.test.ts drops hostile files on the page).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { readRunLog } from '../src/bridge/runLog';
import { ConfigError, FormatError } from '../src/core/errors';
import { parseExperimentFile } from '../src/app/savefile';
import { cliCheck } from '../src/cli/inputCheck';
import { budgeted, inProcess, type CheckWorker } from '../src/workers/budget';
import { presetConfig } from '../src/sat/presets';
import { hfCheckpoint } from './helpers/hfCheckpoint';
import { deepJson, gzipBomb } from './helpers/hostile';

const settings = presetConfig('arith-team', {});
const jsonFiles = (files: Map<string, Uint8Array>) => [...files].filter(([n]) => n.endsWith('.json'));

describe('budgeted input checks', () => {
  it('a worker thread answers as the in-process check does, and rebuilds refusals with their class', async () => {
    const check = cliCheck();
    const files = jsonFiles(hfCheckpoint({ maxPositions: 128 }).files);
    const there = await check('checkpointHead', { files, settings }, 'folder');
    expect(there).toEqual(await inProcess('checkpointHead', { files, settings }, 'folder'));
    expect(there.context).toBeGreaterThan(0);
    const bad = jsonFiles(hfCheckpoint({ config: { rope_scaling: { factor: 2 } } }).files);
    const err = await check('checkpointHead', { files: bad, settings }, 'folder').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).key).toBe('rope_scaling');
    const bomb = gzipBomb(64 * 2 ** 20);
    expect(await check('experimentFile', bomb, 'bomb')).toEqual(parseExperimentFile(bomb));
  });

  it("a folder's config.json is read in the worker: its config and name, or the loader's refusal", async () => {
    const check = cliCheck();
    const config = jsonFiles(hfCheckpoint({ config: { _name_or_path: 'org/tiny' } }).files).filter(([n]) => n === 'config.json');
    const there = await check('checkpointConfig', config, 'folder');
    expect(there).toEqual(await inProcess('checkpointConfig', config, 'folder'));
    expect(there.name).toBe('org/tiny');
    expect(there.cfg.vocab).toBe(272);
    expect(there.info.modelType).toBe('llama');
    const missing = await check('checkpointConfig', [], 'folder').catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(FormatError);
    expect((missing as Error).message).toContain('checkpoint folder: "config.json" is missing');
    const deep = await check('checkpointConfig', [['config.json', deepJson(100_000)]], 'folder').catch((e: unknown) => e);
    expect(deep).toBeInstanceOf(FormatError);
    expect((deep as Error).message).toContain('nested');
  });

  it('run logs and recipes are read in the worker too: the same run, and a key-bomb recipe refused there', async () => {
    const check = cliCheck();
    const text = readFileSync(join(import.meta.dirname, 'fixtures/bridge/logs/verl-file.jsonl'), 'utf8');
    const there = await check('runLog', { text, name: 'verl-file.jsonl' }, 'run log');
    expect(there).toEqual(readRunLog(text, 'verl-file.jsonl'));
    expect(there.steps.length).toBeGreaterThan(0);
    const bomb = Array.from({ length: 6_000 }, (_, i) => `k${i}: 1`).join('\n');
    const err = await check('recipe', { text: bomb, base: settings }, 'recipe.yaml').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(FormatError);
    expect((err as Error).message).toMatch(/more than 5,000 (lines|keys)/);
  });

  it('a check past its time budget is stopped and refused, naming the input and the budget', async () => {
    const err = await cliCheck(1)('checkpointHead', { files: jsonFiles(hfCheckpoint().files), settings }, '--agent-model 1=slow').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(FormatError);
    expect((err as Error).message).toBe('--agent-model 1=slow: checking it took longer than 0.001 s, the time this playground gives one input (docs/models.md, "Input limits"); it was stopped and nothing was loaded');
  });

  it('a worker that dies past its heap limit is refused, naming the memory budget', async () => {
    const hungry = (): CheckWorker => {
      const w = new Worker('const a = []; for (;;) a.push(new Array(1e5).fill(Math.random()));', { eval: true, resourceLimits: { maxOldGenerationSizeMb: 32 } });
      return {
        post: () => {},
        onReply: (cb) => w.once('message', cb),
        onDeath: (cb) => w.once('error', (e: Error & { code?: string }) => cb(e.code === 'ERR_WORKER_OUT_OF_MEMORY' ? 'it ran out of memory' : e.message)),
        terminate: () => void w.terminate(),
      };
    };
    const err = await budgeted(hungry, { timeMs: 60_000, memory: '32 MiB of heap' })('experimentFile', new Uint8Array(1), 'The file “x”').catch((e: unknown) => e);
    expect((err as Error).message).toBe('The file “x”: checking it was stopped: it ran out of memory (the limit is 32 MiB of heap); nothing was loaded');
  });
});
