/**
 * The budgeted input check (src/workers/budget.ts) with real workers: the CLI's worker thread
 * (src/cli/inputCheck.ts) answers a check as the in-process reader does, rebuilds a refusal with
 * its class, and a check past its time budget is terminated and refused naming the input and the
 * budget; a worker that dies past its heap limit is refused naming the memory budget. The page's
 * Web Worker runs the same jobs (tests/e2e/hostile.test.ts drops hostile files on the page).
 *
 * A checkpoint seat's tokenizer is never built on the thread that builds and drives the team (the
 * page's main thread): every HfTokenizer constructed in this test's thread is counted, and a team
 * of two checkpoint seats in worker threads (src/workers/remoteTeam.ts, the seat's context measured
 * by the CLI's budgeted check) is built, evaluated and rolled out with the count at 0; the same
 * seats built in this thread write the same token ids (held-out J, rollout sequences, bit for bit).
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { readRunLog } from '../src/bridge/runLog';
import { ConfigError, FormatError } from '../src/core/errors';
import { parseExperimentFile } from '../src/app/savefile';
import { cliCheck } from '../src/cli/inputCheck';
import { budgeted, inProcess, PER_MIB_MS, timeFor, type CheckWorker } from '../src/workers/budget';
import { readOnnx } from '../src/model/onnx/read';
import { onnxFolder } from './helpers/onnxFolder';
import { presetConfig } from '../src/sat/presets';
import { Rng } from '../src/core/rng';
import { loadHfCheckpoint } from '../src/model/hfLoad';
import { hfSeatAgent, hfSeatBudget, hfSeatContext, hfSeatSeed, HF_SEAT_MAX_SEQ } from '../src/sat/hfSeat';
import { createRemoteExperiment, type RemoteExperiment } from '../src/workers/remoteTeam';
import { hfCheckpoint } from './helpers/hfCheckpoint';
import { nodeAgentWorker, workersStillAlive } from './helpers/nodeAgentWorker';
import { deepJson, gzipBomb, onnxCycle, onnxExternalOffset } from './helpers/hostile';
import { checkedPath } from './helpers/checkedPath';

const built = vi.hoisted(() => ({ n: 0 }));

vi.mock('../src/model/hfTokenizer', async (original) => {
  const m = await original<typeof import('../src/model/hfTokenizer')>();
  class Counted extends m.HfTokenizer {
    constructor(...args: ConstructorParameters<typeof m.HfTokenizer>) {
      super(...args);
      built.n++;
    }
  }
  return { ...m, HfTokenizer: Counted };
});

const settings = presetConfig('arith-team', {});
const teamCfg = presetConfig('arith-team', { agents: 2, batch: 2, group: 2, evalEpisodes: 8, epochs: 1, geoIters: 0, maxNew: 3 });
const roomy = { bytes: 2 ** 34, where: 'the test' };
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
    const path = join(import.meta.dirname, 'fixtures/bridge/logs/verl-file.jsonl');
    const text = readFileSync(path, 'utf8');
    const there = await check('runLog', { source: checkedPath(path), name: 'verl-file.jsonl' }, 'run log');
    expect(there).toEqual(readRunLog(text, 'verl-file.jsonl'));
    expect(there.steps.length).toBeGreaterThan(0);
    const bomb = Array.from({ length: 6_000 }, (_, i) => `k${i}: 1`).join('\n');
    const err = await check('recipe', { text: bomb, base: settings }, 'recipe.yaml').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(FormatError);
    expect((err as Error).message).toMatch(/more than 5,000 (lines|keys)/);
  });

  it('an ONNX graph is checked in the worker from its path: counts of a real export, a cycle or a hex offset refused there', async () => {
    const check = cliCheck();
    const dir = mkdtempSync(join(tmpdir(), 'sat-door-onnx-'));
    const put = (name: string, bytes: Uint8Array) => (writeFileSync(join(dir, name), bytes), checkedPath(join(dir, name)));
    const f = onnxFolder({}, { weights: 'f32', external: true });
    const real = await check('onnxGraph', { graph: put('model.onnx', f.files.get(f.file)!), file: f.file, sizes: [[`${f.file}_data`, f.files.get(`${f.file}_data`)!.length]] }, 'ONNX folder');
    const local = readOnnx(f.files, f.file);
    expect(real).toEqual({ nodes: local.nodes.length, initializers: local.initializers.size, inputs: local.inputs.length, outputs: local.outputs.length });
    const cycle = await check('onnxGraph', { graph: put('cycle.onnx', onnxCycle()), file: 'cycle.onnx', sizes: [] }, 'ONNX folder').catch((e: unknown) => e);
    expect(cycle).toBeInstanceOf(FormatError);
    expect((cycle as Error).message).toMatch(/^cycle\.onnx: node "(first|second)" \(Identity\) is on a cycle/);
    const hex = onnxExternalOffset('0x0');
    const off = await check('onnxGraph', { graph: hex.get('m.onnx')!, file: 'm.onnx', sizes: [['w.bin', 64]] }, 'ONNX folder').catch((e: unknown) => e);
    expect((off as Error).message).toContain('external data offset "0x0" is not a byte offset');
    // a graph's time grows with its size, as an experiment file's does
    expect(timeFor({ timeMs: 20, perMiBMs: PER_MIB_MS }, 'onnxGraph', { graph: { path: 'x', size: 2 ** 21 }, file: '', sizes: [] })).toBe(2020);
  });

  it('a check past its time budget is stopped and refused, naming the input and the budget', async () => {
    const err = await cliCheck(1)('checkpointHead', { files: jsonFiles(hfCheckpoint().files), settings }, '--agent-model 1=slow').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(FormatError);
    expect((err as Error).message).toBe('--agent-model 1=slow: checking it took longer than 0.001 s, the time this playground gives one input (docs/models.md, "Input limits"); it was stopped and nothing was loaded');
  });

  it("an experiment file's time grows with its size; other jobs keep the flat budget", async () => {
    const silent = (): CheckWorker => ({ post: () => {}, onReply: () => {}, onDeath: () => {}, terminate: () => {} });
    const budget = { timeMs: 20, perMiBMs: { experimentFile: 40 } };
    const mib = new Uint8Array(2 ** 20);
    expect(timeFor(budget, 'experimentFile', mib)).toBe(60);
    expect(timeFor(budget, 'experimentFile', new Uint8Array(3 * 2 ** 19))).toBe(80);
    // a folder's files are counted, names included (rounded up: 2 MiB and a few bytes → 81 ms)
    expect(timeFor({ timeMs: 20, perMiBMs: { checkpointHead: 40 } }, 'checkpointHead', { files: [['a.json', mib], ['b.json', mib]], settings })).toBe(101);
    expect(timeFor(budget, 'checkpointHead', { files: [['a.json', mib]], settings })).toBe(20);
    const file = await budgeted(silent, budget)('experimentFile', mib, 'The file “big”').catch((e: unknown) => e);
    expect((file as Error).message).toBe('The file “big”: checking it took longer than 0.06 s, the time this playground gives an input of its size (docs/models.md, "Input limits"); it was stopped and nothing was loaded');
    const head = await budgeted(silent, budget)('checkpointHead', { files: [['config.json', mib]], settings }, 'folder').catch((e: unknown) => e);
    expect((head as Error).message).toBe('folder: checking it took longer than 0.02 s, the time this playground gives one input (docs/models.md, "Input limits"); it was stopped and nothing was loaded');
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

describe('a checkpoint seat in a worker: no tokenizer on the main thread', () => {
  const opened: RemoteExperiment[] = [];
  afterAll(() => opened.forEach((e) => e.terminate()));

  it('builds its tokenizer only off this thread, and writes the token ids the in-process seat writes', async () => {
    built.n = 0; // the checks above build tokenizers in this thread on purpose (inProcess)
    const { files } = hfCheckpoint();
    const seat = { name: 'tiny-llama@0badf00d', hash: '0badf00d', files, quant: 'q8' as const };
    const exp = await createRemoteExperiment(teamCfg, {
      makeWorker: () => nodeAgentWorker(),
      load: async () => new Uint8Array(),
      seats: new Map([0, 1].map((j) => [j, seat] as const)),
      seatLimit: roomy,
      check: cliCheck(60_000), // where the check runs is the point here, not its budget (worker threads start slowly under load)
    });
    opened.push(exp);
    const remote = await exp.env.rollout(exp.team, 2, 2, new Rng(7));
    expect(built.n).toBe(0);

    // The same seats here, as the CLI builds them (this builds tokenizers in this thread).
    const m = await loadHfCheckpoint(files, { quant: 'q8', maxSeq: HF_SEAT_MAX_SEQ });
    expect(built.n).toBeGreaterThan(0); // the counter sees a build in this thread
    const context = hfSeatContext(teamCfg, m.tokenizer, m.info.maxPositions);
    const local = [0, 1].map((j) => hfSeatAgent(j, m, { loraRank: hfSeatBudget(teamCfg).loraRank, loraAlpha: teamCfg.loraAlpha, seed: hfSeatSeed(teamCfg.seed, j), temperature: teamCfg.temperature, topK: teamCfg.topK, name: seat.name }));
    expect(exp.j0).toBe((await exp.env.evaluate(local)).J);
    const here = await exp.env.rollout(local, 2, 2, new Rng(7));
    expect(remote.context).toEqual(here.context);
    expect(remote.episodes).toEqual(here.episodes);
    expect(Math.max(...(remote.context as { seqs: Int32Array[] }).seqs.map((s) => s.length))).toBeLessThanOrEqual(context);
    exp.terminate();
    expect(await workersStillAlive()).toBe(0);
  }, 120_000);
});
