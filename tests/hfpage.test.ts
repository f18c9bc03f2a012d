/**
 * A Hugging Face checkpoint folder as a seat in the page (src/app/hfFiles.ts, docs/models.md "Your
 * own checkpoint"): the File list → name → bytes map (the same map, and hash, the CLI builds from
 * disk), the memory refusal before any weight is read, the loader's own messages, the storage
 * round trip over an in-memory store, the share link's "checkpoints" field, and a seat built in a
 * worker being the agent the CLI builds.
 *
 * Not here: the page itself (tests/e2e/hfmodel.test.ts), the loader's checks (tests/hf.test.ts).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { deflateRawSync } from 'node:zlib';
import { afterAll, describe, expect, it } from 'vitest';
import { CheckpointStore, folderEntries, readCheckpointFolder, seatName, type FileLike } from '../src/app/hfFiles';
import { createRemoteExperiment, type RemoteExperiment } from '../src/workers/remoteTeam';
import { parseExperimentFile, parseParts, serializeBoundary, serializeExperiment, serializeHead, type ExperimentData } from '../src/app/savefile';
import { base64urlEncode, decodeShare, encodeShare, makeShareState, SHARE_PREFIX } from '../src/app/share';
import { openHfFolder } from '../src/cli/hfSeat';
import { hfFolderHash, loadHfCheckpoint } from '../src/model/hfLoad';
import { presetConfig } from '../src/sat/presets';
import { HF_SEAT_MAX_SEQ, hfSeatAgent, hfSeatBudget, hfSeatSeed } from '../src/sat/hfSeat';
import { hfCheckpoint, writeHfFolder } from './helpers/hfCheckpoint';
import { MemoryStore } from './helpers/memoryStore';
import { nodeAgentWorker, workersStillAlive } from './helpers/nodeAgentWorker';

/** A File as a folder picker gives it: its path under the picked folder, and a count of reads. */
function fileOf(path: string, bytes: Uint8Array, reads?: string[]): FileLike {
  const name = path.slice(path.lastIndexOf('/') + 1);
  return {
    name,
    size: bytes.byteLength,
    webkitRelativePath: path.includes('/') ? path : '',
    async arrayBuffer() {
      reads?.push(path);
      return bytes.slice().buffer;
    },
  };
}

function picked(folder: string, files: ReadonlyMap<string, Uint8Array>, reads?: string[]): FileLike[] {
  return [...files].map(([n, b]) => fileOf(`${folder}/${n}`, b, reads));
}

const cfg = presetConfig('arith-team', { agents: 2, batch: 2, group: 2, evalEpisodes: 8, epochs: 1, geoIters: 0, maxNew: 3 });
const roomy = { bytes: 2 ** 34, where: 'the test' };
const enc = (v: unknown) => new TextEncoder().encode(JSON.stringify(v));

