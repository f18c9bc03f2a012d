/**
 * An ONNX model folder in the page's plumbing (src/app/onnxFiles.ts through hfFiles.ts, the
 * records of src/app/onnxSeatRef.ts), without a browser:
 *   - a picked folder with two graphs (onnx/model.onnx, onnx/model_q4.onnx + its data) keeps the
 *     JSON files and the graph files, reads only the chosen graph (onnx/model.onnx) and its data,
 *     and hashes what it read; a checkpoint folder that also has an onnx/ folder stays a checkpoint
 *     (its onnx/ files are not read: the hash is the one it had);
 *   - the memory refusal comes after the JSON files alone, for both modes;
 *   - the seat's record {file, mode} round-trips in the stored seating, a share link and an
 *     experiment file, and a malformed one is refused by name;
 *   - the read folder seats frozen in a worker (createRemoteExperiment, as the page builds a team).
 */
import { deflateRawSync } from 'node:zlib';
import { afterAll, describe, expect, it } from 'vitest';
import { loadFromDisk } from '../src/cli/models';
import { createRemoteExperiment, type RemoteExperiment } from '../src/workers/remoteTeam';
import { CheckpointStore, folderEntries, readCheckpointFolder, type FileLike } from '../src/app/hfFiles';
import { onnxFolderFiles, readOnnxSeatFolder } from '../src/app/onnxFiles';
import { parseExperimentFile, serializeExperiment, type ExperimentData } from '../src/app/savefile';
import { base64urlEncode, decodeShare, encodeShare, makeShareState, SHARE_PREFIX } from '../src/app/share';
import { hfFolderHash } from '../src/model/hfLoad';
import { presetConfig } from '../src/sat/presets';
import { hfCheckpoint } from './helpers/hfCheckpoint';
import { MemoryStore } from './helpers/memoryStore';
import { nodeAgentWorker } from './helpers/nodeAgentWorker';
import { onnxFolder } from './helpers/onnxFolder';

function picked(folder: string, files: ReadonlyMap<string, Uint8Array>, reads: string[]): FileLike[] {
  return [...files].map(([n, b]) => ({ name: n.slice(n.lastIndexOf('/') + 1), size: b.byteLength, webkitRelativePath: `${folder}/${n}`, arrayBuffer: async () => (reads.push(n), b.slice().buffer) }));
}

const cfg = presetConfig('arith-team', { agents: 2, batch: 2, group: 2, evalEpisodes: 8, epochs: 1, geoIters: 0, maxNew: 3 });
const roomy = { bytes: 2 ** 34, where: 'the test' };

/** A folder with two graphs: f32 onnx/model.onnx, and onnx/model_q4.onnx with external data; plus a README. */
function twoGraphs(): Map<string, Uint8Array> {
  const spec = { kvHeads: 2, maxPositions: 128 };
  const files = new Map(onnxFolder(spec, { weights: 'f32' }).files);
  for (const [k, v] of onnxFolder(spec, { weights: 'q4', external: true, file: 'onnx/model_q4.onnx' }).files) if (k.startsWith('onnx/')) files.set(k, v);
  files.set('README.md', new TextEncoder().encode('# tiny'));
  return files;
}

