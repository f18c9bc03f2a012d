/**
 * The tiny Llama-family decoder as one object: forward, backward, AdamW, KV-cache sampling, over
 * the CPU reference kernels (src/backend/cpu). Pre-norm blocks, tied embeddings:
 *
 *   x₀ = E[tokens]                                            (embeddingForward)
 *   per layer l:
 *     h  = rmsnorm(x; g_attn)                                 (rmsnormForward)
 *     q  = rope(h·Wqᵀ),  k = rope(h·Wkᵀ),  v = h·Wvᵀ          (linear.ts, ropeForward, pos 0..T−1)
 *     x ← x + attn(q, k, v)·Woᵀ                               (attentionForward: causal softmax)
 *     h  = rmsnorm(x; g_mlp)
 *     x ← x + (silu(h·W1ᵀ) ⊙ h·W3ᵀ)·W2ᵀ                       (SwiGLU, swigluForward)
 *   logits = rmsnorm(x; g_final) · Eᵀ                         (tied head: matmul with tok_emb)
 * Backward is the exact reverse chain of the kernels' backwards (each cites its maths).
 *
 * Trainable parameters live in ONE flat array (`params`, with `grads` and AdamW's `m`, `v` the
 * same length), so a caller can snapshot, restore or interpolate a policy by copying arrays:
 *   'full'  params = every weight in `weightNames` order (needs all-f32 weights);
 *   'lora'  params = (A [r × in], B [out × r]) per adapted projection in `loraTargets` order; the
 *           base (f32, Q8 or Q4) is frozen and never merged — y = x·Wᵀ + (α/r)·(x·Aᵀ)·Bᵀ;
 *   'none'  no parameters (inference only).
 * `layout` names each slice; `param(name)` / `grad(name)` are views. 'full' copies the weights
 * into `params`; a frozen base ('lora', 'none') is NOT copied — the model reads the caller's
 * arrays, so do not mutate them while it is in use.
 *
 * Precision: arrays are Float32Array by default; passing `floatArray: Float64Array` runs the
 * same code in f64 (the kernels accept either) — that is what the finite-difference tests use.
 *
 * Sampling (`generate`): every prompt is prefilled at its own positions 0..P−1 (no padding), and
 * the batch then decodes one token per live sequence per step as a "ragged" batch — the
 * projections and MLP run over all rows at once, while RoPE, the KV-cache write and attention run
 * per sequence at that sequence's own position. Because every kernel computes each output row
 * independently (one f64 accumulator per element), batched decoding gives bit for bit the logits
 * of one-by-one decoding and of a plain forward over prompt + generated tokens.
 *
 * Shape letters: B batch, T time, N = B·T rows, C = d (model width), NH heads, HS = C/NH head
 * size, H hidden (SwiGLU), V vocabulary, L layers, r LoRA rank, S number of prompts, Tmax cache
 * length (≤ maxSeq).
 *
 * Beside it: transformer/linear.ts (one projection with its optional LoRA branch),
 * transformer/buffers.ts (grow-only activation buffers), transformer/types.ts (option types).
 *
 * Not here: the kernels (src/backend/cpu), weight files and quantization (weights.ts), LoRA init
 * (lora.ts), RL losses (the caller turns them into dlogits), the WebGPU path.
 */
import {
  adamwStep,
  attentionBackward,
  attentionCachedForward,
  attentionForward,
  embeddingBackward,
  embeddingForward,
  kvCacheWrite,
  residualForward,
  rmsnormBackward,
  rmsnormForward,
  ropeBackward,
  ropeForward,
  ropeTable,
  rowLogSumExp,
  sampleForward,
  swigluBackward,
  swigluForward,
} from '../backend/cpu';
import type { FloatArray } from '../backend/types';
import { ConfigError, NumericError } from '../core/errors';
import { Rng } from '../core/rng';
import { validateConfig, type ModelConfig } from './config';
import { initLora, LORA_ALL, validateLoraConfig, type LoraConfig, type LoraTarget } from './lora';
import { PAD } from './tokenizer';
import { makeActs, makeGradScratch, type Acts, type BufferDims, type GradScratch, type LayerActs } from './transformer/buffers';
import { linearBackward, linearForward, matForward, type Linear, type Mat } from './transformer/linear';
import type {
  FloatArrayCtor,
  ForwardOptions,
  GenerateOptions,
  GenerateResult,
  ParamSlot,
  Trainable,
  TrainOptions,
  TransformerOptions,
  TransformerState,
} from './transformer/types';
import { checkWeights, dequantizeTensor, expectedShape, weightNames, type ModelWeights, type WeightTensor } from './weights';
import { checkGenerateArgs } from './transformer/generateArgs';

export type * from './transformer/types';

