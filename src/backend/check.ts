/**
 * Argument checks shared by every backend: the generic ones (sizes are non-negative integers, a
 * tensor holds enough elements for its shape, τ > 0) and one function per op that the CPU kernel,
 * its SIMD twin and the WebGPU wrapper all call, so they cannot drift. A short buffer is a caller bug: on the CPU it would read `undefined` as NaN deep
 * in a loop, on the GPU it would read zeros or drop writes; a RangeError naming the op, the
 * tensor and the sizes says so at the call.
 *
 * Not here: value checks that need the data (finiteness, actions in range): those belong to the
 * CPU kernels, which read the data anyway; a GPU kernel cannot throw.
 */
import { QBLOCK, type SampleParams } from './types';

/** Anything with a length: a typed array on the CPU, a GpuTensor on WebGPU. */
export interface Sized {
  readonly length: number;
}

/** Throws a RangeError unless `arr` holds at least `n` elements. */
export function need(op: string, name: string, arr: Sized, n: number): void {
  if (arr.length < n) {
    throw new RangeError(`${op}: ${name} has ${arr.length} elements, the shape needs ${n}`);
  }
}

/** Throws a RangeError unless each named tensor (null: absent, skipped) holds at least `n` elements. */
export function needAll(op: string, tensors: Record<string, Sized | null>, n: number): void {
  if (!Number.isInteger(n) || n < 0) throw new RangeError(`${op}: sizes must be non-negative integers (got a product of ${n})`);
  for (const [name, t] of Object.entries(tensors)) if (t !== null) need(op, name, t, n);
}

/** Throws a RangeError unless every size is a non-negative integer. */
export function sizes(op: string, dims: Record<string, number>): void {
  for (const [k, v] of Object.entries(dims)) {
    if (!Number.isInteger(v) || v < 0) throw new RangeError(`${op}: ${k} must be a non-negative integer, got ${v}`);
  }
}

/** Throws a RangeError unless τ is finite and > 0. */
export function checkTemperature(op: string, temperature: number): void {
  if (!(temperature > 0) || !Number.isFinite(temperature)) throw new RangeError(`${op}: temperature must be a finite number > 0, got ${temperature}`);
}

function checkU32(op: string, name: string, x: number): void {
  if (!Number.isInteger(x) || x < 0 || x > 0xffffffff) throw new RangeError(`${op}: ${name} must be an integer in [0, 4294967295], got ${x}`);
}

/**
 * sampleForward's checks (out [B], logits [B × V], the Philox counters fit in u32, τ ≥ 0, an
 * integer top-k); returns the number of tokens kept, k (all V when topK ≤ 0 or ≥ V).
 */
export function checkSample(out: Sized, logits: Sized, B: number, V: number, sp: SampleParams): number {
  const op = 'sampleForward';
  sizes(op, { B, V });
  if (V < 1) throw new RangeError(`${op}: V must be at least 1`);
  need(op, 'out', out, B);
  need(op, 'logits', logits, B * V);
  const seq0 = sp.seq0 ?? 0;
  checkU32(op, 'seed', sp.seed);
  checkU32(op, 'stream', sp.stream);
  checkU32(op, 'step', sp.step);
  checkU32(op, 'seq0 + B - 1', seq0 + Math.max(0, B - 1));
  const tau = sp.temperature;
  if (!(tau >= 0) || !Number.isFinite(tau)) throw new RangeError(`${op}: temperature must be a finite number ≥ 0, got ${tau}`);
  if (!Number.isInteger(sp.topK)) throw new RangeError(`${op}: topK must be an integer, got ${sp.topK}`);
  return sp.topK <= 0 || sp.topK >= V ? V : sp.topK;
}

/**
 * samplerLogProbs' checks (out and logits [N × V], τ finite and > 0, an integer top-k); returns the
 * number of tokens kept, k (all V when topK ≤ 0 or ≥ V), as checkSample counts them.
 */
export function checkSamplerLogProbs(out: Sized, logits: Sized, N: number, V: number, temperature: number, topK: number): number {
  const op = 'samplerLogProbs';
  sizes(op, { N, V });
  need(op, 'out', out, N * V);
  need(op, 'logits', logits, N * V);
  checkTemperature(op, temperature);
  if (!Number.isInteger(topK)) throw new RangeError(`${op}: topK must be an integer, got ${topK}`);
  return topK <= 0 || topK >= V ? V : topK;
}

