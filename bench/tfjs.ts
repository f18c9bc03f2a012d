/**
 * The bench's TF.js peer (bench/cpu.ts runs it in its own child process per model): the same tiny
 * Llama as src/model/model.ts written in TF.js 4.22 ops, on the wasm backend, trained, sampled and
 * run forward at the bench's shapes, from the same initial weights (`initWeights`, same seed).
 *
 * Setup: `@tensorflow/tfjs` (the package a TF.js user installs; its Node build also registers the
 * gradients, which `@tensorflow/tfjs-core` alone does not) + `@tensorflow/tfjs-backend-wasm`. The
 * umbrella also loads layers, converter, data and the WebGL backend, none used: importing it
 * costs ≈ 100 MiB of RSS (104–110 MiB in the bench's runs) against ≈ 40 MiB for core + wasm alone
 * (measured once), so the bench prints TF.js's RSS once loaded beside its peak. The wasm binary is read from node_modules (the
 * backend's Node build finds it beside itself; nothing is downloaded, no setWasmPaths needed).
 * Threads: `setThreadsCount(1)` is called, but in Node tfjs-backend-wasm 4.22 never uses threads
 * anyway (its WASM_HAS_MULTITHREAD_SUPPORT flag is false under Node), so it runs the
 * single-threaded SIMD binary — one thread, like ours and like ORT's numThreads = 1. The bench
 * prints both flags.
 *
 * The model, in TF.js terms (x [N × C] with N = B·T rows; every projection a 2-D tf.matMul):
 *   x = oneHot(tokens) · E                     (embedding as a product: tfjs-backend-wasm has no
 *                                               UnsortedSegmentSum, so tf.gather has no gradient)
 *   rmsnorm(x; g) = x · rsqrt(mean(x², −1) + ε) · g
 *   q = rope(h·Wq), k = rope(h·Wk), v = h·Wv  — W stored [in × out] (ours [out × in], transposed
 *                                               once at load), so the forward is a plain NN product
 *   rope: interleaved pairs (2i, 2i+1) per head as in src/backend/cpu/rope.ts,
 *         (y_2i, y_2i+1) = (x_2i cos φ − x_2i+1 sin φ, x_2i sin φ + x_2i+1 cos φ), written like the
 *         ONNX export: y = x ⊙ COS + (x·P) ⊙ SIN, P the signed pair swap (`ropeConstants`). (The
 *         direct form — tf.split of x as [.., HS/2, 2] — was measured first: SplitV on rank 5 took
 *         540 of the 860 ms of a BENCH_400K forward in tfjs-backend-wasm, so it is not used.)
 *   attention: [B, NH, T, HS] heads, softmax(q·kᵀ/√HS + mask)·v, mask −1e9 above the diagonal
 *   x ← x + (silu(h·W1) ⊙ h·W3)·W2;  logits = rmsnorm(x; g_f) · Eᵀ   (tied: Eᵀ = transpose(E))
 * Training step (what trainOnSequences does): loss = −Σ onehot(target) ⊙ logSoftmax(logits) / M
 * over the B·(T−1) next-token targets, tf.variableGrads, the global gradient norm (one download,
 * like ours), tf.train.adam(1e-3, 0.9, 0.999, 1e-8) (= our AdamW with weight decay 0).
 *
 * Two training configurations, the same forward:
 *   stock  TF.js's own gradient of tf.matMul(a, b): da = matMul(dy, b, false, true) and
 *          db = matMul(a, dy, true, false).
 *   fixed  each 2-D product wrapped in tf.customGrad with da = matMul(dy, transpose(b)),
 *          db = matMul(transpose(a), dy): an explicit transpose, then an untransposed product.
 * Why stock is slow: tfjs-backend-wasm's BatchMatMul (its src/cc/batch_mat_mul_impl.cc) runs
 * XNNPACK's fully-connected operator only when transposeA = transposeB = false and both batch
 * sizes are 1; any transposed operand takes its fallback, a plain blocked triple loop. The bench
 * measures it (`matmulProbe`, printed per model at the w1/w3 shape): NN, NT (transposeB), TN
 * (transposeA) and transpose-then-NN. Batched products (attention's q·kᵀ and att·v, batch B·NH)
 * take the scalar loop in both configurations — no flag choice avoids it.
 *
 * Sampling mirrors Model.generate for one-token prompts: 31 steps, each one row per prompt
 * (S = 64), K and V caches [S × NH × t × HS] grown by tf.concat, tf.multinomial over the logits
 * (τ = 1, no stop), the S sampled ids downloaded every step (ours does the same). The forward is
 * inference only (no tape). Both use plain tf.matMul (the configurations differ only in backward).
 *
 * Not here: timing and the process scheme (bench/cpu.ts, bench/measure.ts); correctness beyond the
 * printed sanity checks (max relative logits difference against Model.forward, and fixed vs stock
 * gradients).
 */