/** A run of consecutive rows of one sequence at positions pos0..pos0+len−1 (ragged batches). */
interface Run {
  seq: number;
  pos0: number;
  len: number;
  row: number;
}

/** Projections of a layer in `Linear` index order (= LORA_ALL order). */
const PROJ = ['wq', 'wk', 'wv', 'wo', 'w1', 'w3', 'w2'] as const;
const [WQ, WK, WV, WO, W1, W3, W2] = [0, 1, 2, 3, 4, 5, 6] as const;

function toMat(t: WeightTensor): Mat {
  switch (t.dtype) {
    case 'f32':
      return { kind: 'f32', w: t.data };
    case 'q8':
      return { kind: 'q8', q: t.q, scales: t.scales };
    case 'q4':
      return { kind: 'q4', q: t.q, scales: t.scales };
  }
}


/**
 * A tiny Llama decoder with its trainable parameters in one flat array (header). `A` is the
 * float array type (Float32Array unless built with `floatArray: Float64Array`).
 */
export class Transformer<A extends FloatArray = Float32Array> {
  readonly cfg: ModelConfig;
  readonly trainable: Trainable;
  /** The LoRA config in 'lora' mode, else null. */
  readonly lora: LoraConfig | null;
  /** Trainable parameters (see `layout`). */
  readonly params: A;
  /** ∂L/∂params; `backward` accumulates here. */
  readonly grads: A;
  /** AdamW first / second moments. */
  readonly m: A;
  readonly v: A;
  /** AdamW steps taken (the next step uses t + 1). */
  t = 0;
  /** Named slices of `params` (and of grads, m, v). */
  readonly layout: readonly ParamSlot[];

  private readonly F: FloatArrayCtor<A>;
  private readonly HS: number;
  private readonly lins: Linear[][]; // [L][7]
  private readonly attnNorm: FloatArray[];
  private readonly mlpNorm: FloatArray[];
  private readonly finalNorm: FloatArray;
  private readonly dAttnNorm: FloatArray[];
  private readonly dMlpNorm: FloatArray[];
  private readonly dFinalNorm: FloatArray;
  /** Embedding table and tied head [V × C] (a quantized tok_emb is dequantized once, see below). */
  private readonly emb: FloatArray;
  private readonly dEmb: FloatArray | null;
  private readonly rope: FloatArray;
  private readonly dims: BufferDims;
  private readonly slots = new Map<string, ParamSlot>();
  private acts: Acts | null = null;
  private genActs: Acts | null = null;
  private gs: GradScratch | null = null;
  private kCache: FloatArray[] = [];
  private vCache: FloatArray[] = [];
  private kept: { B: number; T: number; tokens: Int32Array } | null = null;
  private dlogitsBuf: FloatArray | null = null;

