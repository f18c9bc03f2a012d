/**
 * Hostile ONNX graphs against the reader (src/model/onnx/read.ts), one regression per class: a
 * repeated float_data field in one-value chunks (read in one pass), node and initializer counts
 * past ONNX_LIMITS, a cycle, If nested 10,000 deep, an external-data offset written "0x0", packed
 * lists of 500,000 values. Each is refused with a FormatError naming the file, the field and the
 * limit — or, for the legitimate-but-awkward float_data, read with the right values — and never
 * reaches onnxruntime. The graphs are built in memory (tests/helpers/hostile.ts).
 *
 * Not here: the budgeted worker that runs this reader (tests/hostile-budget.test.ts), timing
 * (bench/hostile.ts), fuzzing (tests/hostile-fuzz.test.ts).
 */
import { describe, expect, it } from 'vitest';
import { FormatError } from '../src/core/errors';
import { ONNX_LIMITS } from '../src/core/limits';
import { readOnnx, scanOnnxCounts, tensorF32 } from '../src/model/onnx/read';
import { runJob } from '../src/workers/inputJobs';
import { onnxFolder } from './helpers/onnxFolder';
import { onnxCycle, onnxExternalOffset, onnxFloatChunks, onnxIdentityNodes, onnxNestedIf, onnxPackedInts, onnxScalarInitializers } from './helpers/hostile';

function refusal(files: Map<string, Uint8Array>, file = 'm.onnx'): string {
  if (!files.has(file)) files = new Map([[file, [...files.values()][0]!]]);
  try {
    readOnnx(files, file);
  } catch (e) {
    expect(e).toBeInstanceOf(FormatError);
    return (e as Error).message;
  }
  throw new Error('accepted');
}
const one = (bytes: Uint8Array) => new Map([['m.onnx', bytes]]);