import type * as TF from '@tensorflow/tfjs';
import type { ModelConfig } from '../src/model/config';
import { getF32, type ModelWeights } from '../src/model/weights';
import { ropeConstants } from './onnx/export';

type Tf = typeof TF;

/** Loads TF.js core + the wasm backend, one thread (header); returns the module and its flags. */
export async function loadTfjs(): Promise<{ tf: Tf; version: string; threads: number; simd: boolean; multithread: boolean }> {
  const tf = await import('@tensorflow/tfjs');
  const wasm = await import('@tensorflow/tfjs-backend-wasm');
  wasm.setThreadsCount(1);
  if (!(await tf.setBackend('wasm'))) throw new Error('TF.js: the wasm backend did not initialize');
  await tf.ready();
  return {
    tf,
    version: tf.version_core,
    threads: wasm.getThreadsCount(),
    simd: (await tf.env().getAsync('WASM_HAS_SIMD_SUPPORT')) as boolean,
    multithread: (await tf.env().getAsync('WASM_HAS_MULTITHREAD_SUPPORT')) as boolean,
  };
}

export type GradMode = 'stock' | 'fixed';

/** The tiny Llama over TF.js variables (header). */
export class TfjsLlama {
  /** E [V × C]. */
  private readonly emb: TF.Variable;
  /** Per layer: gains [C] and projections stored [in × out]. */
  private readonly layers: Record<string, TF.Variable>[];
  private readonly finalNorm: TF.Variable;
  private readonly vars: TF.Variable[];
  /** cos / sin [Tmax × 1 × HS] (broadcast over batch and heads) and P [HS × HS] (RoPE). */
  private readonly cos: TF.Tensor;
  private readonly sin: TF.Tensor;
  private readonly perm: TF.Tensor;
  private readonly HS: number;
  private readonly fixedMatMul: (a: TF.Tensor, b: TF.Tensor) => TF.Tensor;