  constructor(cfg: ModelConfig, weights: ModelWeights, opts: TransformerOptions<A>) {
    validateConfig(cfg);
    checkWeights(cfg, weights);
    const mode = opts.trainable;
    if (mode !== 'full' && mode !== 'lora' && mode !== 'none') {
      throw new ConfigError('trainable', mode, `Transformer "trainable" must be 'full', 'lora' or 'none', got ${JSON.stringify(mode)}.`);
    }
    if (mode === 'lora' && !opts.lora) throw new ConfigError('lora', opts.lora, "Transformer with trainable 'lora' needs a LoRA config (opts.lora: { rank, alpha, targets? }).");
    if (mode !== 'lora' && opts.lora) throw new ConfigError('lora', opts.lora, `Transformer got a LoRA config but trainable is '${mode}'; use trainable 'lora'.`);
    if (opts.lora) validateLoraConfig(cfg, opts.lora);
    if (mode === 'full') {
      for (const [name, t] of weights) {
        if (t.dtype !== 'f32') {
          throw new ConfigError(
            'trainable',
            mode,
            `Full fine-tuning needs f32 weights, but "${name}" is ${t.dtype}. Dequantize the model first (dequantizeWeights) or train LoRA adapters over the quantized base (trainable 'lora').`,
          );
        }
      }
    }
    this.cfg = cfg;
    this.trainable = mode;
    this.lora = opts.lora ?? null;
    const F = opts.floatArray ?? (Float32Array as unknown as FloatArrayCtor<A>);
    this.F = F;
    const { d: C, hidden: H, layers: L } = cfg;
    this.HS = C / cfg.heads;

    // --- the flat layout ---
    const layout: ParamSlot[] = [];
    let n = 0;
    const add = (name: string, shape: number[]): void => {
      const size = shape.reduce((p, s) => p * s, 1);
      const slot = { name, offset: n, size, shape };
      layout.push(slot);
      this.slots.set(name, slot);
      n += size;
    };
    const lcfg = this.lora;
    const targets: readonly LoraTarget[] = lcfg?.targets ?? LORA_ALL;
    if (mode === 'full') for (const name of weightNames(cfg)) add(name, expectedShape(cfg, name));
    if (mode === 'lora' && lcfg) {
      for (let l = 0; l < L; l++) {
        for (const p of PROJ) {
          if (!targets.includes(p)) continue;
          const [out, inp] = expectedShape(cfg, `layers.${l}.${p}`) as [number, number];
          add(`layers.${l}.${p}.lora_a`, [lcfg.rank, inp]);
          add(`layers.${l}.${p}.lora_b`, [out, lcfg.rank]);
        }
      }
    }
    this.layout = layout;
    this.params = new F(n);
    this.grads = new F(n);
    this.m = new F(n);
    this.v = new F(n);

    // --- fill params ---
    if (mode === 'full') {
      for (const slot of layout) this.view(this.params, slot).set((weights.get(slot.name) as { data: Float32Array }).data);
    }
    if (mode === 'lora' && lcfg) {
      const adapter = initLora(cfg, lcfg, new Rng(opts.seed ?? 0));
      for (const [name, pair] of adapter.pairs) {
        this.view(this.params, this.slots.get(`${name}.lora_a`)!).set(pair.a);
        this.view(this.params, this.slots.get(`${name}.lora_b`)!).set(pair.b);
      }
    }

    // --- tensors the forward reads ---
    const f32 = (name: string): FloatArray => {
      if (mode === 'full') return this.param(name);
      const t = weights.get(name)!;
      return t.dtype === 'f32' ? t.data : dequantizeTensor(t);
    };
    const scratchC = new F(C); // gradient sink for frozen norm gains
    const gradOf = (name: string): FloatArray => (mode === 'full' ? this.grad(name) : scratchC);
    // tok_emb is both the embedding table and the head. Quantized, it is dequantized once into
    // f32 [V × C]: the lookup needs f32 rows, and matmulForwardQ8/Q4 equal matmulForward on the
    // dequantized matrix bit for bit (quant.ts), so the head's numbers are those of the Q8/Q4 path.
    this.emb = f32('tok_emb');
    this.dEmb = mode === 'full' ? this.grad('tok_emb') : null;
    this.finalNorm = f32('final_norm');
    this.dFinalNorm = gradOf('final_norm');
    this.attnNorm = [];
    this.mlpNorm = [];
    this.dAttnNorm = [];
    this.dMlpNorm = [];
    this.lins = [];
    for (let l = 0; l < L; l++) {
      this.attnNorm.push(f32(`layers.${l}.attn_norm`));
      this.mlpNorm.push(f32(`layers.${l}.mlp_norm`));
      this.dAttnNorm.push(gradOf(`layers.${l}.attn_norm`));
      this.dMlpNorm.push(gradOf(`layers.${l}.mlp_norm`));
      const row: Linear[] = [];
      for (const p of PROJ) {
        const name = `layers.${l}.${p}`;
        const [out, inp] = expectedShape(cfg, name) as [number, number];
        const base: Mat = mode === 'full' ? { kind: 'f32', w: this.param(name) } : toMat(weights.get(name)!);
        const adapted = mode === 'lora' && lcfg !== null && targets.includes(p);
        row.push({
          name,
          in: inp,
          out,
          base,
          dw: mode === 'full' ? this.grad(name) : null,
          lora: adapted
            ? {
                a: this.param(`${name}.lora_a`),
                b: this.param(`${name}.lora_b`),
                da: this.grad(`${name}.lora_a`),
                db: this.grad(`${name}.lora_b`),
                rank: lcfg.rank,
                scale: lcfg.alpha / lcfg.rank,
              }
            : null,
        });
      }
      this.lins.push(row);
    }
    this.dims = { C, H, L, ranks: this.lins[0]!.map((lin) => lin.lora?.rank ?? null) };
    this.rope = ropeTable(cfg.maxSeq, this.HS, cfg.ropeTheta, new F(cfg.maxSeq * this.HS));
  }

  /** Number of trainable parameters (params.length): all weights ('full'), Σ r·(in+out) ('lora'), 0 ('none'). */
  paramCount(): number {
    return this.params.length;
  }

  /** View of `arr` (params, grads, m or v) for one slot. */
  private view(arr: A, slot: ParamSlot): A {
    return arr.subarray(slot.offset, slot.offset + slot.size) as A;
  }

  private slot(name: string): ParamSlot {
    const s = this.slots.get(name);
    if (!s) throw new ConfigError('name', name, `"${name}" is not a trainable tensor of this model (${this.trainable} mode); names: ${this.layout.map((x) => x.name).join(', ') || 'none'}.`);
    return s;
  }