describe('hostile ONNX graphs', () => {
  it('float_data in 600,000 one-value chunks is read in one pass, every value in place', () => {
    const n = 600_000;
    const m = readOnnx(one(onnxFloatChunks(n)), 'm.onnx');
    const w = tensorF32(m, new Map(), m.initializers.get('w')!);
    expect(w.length).toBe(n);
    expect(w.every((x) => x === 0)).toBe(true);
  });

  it('more nodes or initializers than the caps are refused by count, naming the limit', () => {
    expect(refusal(one(onnxIdentityNodes(ONNX_LIMITS.nodes + 1)))).toBe(`m.onnx: the graph has more than 100,000 nodes (its subgraphs included), past what this playground reads (docs/models.md, "Input limits"); a decoder has far fewer`);
    expect(refusal(one(onnxScalarInitializers(ONNX_LIMITS.initializers + 1)))).toMatch(/^m\.onnx: the graph has more than 100,000 initializers/);
    expect(readOnnx(one(onnxIdentityNodes(1_000)), 'm.onnx').nodes).toHaveLength(1_000);
  });

  it('a 1,000,000-node file is refused from its field keys, a window at a time, before the file is read whole', async () => {
    const { Msg } = await import('../bench/onnx/protobuf');
    // One Identity node's field repeated (the scan counts fields; the full read would name the duplicate output)
    const field = new Msg().msg(1, new Msg().str(1, 'x').str(2, 'y').str(4, 'Identity')).bytes();
    const graph = new Uint8Array(field.length * 1_000_000);
    for (let i = 0; i < 1_000_000; i++) graph.set(field, i * field.length);
    const bytes = new Msg().int(1, 8).raw(7, graph).bytes();
    const reads: number[] = [];
    const err = await scanOnnxCounts(async (o, n) => (reads.push(n), bytes.subarray(o, o + n)), bytes.length, 'm.onnx').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(FormatError);
    expect((err as Error).message).toBe('m.onnx: the graph has more than 100,000 nodes (its subgraphs included), past what this playground reads (docs/models.md, "Input limits"); a decoder has far fewer');
    expect(Math.max(...reads)).toBeLessThanOrEqual(2 ** 20);
    expect(reads.reduce((a, b) => a + b, 0)).toBeLessThan(bytes.length / 4); // stopped at node 100,001 of 1,000,000
    // initializers likewise; a legitimate export and a malformed file pass the scan (the full read names what is wrong)
    const inits = onnxScalarInitializers(ONNX_LIMITS.initializers + 1);
    await expect(scanOnnxCounts(async (o, n) => inits.subarray(o, o + n), inits.length, 'm.onnx')).rejects.toThrow(/more than 100,000 initializers/);
    const f = onnxFolder({}, { weights: 'f32' });
    const g = f.files.get(f.file)!;
    await expect(scanOnnxCounts(async (o, n) => g.subarray(o, o + n), g.length, f.file)).resolves.toBeUndefined();
    await expect(scanOnnxCounts(async (o, n) => g.subarray(7 + o, 7 + o + n), g.length - 7, f.file)).resolves.toBeUndefined();
  });

  it('the onnxGraph job hands back the bytes it read when asked to keep them (the page reads a graph once)', async () => {
    const f = onnxFolder({}, { weights: 'f32' });
    const g = f.files.get(f.file)!;
    const kept = await runJob('onnxGraph', { graph: new Blob([g as Uint8Array<ArrayBuffer>]), file: f.file, sizes: [], keep: true });
    expect(kept.ok && kept.value.bytes).toEqual(g);
    const counts = await runJob('onnxGraph', { graph: new Blob([g as Uint8Array<ArrayBuffer>]), file: f.file, sizes: [] });
    expect(counts.ok && counts.value.bytes).toBeUndefined();
    expect(counts.ok && counts.value.nodes).toBe(kept.ok && kept.value.nodes);
  });

  it('a cycle is refused naming a node on it, and a value with two producers by both', () => {
    expect(refusal(one(onnxCycle()))).toMatch(/^m\.onnx: node "(first|second)" \(Identity\) is on a cycle/);
  });

  it('If nested 10,000 deep is refused at the depth cap, without recursion', () => {
    expect(refusal(one(onnxNestedIf(10_000)))).toMatch(/node "#0" \(If\) holds subgraphs nested more than 8 deep/);
    expect(readOnnx(one(onnxNestedIf(ONNX_LIMITS.subgraphDepth)), 'm.onnx').nodes).toHaveLength(1);
  });

  it('a subgraph is checked like the graph: an unknown operator inside an If branch is named', () => {
    const nested = onnxNestedIf(2);
    const bad = nested.slice();
    const at = Buffer.from(bad).lastIndexOf('Identity');
    bad.set(new TextEncoder().encode('Mystery!'), at);
    expect(refusal(one(bad))).toMatch(/^m\.onnx: a subgraph 2 deep, in node "#0": node "#0" uses operator "Mystery!"/);
  });

  it('external-data offsets and lengths must be decimal byte counts ("0x0", "1e3", " 5" are refused)', () => {
    for (const o of ['0x0', '1e3', ' 5', '+0', '']) expect(refusal(onnxExternalOffset(o))).toContain(`external data offset ${JSON.stringify(o)} is not a byte offset`);
    expect(readOnnx(onnxExternalOffset('16'), 'm.onnx').initializers.get('w')!.source).toMatchObject({ kind: 'external', offset: 16, length: 16 });
  });

  it('packed lists of 500,000 values are refused by their count, not by the stack', () => {
    expect(refusal(one(onnxPackedInts(500_000)))).toBe('m.onnx: node 0 attribute "perm": ints holds more than 65,536 items, past what this reader accepts (docs/models.md, "Input limits")');
    const ok = readOnnx(one(onnxPackedInts(ONNX_LIMITS.list)), 'm.onnx');
    expect(ok.nodes[0]!.attrs.get('perm')!.ints).toHaveLength(ONNX_LIMITS.list);
  });

  it('a real decoder export passes every check', () => {
    const f = onnxFolder({}, { weights: 'f32', external: true });
    const m = readOnnx(new Map(f.files), f.file);
    expect(m.nodes.length).toBeGreaterThan(10);
    expect(m.initializers.size).toBeGreaterThan(5);
  });
});

describe("an ONNX file's strings reach messages escaped", () => {
  it('a node name or config name with a newline and terminal escapes cannot forge a line', async () => {
    const { Msg } = await import('../bench/onnx/protobuf');
    const { onnxModel } = await import('./helpers/hostile');
    const evil = 'x\nerror: forged\u001b[2J';
    const g = new Msg().msg(1, new Msg().str(1, 'b').str(2, 'a').str(3, evil).str(4, 'Identity')).msg(1, new Msg().str(1, 'a').str(2, 'b').str(3, 'y').str(4, 'Identity'));
    const msg = refusal(one(onnxModel(g)), 'm\n.onnx');
    expect(msg).not.toMatch(/[\u0000-\u001f]/);
    const { readOnnxFolderInfo } = await import('../src/model/onnx/folder');
    const f = onnxFolder();
    const files = new Map(f.files);
    const cfg = JSON.parse(new TextDecoder().decode(files.get('config.json')!));
    files.set('config.json', new TextEncoder().encode(JSON.stringify({ ...cfg, _name_or_path: evil })));
    expect(readOnnxFolderInfo(files).name).toBe('x\\nerror: forged\\u{1b}[2J');
  });
});