describe('File list → name → bytes map', () => {
  it('names a file by its path in the picked folder, keeps only the folder\'s own JSON and safetensors, and hashes as the CLI does', async () => {
    const { files } = hfCheckpoint();
    const list = [...picked('tiny-llama', files), fileOf('tiny-llama/README.md', enc('x')), fileOf('tiny-llama/onnx/model.json', enc({}))];
    const { folder, entries } = folderEntries(list);
    expect(folder).toBe('tiny-llama');
    expect([...entries.keys()].sort()).toEqual([...files.keys()].sort());
    const dir = mkdtempSync(join(tmpdir(), 'hfpage-'));
    try {
      writeHfFolder(dir, files);
      // The CLI's folder, every file read whole (safetensors files are held open for positioned reads).
      const opened = await openHfFolder(dir);
      const fromDisk = new Map<string, Uint8Array>();
      for (const [k, f] of opened.files) fromDisk.set(k, f instanceof Uint8Array ? f : await f.read(0, f.byteLength));
      await opened.close();
      const read = await readCheckpointFolder(list, cfg, roomy);
      expect([...read.files.keys()]).toEqual([...fromDisk.keys()]);
      for (const [k, v] of fromDisk) expect(read.files.get(k)).toEqual(v);
      expect(read.hash).toBe(await hfFolderHash(fromDisk));
      expect(read.name).toBe(`tiny-llama@${read.hash.slice(0, 8)}`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('takes dropped files by their names, named after the config when there is no folder', async () => {
    const { files } = hfCheckpoint();
    const list = [...files].map(([n, b]) => fileOf(n, b));
    const r = await readCheckpointFolder(list, cfg, roomy);
    expect(r.name).toBe(seatName('', r.hash, 'tests/tiny-llama'));
    expect(r.name.startsWith('tiny-llama@')).toBe(true);
  });

  it('refuses an empty list, files from two folders, two files of one name, and a list with no checkpoint file', () => {
    expect(() => folderEntries([])).toThrow(/no files were given/);
    expect(() => folderEntries([fileOf('a/config.json', enc({})), fileOf('b/tokenizer.json', enc({}))])).toThrow(/two folders, "a" and "b"/);
    expect(() => folderEntries([fileOf('config.json', enc({})), fileOf('config.json', enc({}))])).toThrow(/two files are named "config.json"/);
    expect(() => folderEntries([fileOf('SmolLM-135M', new Uint8Array())])).toThrow(/none of the 1 file given is a \.json or \.safetensors file.*drop one folder, or its files, or pick the folder/);
  });

  it('refuses a checkpoint that does not fit having read only its JSON files (no weight), naming every part of the estimate', async () => {
    const { files } = hfCheckpoint();
    const reads: string[] = [];
    const tiny = { bytes: 1024, where: 'this page (test limit)' };
    await expect(readCheckpointFolder(picked('big', files, reads), cfg, tiny)).rejects.toThrow(/needs about .* \(weights .* \+ LoRA .* \+ activations .*\) but this page \(test limit\) allows 1\.0 KiB/);
    expect(reads[0]).toBe('big/config.json'); // then the tokenizer's JSON files (the context is measured with them), no weights
    expect(reads.filter((r) => !r.endsWith('.json'))).toEqual([]);
  });

  it('gives the loader\'s own message for a malformed folder: a gpt2 config, no config.json', async () => {
    const { files } = hfCheckpoint({ config: { model_type: 'gpt2' } });
    await expect(readCheckpointFolder(picked('g', files), cfg, roomy)).rejects.toThrow(/model_type.*gpt2/);
    const noConfig = new Map([...files].filter(([k]) => k !== 'config.json'));
    await expect(readCheckpointFolder(picked('g', noConfig), cfg, roomy)).rejects.toThrow(/"config\.json" is missing/);
  });
});

describe('the card\'s quantization choice', () => {
  it('estimates each choice (q4 < q8 < f32) and refuses the one that does not fit before reading any weight, while a smaller one is read', async () => {
    const { files } = hfCheckpoint();
    const [q8, q4, f32] = await Promise.all((['q8', 'q4', 'f32'] as const).map((q) => readCheckpointFolder(picked('t', files), cfg, roomy, undefined, q)));
    expect([q8!.quant, q4!.quant, f32!.quant]).toEqual(['q8', 'q4', 'f32']);
    expect(q4!.estimate.weights).toBeLessThan(q8!.estimate.weights);
    expect(q8!.estimate.weights).toBeLessThan(f32!.estimate.weights);
    expect(q4!.estimate.total).toBeLessThan(q8!.estimate.total);
    expect(q4!.hash).toBe(q8!.hash); // the files are the same: the choice is the seat's, not the folder's
    const between = { bytes: Math.floor((q4!.estimate.total + q8!.estimate.total) / 2), where: 'this page (test limit)' };
    const reads: string[] = [];
    await expect(readCheckpointFolder(picked('t', files, reads), cfg, between, undefined, 'q8')).rejects.toThrow(/needs about .* but this page \(test limit\) allows/);
    expect(reads.filter((r) => !r.endsWith('.json'))).toEqual([]);
    expect((await readCheckpointFolder(picked('t', files), cfg, between, undefined, 'q4')).quant).toBe('q4');
  });

  it('round-trips in the stored seating; a seating stored before the choice existed reads as q8', async () => {
    const mem = new MemoryStore();
    const store = new CheckpointStore(mem);
    const h = 'cd'.repeat(32);
    await store.saveSeating([{ agent: 0, name: 'a', hash: h, quant: 'q4' }, { agent: 1, name: 'b', hash: h, quant: 'f32' }]);
    expect(await store.loadSeating()).toEqual({ ok: true, value: [{ agent: 0, name: 'a', hash: h, quant: 'q4' }, { agent: 1, name: 'b', hash: h, quant: 'f32' }] });
    mem.map.set('seating', [{ agent: 0, name: 'a', hash: h }]);
    expect(await store.loadSeating()).toEqual({ ok: true, value: [{ agent: 0, name: 'a', hash: h, quant: 'q8' }] });
  });
});

describe('CheckpointStore', () => {
  it('keeps the raw files under their hash and gives them back byte for byte; the seating round-trips; a copy goes only when its seat lets it go', async () => {
    const mem = new MemoryStore();
    const store = new CheckpointStore(mem);
    const c = await readCheckpointFolder(picked('tiny-llama', hfCheckpoint().files), cfg, roomy);
    const saved = await store.save(c);
    expect(saved).toEqual({ ok: true, value: c.bytes });
    const back = await store.load(c.hash);
    expect(back.ok && back.value?.name).toBe(c.name);
    if (!back.ok || !back.value) throw new Error('not loaded');
    expect([...back.value.files.keys()]).toEqual([...c.files.keys()]);
    for (const [k, v] of c.files) expect(back.value.files.get(k)).toEqual(v);
    expect(await store.load('0'.repeat(64))).toEqual({ ok: true, value: null });
    expect(await store.saveSeating([{ agent: 1, name: c.name, hash: c.hash }])).toEqual({ ok: true, value: undefined });
    expect(await store.loadSeating()).toEqual({ ok: true, value: [{ agent: 1, name: c.name, hash: c.hash, quant: 'q8' }] });
    await store.saveSeating([]); // a link without checkpoints: the stored copy stays
    expect((await store.load(c.hash)).ok && mem.map.has(`checkpoint:${c.hash}`)).toBe(true);
    await store.saveSeating([{ agent: 0, name: c.name, hash: c.hash }], [c.hash]); // still held by agent 0
    expect(mem.map.has(`checkpoint:${c.hash}`)).toBe(true);
    await store.saveSeating([], [c.hash]); // its seat went back to the shipped model
    expect(await store.load(c.hash)).toEqual({ ok: true, value: null });
  });

  it('refuses a damaged stored copy and a malformed seating, saying so', async () => {
    const mem = new MemoryStore();
    const store = new CheckpointStore(mem);
    const c = await readCheckpointFolder(picked('t', hfCheckpoint().files), cfg, roomy);
    await store.save(c);
    const v = mem.map.get(`checkpoint:${c.hash}`) as { files: [string, Uint8Array][] };
    v.files[0]![1][0]! ^= 1;
    const r = await store.load(c.hash);
    expect(r.ok).toBe(false);
    expect(!r.ok && r.error).toMatch(/no longer matches its hash.*pick its folder again/);
    mem.map.set('seating', [{ agent: 'x', name: 'n', hash: 'h' }]);
    const s = await store.loadSeating();
    expect(!s.ok && s.error).toMatch(/seating of checkpoints is not in a form this page reads/);
    mem.map.set('seating', [{ agent: 0, name: 'n', hash: c.hash, quant: 'q3' }]);
    const q = await store.loadSeating();
    expect(!q.ok && q.error).toMatch(/seating of checkpoints is not in a form this page reads/);
    mem.failNext = new DOMException('full', 'QuotaExceededError');
    const f = await store.save(c);
    expect(!f.ok && f.error).toMatch(/storage for this site is full/);
  });
});

describe('share links: the seats\' checkpoints', () => {
  const h = 'ab'.repeat(32);
  const craft = (obj: unknown) => SHARE_PREFIX + base64urlEncode(deflateRawSync(new TextEncoder().encode(JSON.stringify(obj))));

  it('records {agent, hash, name} per seat and reads it back exactly (sorted by agent)', async () => {
    const cps = [{ agent: 1, name: 'SmolLM-135M@abababab', hash: h }, { agent: 0, name: 'tiny-llama@12345678', hash: '12'.repeat(32) }];
    const link = await encodeShare(makeShareState(cfg, { preset: 'arith-team', checkpoints: cps }));
    const r = await decodeShare(link);
    if (!r.ok) throw new Error(r.error);
    expect(r.state.checkpoints).toEqual([cps[1], cps[0]]);
    expect(r.config).toEqual(cfg);
    const plain = await decodeShare(await encodeShare(makeShareState(cfg, { preset: 'arith-team' })));
    expect(plain.ok && plain.state.checkpoints).toBeUndefined();
  });

  it('records a seat\'s quantization when it is not q8 (q8 links are as before) and reads it back', async () => {
    const cps = [{ agent: 0, name: 'a@12345678', hash: h, quant: 'q4' as const }, { agent: 1, name: 'b@12345678', hash: h, quant: 'q8' as const }];
    const link = await encodeShare(makeShareState(cfg, { preset: 'arith-team', checkpoints: cps }));
    const r = await decodeShare(link);
    if (!r.ok) throw new Error(r.error);
    expect(r.state.checkpoints).toEqual([cps[0], { agent: 1, name: 'b@12345678', hash: h }]);
    const without = await encodeShare(makeShareState(cfg, { preset: 'arith-team', checkpoints: [{ agent: 1, name: 'b@12345678', hash: h }] }));
    expect(await encodeShare(makeShareState(cfg, { preset: 'arith-team', checkpoints: [cps[1]!] }))).toBe(without);
  });

  it('refuses a malformed field with a message naming what is wrong', async () => {
    const base = { preset: 'arith-team', agents: 2 };
    const cases: [unknown, RegExp][] = [
      [{ ...base, checkpoints: [{ agent: 0, hash: 'xyz', name: 'a' }] }, /64 lowercase hex digits/],
      [{ ...base, checkpoints: [{ agent: 2, hash: h, name: 'a' }] }, /integer in \[0, 1\]/],
      [{ ...base, checkpoints: [{ agent: 0, hash: h, name: 'a' }, { agent: 0, hash: h, name: 'b' }] }, /seats agent 0 twice/],
      [{ ...base, checkpoints: [{ agent: 0, hash: h, name: 'a'.repeat(65) }] }, /1\.\.64 printable characters/],
      [{ ...base, checkpoints: [{ agent: 0, hash: h, name: 'a', files: 1 }] }, /unknown entry "files"/],
      [{ ...base, checkpoints: {} }, /not a non-empty list/],
      [{ ...base, checkpoints: [{ agent: 0, hash: h, name: 'a', quant: 'q2' }] }, /quant to be one of "q8", "q4", "f32".*not "q2"/],
      [{ preset: 'climbing', checkpoints: [{ agent: 0, hash: h, name: 'a' }] }, /task "climbing" is not a language task/],
    ];
    for (const [obj, msg] of cases) {
      const r = await decodeShare(craft(obj));
      expect(r.ok, JSON.stringify(obj)).toBe(false);
      if (!r.ok) {
        expect(r.code).toBe('checkpoints');
        expect(r.error).toMatch(msg);
      }
    }
    await expect(encodeShare(makeShareState(cfg, { preset: 'arith-team', checkpoints: [{ agent: 5, name: 'a', hash: h }] }))).rejects.toThrow(/Cannot make a share link: "checkpoints"/);
  });
});

describe('experiment files: the seats\' checkpoints', () => {
  const h = 'ef'.repeat(32);
  const data = (checkpoints?: unknown): ExperimentData => ({
    config: cfg, presetName: 'arith-team', createdAt: '2026-12-01T00:00:00.000Z', stages: [], betas: [cfg.beta, cfg.beta], cursor: { stage: 0 },
    agents: [0, 1].map(() => ({ snapshot: { params: new Float64Array(3), optim: new Float64Array(7) } })),
    ...(checkpoints !== undefined ? { checkpoints: checkpoints as ExperimentData['checkpoints'] } : {}),
  });

  it('records {agent, name, hash, quant} per seat and reads it back, in a whole file and in the autosave\'s parts; a file without the field opens as before', () => {
    const seats = [{ agent: 1, name: 'tiny-llama@efefefef', hash: h, quant: 'q4' as const }];
    const r = parseExperimentFile(serializeExperiment(data(seats)));
    if (!r.ok) throw new Error(r.error);
    expect(r.value.checkpoints).toEqual(seats);
    const d = data(seats);
    const parts = parseParts(serializeHead(d), serializeBoundary(d), []);
    expect(parts.ok && parts.value.checkpoints).toEqual(seats);
    const none = parseExperimentFile(serializeExperiment(data([])));
    expect(none.ok && none.value.checkpoints).toEqual([]);
    const old = parseExperimentFile(serializeExperiment(data()));
    expect(old.ok && 'checkpoints' in old.value).toBe(false);
  });

  it('refuses a malformed entry with a message naming it', () => {
    const cases: [unknown, RegExp][] = [
      [[{ agent: 2, name: 'a', hash: h, quant: 'q8' }], /checkpoint entry 0 has agent 2; an agent is an integer in \[0, 1\]/],
      [[{ agent: 0, name: 'a', hash: 'xyz', quant: 'q8' }], /hash the text "xyz"; a folder hash is 64 lowercase hex digits/],
      [[{ agent: 0, name: 'a', hash: h, quant: 'q2' }], /quant the text "q2"; a seat's quantization is one of "q8", "q4", "f32"/],
      [[{ agent: 0, name: 'a', hash: h, quant: 'q8' }, { agent: 0, name: 'b', hash: h, quant: 'q8' }], /seats agent 0 a second time/],
      [[0, 1, 0].map((agent) => ({ agent, name: 'a', hash: h, quant: 'q8' })), /"checkpoints" is not a list of at most 2 seats/],
    ];
    for (const [v, msg] of cases) {
      const r = parseExperimentFile(serializeExperiment(data(v)));
      expect(r.ok, JSON.stringify(v)).toBe(false);
      if (!r.ok) {
        expect(r.code).toBe('agents');
        expect(r.error).toMatch(msg);
      }
    }
  });
});

describe('a checkpoint seat in a worker', () => {
  const opened: RemoteExperiment[] = [];
  afterAll(() => opened.forEach((e) => e.terminate()));

  it('is the agent the CLI builds: same name, parameters and held-out J as the in-process seat; a bad folder rejects with the loader\'s message; Cancel ends the new workers', async () => {
    const { files } = hfCheckpoint();
    const c = await readCheckpointFolder(picked('tiny-llama', files), cfg, roomy);
    const progress: string[] = [];
    const load = async () => {
      throw new Error('no shipped model is needed: every seat holds the checkpoint');
    };
    const seats = new Map([0, 1].map((j) => [j, c] as const));
    const exp = await createRemoteExperiment(cfg, { makeWorker: () => nodeAgentWorker(), load, seats, seatLimit: roomy, onSeatProgress: (j, p) => progress.push(`${j} ${p.phase} ${p.done}/${p.total}`) });
    opened.push(exp);
    expect(exp.infos.map((i) => i.name)).toEqual([`${c.name}#0`, `${c.name}#1`]);
    expect(progress).toContain('0 reading 1/1');
    expect(progress.some((l) => /^1 quantizing \d+\/\d+$/.test(l))).toBe(true);
    // The same seats in this process (the CLI's construction): same parameters, same J₀ bit for bit.
    const m = await loadHfCheckpoint(files, { quant: 'q8', maxSeq: HF_SEAT_MAX_SEQ });
    const local = [0, 1].map((j) => hfSeatAgent(j, m, { loraRank: hfSeatBudget(cfg).loraRank, loraAlpha: cfg.loraAlpha, seed: hfSeatSeed(cfg.seed, j), temperature: cfg.temperature, topK: cfg.topK, name: c.name }));
    expect(exp.infos.map((i) => i.parameters)).toEqual(await Promise.all(local.map(async (a) => (await a.info()).parameters)));
    expect(exp.j0).toBe((await exp.env.evaluate(local)).J);

    const bad = new Map(files);
    bad.set('model.safetensors', files.get('model.safetensors')!.slice(0, 100));
    const broken = { ...c, files: bad };
    await expect(createRemoteExperiment(cfg, { makeWorker: () => nodeAgentWorker(), load, seats: new Map([[0, broken], [1, c]]), seatLimit: roomy })).rejects.toThrow(/model\.safetensors: /);
    // Cancel: every worker started is ended, and the build rejects saying so.
    const abort = new AbortController();
    const cancelled = createRemoteExperiment(cfg, { makeWorker: () => nodeAgentWorker(), load, seats, seatLimit: roomy, signal: abort.signal, onSeatProgress: () => abort.abort() });
    await expect(cancelled).rejects.toThrow(/Building the team was cancelled/);
    exp.terminate();
    expect(await workersStillAlive()).toBe(0);
  }, 120_000);
  it('loads the seat as its quantization says: a q4 seat in a worker is the q4 agent built in process (same held-out J), not the q8 one', async () => {
    const { files } = hfCheckpoint();
    const c = await readCheckpointFolder(picked('tiny-llama', files), cfg, roomy, undefined, 'q4');
    const exp = await createRemoteExperiment(cfg, { makeWorker: () => nodeAgentWorker(), load: async () => new Uint8Array(), seats: new Map([0, 1].map((j) => [j, c] as const)), seatLimit: roomy });
    opened.push(exp);
    const local = async (quant: 'q4' | 'q8') => {
      const m = await loadHfCheckpoint(files, { quant, maxSeq: HF_SEAT_MAX_SEQ });
      return [0, 1].map((j) => hfSeatAgent(j, m, { loraRank: hfSeatBudget(cfg).loraRank, loraAlpha: cfg.loraAlpha, seed: hfSeatSeed(cfg.seed, j), temperature: cfg.temperature, topK: cfg.topK, name: c.name }));
    };
    const q4 = (await exp.env.evaluate(await local('q4'))).J;
    expect(exp.j0).toBe(q4);
    // The worker holds q4 weights: its resident bytes are the q4 agent's, below a q8 seat's.
    const q8 = await createRemoteExperiment(cfg, { makeWorker: () => nodeAgentWorker(), load: async () => new Uint8Array(), seats: new Map([0, 1].map((j) => [j, { ...c, quant: 'q8' as const }] as const)), seatLimit: roomy });
    opened.push(q8);
    const [b4, b8] = [await exp.team[0]!.memoryBytes(), await q8.team[0]!.memoryBytes()];
    expect(b4).toBeLessThan(b8);
    const weights = (m: Awaited<ReturnType<typeof loadHfCheckpoint>>) => [...m.weights.values()].reduce((n, t) => n + Object.values(t).reduce((k: number, v) => k + (ArrayBuffer.isView(v) ? v.byteLength : 0), 0), 0);
    expect(b8 - b4).toBe(weights(await loadHfCheckpoint(files, { quant: 'q8', maxSeq: HF_SEAT_MAX_SEQ })) - weights(await loadHfCheckpoint(files, { quant: 'q4', maxSeq: HF_SEAT_MAX_SEQ })));
    exp.terminate();
    q8.terminate();
  }, 120_000);
});