  /** View into `params` of one named tensor (writes go to the model). */
  param(name: string): A {
    return this.view(this.params, this.slot(name));
  }

  /** View into `grads` of one named tensor. */
  grad(name: string): A {
    return this.view(this.grads, this.slot(name));
  }

  /** grads ← 0. */
  zeroGrad(): void {
    this.grads.fill(0);
  }

  /** Copies of params and optimizer state ([t, m…, v…]). */
  getState(): TransformerState<A> {
    const n = this.params.length;
    const optim = new this.F(1 + 2 * n);
    optim[0] = this.t;
    optim.set(this.m, 1);
    optim.set(this.v, 1 + n);
    return { params: this.params.slice() as A, optim };
  }

  /** Restores a `getState` snapshot (copies; lengths must match). */
  setState(state: { readonly params: ArrayLike<number>; readonly optim?: ArrayLike<number> }): void {
    const n = this.params.length;
    if (state.params.length !== n) throw new ConfigError('params', state.params.length, `setState: params has ${state.params.length} values; this model has ${n} trainable parameters.`);
    this.params.set(state.params);
    if (state.optim !== undefined) {
      const o = state.optim;
      if (o.length !== 1 + 2 * n) throw new ConfigError('optim', o.length, `setState: optim has ${o.length} values; expected 1 + 2·${n} = ${1 + 2 * n} ([t, m…, v…]).`);
      const t = o[0]!;
      if (!Number.isInteger(t) || t < 0) throw new ConfigError('optim', t, `setState: optim[0] (the AdamW step count) must be an integer ≥ 0, got ${t}.`);
      this.t = t;
      for (let i = 0; i < n; i++) {
        this.m[i] = o[1 + i]!;
        this.v[i] = o[1 + n + i]!;
      }
    }
  }

  // ---------------------------------------------------------------- buffers

  /** Training activations, grow-only: one set per layer (keep) or one shared set. */
  private trainActs(N: number, att: number, keep: boolean): Acts {
    const nSets = keep ? this.cfg.layers : 1;
    const a = this.acts;
    if (a !== null && a.capN >= N && a.capAtt >= att && a.sets.length >= nSets) return a;
    this.acts = makeActs(this.F, this.dims, Math.max(N, a?.capN ?? 0), Math.max(att, a?.capAtt ?? 0), Math.max(nSets, a?.sets.length ?? 0));
    return this.acts;
  }

  private gradScratch(N: number): GradScratch {
    if (this.gs === null || this.gs.capN < N) this.gs = makeGradScratch(this.F, this.dims, N);
    return this.gs;
  }

  // ---------------------------------------------------------------- forward / backward

  /**
   * One block (header) on N rows: x_in → x_mid → x_out (they may be the same buffer when nothing
   * is kept). `attention(s, l)` turns s.q, s.k, s.v (projected, not yet rotated) into s.ao.
   */
  private layerForward(l: number, s: LayerActs, acts: Acts, xin: FloatArray, xmid: FloatArray, xout: FloatArray, N: number, attention: (s: LayerActs, l: number) => void): void {
    const { d: C, hidden: H, normEps } = this.cfg;
    const lin = this.lins[l]!;
    const { proj, tmp } = acts;
    rmsnormForward(s.ln1, s.rstd1, xin, this.attnNorm[l]!, 1, N, C, normEps);
    linearForward(lin[WQ]!, s.q, s.ln1, s.u[WQ]!, tmp, N);
    linearForward(lin[WK]!, s.k, s.ln1, s.u[WK]!, tmp, N);
    linearForward(lin[WV]!, s.v, s.ln1, s.u[WV]!, tmp, N);
    attention(s, l);
    linearForward(lin[WO]!, proj, s.ao, s.u[WO]!, tmp, N);
    residualForward(xmid, xin, proj, N * C);
    rmsnormForward(s.ln2, s.rstd2, xmid, this.mlpNorm[l]!, 1, N, C, normEps);
    linearForward(lin[W1]!, s.a, s.ln2, s.u[W1]!, tmp, N);
    linearForward(lin[W3]!, s.b, s.ln2, s.u[W3]!, tmp, N);
    swigluForward(s.h, s.a, s.b, N * H);
    linearForward(lin[W2]!, proj, s.h, s.u[W2]!, tmp, N);
    residualForward(xout, xmid, proj, N * C);
  }