/** clippedLossBackward's shape checks: [K × V] logits and dlogits, [K] steps, [N] episodes, stats [4] (null: not written). */
export function checkClippedLoss(
  t: { dlogits: Sized; stats: Sized | null; logitsTheta: Sized; logitsRef: Sized; actions: Sized; episodeOf: Sized; adv: Sized; weight: Sized },
  K: number,
  V: number,
  N: number,
  temperature: number,
): void {
  const op = 'clippedLossBackward';
  sizes(op, { K, V, N });
  checkTemperature(op, temperature);
  needAll(op, { dlogits: t.dlogits, logitsTheta: t.logitsTheta, logitsRef: t.logitsRef }, K * V);
  needAll(op, { actions: t.actions, episodeOf: t.episodeOf }, K);
  needAll(op, { adv: t.adv, weight: t.weight }, N);
  needAll(op, { stats: t.stats }, 4);
}

/** matmulForward's checks (out [N × OC], inp [N × C], weight [OC × C]); returns N = B·T. */
export function checkMatmulForward(out: Sized, inp: Sized, weight: Sized, B: number, T: number, C: number, OC: number): number {
  sizes('matmulForward', { B, T, C, OC });
  const N = B * T;
  need('matmulForward', 'out', out, N * OC);
  need('matmulForward', 'inp', inp, N * C);
  need('matmulForward', 'weight', weight, OC * C);
  return N;
}

/** matmulBackward's checks (a null gradient is skipped, with the operand only it needs); returns N = B·T. */
export function checkMatmulBackward(dinp: Sized | null, dweight: Sized | null, dout: Sized, inp: Sized, weight: Sized, B: number, T: number, C: number, OC: number): number {
  sizes('matmulBackward', { B, T, C, OC });
  const N = B * T;
  need('matmulBackward', 'dout', dout, N * OC);
  if (dinp !== null) {
    need('matmulBackward', 'dinp', dinp, N * C);
    need('matmulBackward', 'weight', weight, OC * C);
  }
  if (dweight !== null) {
    need('matmulBackward', 'dweight', dweight, OC * C);
    need('matmulBackward', 'inp', inp, N * C);
  }
  return N;
}

/**
 * matmulForwardMany's checks: as many outputs and sizes as weights (at least one), the weights of
 * one kind, int8 activations only on quantized ones, each product's sizes as its single op checks
 * them; returns N = B·T.
 */
export function checkMany(outs: readonly Sized[], inp: Sized, weights: readonly ({ kind: 'f32'; w: Sized } | { kind: 'q8' | 'q4'; q: Sized; scales: Sized })[], B: number, T: number, C: number, OCs: readonly number[], activations: string): number {
  const op = 'matmulForwardMany';
  if (weights.length === 0 || outs.length !== weights.length || OCs.length !== weights.length) throw new RangeError(`${op}: ${outs.length} outputs, ${weights.length} weights and ${OCs.length} sizes; one of each per product, at least one`);
  const kind = weights[0]!.kind;
  if (weights.some((w) => w.kind !== kind)) throw new RangeError(`${op}: the weights must be of one kind, got ${weights.map((w) => w.kind).join(', ')}`);
  if (activations !== 'exact' && activations !== 'int8') throw new RangeError(`${op}: activations must be 'exact' or 'int8', got ${String(activations)}`);
  if (activations === 'int8' && kind === 'f32') throw new RangeError(`${op}: int8 activations need quantized weights, got f32`);
  sizes(op, { B, T, C });
  const N = B * T;
  need(op, 'inp', inp, N * C);
  weights.forEach((w, i) => {
    const OC = OCs[i]!;
    sizes(op, { [`OCs[${i}]`]: OC });
    need(op, `outs[${i}]`, outs[i]!, N * OC);
    if (w.kind === 'f32') need(op, `weights[${i}]`, w.w, OC * C);
    else checkQuantWeight(op, w.kind === 'q8' ? 8 : 4, w.q, w.scales, C, OC);
  });
  return N;
}

/** A quantized weight [OC × C]'s checks: C a multiple of QBLOCK, q (Q8: OC·C bytes, Q4: OC·C/2), one scale per block. */
export function checkQuantWeight(op: string, bits: 8 | 4, q: Sized, scales: Sized, C: number, OC: number): void {
  if (C % QBLOCK !== 0) throw new RangeError(`${op}: C must be a multiple of ${QBLOCK} for quantized weights, got ${C}`);
  need(op, 'q', q, bits === 8 ? OC * C : (OC * C) / 2);
  need(op, 'scales', scales, (OC * C) / QBLOCK);
}

/** The argument checks of attentionForward (every backend). */
export function checkAttentionForward(out: Sized, att: Sized, q: Sized, k: Sized, v: Sized, B: number, T: number, NH: number, HS: number): void {
  sizes('attentionForward', { B, T, NH, HS });
  const n = B * T * NH * HS;
  need('attentionForward', 'out', out, n);
  need('attentionForward', 'att', att, B * NH * T * T);
  need('attentionForward', 'q', q, n);
  need('attentionForward', 'k', k, n);
  need('attentionForward', 'v', v, n);
}