  constructor(
    private readonly tf: Tf,
    readonly cfg: ModelConfig,
    weights: ModelWeights,
  ) {
    const { vocab: V, d: C, hidden: H, heads: NH, maxSeq } = cfg;
    this.HS = C / NH;
    const get = (name: string): Float32Array => getF32(weights, name);
    // Ours stores [out × in]; TF.js gets [in × out] so that x·W is an untransposed product.
    const proj = (name: string, out: number, inp: number): TF.Variable => tf.variable(tf.tidy(() => tf.transpose(tf.tensor2d(get(name), [out, inp]))), true, `tfjs.${name}`);
    const gain = (name: string): TF.Variable => tf.variable(tf.tensor1d(get(name)), true, `tfjs.${name}`);
    this.emb = tf.variable(tf.tensor2d(get('tok_emb'), [V, C]), true, 'tfjs.tok_emb');
    this.layers = [];
    for (let l = 0; l < cfg.layers; l++) {
      const p = `layers.${l}`;
      this.layers.push({
        attn_norm: gain(`${p}.attn_norm`),
        wq: proj(`${p}.wq`, C, C),
        wk: proj(`${p}.wk`, C, C),
        wv: proj(`${p}.wv`, C, C),
        wo: proj(`${p}.wo`, C, C),
        mlp_norm: gain(`${p}.mlp_norm`),
        w1: proj(`${p}.w1`, H, C),
        w3: proj(`${p}.w3`, H, C),
        w2: proj(`${p}.w2`, C, H),
      });
    }
    this.finalNorm = gain('final_norm');
    this.vars = [this.emb, ...this.layers.flatMap((l) => Object.values(l)), this.finalNorm];
    // RoPE as the ONNX export writes it (bench/onnx/export.ts, ropeConstants): COS, SIN [Tmax × 1 × HS]
    // pair-duplicated, P the signed pair permutation, so rope(x) = x ⊙ COS + (x·P) ⊙ SIN.
    const rope = ropeConstants(maxSeq, this.HS, cfg.ropeTheta);
    this.cos = tf.tensor3d(rope.cos, [maxSeq, 1, this.HS]);
    this.sin = tf.tensor3d(rope.sin, [maxSeq, 1, this.HS]);
    this.perm = tf.tensor2d(rope.perm, [this.HS, this.HS]);
    // The "fixed" product (header): a·b with the backward as transpose-then-untransposed-matMul.
    this.fixedMatMul = tf.customGrad((a, b, save) => {
      const [x, y] = [a as TF.Tensor, b as TF.Tensor];
      (save as TF.GradSaveFunc)([x, y]);
      return {
        value: tf.matMul(x, y),
        gradFunc: (dy: TF.Tensor, saved: TF.Tensor[]) => [tf.matMul(dy, tf.transpose(saved[1]!)), tf.matMul(tf.transpose(saved[0]!), dy)],
      };
    }) as (a: TF.Tensor, b: TF.Tensor) => TF.Tensor;
  }

  /** The trainable variables (for variableGrads). */
  variables(): TF.Variable[] {
    return this.vars;
  }

  private rmsnorm(x: TF.Tensor, g: TF.Tensor): TF.Tensor {
    const tf = this.tf;
    return tf.mul(tf.mul(x, tf.rsqrt(tf.add(tf.mean(tf.square(x), -1, true), this.cfg.normEps))), g);
  }

  /** Rotary positions on x [B × T × NH × HS] at positions pos0..pos0+T−1; `mm` is the pair-swap product. */
  private rope(x: TF.Tensor, B: number, T: number, pos0: number, mm: (a: TF.Tensor, b: TF.Tensor) => TF.Tensor): TF.Tensor {
    const tf = this.tf;
    const { heads: NH } = this.cfg;
    const HS = this.HS;
    const swapped = tf.reshape(mm(tf.reshape(x, [B * T * NH, HS]), this.perm), [B, T, NH, HS]);
    const cos = tf.slice(this.cos, [pos0, 0, 0], [T, 1, HS]);
    const sin = tf.slice(this.sin, [pos0, 0, 0], [T, 1, HS]);
    return tf.add(tf.mul(x, cos), tf.mul(swapped, sin));
  }