  /**
   * logits [B × T × V] for tokens [B × T] at positions 0..T−1 (header). With `keep`, the
   * activations are saved for `backward` (until the next forward). Causal attention makes
   * trailing padding harmless to the earlier positions; the caller ignores logits there.
   */
  forward(tokens: Int32Array, B: number, T: number, opts: ForwardOptions<A> = {}): A {
    const { d: C, vocab: V, heads: NH, maxSeq, layers: L, normEps } = this.cfg;
    if (!Number.isInteger(B) || B < 1 || !Number.isInteger(T) || T < 1) throw new ConfigError('shape', [B, T], `forward: B and T must be integers ≥ 1, got B = ${B}, T = ${T}.`);
    if (T > maxSeq) throw new ConfigError('T', T, `forward: T = ${T} exceeds the model's maxSeq = ${maxSeq}.`);
    const N = B * T;
    if (tokens.length < N) throw new ConfigError('tokens', tokens.length, `forward: tokens has ${tokens.length} ids; B·T = ${N} needed.`);
    const keep = opts.keep ?? false;
    const out = opts.out ?? new this.F(N * V);
    if (out.length < N * V) throw new ConfigError('out', out.length, `forward: out has ${out.length} values; B·T·V = ${N * V} needed.`);
    const HS = this.HS;
    const acts = this.trainActs(N, B * NH * T * T, keep);
    this.kept = null;
    embeddingForward(acts.res[0]!, tokens, this.emb, B, T, C);
    const attention = (s: LayerActs): void => {
      ropeForward(s.q, s.q, this.rope, B, T, NH, HS, 0);
      ropeForward(s.k, s.k, this.rope, B, T, NH, HS, 0);
      attentionForward(s.ao, s.att, s.q, s.k, s.v, B, T, NH, HS);
    };
    for (let l = 0; l < L; l++) {
      const s = acts.sets[keep ? l : 0]!;
      this.layerForward(l, s, acts, acts.res[l]!, s.mid, acts.res[l + 1]!, N, attention);
    }
    rmsnormForward(acts.lnf, acts.rstdf, acts.res[L]!, this.finalNorm, 1, N, C, normEps);
    matForward(out, acts.lnf, { kind: 'f32', w: this.emb }, N, C, V);
    if (keep) this.kept = { B, T, tokens: tokens.slice(0, N) };
    return out;
  }

  /**
   * Backpropagates dlogits [B × T × V] through the last `forward(…, { keep: true })`,
   * ACCUMULATING ∂L/∂params into `grads` (call zeroGrad first). Frozen tensors get no gradient.
   */
  backward(dlogits: FloatArray): void {
    if (this.trainable === 'none') throw new ConfigError('trainable', 'none', "backward: this Transformer is inference-only (trainable 'none').");
    const kept = this.kept;
    const acts = this.acts;
    if (kept === null || acts === null) throw new ConfigError('keep', false, 'backward: call forward(tokens, B, T, { keep: true }) first; a forward without keep (or none) came last.');
    const { B, T, tokens } = kept;
    const { d: C, vocab: V, heads: NH, hidden: H, layers: L } = this.cfg;
    const HS = this.HS;
    const N = B * T;
    if (dlogits.length < N * V) throw new ConfigError('dlogits', dlogits.length, `backward: dlogits has ${dlogits.length} values; B·T·V = ${N * V} needed.`);
    const g = this.gradScratch(N);
    const NC = N * C;
    const NH_ = N * H;
    g.dlnf.fill(0, 0, NC);
    linearBackward({ name: 'tok_emb', in: C, out: V, base: { kind: 'f32', w: this.emb }, dw: this.dEmb, lora: null }, g.dlnf, dlogits, acts.lnf, null, g.dsc, g.du, N);
    g.dx.fill(0, 0, NC);
    rmsnormBackward(g.dx, this.dFinalNorm, g.dlnf, acts.res[L]!, this.finalNorm, acts.rstdf, 1, N, C);
    for (let l = L - 1; l >= 0; l--) {
      const s = acts.sets[l]!;
      const lin = this.lins[l]!;
      // MLP branch: x_out = x_mid + W2·(silu(W1·h) ⊙ W3·h),  h = rmsnorm(x_mid)
      g.dh.fill(0, 0, NH_);
      linearBackward(lin[W2]!, g.dh, g.dx, s.h, s.u[W2]!, g.dsc, g.du, N);
      g.da.fill(0, 0, NH_);
      g.db.fill(0, 0, NH_);
      swigluBackward(g.da, g.db, g.dh, s.a, s.b, NH_);
      g.dln.fill(0, 0, NC);
      linearBackward(lin[W1]!, g.dln, g.da, s.ln2, s.u[W1]!, g.dsc, g.du, N);
      linearBackward(lin[W3]!, g.dln, g.db, s.ln2, s.u[W3]!, g.dsc, g.du, N);
      rmsnormBackward(g.dx, this.dMlpNorm[l]!, g.dln, s.mid, this.mlpNorm[l]!, s.rstd2, 1, N, C); // dx = ∂L/∂x_mid
      // attention branch: x_mid = x_in + Wo·attn(rope(Wq·h), rope(Wk·h), Wv·h),  h = rmsnorm(x_in)
      g.dao.fill(0, 0, NC);
      linearBackward(lin[WO]!, g.dao, g.dx, s.ao, s.u[WO]!, g.dsc, g.du, N);
      g.dq.fill(0, 0, NC);
      g.dk.fill(0, 0, NC);
      g.dv.fill(0, 0, NC);
      attentionBackward(g.dq, g.dk, g.dv, g.dao, s.q, s.k, s.v, s.att, B, T, NH, HS);
      g.dln.fill(0, 0, NC);
      g.drot.fill(0, 0, NC);
      ropeBackward(g.drot, g.dq, this.rope, B, T, NH, HS, 0);
      linearBackward(lin[WQ]!, g.dln, g.drot, s.ln1, s.u[WQ]!, g.dsc, g.du, N);
      g.drot.fill(0, 0, NC);
      ropeBackward(g.drot, g.dk, this.rope, B, T, NH, HS, 0);
      linearBackward(lin[WK]!, g.dln, g.drot, s.ln1, s.u[WK]!, g.dsc, g.du, N);
      linearBackward(lin[WV]!, g.dln, g.dv, s.ln1, s.u[WV]!, g.dsc, g.du, N);
      rmsnormBackward(g.dx, this.dAttnNorm[l]!, g.dln, acts.res[l]!, this.attnNorm[l]!, s.rstd1, 1, N, C); // dx = ∂L/∂x_in
    }
    if (this.dEmb !== null) embeddingBackward(this.dEmb, g.dx, tokens, B, T, C);
  }