/** The argument checks of attentionBackward (every backend). */
export function checkAttentionBackward(
  dq: Sized, dk: Sized, dv: Sized, dout: Sized, q: Sized, k: Sized, v: Sized, att: Sized,
  B: number, T: number, NH: number, HS: number,
): void {
  sizes('attentionBackward', { B, T, NH, HS });
  const n = B * T * NH * HS;
  for (const [name, a] of [['dq', dq], ['dk', dk], ['dv', dv], ['dout', dout], ['q', q], ['k', k], ['v', v]] as const) need('attentionBackward', name, a, n);
  need('attentionBackward', 'att', att, B * NH * T * T);
}

/** The argument checks of attentionCachedForward (every backend). */
export function checkAttentionCachedForward(out: Sized, q: Sized, kCache: Sized, vCache: Sized, B: number, T: number, NH: number, HS: number, pos0: number, Tmax: number): void {
  sizes('attentionCachedForward', { B, T, NH, HS, pos0, Tmax });
  if (pos0 + T > Tmax) throw new RangeError(`attentionCachedForward: positions ${pos0}..${pos0 + T - 1} do not fit a cache of ${Tmax}`);
  const C = NH * HS;
  need('attentionCachedForward', 'out', out, B * T * C);
  need('attentionCachedForward', 'q', q, B * T * C);
  need('attentionCachedForward', 'kCache', kCache, B * Tmax * C);
  need('attentionCachedForward', 'vCache', vCache, B * Tmax * C);
}

/** The argument checks of rmsnormForward (every backend). */
export function checkRmsnormForward(out: Sized, rstd: Sized, inp: Sized, weight: Sized, B: number, T: number, C: number): void {
  sizes('rmsnormForward', { B, T, C });
  const N = B * T;
  need('rmsnormForward', 'out', out, N * C);
  need('rmsnormForward', 'rstd', rstd, N);
  need('rmsnormForward', 'inp', inp, N * C);
  need('rmsnormForward', 'weight', weight, C);
}

/** The argument checks of rmsnormBackward (every backend). */
export function checkRmsnormBackward(
  dinp: Sized, dweight: Sized, dout: Sized, inp: Sized, weight: Sized, rstd: Sized,
  B: number, T: number, C: number,
): void {
  sizes('rmsnormBackward', { B, T, C });
  const N = B * T;
  need('rmsnormBackward', 'dinp', dinp, N * C);
  need('rmsnormBackward', 'dweight', dweight, C);
  need('rmsnormBackward', 'dout', dout, N * C);
  need('rmsnormBackward', 'inp', inp, N * C);
  need('rmsnormBackward', 'weight', weight, C);
  need('rmsnormBackward', 'rstd', rstd, N);
}

/** The argument checks of ropeForward / ropeBackward (every backend). */
export function checkRope(op: string, a: Sized, b: Sized, table: Sized, B: number, T: number, NH: number, HS: number, pos0: number): void {
  sizes(op, { B, T, NH, HS, pos0 });
  if (HS % 2 !== 0) throw new RangeError(`${op}: head size HS must be even, got ${HS}`);
  const n = B * T * NH * HS;
  need(op, 'output', a, n);
  need(op, 'input', b, n);
  need(op, 'table', table, (pos0 + T) * HS);
}

/** The argument checks of logSoftmaxForward (every backend). */
export function checkLogSoftmaxForward(out: Sized, logits: Sized, N: number, V: number, temperature: number): void {
  sizes('logSoftmaxForward', { N, V });
  checkTemperature('logSoftmaxForward', temperature);
  need('logSoftmaxForward', 'out', out, N * V);
  need('logSoftmaxForward', 'logits', logits, N * V);
}

/** The argument checks of logSoftmaxBackward (every backend). */
export function checkLogSoftmaxBackward(dlogits: Sized, dlogp: Sized, logp: Sized, N: number, V: number, temperature: number): void {
  sizes('logSoftmaxBackward', { N, V });
  checkTemperature('logSoftmaxBackward', temperature);
  need('logSoftmaxBackward', 'dlogits', dlogits, N * V);
  need('logSoftmaxBackward', 'dlogp', dlogp, N * V);
  need('logSoftmaxBackward', 'logp', logp, N * V);
}

/** The argument checks of residualForward (every backend). */
export function checkResidualForward(out: Sized, a: Sized, b: Sized, N: number): void {
  sizes('residualForward', { N });
  need('residualForward', 'out', out, N);
  need('residualForward', 'a', a, N);
  need('residualForward', 'b', b, N);
}

