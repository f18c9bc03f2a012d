/**
 * The whole `Backend` object: `cpuBackend` and `webgpuBackend` driven through the same table of
 * op calls, each written once against the generic `Backend<X>` interface, on the same fresh
 * random inputs — so the WebGPU object is shown to be complete (the table must name every op of
 * cpuBackend, and TypeScript checks `webgpuBackend` against `Backend<GpuTensors>`) and wired
 * right (each op reaches the kernel it names, with its arguments in the CPU's order). Forward
 * outputs start as NaN, accumulated gradients as random values; every output is downloaded and
 * compared. The table runs twice on the GPU: on the device's normal grid, and on a context
 * limited to 7 workgroups per grid dimension (every dispatch becomes 2-D, which checks each
 * shader's linear workgroup id). Memory ops (upload, zeros, fill, download, dispose) are
 * checked on every tensor kind with odd lengths.
 *
 * Tolerance: this is a wiring test, not a precision test (the per-kernel files state tight,
 * per-element bounds). Each f32 output is compared against floor = 1e-2 · max |cpu output|
 * with tolerance 1e-4, i.e. an absolute error below 1e-6 of the output's scale (f32 rounding of
 * these short sums is ~1e-7 of it), which a wrong argument, a swapped tensor or a missing
 * accumulation exceeds by orders of magnitude; integer outputs (sampled tokens) must be equal.
 *
 * Not here: numerical analysis of each kernel (embedding/rmsnorm/…: layers.test.ts; softmax,
 * matmul, objective, sample tests), a whole model step (src/model's backend model tests).
 */
import { afterAll, describe, expect, it } from 'vitest';
import { cpuBackend, ropeTable } from '../../src/backend/cpu/index';
import type { Backend, ClippedLossSpec, HostTensors, TensorKinds } from '../../src/backend/types';
import { GpuContext, webgpuBackend, type GpuTensors } from '../../src/backend/webgpu/index';
import { f32ToF16 } from '../../src/core/f16';
import { Rng } from '../../src/core/rng';
import { gpu, printTable, rand, randInt, record, runSeed } from './gpu';

const ctx = typeof gpu === 'string' ? null : gpu;
const seed = runSeed('backend.test.ts');

type HostArray = HostTensors[keyof HostTensors];
type OpName = Exclude<keyof Backend, 'name' | 'upload' | 'zeros' | 'fill' | 'download' | 'dispose'>;

/** Named handles of one case, by kind. */
interface Handles<X extends TensorKinds> {
  f(name: string): X['f32'];
  i(name: string): X['i32'];
  i8(name: string): X['i8'];
  u8(name: string): X['u8'];
  u16(name: string): X['u16'];
}

interface Case {
  op: OpName;
  shape: string;
  /** Every tensor of the call (outputs included: NaN for overwritten, random for accumulated). */
  data: Record<string, HostArray>;
  /** The tensors compared after the call. */
  outs: readonly string[];
  call<X extends TensorKinds>(be: Backend<X>, h: Handles<X>): void;
}

function upload<X extends TensorKinds>(be: Backend<X>, a: HostArray): X[keyof X] {
  if (a instanceof Float32Array) return be.upload('f32', a) as X[keyof X];
  if (a instanceof Int32Array) return be.upload('i32', a) as X[keyof X];
  if (a instanceof Int8Array) return be.upload('i8', a) as X[keyof X];
  if (a instanceof Uint8Array) return be.upload('u8', a) as X[keyof X];
  return be.upload('u16', a) as X[keyof X];
}

async function download<X extends TensorKinds>(be: Backend<X>, like: HostArray, t: unknown): Promise<HostArray> {
  if (like instanceof Float32Array) return be.download('f32', t as X['f32']);
  if (like instanceof Int32Array) return be.download('i32', t as X['i32']);
  if (like instanceof Int8Array) return be.download('i8', t as X['i8']);
  if (like instanceof Uint8Array) return be.download('u8', t as X['u8']);
  return be.download('u16', t as X['u16']);
}