  /** logits [B·T × V] for tokens [B·T] (int32), positions 0..T−1; `mode` picks the 2-D product's backward. */
  logits(tokens: TF.Tensor, B: number, T: number, mode: GradMode): TF.Tensor {
    const tf = this.tf;
    const { vocab: V, d: C, heads: NH } = this.cfg;
    const HS = this.HS;
    const N = B * T;
    const mm = mode === 'stock' ? (a: TF.Tensor, b: TF.Tensor): TF.Tensor => tf.matMul(a, b) : this.fixedMatMul;
    const mask = tf.tidy(() => tf.mul(tf.sub(1, tf.linalg.bandPart(tf.ones([T, T]), -1, 0)), -1e9));
    let x = mm(tf.cast(tf.oneHot(tokens, V), 'float32'), this.emb);
    for (const w of this.layers) {
      const h = this.rmsnorm(x, w.attn_norm!);
      const heads = (y: TF.Tensor): TF.Tensor => tf.transpose(y, [0, 2, 1, 3]); // [B, NH, T, HS]
      const q = heads(this.rope(tf.reshape(mm(h, w.wq!), [B, T, NH, HS]), B, T, 0, mm));
      const k = heads(this.rope(tf.reshape(mm(h, w.wk!), [B, T, NH, HS]), B, T, 0, mm));
      const v = heads(tf.reshape(mm(h, w.wv!), [B, T, NH, HS]));
      const att = tf.softmax(tf.add(tf.mul(tf.matMul(q, k, false, true), 1 / Math.sqrt(HS)), mask));
      const o = tf.reshape(tf.transpose(tf.matMul(att, v), [0, 2, 1, 3]), [N, C]);
      x = tf.add(x, mm(o, w.wo!));
      const h2 = this.rmsnorm(x, w.mlp_norm!);
      const a = mm(h2, w.w1!);
      x = tf.add(x, mm(tf.mul(tf.mul(a, tf.sigmoid(a)), mm(h2, w.w3!)), w.w2!));
    }
    return mm(this.rmsnorm(x, this.finalNorm), tf.transpose(this.emb));
  }

  /** Mean next-token cross-entropy; `target` [B·T × V] = onehot(next token), zero rows where none. */
  loss(tokens: TF.Tensor, target: TF.Tensor, count: number, B: number, T: number, mode: GradMode): TF.Scalar {
    const tf = this.tf;
    return tf.div(tf.neg(tf.sum(tf.mul(tf.logSoftmax(this.logits(tokens, B, T, mode)), target))), count) as TF.Scalar;
  }

  /** Loss and gradients (by variable name), no step taken. Caller disposes (tidy). */
  grads(tokens: TF.Tensor, target: TF.Tensor, count: number, B: number, T: number, mode: GradMode): { value: TF.Scalar; grads: TF.NamedTensorMap } {
    return this.tf.variableGrads(() => this.loss(tokens, target, count, B, T, mode), this.vars);
  }

  /** One training step (header); returns the loss before it. */
  trainStep(opt: TF.Optimizer, tokens: TF.Tensor, target: TF.Tensor, count: number, B: number, T: number, mode: GradMode): number {
    const tf = this.tf;
    const value = tf.tidy(() => {
      const { value, grads } = this.grads(tokens, target, count, B, T, mode);
      const norm = Math.sqrt(tf.addN(Object.values(grads).map((g) => tf.sum(tf.square(g)))).dataSync()[0]!);
      if (!Number.isFinite(norm)) throw new Error(`TF.js: gradient norm ${norm}`);
      opt.applyGradients(grads);
      return value;
    });
    const loss = value.dataSync()[0]!;
    value.dispose();
    return loss;
  }