/** The argument checks of residualBackward (every backend). */
export function checkResidualBackward(da: Sized | null, db: Sized | null, dout: Sized, N: number): void {
  sizes('residualBackward', { N });
  need('residualBackward', 'dout', dout, N);
  if (da !== null) need('residualBackward', 'da', da, N);
  if (db !== null) need('residualBackward', 'db', db, N);
}

/** The argument checks of swigluForward (every backend). */
export function checkSwigluForward(out: Sized, a: Sized, b: Sized, N: number): void {
  sizes('swigluForward', { N });
  need('swigluForward', 'out', out, N);
  need('swigluForward', 'a', a, N);
  need('swigluForward', 'b', b, N);
}

/** The argument checks of swigluBackward (every backend). */
export function checkSwigluBackward(da: Sized, db: Sized, dout: Sized, a: Sized, b: Sized, N: number): void {
  sizes('swigluBackward', { N });
  for (const [name, arr] of [['da', da], ['db', db], ['dout', dout], ['a', a], ['b', b]] as const) need('swigluBackward', name, arr, N);
}

/** The argument checks of embeddingForward / embeddingBackward (every backend): `rows` is out or dout [N × C]. */
export function checkEmbedding(op: string, rowsName: string, rows: Sized, tokens: Sized, B: number, T: number, C: number): void {
  sizes(op, { B, T, C });
  const N = B * T;
  need(op, rowsName, rows, N * C);
  need(op, 'tokens', tokens, N);
}

/** The argument checks of kvCacheWrite (every backend). */
export function checkKvCacheWrite(kCache: Sized, vCache: Sized, k: Sized, v: Sized, B: number, T: number, C: number, pos0: number, Tmax: number): void {
  sizes('kvCacheWrite', { B, T, C, pos0, Tmax });
  if (pos0 + T > Tmax) throw new RangeError(`kvCacheWrite: positions ${pos0}..${pos0 + T - 1} do not fit a cache of ${Tmax}`);
  need('kvCacheWrite', 'kCache', kCache, B * Tmax * C);
  need('kvCacheWrite', 'vCache', vCache, B * Tmax * C);
  need('kvCacheWrite', 'k', k, B * T * C);
  need('kvCacheWrite', 'v', v, B * T * C);
}

/** The argument checks of gatherForward (every backend). */
export function checkGatherForward(out: Sized, logp: Sized, targets: Sized, N: number, V: number): void {
  sizes('gatherForward', { N, V });
  need('gatherForward', 'out', out, N);
  need('gatherForward', 'logp', logp, N * V);
  need('gatherForward', 'targets', targets, N);
}

/** The argument checks of gatherBackward (every backend). */
export function checkGatherBackward(dlogp: Sized, dout: Sized, targets: Sized, N: number, V: number): void {
  sizes('gatherBackward', { N, V });
  need('gatherBackward', 'dlogp', dlogp, N * V);
  need('gatherBackward', 'dout', dout, N);
  need('gatherBackward', 'targets', targets, N);
}

/** The argument checks of klForward (every backend). */
export function checkKlForward(out: Sized, logitsP: Sized, logitsQ: Sized, N: number, V: number, temperature: number): void {
  sizes('klForward', { N, V });
  checkTemperature('klForward', temperature);
  need('klForward', 'out', out, N);
  need('klForward', 'logitsP', logitsP, N * V);
  need('klForward', 'logitsQ', logitsQ, N * V);
}

/** The argument checks of klBackward (every backend; a null gradient is skipped). */
export function checkKlBackward(dlogitsP: Sized | null, dlogitsQ: Sized | null, dout: Sized, logitsP: Sized, logitsQ: Sized, N: number, V: number, temperature: number): void {
  sizes('klBackward', { N, V });
  checkTemperature('klBackward', temperature);
  need('klBackward', 'dout', dout, N);
  need('klBackward', 'logitsP', logitsP, N * V);
  need('klBackward', 'logitsQ', logitsQ, N * V);
  if (dlogitsP !== null) need('klBackward', 'dlogitsP', dlogitsP, N * V);
  if (dlogitsQ !== null) need('klBackward', 'dlogitsQ', dlogitsQ, N * V);
}

/** The argument checks of adamwStep (every backend). */
export function checkAdamw(params: Sized, grads: Sized, m: Sized, v: Sized, n: number, t: number): void {
  sizes('adamwStep', { n });
  if (!Number.isInteger(t) || t < 1) throw new RangeError(`adamwStep: step t counts from 1, got ${t}`);
  for (const [name, a] of [['params', params], ['grads', grads], ['m', m], ['v', v]] as const) need('adamwStep', name, a, n);
}