/** Run one case on a backend: upload, call, download the outputs, dispose. */
async function runCase<X extends TensorKinds>(be: Backend<X>, cs: Case): Promise<Record<string, HostArray>> {
  const m = new Map<string, unknown>();
  for (const [k, a] of Object.entries(cs.data)) m.set(k, upload(be, a));
  const get = (n: string): unknown => {
    if (!m.has(n)) throw new Error(`${cs.op}: case has no tensor '${n}'`);
    return m.get(n);
  };
  const h: Handles<X> = {
    f: (n) => get(n) as X['f32'],
    i: (n) => get(n) as X['i32'],
    i8: (n) => get(n) as X['i8'],
    u8: (n) => get(n) as X['u8'],
    u16: (n) => get(n) as X['u16'],
  };
  cs.call(be, h);
  const res: Record<string, HostArray> = {};
  for (const o of cs.outs) res[o] = await download(be, cs.data[o]!, get(o));
  for (const t of m.values()) be.dispose(t as X['f32']);
  return res;
}

/** The table: every op of the interface, on small odd shapes. */
function cases(rng: Rng): Case[] {
  const B = 2, T = 5, C = 12, NH = 3, HS = 4, H = 7, V = 17, OC = 9, Tmax = 9, pos0 = 3;
  const N = B * T;
  const CQ = 64; // quantized weights: C a multiple of 32
  const f = (n: number, lo = -1, hi = 1) => rand(rng, n, lo, hi);
  const nan = (n: number) => new Float32Array(n).fill(NaN);
  const scales = (n: number) => Uint16Array.from(rand(rng, n, 0.01, 0.05), (x) => f32ToF16(x));
  const q8 = (n: number) => Int8Array.from(randInt(rng, n, 255), (x) => x - 127);
  const q4 = (n: number) => Uint8Array.from(randInt(rng, n, 256));
  const spec: ClippedLossSpec = { level: 'token', tokenAgg: 'grpo', epsLow: 0.2, epsHigh: 0.28, beta: 0.05 };
  const K = 11, NE = 3;
  const episodeOf = Int32Array.from({ length: K }, (_, k) => Math.min(NE - 1, Math.floor((k * NE) / K)));
  const zr = f(K * V, -2, 2);
  const table = ropeTable(pos0 + T, HS) as Float32Array;
  return [
    { op: 'embeddingForward', shape: `N${N} C${C} V${V}`, data: { out: nan(N * C), tokens: randInt(rng, N, V), wte: f(V * C) }, outs: ['out'],
      call: (be, h) => be.embeddingForward(h.f('out'), h.i('tokens'), h.f('wte'), B, T, C) },
    { op: 'embeddingBackward', shape: `N${N} C${C} V${V}`, data: { dwte: f(V * C), dout: f(N * C), tokens: randInt(rng, N, 4) }, outs: ['dwte'],
      call: (be, h) => be.embeddingBackward(h.f('dwte'), h.f('dout'), h.i('tokens'), B, T, C) },
    { op: 'rmsnormForward', shape: `N${N} C${C}`, data: { out: nan(N * C), rstd: nan(N), inp: f(N * C), w: f(C, 0.5, 1.5) }, outs: ['out', 'rstd'],
      call: (be, h) => be.rmsnormForward(h.f('out'), h.f('rstd'), h.f('inp'), h.f('w'), B, T, C, 1e-5) },
    { op: 'rmsnormBackward', shape: `N${N} C${C}`, data: { dinp: f(N * C), dw: f(C), dout: f(N * C), inp: f(N * C), w: f(C), rstd: f(N, 0.5, 2) }, outs: ['dinp', 'dw'],
      call: (be, h) => be.rmsnormBackward(h.f('dinp'), h.f('dw'), h.f('dout'), h.f('inp'), h.f('w'), h.f('rstd'), B, T, C) },
    { op: 'ropeForward', shape: `B${B} T${T} NH${NH} HS${HS} pos0 ${pos0}`, data: { out: nan(N * C), inp: f(N * C), table }, outs: ['out'],
      call: (be, h) => be.ropeForward(h.f('out'), h.f('inp'), h.f('table'), B, T, NH, HS, pos0) },
    { op: 'ropeBackward', shape: `B${B} T${T} NH${NH} HS${HS} pos0 ${pos0}`, data: { dinp: f(N * C), dout: f(N * C), table }, outs: ['dinp'],
      call: (be, h) => be.ropeBackward(h.f('dinp'), h.f('dout'), h.f('table'), B, T, NH, HS, pos0) },
    { op: 'attentionForward', shape: `B${B} T${T} NH${NH} HS${HS}`, data: { out: nan(N * C), att: nan(B * NH * T * T), q: f(N * C), k: f(N * C), v: f(N * C) }, outs: ['out', 'att'],
      call: (be, h) => be.attentionForward(h.f('out'), h.f('att'), h.f('q'), h.f('k'), h.f('v'), B, T, NH, HS) },
    { op: 'attentionBackward', shape: `B${B} T${T} NH${NH} HS${HS}`,
      data: { dq: f(N * C), dk: f(N * C), dv: f(N * C), dout: f(N * C), q: f(N * C), k: f(N * C), v: f(N * C), att: f(B * NH * T * T, 0, 1) }, outs: ['dq', 'dk', 'dv'],
      call: (be, h) => be.attentionBackward(h.f('dq'), h.f('dk'), h.f('dv'), h.f('dout'), h.f('q'), h.f('k'), h.f('v'), h.f('att'), B, T, NH, HS) },
    { op: 'kvCacheWrite', shape: `B${B} T${T} C${C} pos0 ${pos0 - 1} Tmax ${Tmax}`, data: { kc: f(B * Tmax * C), vc: f(B * Tmax * C), k: f(N * C), v: f(N * C) }, outs: ['kc', 'vc'],
      call: (be, h) => be.kvCacheWrite(h.f('kc'), h.f('vc'), h.f('k'), h.f('v'), B, T, C, pos0 - 1, Tmax) },
    { op: 'attentionCachedForward', shape: `B${B} T2 NH${NH} HS${HS} pos0 ${pos0} Tmax ${Tmax}`, data: { out: nan(B * 2 * C), q: f(B * 2 * C), kc: f(B * Tmax * C), vc: f(B * Tmax * C) }, outs: ['out'],
      call: (be, h) => be.attentionCachedForward(h.f('out'), h.f('q'), h.f('kc'), h.f('vc'), B, 2, NH, HS, pos0, Tmax) },
    { op: 'matmulForward', shape: `N${N} C${C} OC${OC}`, data: { out: nan(N * OC), inp: f(N * C), w: f(OC * C) }, outs: ['out'],
      call: (be, h) => be.matmulForward(h.f('out'), h.f('inp'), h.f('w'), B, T, C, OC) },
    { op: 'matmulResidualForward', shape: `N${N} C${C} OC${OC}`, data: { out: nan(N * OC), inp: f(N * C), w: f(OC * C), res: f(N * OC) }, outs: ['out'],
      call: (be, h) => be.matmulResidualForward(h.f('out'), h.f('inp'), h.f('w'), h.f('res'), B, T, C, OC) },
    { op: 'matmulBackward', shape: `N${N} C${C} OC${OC}`, data: { dinp: f(N * C), dw: f(OC * C), dinp2: f(N * C), dout: f(N * OC), inp: f(N * C), w: f(OC * C) }, outs: ['dinp', 'dw', 'dinp2'],
      call: (be, h) => {
        be.matmulBackward(h.f('dinp'), h.f('dw'), h.f('dout'), h.f('inp'), h.f('w'), B, T, C, OC);
        be.matmulBackward(h.f('dinp2'), null, h.f('dout'), h.f('inp'), h.f('w'), B, T, C, OC);
      } },
    { op: 'matmulForwardQ8', shape: `N${N} C${CQ} OC${OC}`, data: { out: nan(N * OC), inp: f(N * CQ), q: q8(OC * CQ), s: scales((OC * CQ) / 32) }, outs: ['out'],
      call: (be, h) => be.matmulForwardQ8(h.f('out'), h.f('inp'), h.i8('q'), h.u16('s'), B, T, CQ, OC) },
    { op: 'matmulForwardQ4', shape: `N${N} C${CQ} OC${OC}`, data: { out: nan(N * OC), inp: f(N * CQ), q: q4((OC * CQ) / 2), s: scales((OC * CQ) / 32) }, outs: ['out'],
      call: (be, h) => be.matmulForwardQ4(h.f('out'), h.f('inp'), h.u8('q'), h.u16('s'), B, T, CQ, OC) },
    { op: 'matmulBackwardInputQ8', shape: `N${N} C${CQ} OC${OC}`, data: { dinp: f(N * CQ), dout: f(N * OC), q: q8(OC * CQ), s: scales((OC * CQ) / 32) }, outs: ['dinp'],
      call: (be, h) => be.matmulBackwardInputQ8(h.f('dinp'), h.f('dout'), h.i8('q'), h.u16('s'), B, T, CQ, OC) },
    { op: 'matmulBackwardInputQ4', shape: `N${N} C${CQ} OC${OC}`, data: { dinp: f(N * CQ), dout: f(N * OC), q: q4((OC * CQ) / 2), s: scales((OC * CQ) / 32) }, outs: ['dinp'],
      call: (be, h) => be.matmulBackwardInputQ4(h.f('dinp'), h.f('dout'), h.u8('q'), h.u16('s'), B, T, CQ, OC) },
    { op: 'residualForward', shape: `N${N * C}`, data: { out: nan(N * C), a: f(N * C), b: f(N * C), y: f(N * C) }, outs: ['out', 'y'],
      call: (be, h) => {
        be.residualForward(h.f('out'), h.f('a'), h.f('b'), N * C, 0.5);
        be.residualForward(h.f('y'), h.f('y'), h.f('b'), N * C, 2); // in place, as LoRA adds
      } },
    { op: 'residualBackward', shape: `N${N * C}`, data: { da: f(N * C), db: f(N * C), db2: f(N * C), dout: f(N * C) }, outs: ['da', 'db', 'db2'],
      call: (be, h) => {
        be.residualBackward(h.f('da'), h.f('db'), h.f('dout'), N * C, 0.5);
        be.residualBackward(null, h.f('db2'), h.f('dout'), N * C, 3);
      } },
    { op: 'swigluForward', shape: `N${N * H}`, data: { out: nan(N * H), a: f(N * H, -4, 4), b: f(N * H) }, outs: ['out'],
      call: (be, h) => be.swigluForward(h.f('out'), h.f('a'), h.f('b'), N * H) },
    { op: 'swigluBackward', shape: `N${N * H}`, data: { da: f(N * H), db: f(N * H), dout: f(N * H), a: f(N * H, -4, 4), b: f(N * H) }, outs: ['da', 'db'],
      call: (be, h) => be.swigluBackward(h.f('da'), h.f('db'), h.f('dout'), h.f('a'), h.f('b'), N * H) },
    { op: 'mlpForward', shape: `N${N} C${C} H${H}`,
      data: { out: nan(N * C), a: nan(N * H), b: nan(N * H), h: nan(N * H), inp: f(N * C), w1: f(H * C), w3: f(H * C), w2: f(C * H) }, outs: ['out', 'a', 'b', 'h'],
      call: (be, h) => be.mlpForward(h.f('out'), h.f('a'), h.f('b'), h.f('h'), h.f('inp'), h.f('w1'), h.f('w3'), h.f('w2'), B, T, C, H) },
    { op: 'mlpBackward', shape: `N${N} C${C} H${H}`,
      data: {
        dinp: f(N * C), dw1: f(H * C), dw3: f(H * C), dw2: f(C * H), dh: f(N * H), da: f(N * H), db: f(N * H), dout: f(N * C),
        inp: f(N * C), a: f(N * H, -3, 3), b: f(N * H), h: f(N * H), w1: f(H * C), w3: f(H * C), w2: f(C * H),
      },
      outs: ['dinp', 'dw1', 'dw3', 'dw2', 'dh', 'da', 'db'],
      call: (be, h) =>
        be.mlpBackward(h.f('dinp'), h.f('dw1'), h.f('dw3'), h.f('dw2'), h.f('dh'), h.f('da'), h.f('db'), h.f('dout'), h.f('inp'), h.f('a'), h.f('b'), h.f('h'), h.f('w1'), h.f('w3'), h.f('w2'), B, T, C, H) },
    { op: 'logSoftmaxForward', shape: `N${N} V${V}`, data: { out: nan(N * V), z: f(N * V, -3, 3) }, outs: ['out'],
      call: (be, h) => be.logSoftmaxForward(h.f('out'), h.f('z'), N, V, 0.8) },
    { op: 'logSoftmaxBackward', shape: `N${N} V${V}`, data: { dz: f(N * V), dlp: f(N * V), lp: f(N * V, -4, -0.1) }, outs: ['dz'],
      call: (be, h) => be.logSoftmaxBackward(h.f('dz'), h.f('dlp'), h.f('lp'), N, V, 0.8) },
    { op: 'gatherForward', shape: `N${N} V${V}`, data: { out: nan(N), lp: f(N * V), tg: randInt(rng, N, V) }, outs: ['out'],
      call: (be, h) => be.gatherForward(h.f('out'), h.f('lp'), h.i('tg'), N, V) },
    { op: 'gatherBackward', shape: `N${N} V${V}`, data: { dlp: f(N * V), dout: f(N), tg: randInt(rng, N, V) }, outs: ['dlp'],
      call: (be, h) => be.gatherBackward(h.f('dlp'), h.f('dout'), h.i('tg'), N, V) },
    { op: 'crossEntropy', shape: `N${N} V${V}`, data: { lrow: nan(N), lrow2: nan(N), dz: f(N * V), z: f(N * V, -3, 3), tg: randInt(rng, N, V), dout: f(N) }, outs: ['lrow', 'dz', 'lrow2'],
      call: (be, h) => {
        be.crossEntropy(h.f('lrow'), h.f('dz'), h.f('z'), h.i('tg'), h.f('dout'), N, V);
        be.crossEntropy(h.f('lrow2'), null, h.f('z'), h.i('tg'), null, N, V);
      } },
    { op: 'klForward', shape: `N${N} V${V}`, data: { out: nan(N), zp: f(N * V, -3, 3), zq: f(N * V, -3, 3) }, outs: ['out'],
      call: (be, h) => be.klForward(h.f('out'), h.f('zp'), h.f('zq'), N, V, 1.2) },
    { op: 'klBackward', shape: `N${N} V${V}`, data: { dp: f(N * V), dq: f(N * V), dq2: f(N * V), dout: f(N), zp: f(N * V, -3, 3), zq: f(N * V, -3, 3) }, outs: ['dp', 'dq', 'dq2'],
      call: (be, h) => {
        be.klBackward(h.f('dp'), h.f('dq'), h.f('dout'), h.f('zp'), h.f('zq'), N, V, 1.2);
        be.klBackward(null, h.f('dq2'), h.f('dout'), h.f('zp'), h.f('zq'), N, V, 1.2);
      } },
    { op: 'clippedLossBackward', shape: `K${K} V${V} N${NE}`,
      data: {
        dz: f(K * V, -1e-3, 1e-3), stats: nan(4), zt: zr.map((x) => x + 0.3 * (rng.uniform() - 0.5)), zr, actions: randInt(rng, K, V), episodeOf,
        adv: f(NE, -1.5, 1.5), weight: f(NE, 0.2, 1.5),
      },
      outs: ['dz', 'stats'],
      call: (be, h) => be.clippedLossBackward(h.f('dz'), h.f('stats'), h.f('zt'), h.f('zr'), h.i('actions'), h.i('episodeOf'), h.f('adv'), h.f('weight'), K, V, NE, 5, 0.9, spec, -1) },
    { op: 'adamwStep', shape: `n${N * C}`, data: { p: f(N * C), g: f(N * C), m: f(N * C, -0.1, 0.1), v: f(N * C, 0.001, 0.01) }, outs: ['p', 'm', 'v'],
      call: (be, h) => be.adamwStep(h.f('p'), h.f('g'), h.f('m'), h.f('v'), N * C, 3, { lr: 1e-2, weightDecay: 0.1 }) },
    { op: 'sampleForward', shape: `B${N} V${V}`, data: { greedy: new Int32Array(N).fill(-1), drawn: new Int32Array(N).fill(-1), z: f(N * V, -3, 3) }, outs: ['greedy', 'drawn'],
      call: (be, h) => {
        be.sampleForward(h.i('greedy'), h.f('z'), N, V, { seed: 7, stream: 11, step: 2, temperature: 0, topK: 0 });
        be.sampleForward(h.i('drawn'), h.f('z'), N, V, { seed: 7, stream: 11, step: 2, temperature: 1, topK: 5, seq0: 4 });
      } },
  ];
}