  /** One AdamW step over the flat arrays (adamwStep; t ← t + 1). Descends `grads`. */
  adamStep(lr: number, weightDecay = 0): void {
    if (this.trainable === 'none') throw new ConfigError('trainable', 'none', "adamStep: this Transformer is inference-only (trainable 'none').");
    this.t += 1;
    adamwStep(this.params, this.grads, this.m, this.v, this.params.length, this.t, { lr, weightDecay });
  }

  /** √(Σ grads²). */
  gradNorm(): number {
    let s = 0;
    for (let i = 0; i < this.grads.length; i++) s += this.grads[i]! * this.grads[i]!;
    return Math.sqrt(s);
  }

  /**
   * Next-token cross-entropy on tokens [B × T]: position t predicts tokens[t+1], targets equal to
   * PAD are skipped, and the loss is the mean over the remaining M targets:
   *   loss = (1/M) Σ (logsumexp(z) − z[target]),   ∂loss/∂z = (softmax(z) − onehot(target)) / M.
   * With `backward`, accumulates ∂loss/∂params into grads. Returns the loss (M = 0 is an error).
   */
  nextTokenLoss(tokens: Int32Array, B: number, T: number, backward = false): number {
    const V = this.cfg.vocab;
    const N = B * T;
    if (this.dlogitsBuf === null || this.dlogitsBuf.length < N * V) this.dlogitsBuf = new this.F(N * V);
    const logits = this.forward(tokens, B, T, { keep: backward, out: this.dlogitsBuf as A });
    let M = 0;
    for (let b = 0; b < B; b++) for (let t = 0; t + 1 < T; t++) if (tokens[b * T + t + 1] !== PAD) M++;
    if (M === 0) throw new ConfigError('tokens', 'all PAD', 'nextTokenLoss: no target position (every next token is PAD, or T = 1).');
    let loss = 0;
    const dz = logits; // overwritten in place, row by row, after its loss term is read
    for (let b = 0; b < B; b++) {
      for (let t = 0; t < T; t++) {
        const off = (b * T + t) * V;
        const target = t + 1 < T ? tokens[b * T + t + 1]! : PAD;
        if (target === PAD) {
          dz.fill(0, off, off + V);
          continue;
        }
        const lse = rowLogSumExp(logits, off, V, 1);
        loss += lse - logits[off + target]!;
        for (let v = 0; v < V; v++) dz[off + v] = Math.exp(logits[off + v]! - lse) / M;
        dz[off + target]! -= 1 / M;
      }
    }
    loss /= M;
    if (!Number.isFinite(loss)) throw new NumericError(`nextTokenLoss: the loss is ${loss}; the model or its inputs produced non-finite logits.`);
    if (backward) this.backward(dz);
    return loss;
  }