  /**
   * S one-token prompts (`first`), `maxNew` new tokens each, τ = 1, no stop, KV cache (header).
   * Returns the generated ids, [S × maxNew] row-major.
   */
  generate(first: Int32Array, maxNew: number, seed: number): Int32Array {
    const tf = this.tf;
    const { vocab: V, d: C, heads: NH } = this.cfg;
    const HS = this.HS;
    const S = first.length;
    const out = new Int32Array(S * maxNew);
    const embT = tf.transpose(this.emb);
    const plain = (a: TF.Tensor, b: TF.Tensor): TF.Tensor => tf.matMul(a, b);
    let ids: TF.Tensor = tf.tensor1d(first, 'int32');
    let caches: TF.Tensor[] = []; // per layer: K, V [S, NH, t, HS]
    for (let step = 0; step < maxNew; step++) {
      const pos = step; // prompt length 1: the row fed at step s sits at position s
      const res = tf.tidy(() => {
        const next: TF.Tensor[] = [];
        let x = tf.matMul(tf.cast(tf.oneHot(ids, V), 'float32'), this.emb);
        this.layers.forEach((w, l) => {
          const h = this.rmsnorm(x, w.attn_norm!);
          const q = tf.transpose(this.rope(tf.reshape(tf.matMul(h, w.wq!), [S, 1, NH, HS]), S, 1, pos, plain), [0, 2, 1, 3]);
          const k = tf.transpose(this.rope(tf.reshape(tf.matMul(h, w.wk!), [S, 1, NH, HS]), S, 1, pos, plain), [0, 2, 1, 3]);
          const v = tf.reshape(tf.matMul(h, w.wv!), [S, NH, 1, HS]);
          const K = step === 0 ? k : tf.concat([caches[2 * l]!, k], 2);
          const Vc = step === 0 ? v : tf.concat([caches[2 * l + 1]!, v], 2);
          next.push(K, Vc);
          const att = tf.softmax(tf.mul(tf.matMul(q, K, false, true), 1 / Math.sqrt(HS))); // [S, NH, 1, t]
          const o = tf.reshape(tf.matMul(att, Vc), [S, C]);
          x = tf.add(x, tf.matMul(o, w.wo!));
          const h2 = this.rmsnorm(x, w.mlp_norm!);
          const a = tf.matMul(h2, w.w1!);
          x = tf.add(x, tf.matMul(tf.mul(tf.mul(a, tf.sigmoid(a)), tf.matMul(h2, w.w3!)), w.w2!));
        });
        const logits = tf.matMul(this.rmsnorm(x, this.finalNorm), embT) as TF.Tensor2D;
        return { ids: tf.reshape(tf.multinomial(logits, 1, seed + step), [S]), next };
      });
      for (const t of caches) t.dispose();
      ids.dispose();
      caches = res.next;
      ids = res.ids;
      const got = ids.dataSync();
      for (let s = 0; s < S; s++) out[s * maxNew + step] = got[s]!;
    }
    for (const t of caches) t.dispose();
    ids.dispose();
    embT.dispose();
    return out;
  }

  /** Inference forward: logits [B·T × V] as a Float32Array. */
  forward(tokens: TF.Tensor, B: number, T: number): Float32Array {
    const y = this.tf.tidy(() => this.logits(tokens, B, T, 'stock'));
    const data = y.dataSync() as Float32Array;
    y.dispose();
    return data;
  }
}

/** ms per call (median of 5, after 2 warm-ups) of the four ways to run one product (header). */
export function matmulProbe(tf: Tf, N: number, C: number, OC: number): { nn: number; nt: number; tn: number; transposeNn: number } {
  const time = (f: () => TF.Tensor): number => {
    const ms: number[] = [];
    for (let i = 0; i < 7; i++) {
      const t0 = performance.now();
      const y = tf.tidy(f);
      y.dataSync();
      if (i >= 2) ms.push(performance.now() - t0);
      y.dispose();
    }
    ms.sort((a, b) => a - b);
    return ms[2]!;
  };
  const [x, w, dy] = tf.tidy(() => [tf.randomNormal([N, C]), tf.randomNormal([C, OC]), tf.randomNormal([N, OC])]);
  const r = {
    nn: time(() => tf.matMul(x!, w!)), //                           x·W, the forward
    nt: time(() => tf.matMul(dy!, w!, false, true)), //             dx = dy·Wᵀ, stock
    tn: time(() => tf.matMul(x!, dy!, true, false)), //             dW = xᵀ·dy, stock
    transposeNn: time(() => tf.matMul(tf.transpose(x!), dy!)), //  dW, fixed
  };
  tf.dispose([x!, w!, dy!]);
  return r;
}