const MEMORY = ['name', 'upload', 'zeros', 'fill', 'download', 'hostView', 'dispose', 'view'];
/**
 * Ops the interface marks optional (types.ts): the int8-activation products, which only the CPU
 * backend has (its WebAssembly kernels) — a model asking for them on WebGPU is refused with a reason
 * (tests/model.test.ts), so WebGPU must not pretend to have them — and the several-products op,
 * for which the model makes one product per weight (the same bits, tests/model.test.ts).
 */
const CPU_ONLY = ['matmulForwardQ8Act', 'matmulForwardQ4Act', 'matmulForwardMany'];

describe.skipIf(ctx === null)(`WebGPU Backend object vs cpuBackend (seed ${seed})`, () => {
  const c = ctx!;
  const rng = new Rng(seed, [6]);
  const table = cases(rng);
  afterAll(() => printTable('backend.test.ts'));

  it('covers every op of the interface', () => {
    const gpuBe = webgpuBackend(c);
    const cpuOps = Object.keys(cpuBackend).filter((k) => !MEMORY.includes(k) && !CPU_ONLY.includes(k)).sort();
    expect(table.map((cs) => cs.op).sort()).toEqual(cpuOps);
    // Every member but hostView: a GPU tensor is not host memory, so reads download (types.ts).
    expect(gpuBe.hostView).toBeUndefined();
    expect(Object.keys(gpuBe).sort()).toEqual(Object.keys(cpuBackend).filter((k) => k !== 'hostView' && !CPU_ONLY.includes(k)).sort());
    for (const k of CPU_ONLY) expect(k in cpuBackend && !(k in gpuBe), k).toBe(true);
    for (const k of Object.keys(gpuBe)) if (k !== 'name') expect(typeof (gpuBe as unknown as Record<string, unknown>)[k]).toBe('function');
    expect(gpuBe.name).toMatch(/^webgpu \(/);
    console.log(`[webgpu tests] backend name: ${gpuBe.name}`);
  });

  it('counts what it asks of the GPU: one dispatch per op, ops recorded into one submission, a read-back submits once', async () => {
    const gpuBe: Backend<GpuTensors> = webgpuBackend(c);
    await gpuBe.download('f32', gpuBe.zeros('f32', 1)); // nothing pending from earlier tests
    const x = gpuBe.upload('f32', Float32Array.of(1, 2, 3, 4));
    const y = gpuBe.zeros('f32', 4);
    const before = { ...c.counts };
    gpuBe.residualForward(y, x, x, 4, 1);
    gpuBe.residualForward(x, y, y, 4, 0.5);
    gpuBe.swigluForward(y, x, x, 4);
    expect(c.counts.dispatches - before.dispatches).toBe(3);
    expect(c.counts.submissions - before.submissions).toBe(0); // still recording
    const out = await gpuBe.download('f32', y);
    expect(c.counts.submissions - before.submissions).toBe(1);
    expect(c.counts.downloads - before.downloads).toBe(1);
    expect(c.counts.uploads - before.uploads).toBe(0);
    const ref = new Float32Array(4);
    const x2 = Float32Array.of(3, 6, 9, 12); // y = x + x, then x = y + y/2
    cpuBackend.swigluForward(ref, x2, x2, 4);
    out.forEach((v, i) => expect(Math.abs(v - ref[i]!)).toBeLessThan(1e-5 * Math.abs(ref[i]!))); // the GPU's exp rounds differently
  });

  it('memory ops: upload / download / zeros / fill / dispose on every kind, view on f32', async () => {
    const gpuBe: Backend<GpuTensors> = webgpuBackend(c);
    const n = 7;
    const f = rand(rng, n);
    const i = randInt(rng, n, 1000).map((x) => x - 500);
    const i8 = Int8Array.from(randInt(rng, n, 256), (x) => x - 128);
    const u8 = Uint8Array.from(randInt(rng, n, 256));
    const u16 = Uint16Array.from(randInt(rng, n, 65536));
    for (const be of [cpuBackend, gpuBe] as const) {
      const b = be as Backend<TensorKinds>;
      expect(await b.download('f32', b.upload('f32', f))).toEqual(f);
      expect(await b.download('i32', b.upload('i32', i))).toEqual(i);
      expect(await b.download('i8', b.upload('i8', i8))).toEqual(i8);
      expect(await b.download('u8', b.upload('u8', u8))).toEqual(u8);
      expect(await b.download('u16', b.upload('u16', u16))).toEqual(u16);
      const z = b.zeros('u16', n);
      expect(await b.download('u16', z)).toEqual(new Uint16Array(n));
      const t = b.upload('f32', f);
      b.fill(t, 2.5);
      expect(await b.download('f32', t)).toEqual(new Float32Array(n).fill(2.5));
      b.fill(t, 0);
      expect(await b.download('f32', t)).toEqual(new Float32Array(n));
      b.dispose(t);
      const z2 = b.zeros('f32', n); // may reuse t's buffer: must read as zeros
      expect(await b.download('f32', z2)).toEqual(new Float32Array(n));
      // A view: ops, fill and download see its range of the tensor only.
      const big = rand(rng, 64 + 2 * n);
      const bt = b.upload('f32', big);
      const v = b.view(bt, 64, n);
      b.residualForward(v, b.upload('f32', f), b.zeros('f32', n), n, 1);
      expect(await b.download('f32', v)).toEqual(f);
      const wantBig = big.slice();
      wantBig.set(f, 64);
      expect(await b.download('f32', bt)).toEqual(wantBig);
      expect(() => b.view(bt, 1, 2)).toThrow(/multiple of 64/);
    }
  });

  const grids: [string, () => GpuContext][] = [
    ['normal grid', () => c],
    ['2-D grid (7 workgroups per dimension)', () => new GpuContext(c.device, { maxWorkgroupsPerDimension: 7 })],
  ];
  for (const [gridName, mk] of grids) {
    it(`every op, cpuBackend vs webgpuBackend (${gridName})`, async () => {
      const gctx = mk();
      const gpuBe = webgpuBackend(gctx, 'test');
      const t0 = performance.now();
      for (const cs of table) {
        const want = await runCase(cpuBackend, cs);
        const got = await runCase(gpuBe, cs);
        for (const o of cs.outs) {
          const w = want[o]!;
          const g = got[o]!;
          const label = `${cs.op} ${o}${gridName === 'normal grid' ? '' : ' (2-D)'}`;
          if (w instanceof Int32Array) {
            expect(record(label, cs.shape, g, w, 1, 0)).toBe(0);
          } else {
            let mx = 0;
            for (let k = 0; k < w.length; k++) mx = Math.max(mx, Math.abs(w[k]!));
            expect(record(label, cs.shape, g, w, Math.max(1e-2 * mx, 1e-30), 1e-4), `${cs.op} ${o}`).toBeLessThanOrEqual(1e-4);
          }
        }
      }
      console.log(`[webgpu tests] backend table (${gridName}): ${table.length} cases in ${Math.round(performance.now() - t0)} ms`);
    });
  }
});