  /**
   * One pretraining step: zeroGrad, next-token loss + backward, optional global-norm clipping,
   * AdamW. Returns the loss before the step. A non-finite loss or gradient throws NumericError
   * and leaves the parameters untouched.
   */
  trainOnSequences(tokens: Int32Array, B: number, T: number, opts: TrainOptions): number {
    this.zeroGrad();
    const loss = this.nextTokenLoss(tokens, B, T, true);
    const norm = this.gradNorm();
    if (!Number.isFinite(norm)) throw new NumericError(`trainOnSequences: the gradient norm is ${norm}; no step taken.`);
    const clip = opts.maxGradNorm ?? 0;
    if (clip > 0 && norm > clip) {
      const s = clip / norm;
      for (let i = 0; i < this.grads.length; i++) this.grads[i]! *= s;
    }
    this.adamStep(opts.lr, opts.weightDecay ?? 0);
    return loss;
  }

  // ---------------------------------------------------------------- sampling

  /** Sampling activations (one shared set, no attention matrix), grow-only. */
  private samplingActs(N: number): Acts {
    const a = this.genActs;
    if (a !== null && a.capN >= N) return a;
    this.genActs = makeActs(this.F, this.dims, N, 0, 1);
    return this.genActs;
  }

  /**
   * Runs a ragged batch: rows of several sequences (each run at its own positions), writing their
   * K/V into the caches; leaves the final hidden state of each run's LAST row normed in
   * `lastLn` [runs × C]. Positions of a run must follow what the cache already holds.
   */
  private raggedForward(tokens: Int32Array, runs: readonly Run[], N: number, Tmax: number, lastLn: FloatArray, lastRstd: FloatArray, lastX: FloatArray): void {
    const { d: C, heads: NH, layers: L, normEps } = this.cfg;
    const HS = this.HS;
    const acts = this.samplingActs(N);
    const s = acts.sets[0]!;
    const x = acts.res[0]!;
    embeddingForward(x, tokens, this.emb, 1, N, C);
    const attention = (st: LayerActs, l: number): void => {
      const kc = this.kCache[l]!;
      const vc = this.vCache[l]!;
      for (const run of runs) {
        const r0 = run.row * C;
        const r1 = (run.row + run.len) * C;
        const q = st.q.subarray(r0, r1);
        const k = st.k.subarray(r0, r1);
        const v = st.v.subarray(r0, r1);
        ropeForward(q, q, this.rope, 1, run.len, NH, HS, run.pos0);
        ropeForward(k, k, this.rope, 1, run.len, NH, HS, run.pos0);
        const c0 = run.seq * Tmax * C;
        const kcs = kc.subarray(c0, c0 + Tmax * C);
        const vcs = vc.subarray(c0, c0 + Tmax * C);
        kvCacheWrite(kcs, vcs, k, v, 1, run.len, C, run.pos0, Tmax);
        attentionCachedForward(st.ao.subarray(r0, r1), q, kcs, vcs, 1, run.len, NH, HS, run.pos0, Tmax);
      }
    };
    for (let l = 0; l < L; l++) this.layerForward(l, s, acts, x, x, x, N, attention);
    runs.forEach((run, i) => lastX.set(x.subarray((run.row + run.len - 1) * C, (run.row + run.len) * C), i * C));
    rmsnormForward(lastLn, lastRstd, lastX, this.finalNorm, 1, runs.length, C, normEps);
  }