describe('an ONNX folder in the page', () => {
  const opened: RemoteExperiment[] = [];
  afterAll(() => opened.forEach((e) => e.terminate()));

  it('refuses an oversized tokenizer.json before reading it, and a runaway pre-tokenizer pattern by name', async () => {
    const files = twoGraphs();
    const reads: string[] = [];
    const big = picked('tiny-onnx', files, reads).map((f) => (f.name === 'tokenizer.json' ? { ...f, size: 64 * 2 ** 20 } : f));
    await expect(readCheckpointFolder(big, cfg, roomy, undefined, 'q8', 'frozen')).rejects.toThrow(/ONNX folder: "tokenizer\.json" is 64\.0 MiB, more than the .* this page reads for it/);
    expect(reads).not.toContain('tokenizer.json');
    const tk = JSON.parse(new TextDecoder().decode(files.get('tokenizer.json'))) as Record<string, unknown>;
    tk.pre_tokenizer = { type: 'Split', pattern: { Regex: '([\\s\\S]+)+Q' }, behavior: 'Isolated', invert: false };
    files.set('tokenizer.json', new TextEncoder().encode(JSON.stringify(tk)));
    for (const mode of ['frozen', 'trainable'] as const) {
      await expect(readCheckpointFolder(picked('tiny-onnx', files, []), cfg, roomy, undefined, 'q8', mode)).rejects.toThrow(/tokenizer\.json: the pattern .* could take exponential time to match/);
    }
  });

  it('reads only the chosen graph and its data, after the estimate; hashes what it read', async () => {
    const files = twoGraphs();
    const reads: string[] = [];
    const entries = folderEntries(picked('tiny-onnx', files, reads)).entries;
    expect([...entries.keys()].sort()).toEqual(['config.json', 'generation_config.json', 'onnx/model.onnx', 'onnx/model_q4.onnx', 'onnx/model_q4.onnx_data', 'tokenizer.json', 'tokenizer_config.json']);
    const c = await readCheckpointFolder(picked('tiny-onnx', files, reads), cfg, roomy, undefined, 'q8', 'frozen');
    expect(c.onnx).toEqual({ file: 'onnx/model.onnx', mode: 'frozen' });
    expect([...c.files.keys()].sort()).toEqual(['config.json', 'generation_config.json', 'onnx/model.onnx', 'tokenizer.json', 'tokenizer_config.json']);
    expect(reads).not.toContain('onnx/model_q4.onnx');
    expect(reads.filter((r) => r === 'onnx/model.onnx')).toHaveLength(1); // once: the check hands back the bytes it read
    expect(c.files.get('onnx/model.onnx')).toEqual(files.get('onnx/model.onnx'));
    expect(c.hash).toBe(await hfFolderHash(c.files));
    expect(c.name).toBe(`tiny-onnx@${c.hash.slice(0, 8)}`);
    const t = await readCheckpointFolder(picked('tiny-onnx', files, []), cfg, roomy, undefined, 'q8', 'trainable');
    expect(t.params).toBeGreaterThan(0);
    expect(t.estimate.total).toBeGreaterThan(c.estimate.total); // LoRA, activations, and the parity check's f32 copy
  });

  it('reads another graph of the folder when one is chosen: only it and its data, its own hash; a file the folder lacks is refused', async () => {
    const files = twoGraphs();
    const reads: string[] = [];
    const entries = folderEntries(picked('tiny-onnx', files, reads)).entries;
    expect(onnxFolderFiles(entries.keys())).toEqual(['onnx/model.onnx', 'onnx/model_q4.onnx']);
    const q4 = await readOnnxSeatFolder('tiny-onnx', entries, cfg, roomy, 'q8', 'frozen', undefined, 'onnx/model_q4.onnx');
    expect(q4.onnx).toEqual({ file: 'onnx/model_q4.onnx', mode: 'frozen' });
    expect([...q4.files.keys()].sort()).toEqual(['config.json', 'generation_config.json', 'onnx/model_q4.onnx', 'onnx/model_q4.onnx_data', 'tokenizer.json', 'tokenizer_config.json']);
    expect(reads).not.toContain('onnx/model.onnx');
    const dflt = await readOnnxSeatFolder('tiny-onnx', entries, cfg, roomy, 'q8', 'frozen');
    expect(dflt.onnx!.file).toBe('onnx/model.onnx');
    expect(q4.hash).not.toBe(dflt.hash);
    await expect(readOnnxSeatFolder('tiny-onnx', entries, cfg, roomy, 'q8', 'frozen', undefined, 'onnx/model_fp16.onnx')).rejects.toThrow('ONNX folder: "onnx/model_fp16.onnx" is not one of its .onnx files (it has: onnx/model.onnx, onnx/model_q4.onnx)');
  });

  it('refuses a folder that does not fit having read only its JSON files, in both modes', async () => {
    for (const mode of ['trainable', 'frozen'] as const) {
      const reads: string[] = [];
      await expect(readCheckpointFolder(picked('tiny-onnx', twoGraphs(), reads), cfg, { bytes: 64 * 1024, where: 'the test' }, undefined, 'q8', mode)).rejects.toThrow(/needs about .* but the test allows 64\.0 KiB/);
      expect(reads.every((r) => r.endsWith('.json'))).toBe(true);
    }
  });

  it('a checkpoint folder with an onnx/ folder stays a checkpoint: its onnx/ files are not kept', async () => {
    const { files } = hfCheckpoint();
    const withOnnx = new Map(files);
    withOnnx.set('onnx/model.onnx', new Uint8Array(10));
    const a = folderEntries(picked('t', withOnnx, [])).entries;
    expect([...a.keys()].some((n) => n.endsWith('.onnx'))).toBe(false);
  });

  it('records {file, mode} in the stored seating, a share link and an experiment file; refuses a malformed one', async () => {
    const h = 'ab'.repeat(32);
    const onnx = { file: 'onnx/model_q4.onnx', mode: 'frozen' as const };
    const store = new CheckpointStore(new MemoryStore());
    await store.saveSeating([{ agent: 1, name: 'x@abababab', hash: h, quant: 'q8', onnx }]);
    expect(await store.loadSeating()).toEqual({ ok: true, value: [{ agent: 1, name: 'x@abababab', hash: h, quant: 'q8', onnx }] });
    const link = await encodeShare(makeShareState(cfg, { preset: 'arith-team', checkpoints: [{ agent: 1, name: 'x@abababab', hash: h, onnx }] }));
    const r = await decodeShare(link);
    expect(r.ok && r.state.checkpoints).toEqual([{ agent: 1, name: 'x@abababab', hash: h, onnx }]);
    const craft = (o: unknown) => SHARE_PREFIX + base64urlEncode(deflateRawSync(new TextEncoder().encode(JSON.stringify({ preset: 'arith-team', agents: 2, checkpoints: [{ agent: 0, hash: h, name: 'a', onnx: o }] }))));
    for (const bad of [{ file: '../x.onnx', mode: 'frozen' }, { file: 'onnx/model.onnx', mode: 'thawed' }, 'onnx/model.onnx']) {
      const b = await decodeShare(craft(bad));
      expect(!b.ok && b.error, JSON.stringify(bad)).toMatch(/needs each onnx to be \{file: "….onnx", mode: "trainable" or "frozen"\}/);
    }
    const data: ExperimentData = {
      config: cfg, presetName: 'arith-team', createdAt: '2026-12-01T00:00:00.000Z', stages: [], betas: [cfg.beta, cfg.beta], cursor: { stage: 0 },
      agents: [0, 1].map(() => ({ snapshot: { params: new Float64Array(3), optim: new Float64Array(7) } })),
      checkpoints: [{ agent: 1, name: 'x@abababab', hash: h, quant: 'q8', onnx }],
    };
    const f = parseExperimentFile(serializeExperiment(data));
    expect(f.ok && f.value.checkpoints).toEqual(data.checkpoints);
  });

  it('readCheckpointFolder passes the chosen graph on: the one a link or the card names, not the folder\'s first', async () => {
    const chosen = await readCheckpointFolder(picked('tiny-onnx', twoGraphs(), []), cfg, roomy, undefined, 'q8', 'frozen', 'onnx/model_q4.onnx');
    const direct = await readOnnxSeatFolder('tiny-onnx', folderEntries(picked('tiny-onnx', twoGraphs(), [])).entries, cfg, roomy, 'q8', 'frozen', undefined, 'onnx/model_q4.onnx');
    expect(chosen.onnx).toEqual({ file: 'onnx/model_q4.onnx', mode: 'frozen' });
    expect(chosen.hash).toBe(direct.hash);
  });

  it('a folder read in the page seats frozen in a worker; its backend line names onnxruntime-web', async () => {
    const c = await readCheckpointFolder(picked('tiny-onnx', twoGraphs(), []), cfg, roomy, undefined, 'q8', 'frozen');
    const exp = await createRemoteExperiment(cfg, { makeWorker: () => nodeAgentWorker(), load: loadFromDisk, seats: new Map([[1, c]]), seatLimit: roomy });
    opened.push(exp);
    expect(exp.infos[1]).toMatchObject({ name: `${c.name}#1`, parameters: 0 });
    expect(exp.infos[1]!.backend).toMatch(/^onnxruntime-web wasm/);
    exp.terminate();
  }, 120_000);
});