  /**
   * Samples continuations of each prompt with a KV cache (header: ragged batches, bit-equal to
   * one-by-one decoding and to a full forward). Prompt i is sequence seq0 + i for the sampler and
   * its k-th generated token uses step k (sampleForward's Philox counter (step, seq)), so the same
   * seed gives the same tokens whatever else is in the batch. A sequence ends at `stop`, after
   * `maxNew` tokens, or when prompt + generated reaches maxSeq (then it simply stops, no error).
   */
  generate(prompts: readonly Int32Array[], opts: GenerateOptions): GenerateResult {
    const { d: C, vocab: V, layers: L } = this.cfg;
    const S = prompts.length;
    const { maxSeq, seq0, longest, total } = checkGenerateArgs(this.cfg, prompts, opts);
    const tau = opts.temperature;
    const gen: number[][] = prompts.map(() => []);
    const lps: number[][] = prompts.map(() => []);
    const rows: number[][] = prompts.map(() => []);
    const stopped = prompts.map(() => false);
    const stopLogp = new Float32Array(S).fill(NaN);
    const done = (): GenerateResult => ({
      tokens: gen.map((g) => Int32Array.from(g)),
      logp: lps.map((g) => Float32Array.from(g)),
      stopped,
      stopLogp,
      ...(opts.returnLogits ? { logits: rows.map((r) => Float32Array.from(r)) } : {}),
    });
    if (S === 0 || opts.maxNew === 0) return done();

    // KV caches [S × Tmax × C] per layer, grow-only.
    const Tmax = Math.min(maxSeq, longest + opts.maxNew);
    const need = S * Tmax * C;
    if (this.kCache.length !== L || this.kCache[0]!.length < need) {
      this.kCache = Array.from({ length: L }, () => new this.F(need));
      this.vCache = Array.from({ length: L }, () => new this.F(need));
    }
    const F = this.F;
    const lastX = new F(S * C);
    const lastLn = new F(S * C);
    const lastRstd = new F(S);
    const logits = new F(S * V);
    const tok = new Int32Array(1);
    const invT = tau > 0 ? 1 / tau : 1;

    // Prefill: every prompt at positions 0..P−1, one ragged batch. A prompt that already fills
    // maxSeq has no room for a token and is left out (it generates nothing).
    let runs: Run[] = [];
    const flat = new Int32Array(total);
    let row = 0;
    prompts.forEach((p, i) => {
      if (p.length >= Tmax) return;
      runs.push({ seq: i, pos0: 0, len: p.length, row });
      flat.set(p, row);
      row += p.length;
    });
    let batchTokens = flat.subarray(0, row);
    for (let step = 0; runs.length > 0; step++) {
      this.raggedForward(batchTokens, runs, batchTokens.length, Tmax, lastLn, lastRstd, lastX);
      matForward(logits, lastLn, { kind: 'f32', w: this.emb }, runs.length, C, V);
      const next: Run[] = [];
      const nextTokens: number[] = [];
      runs.forEach((run, i) => {
        const s = run.seq;
        const z = logits.subarray(i * V, (i + 1) * V);
        sampleForward(tok, z, 1, V, { seed: opts.seed, stream: opts.stream, step, temperature: tau, topK: opts.topK, seq0: seq0 + s });
        const a = tok[0]!;
        const lp = z[a]! * invT - rowLogSumExp(z, 0, V, invT);
        if (opts.returnLogits) for (let v = 0; v < V; v++) rows[s]!.push(z[v]!);
        if (a === opts.stop) {
          stopped[s] = true;
          stopLogp[s] = lp;
          return;
        }
        gen[s]!.push(a);
        lps[s]!.push(lp);
        const len = prompts[s]!.length + gen[s]!.length; // tokens so far; the new one sits at len − 1
        if (gen[s]!.length >= opts.maxNew || len >= Tmax) return;
        next.push({ seq: s, pos0: len - 1, len: 1, row: next.length });
        nextTokens.push(a);
      });
      runs = next;
      batchTokens = Int32Array.from(nextTokens);
    }
    return done();
  }

  // ---------------------------------------------------------------- export

  /**
   * The model as f32 weights (fresh arrays): 'full' copies params; 'lora' dequantizes the base
   * and merges W + (α/r)·B·A (lora.ts `loraDelta` maths); 'none' dequantizes. For saveModel/ONNX.
   */
  exportWeights(): ModelWeights {
    const cfg = this.cfg;
    const out: ModelWeights = new Map();
    for (const name of weightNames(cfg)) {
      const shape = expectedShape(cfg, name);
      out.set(name, { dtype: 'f32', shape, data: new Float32Array(shape.reduce((p, s) => p * s, 1)) });
    }
    const put = (name: string, data: FloatArray): void => (out.get(name) as { data: Float32Array }).data.set(data);
    put('tok_emb', this.emb);
    put('final_norm', this.finalNorm);
    for (let l = 0; l < cfg.layers; l++) {
      put(`layers.${l}.attn_norm`, this.attnNorm[l]!);
      put(`layers.${l}.mlp_norm`, this.mlpNorm[l]!);
      for (const lin of this.lins[l]!) {
        const w = lin.base.kind === 'f32' ? lin.base.w : dequantizeTensor({ dtype: lin.base.kind, shape: [lin.out, lin.in], q: lin.base.q, scales: lin.base.scales } as WeightTensor);
        const dst = (out.get(lin.name) as { data: Float32Array }).data;
        const lo = lin.lora;
        if (lo === null) {
          dst.set(w);
          continue;
        }
        // W'[o,c] = W[o,c] + s · Σ_k B[o,k] A[k,c], summed in f64, rounded once.
        const acc = new Float64Array(lin.in);
        for (let o = 0; o < lin.out; o++) {
          acc.fill(0);
          for (let k = 0; k < lo.rank; k++) {
            const bk = lo.b[o * lo.rank + k]!;
            for (let c = 0; c < lin.in; c++) acc[c]! += bk * lo.a[k * lin.in + c]!;
          }
          for (let c = 0; c < lin.in; c++) dst[o * lin.in + c] = w[o * lin.in + c]! + lo.scale * acc[c]!;
        }
      }
    }
    return out;
  }
}
