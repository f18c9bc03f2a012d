/**
 * The tiny Llama-family decoder, the one model of the project (docs/models.md): pre-norm blocks
 * of RMSNorm, RoPE attention and a SwiGLU MLP, tied or untied head, assembled from `Backend<X>`
 * ops only (src/backend/types.ts), so the same code runs on the CPU kernels (f32, or f64 for the
 * finite-difference tests) and on WebGPU. Backward is the exact reverse chain of the kernels'.
 *
 * Trainable parameters by mode: 'full' (every weight, all f32), 'lora' (A, B per adapted
 * projection over a frozen f32/Q8/Q4 base, never merged), 'none' (inference). They live in a
 * ParamStore (params.ts). No op writes a tensor it reads (WebGPU forbids it), and q, k share one
 * pair tensor so one RoPE op rotates both (docs/performance.md, "Dispatch economy").
 *
 * Shape letters: B batch, T time, N = B·T, C = d, NH heads, HS head size, H hidden, V vocabulary,
 * L layers, r LoRA rank. Sampling with a KV cache: decode.ts.
 *
 * Not here: kernels (src/backend), weights and quantization (weights.ts), losses (loss.ts).
 */
import { ropeTable } from '../backend/cpu';
import { VIEW_ALIGN, type AdamWParams, type Backend, type HostTensors, type StoredMat, type TensorKind, type TensorKinds } from '../backend/types';
import { ConfigError } from '../core/errors';
import { Rng } from '../core/rng';
import { validateConfig, type ModelConfig } from './config';
import { initLora, LORA_ALL, validateLoraConfig, type LoraConfig, type LoraTarget } from './lora';
import type { GenerateOptions, GenerateResult, ModelOptions, ParamSlot, Trainable } from './types';
import { checkWeights, dequantizeTensor, expectedShape, weightNames, type ModelWeights, type WeightTensor } from './weights';
import type { Acts, GradScratch, LayerActs, ParamSet } from './acts';
import { dequantRowsQ4, dequantRowsQ8 } from '../backend/cpu/quant';
import { decode, type DecodeHost } from './decode';
import { ParamStore, type HostVector, type HostVectorCtor, type ModelState, type SlotSpec } from './params';

export type * from './types';
export type { ParamSet } from './acts';
export type { ModelState } from './params';

export interface ForwardOptions<X extends TensorKinds> {
  /** Keep the activations for `backward` (current parameters only). Default false. */
  readonly keep?: boolean;
  /** Write the logits here (≥ B·T·V elements) instead of the model's own buffer. */
  readonly out?: X['f32'];
  /** Read these parameters instead of the current ones (e.g. a reference copy from `copyParams`). */
  readonly params?: ParamSet<X>;
}

type FRef<X extends TensorKinds> = { readonly kind: 'slot'; readonly slot: number } | { readonly kind: 'fixed'; readonly t: X['f32'] };
type BMat<X extends TensorKinds> =
  | { readonly kind: 'f32'; readonly w: FRef<X> }
  | { readonly kind: 'q8'; readonly q: X['i8']; readonly scales: X['u16'] }
  | { readonly kind: 'q4'; readonly q: X['u8']; readonly scales: X['u16'] };

interface BLinear<X extends TensorKinds> {
  readonly name: string;
  readonly in: number;
  readonly out: number;
  readonly base: BMat<X>;
  /** The base's slot when it trains ('full'), else −1. */
  readonly baseSlot: number;
  readonly lora: { readonly a: number; readonly b: number; readonly rank: number; readonly scale: number } | null;
}

const PROJ = ['wq', 'wk', 'wv', 'wo', 'w1', 'w3', 'w2'] as const;
const [WQ, WK, WV, WO, W1, W3, W2] = [0, 1, 2, 3, 4, 5, 6] as const;

/** The tiny Llama decoder over a Backend (header). */
export class Model<X extends TensorKinds = HostTensors> {
  readonly be: Backend<X>;
  readonly cfg: ModelConfig;
  readonly trainable: Trainable;
  readonly lora: LoraConfig | null;
  /** The trainable parameters and their AdamW state (params.ts). */
  private readonly store: ParamStore<X>;
  private readonly HS: number;
  private readonly lins: BLinear<X>[][];
  private readonly attnNorm: FRef<X>[];
  private readonly mlpNorm: FRef<X>[];
  private readonly finalNorm: FRef<X>;
  /**
   * The embedding table as an f32 tensor (a slot, or a frozen upload) — or null when it is frozen and
   * stored Q8/Q4: its rows are then dequantized as they are looked up (`embed`, from `embQ`), the
   * same exact values, so a quantized model holds no f32 copy of its largest matrix.
   */
  private readonly emb: FRef<X> | null;
  /** The quantized embedding the lookup reads when `emb` is null. */
  private readonly embQ: Extract<WeightTensor, { dtype: 'q8' | 'q4' }> | null;
  /** The output head as an f32 tensor: `emb` itself when tied, else lm_head; null when only `headMat` (quantized) holds it. */
  private readonly head: FRef<X> | null;
  /**
   * The head as the forward multiplies by it: the f32 `head`, or — for a frozen head stored Q8/Q4 —
   * its quantized arrays, which give the same numbers (the quantized matmuls equal the dense one on
   * the dequantized matrix bit for bit) while reading a quarter or an eighth of the bytes.
   */
  private readonly headMat: BMat<X>;
  private readonly rope: X['f32'];
  /** Gradient sink of frozen norm gains [C]. */
  private readonly sinkC: X['f32'];
  private readonly ranks: (number | null)[];
  private acts: Acts<X> | null = null;
  /** Activations of forwards over another parameter set (`opts.params`): they never touch what `keep` kept. */
  private otherActs: Acts<X> | null = null;
  private genActs: Acts<X> | null = null;
  private gs: GradScratch<X> | null = null;
  private logitsBuf: { t: X['f32']; n: number } | null = null;
  /** embed's in-order row indices 0..n−1 (quantized embedding only). */
  private iotaBuf: { t: X['i32']; n: number } | null = null;
  /** What the last forward with `keep` kept: its shape, its tokens (device and the caller's array) and the parameters' version then. */
  private kept: { B: number; T: number; tokens: X['i32']; host: Int32Array; version: number } | null = null;
  private lastTokens: X['i32'] | null = null;
  /** Frozen weights uploaded by the constructor (released by `dispose`). */
  private readonly frozen: X[TensorKind][] = [];
  /**
   * How `exportWeights` reads each frozen weight back ('lora' / 'none'): from the backend's copy
   * (or, for a quantized embedding, the lookup's own arrays), so the model holds no second host
   * copy of its base and a caller that drops its weights frees them.
   */
  private readonly frozenReaders = new Map<string, () => Promise<WeightTensor>>();
  /** How Q8/Q4 matrices take their input (ModelOptions.activations). */
  readonly activations: 'exact' | 'int8';

  constructor(be: Backend<X>, cfg: ModelConfig, weights: ModelWeights, opts: ModelOptions) {
    validateConfig(cfg);
    checkWeights(cfg, weights);
    const mode = opts.trainable;
    if (mode !== 'full' && mode !== 'lora' && mode !== 'none') {
      throw new ConfigError('trainable', mode, `Model "trainable" must be 'full', 'lora' or 'none', got ${JSON.stringify(mode)}.`);
    }
    if (mode === 'lora' && !opts.lora) throw new ConfigError('lora', opts.lora, "Model with trainable 'lora' needs a LoRA config (opts.lora: { rank, alpha, targets? }).");
    if (mode !== 'lora' && opts.lora) throw new ConfigError('lora', opts.lora, `Model got a LoRA config but trainable is '${mode}'; use trainable 'lora'.`);
    if (opts.lora) validateLoraConfig(cfg, opts.lora);
    if (mode === 'full') {
      for (const [name, t] of weights) {
        if (t.dtype !== 'f32') {
          throw new ConfigError('trainable', mode, `Full fine-tuning needs f32 weights, but "${name}" is ${t.dtype}. Dequantize the model first (dequantizeWeights) or train LoRA adapters over the quantized base (trainable 'lora').`);
        }
      }
    }
    const acts = opts.activations ?? 'exact';
    if (acts !== 'exact' && acts !== 'int8') throw new ConfigError('activations', acts, `Model "activations" must be 'exact' or 'int8', got ${JSON.stringify(acts)}.`);
    if (acts === 'int8') {
      if (mode === 'full' || ![...weights.values()].some((t) => t.dtype !== 'f32')) {
        throw new ConfigError('activations', acts, "int8 activations apply to Q8/Q4 weights, and this model has none: quantize it (q8 or q4) or use activations 'exact'.");
      }
      if (be.matmulForwardQ8Act === undefined || be.matmulForwardQ4Act === undefined) {
        throw new ConfigError('activations', acts, `int8 activations run on the CPU backend's WebAssembly kernels; the ${be.name} backend has none yet. Use activations 'exact'.`);
      }
    }
    this.activations = acts;
    this.be = be;
    this.cfg = cfg;
    this.trainable = mode;
    this.lora = opts.lora ?? null;
    const { d: C, layers: L } = cfg;
    this.HS = C / cfg.heads;

    // --- the trainable slots and their starting values ---
    const specs: SlotSpec[] = [];
    const lcfg = this.lora;
    const targets: readonly LoraTarget[] = lcfg?.targets ?? LORA_ALL;
    if (mode === 'full') for (const name of weightNames(cfg)) specs.push({ name, shape: expectedShape(cfg, name), init: (weights.get(name) as { data: Float32Array }).data });
    if (mode === 'lora' && lcfg) {
      const adapter = initLora(cfg, lcfg, new Rng(opts.seed ?? 0));
      for (let l = 0; l < L; l++) {
        for (const p of PROJ) {
          if (!targets.includes(p)) continue;
          const name = `layers.${l}.${p}`;
          const [out, inp] = expectedShape(cfg, name) as [number, number];
          const pair = adapter.pairs.get(name)!;
          specs.push({ name: `${name}.lora_a`, shape: [lcfg.rank, inp], init: pair.a }, { name: `${name}.lora_b`, shape: [out, lcfg.rank], init: pair.b });
        }
      }
    }
    this.store = new ParamStore(be, specs);
    const slotOf = (name: string): number => this.store.slotOf(name);

    // --- tensors the forward reads: a trainable slot, or a frozen upload (the caller's own arrays with `adopt`) ---
    const upload = <K extends TensorKind>(kind: K, data: HostTensors[K]): X[K] => (opts.adopt && be.hostView ? (data as unknown as X[K]) : be.upload(kind, data));
    const f32 = (name: string): FRef<X> => {
      if (mode === 'full') return { kind: 'slot', slot: slotOf(name) };
      const t = weights.get(name)!;
      const up = this.keep(upload('f32', t.dtype === 'f32' ? t.data : dequantizeTensor(t)));
      this.frozenReaders.set(name, async () => ({ dtype: 'f32', shape: t.shape, data: (await be.download('f32', up)).slice() }));
      return { kind: 'fixed', t: up };
    };
    /** A frozen Q8/Q4 weight uploaded as stored, readable back by exportWeights under `name` (null: read under another name). */
    const frozenQ = (name: string | null, t: Extract<WeightTensor, { dtype: 'q8' | 'q4' }>): BMat<X> => {
      const scales = this.keep(upload('u16', t.scales));
      if (t.dtype === 'q8') {
        const q = this.keep(upload('i8', t.q));
        if (name !== null) this.frozenReaders.set(name, async () => ({ dtype: 'q8', shape: t.shape, q: (await be.download('i8', q)).slice(), scales: (await be.download('u16', scales)).slice() }));
        return { kind: 'q8', q, scales };
      }
      const q = this.keep(upload('u8', t.q));
      if (name !== null) this.frozenReaders.set(name, async () => ({ dtype: 'q4', shape: t.shape, q: (await be.download('u8', q)).slice(), scales: (await be.download('u16', scales)).slice() }));
      return { kind: 'q4', q, scales };
    };
    // tok_emb is the embedding table (and the head when tied); an untied lm_head is read like it.
    // Frozen and stored Q8/Q4, neither is kept in f32: the lookup dequantizes the rows it reads, and
    // the head multiplies through the quantized arrays — matmulForwardQ8/Q4 equal matmulForward on
    // the dequantized matrix bit for bit (quant.ts), so the numbers are those of the f32 copy.
    const quantized = (name: string): Extract<WeightTensor, { dtype: 'q8' | 'q4' }> | null => {
      const t = mode === 'full' ? undefined : weights.get(name);
      return t !== undefined && t.dtype !== 'f32' ? t : null;
    };
    this.embQ = quantized('tok_emb');
    const embQ = this.embQ;
    if (embQ !== null) this.frozenReaders.set('tok_emb', async () => embQ);
    this.emb = this.embQ === null ? f32('tok_emb') : null;
    const headQ = cfg.tied ? this.embQ : quantized('lm_head');
    this.head = headQ !== null ? null : cfg.tied ? this.emb : f32('lm_head');
    // A tied head reads tok_emb, whose reader is the lookup's arrays; an untied one has its own.
    this.headMat = headQ === null ? { kind: 'f32', w: this.head! } : frozenQ(cfg.tied ? null : 'lm_head', headQ);
    this.finalNorm = f32('final_norm');
    this.attnNorm = [];
    this.mlpNorm = [];
    this.lins = [];
    for (let l = 0; l < L; l++) {
      this.attnNorm.push(f32(`layers.${l}.attn_norm`));
      this.mlpNorm.push(f32(`layers.${l}.mlp_norm`));
      const row: BLinear<X>[] = [];
      for (const p of PROJ) {
        const name = `layers.${l}.${p}`;
        const [out, inp] = expectedShape(cfg, name) as [number, number];
        let base: BMat<X>;
        if (mode === 'full') base = { kind: 'f32', w: { kind: 'slot', slot: slotOf(name) } };
        else {
          const t = weights.get(name)!;
          base = t.dtype === 'f32' ? { kind: 'f32', w: f32(name) } : frozenQ(name, t);
        }
        const adapted = mode === 'lora' && lcfg !== null && targets.includes(p);
        row.push({
          name,
          in: inp,
          out,
          base,
          baseSlot: mode === 'full' ? slotOf(name) : -1,
          lora: adapted ? { a: slotOf(`${name}.lora_a`), b: slotOf(`${name}.lora_b`), rank: lcfg.rank, scale: lcfg.alpha / lcfg.rank } : null,
        });
      }
      this.lins.push(row);
    }
    this.ranks = this.lins[0]!.map((lin) => lin.lora?.rank ?? null);
    this.sinkC = be.zeros('f32', C);
    this.rope = be.upload('f32', ropeTable(cfg.maxSeq, this.HS, cfg.ropeTheta, new Float32Array(cfg.maxSeq * this.HS)) as Float32Array);
  }

  private keep<T extends X[TensorKind]>(t: T): T {
    this.frozen.push(t);
    return t;
  }

  /** Releases every tensor the model holds (it must not be used afterwards). */
  dispose(): void {
    const be = this.be;
    this.store.dispose();
    for (const t of [this.sinkC, this.rope]) be.dispose(t);
    for (const t of this.frozen) be.dispose(t);
    for (const a of [this.acts, this.otherActs, this.genActs, this.gs]) if (a !== null) for (const t of a.all) be.dispose(t);
    if (this.logitsBuf !== null) be.dispose(this.logitsBuf.t);
    if (this.iotaBuf !== null) be.dispose(this.iotaBuf.t);
    this.iotaBuf = null;
    if (this.lastTokens !== null) be.dispose(this.lastTokens);
    this.frozen.length = 0;
    this.acts = this.otherActs = this.genActs = this.gs = null;
    this.logitsBuf = null;
    this.lastTokens = null;
    this.kept = null;
  }

  /** Number of trainable parameters (the flat vector's length). */
  paramCount(): number {
    return this.store.count();
  }

  private at(r: FRef<X>, P: ParamSet<X>): X['f32'] {
    return r.kind === 'slot' ? P[r.slot]! : r.t;
  }

  // ---------------------------------------------------------------- parameters and state (params.ts)

  /** Named slices of the flat parameter vector; one backend tensor each. */
  get layout(): readonly ParamSlot[] {
    return this.store.layout;
  }

  /** Current parameters, ∂L/∂params (backward accumulates), AdamW moments: one view per slot. */
  get params(): X['f32'][] {
    return this.store.params;
  }

  get grads(): X['f32'][] {
    return this.store.grads;
  }

  get m(): X['f32'][] {
    return this.store.m;
  }

  get v(): X['f32'][] {
    return this.store.v;
  }

  /** AdamW steps taken. */
  get t(): number {
    return this.store.t;
  }

  /** grads ← 0. */
  zeroGrad(): void {
    this.store.zeroGrad();
  }

  /** grads ← s·grads (gradient clipping). */
  scaleGrads(s: number): void {
    this.store.scaleGrads(s);
  }

  /** One AdamW step over every trainable parameter; t ← t + 1. */
  adamStep(hp: AdamWParams): void {
    if (this.trainable === 'none') throw new ConfigError('trainable', 'none', "adamStep: this model is inference-only (trainable 'none').");
    this.store.adamStep(hp);
  }

  /** A device copy of the current parameters (e.g. a frozen reference for `forward({ params })`). */
  copyParams(): X['f32'][] {
    return this.store.copyParams();
  }

  /** Overwrites `dst` (a ParamSet of this model) with the current parameters. */
  copyParamsInto(dst: ParamSet<X>): void {
    this.store.copyParamsInto(dst);
  }

  /** Overwrites `dst` (a ParamSet of this model, e.g. from copyParams) with the flat vector `flat` (one upload). */
  writeParams(dst: ParamSet<X>, flat: ArrayLike<number>): void {
    this.store.writeParams(dst, flat);
  }

  /** Releases a ParamSet made by copyParams. */
  disposeParams(set: ParamSet<X>): void {
    this.store.disposeParams(set);
  }

  /**
   * Whether the activations kept by the last `forward(tokens, …, { keep: true })` are still there
   * for these very tokens (the same array) at the current parameters — so a caller may call
   * `backward` again without a new forward (several Fisher-vector products at one θ).
   */
  keptFor(tokens: Int32Array): boolean {
    return this.kept !== null && this.kept.host === tokens && this.kept.version === this.store.version;
  }

  /** The current parameters as one flat vector (one download). */
  getParams(): Promise<Float32Array> {
    return this.store.getParams();
  }

  /** The current gradient as one flat vector (one download), in f32 or, given Float64Array, in f64. */
  getGrads(): Promise<Float32Array>;
  getGrads<A extends HostVector>(ctor: HostVectorCtor<A>): Promise<A>;
  getGrads(ctor: HostVectorCtor<HostVector> = Float32Array): Promise<HostVector> {
    return this.store.getGrads(ctor);
  }

  /** Sets the gradient from a flat vector (one upload), e.g. data-parallel shards summed elsewhere. */
  setGrads(flat: ArrayLike<number>): void {
    this.store.setGrads(flat);
  }

  /** Sets the parameters from a flat vector (one upload); the optimizer state is kept. */
  setParams(flat: ArrayLike<number>): void {
    this.store.setParams(flat);
  }

  /** Params and optimizer state ([t, m…, v…]), in one download; in f32 or, given Float64Array, in f64. */
  getState(): Promise<ModelState>;
  getState<A extends HostVector>(ctor: HostVectorCtor<A>): Promise<{ readonly params: A; readonly optim: A }>;
  getState(ctor: HostVectorCtor<HostVector> = Float32Array): Promise<{ readonly params: HostVector; readonly optim: HostVector }> {
    return this.store.getState(ctor);
  }

  /** Restores a `getState` snapshot (params alone keeps the optimizer state), in one upload. */
  setState(state: { readonly params: ArrayLike<number>; readonly optim?: ArrayLike<number> }): void {
    this.store.setState(state);
  }

  /**
   * The model as f32 weights (fresh arrays), for saveModel and the ONNX export: 'full' is the
   * parameters; 'lora' dequantizes the frozen base and merges W' = W + (α/r)·B·A (lora.ts
   * `loraDelta` maths, summed in f64 and rounded once); 'none' dequantizes. One download.
   */
  async exportWeights(): Promise<ModelWeights> {
    const cfg = this.cfg;
    const flat = await this.getParams();
    const slot = (name: string): Float32Array => {
      const s = this.layout[this.store.slotOf(name)]!;
      return flat.subarray(s.offset, s.offset + s.size);
    };
    const lora = new Map(this.lins.flat().filter((lin) => lin.lora !== null).map((lin) => [lin.name, lin.lora!] as const));
    const out: ModelWeights = new Map();
    for (const name of weightNames(cfg)) {
      const shape = expectedShape(cfg, name);
      if (this.trainable === 'full') {
        out.set(name, { dtype: 'f32', shape, data: slot(name).slice() });
        continue;
      }
      const t = await this.frozenReaders.get(name)!();
      const w = t.dtype === 'f32' ? t.data : dequantizeTensor(t);
      const lo = lora.get(name);
      if (lo !== undefined) {
        const [OC, C] = shape as [number, number];
        const a = slot(`${name}.lora_a`);
        const b = slot(`${name}.lora_b`);
        const acc = new Float64Array(C);
        for (let o = 0; o < OC; o++) {
          acc.fill(0);
          for (let k = 0; k < lo.rank; k++) {
            const bk = b[o * lo.rank + k]!;
            for (let c = 0; c < C; c++) acc[c]! += bk * a[k * C + c]!;
          }
          for (let c = 0; c < C; c++) w[o * C + c] = w[o * C + c]! + lo.scale * acc[c]!;
        }
      }
      out.set(name, { dtype: 'f32', shape, data: w });
    }
    return out;
  }

  // ---------------------------------------------------------------- buffers

  private makeActs(N: number, att: number, nSets: number): Acts<X> {
    const { d: C, hidden: H, layers: L } = this.cfg;
    const all: X['f32'][] = [];
    const z = (k: number): X['f32'] => {
      const t = this.be.zeros('f32', Math.max(1, k));
      all.push(t);
      return t;
    };
    const sets: LayerActs<X>[] = [];
    const pair = 2 * Math.ceil((N * C) / VIEW_ALIGN) * VIEW_ALIGN;
    for (let s = 0; s < nSets; s++) {
      const qk = z(pair);
      sets.push({
        ln1: z(N * C), rstd1: z(N), qk, q: qk, k: qk, v: z(N * C), att: z(att), ao: z(N * C), mid: z(N * C),
        ln2: z(N * C), rstd2: z(N), a: z(N * H), b: z(N * H), h: z(N * H),
        u: this.ranks.map((r) => (r === null ? null : z(N * r))),
      });
    }
    const M = Math.max(C, H);
    const qkraw = z(pair);
    return {
      capN: N, capAtt: att, sets,
      res: Array.from({ length: L + 1 }, () => z(N * C)),
      lnf: z(N * C), rstdf: z(N), proj: z(N * C), qkraw, qraw: qkraw, kraw: qkraw, base: z(N * M), tmp: z(N * M),
      all,
    };
  }

  /** q's and k's halves of a pair tensor at N rows: [0, N·C) and [K, K + N·C), K = N·C rounded up to VIEW_ALIGN. */
  private halves(t: X['f32'], N: number): [X['f32'], X['f32']] {
    const nc = N * this.cfg.d;
    return [this.be.view(t, 0, nc), this.be.view(t, Math.ceil(nc / VIEW_ALIGN) * VIEW_ALIGN, nc)];
  }

  /** Whether q and k of N rows sit back to back in their pair tensor ([2·N × C]): N·C a multiple of VIEW_ALIGN. */
  private qkJoint(N: number): boolean {
    return (N * this.cfg.d) % VIEW_ALIGN === 0;
  }

  /** Points every q / k view of `acts` at N rows (see `halves`). */
  private placeQK(acts: Acts<X>, N: number): Acts<X> {
    [acts.qraw, acts.kraw] = this.halves(acts.qkraw, N);
    for (const s of acts.sets) [s.q, s.k] = this.halves(s.qk, N);
    return acts;
  }

  /**
   * RoPE of q and k, rows [B × T] from pos0 (acts.qraw, acts.kraw → s.q, s.k): ONE ropeForward
   * over the pair tensors, read as [2B × T × C], when q and k sit back to back; else one each.
   */
  private ropeQK(s: LayerActs<X>, acts: Acts<X>, B: number, T: number, pos0: number): void {
    const NH = this.cfg.heads;
    if (this.qkJoint(B * T)) return this.be.ropeForward(s.qk, acts.qkraw, this.rope, 2 * B, T, NH, this.HS, pos0);
    this.be.ropeForward(s.q, acts.qraw, this.rope, B, T, NH, this.HS, pos0);
    this.be.ropeForward(s.k, acts.kraw, this.rope, B, T, NH, this.HS, pos0);
  }

  private trainActs(N: number, att: number, keep: boolean): Acts<X> {
    const nSets = keep ? this.cfg.layers : 1;
    const a = this.acts;
    if (a !== null && a.capN >= N && a.capAtt >= att && a.sets.length >= nSets) return this.placeQK(a, N);
    if (a !== null) for (const t of a.all) this.be.dispose(t);
    this.acts = this.makeActs(Math.max(N, a?.capN ?? 0), Math.max(att, a?.capAtt ?? 0), Math.max(nSets, a?.sets.length ?? 0));
    return this.placeQK(this.acts, N);
  }

  private otherParamsActs(N: number, att: number): Acts<X> {
    const a = this.otherActs;
    if (a !== null && a.capN >= N && a.capAtt >= att) return this.placeQK(a, N);
    if (a !== null) for (const t of a.all) this.be.dispose(t);
    this.otherActs = this.makeActs(Math.max(N, a?.capN ?? 0), Math.max(att, a?.capAtt ?? 0), 1);
    return this.placeQK(this.otherActs, N);
  }

  private samplingActs(N: number): Acts<X> {
    const a = this.genActs;
    if (a !== null && a.capN >= N) return this.placeQK(a, N);
    if (a !== null) for (const t of a.all) this.be.dispose(t);
    this.genActs = this.makeActs(N, 1, 1);
    return this.placeQK(this.genActs, N);
  }

  private gradScratch(N: number): GradScratch<X> {
    if (this.gs === null || this.gs.capN < N) this.gs = this.makeGradScratch(N);
    const g = this.gs;
    [g.dq, g.dk] = this.halves(g.dqk, N);
    [g.drot, g.drotk] = this.halves(g.drotqk, N);
    return g;
  }

  private makeGradScratch(N: number): GradScratch<X> {
    if (this.gs !== null) for (const t of this.gs.all) this.be.dispose(t);
    const { d: C, hidden: H } = this.cfg;
    const r = Math.max(0, ...this.ranks.map((x) => x ?? 0));
    const all: X['f32'][] = [];
    const z = (k: number): X['f32'] => {
      const t = this.be.zeros('f32', Math.max(1, k));
      all.push(t);
      return t;
    };
    const pair = 2 * Math.ceil((N * C) / VIEW_ALIGN) * VIEW_ALIGN;
    const dqk = z(pair);
    const drotqk = z(pair);
    return {
      capN: N, dx: z(N * C), dln: z(N * C), dqk, dq: dqk, dk: dqk, dv: z(N * C), dao: z(N * C), drotqk, drot: drotqk, drotk: drotqk, dlnf: z(N * C),
      dh: z(N * H), da: z(N * H), db: z(N * H), dsc: z(N * Math.max(C, H)), du: z(N * r), all,
    };
  }

  // ---------------------------------------------------------------- forward / backward

  /**
   * out [N × C] = the embedding rows of `tokens` (host ids; `tok` the same ids on the backend): a
   * gather from the f32 table, or — quantized — the rows dequantized here (exact, as quant.ts
   * dequantRows) and uploaded, then gathered into `out` in order.
   */
  private embed(out: X['f32'], tokens: Int32Array, tok: X['i32'], P: ParamSet<X>, N: number): void {
    const be = this.be;
    const C = this.cfg.d;
    if (this.emb !== null) return be.embeddingForward(out, tok, this.at(this.emb, P), 1, N, C);
    const t = this.embQ!;
    const V = this.cfg.vocab;
    const rows = new Float32Array(N * C);
    for (let n = 0; n < N; n++) {
      const id = tokens[n]!;
      if (!(id >= 0 && id < V)) throw new RangeError(`embeddingForward: token ${id} at row ${n} is outside [0, ${V})`);
      const dst = rows.subarray(n * C, (n + 1) * C);
      if (t.dtype === 'q8') dequantRowsQ8(dst, t.q, t.scales, C, id, id + 1);
      else dequantRowsQ4(dst, t.q, t.scales, C, id, id + 1);
    }
    const up = be.upload('f32', rows);
    be.embeddingForward(out, this.iota(N), up, 1, N, C);
    be.dispose(up);
  }

  /** 0, 1, …, N − 1 on the backend (the in-order gather of `embed`), kept for the largest N so far. */
  private iota(N: number): X['i32'] {
    if (this.iotaBuf === null || this.iotaBuf.n < N) {
      if (this.iotaBuf !== null) this.be.dispose(this.iotaBuf.t);
      const n = Math.max(N, 2 * (this.iotaBuf?.n ?? 0));
      this.iotaBuf = { t: this.be.upload('i32', Int32Array.from({ length: n }, (_, i) => i)), n };
    }
    return this.iotaBuf.t;
  }

  /** out = inp · Wᵀ for any base kind (linear.ts matForward). */
  private matForward(out: X['f32'], inp: X['f32'], m: BMat<X>, P: ParamSet<X>, N: number, C: number, OC: number): void {
    switch (m.kind) {
      case 'f32':
        return this.be.matmulForward(out, inp, this.at(m.w, P), 1, N, C, OC);
      case 'q8':
        return this.activations === 'int8' ? this.be.matmulForwardQ8Act!(out, inp, m.q, m.scales, 1, N, C, OC) : this.be.matmulForwardQ8(out, inp, m.q, m.scales, 1, N, C, OC);
      case 'q4':
        return this.activations === 'int8' ? this.be.matmulForwardQ4Act!(out, inp, m.q, m.scales, 1, N, C, OC) : this.be.matmulForwardQ4(out, inp, m.q, m.scales, 1, N, C, OC);
    }
  }

  /** y = x·Wᵀ + s·(x·Aᵀ)·Bᵀ (linear.ts linearForward; the LoRA sum goes into y from scratch, not in place). */
  private linearForward(lin: BLinear<X>, P: ParamSet<X>, y: X['f32'], x: X['f32'], u: X['f32'] | null, acts: Acts<X>, N: number): void {
    const a = lin.lora;
    if (a === null || u === null) return this.matForward(y, x, lin.base, P, N, lin.in, lin.out);
    this.matForward(acts.base, x, lin.base, P, N, lin.in, lin.out);
    this.be.matmulForward(u, x, P[a.a]!, 1, N, lin.in, a.rank);
    this.be.matmulForward(acts.tmp, u, P[a.b]!, 1, N, a.rank, lin.out);
    this.be.residualForward(y, acts.base, acts.tmp, N * lin.out, a.scale);
  }

  /**
   * linearForward for several projections of one input (a layer's q, k, v; its gate and up): their
   * bases in one matmulForwardMany call, straight into the outputs, then each LoRA term added in
   * place (y = y + s·(x·Aᵀ)·Bᵀ: linearForward's sum, in the same order) — the same bits as one
   * linearForward each, with one fork-join on the CPU's threads instead of one per projection. A
   * backend without the op, or bases of different kinds, get one linearForward each.
   */
  private linearsForward(lins: readonly BLinear<X>[], P: ParamSet<X>, ys: readonly X['f32'][], x: X['f32'], us: readonly (X['f32'] | null)[], acts: Acts<X>, N: number): void {
    const be = this.be;
    const kind = lins[0]!.base.kind;
    if (be.matmulForwardMany === undefined || lins.some((l) => l.base.kind !== kind)) {
      lins.forEach((lin, i) => this.linearForward(lin, P, ys[i]!, x, us[i]!, acts, N));
      return;
    }
    const stored = lins.map((l): StoredMat<X> => (l.base.kind === 'f32' ? { kind: 'f32', w: this.at(l.base.w, P) } : l.base));
    be.matmulForwardMany(ys, x, stored, 1, N, lins[0]!.in, lins.map((l) => l.out), kind === 'f32' ? 'exact' : this.activations);
    lins.forEach((lin, i) => {
      const a = lin.lora;
      const u = us[i]!;
      if (a === null || u === null) return;
      be.matmulForward(u, x, P[a.a]!, 1, N, lin.in, a.rank);
      be.matmulForward(acts.tmp, u, P[a.b]!, 1, N, a.rank, lin.out);
      be.residualForward(ys[i]!, ys[i]!, acts.tmp, N * lin.out, a.scale);
    });
  }

  /** Backward of linearForward (linear.ts linearBackward): dx += ∂L/∂x; dW or dA, dB accumulate. */
  private linearBackward(lin: BLinear<X>, dx: X['f32'], dy: X['f32'], x: X['f32'], u: X['f32'] | null, g: GradScratch<X>, N: number): void {
    const be = this.be;
    const P = this.params;
    const { in: C, out: OC } = lin;
    const m = lin.base;
    if (m.kind === 'f32') be.matmulBackward(dx, lin.baseSlot >= 0 ? this.grads[lin.baseSlot]! : null, dy, x, this.at(m.w, P), 1, N, C, OC);
    else if (m.kind === 'q8') be.matmulBackwardInputQ8(dx, dy, m.q, m.scales, 1, N, C, OC);
    else be.matmulBackwardInputQ4(dx, dy, m.q, m.scales, 1, N, C, OC);
    const a = lin.lora;
    if (a === null || u === null) return;
    be.fill(g.dsc, 0);
    be.residualBackward(null, g.dsc, dy, N * OC, a.scale); // dsc = s·dy
    be.fill(g.du, 0);
    be.matmulBackward(g.du, this.grads[a.b]!, g.dsc, u, P[a.b]!, 1, N, a.rank, OC);
    be.matmulBackward(dx, this.grads[a.a]!, g.du, x, P[a.a]!, 1, N, C, a.rank);
  }

  /**
   * xout = xres + linear(x): one fused op (matmulResidualForward) for a plain f32 projection, else
   * linearForward into acts.proj and a residual add — the same bits either way.
   */
  private linearResidual(lin: BLinear<X>, P: ParamSet<X>, xout: X['f32'], x: X['f32'], xres: X['f32'], u: X['f32'] | null, acts: Acts<X>, N: number): void {
    if (lin.lora === null && lin.base.kind === 'f32') return this.be.matmulResidualForward(xout, x, this.at(lin.base.w, P), xres, 1, N, lin.in, lin.out);
    this.linearForward(lin, P, acts.proj, x, u, acts, N);
    this.be.residualForward(xout, xres, acts.proj, N * lin.out, 1);
  }

  /** One block on N rows: x_in → x_mid → x_out (distinct tensors). `attention` turns acts.qraw, acts.kraw, s.v into s.q, s.k, s.ao. */
  private layerForward(l: number, P: ParamSet<X>, s: LayerActs<X>, acts: Acts<X>, xin: X['f32'], xmid: X['f32'], xout: X['f32'], N: number, attention: (s: LayerActs<X>, l: number) => void): void {
    const be = this.be;
    const { d: C, hidden: H, normEps } = this.cfg;
    const lin = this.lins[l]!;
    be.rmsnormForward(s.ln1, s.rstd1, xin, this.at(this.attnNorm[l]!, P), 1, N, C, normEps);
    this.linearsForward([lin[WQ]!, lin[WK]!, lin[WV]!], P, [acts.qraw, acts.kraw, s.v], s.ln1, [s.u[WQ]!, s.u[WK]!, s.u[WV]!], acts, N);
    attention(s, l);
    this.linearResidual(lin[WO]!, P, xmid, s.ao, xin, s.u[WO]!, acts, N);
    be.rmsnormForward(s.ln2, s.rstd2, xmid, this.at(this.mlpNorm[l]!, P), 1, N, C, normEps);
    this.linearsForward([lin[W1]!, lin[W3]!], P, [s.a, s.b], s.ln2, [s.u[W1]!, s.u[W3]!], acts, N);
    be.swigluForward(s.h, s.a, s.b, N * H);
    this.linearResidual(lin[W2]!, P, xout, s.h, xmid, s.u[W2]!, acts, N);
  }

  private checkTokens(op: string, tokens: Int32Array, N: number): void {
    const V = this.cfg.vocab;
    if (tokens.length < N) throw new ConfigError('tokens', tokens.length, `${op}: tokens has ${tokens.length} ids; ${N} needed.`);
    for (let i = 0; i < N; i++) if (!(tokens[i]! >= 0 && tokens[i]! < V)) throw new ConfigError('tokens', tokens[i], `${op}: token ${tokens[i]} at ${i} is outside [0, ${V}).`);
  }

  /**
   * logits [B × T × V] for tokens [B × T] at positions 0..T−1. Causal attention makes trailing
   * padding harmless to the earlier positions (the caller ignores logits there). Returns the
   * model's own logits tensor — grow-only, so it may hold more than B·T·V values; only the first
   * B·T·V are this call's — overwritten by the next forward, unless `out` is given. With `keep`,
   * activations stay for `backward` until the next forward over the current parameters; a forward
   * over another set (`params`) has buffers of its own and leaves them alone.
   */
  forward(tokens: Int32Array, B: number, T: number, opts: ForwardOptions<X> = {}): X['f32'] {
    const be = this.be;
    const { d: C, vocab: V, heads: NH, maxSeq, layers: L, normEps } = this.cfg;
    if (!Number.isInteger(B) || B < 1 || !Number.isInteger(T) || T < 1) throw new ConfigError('shape', [B, T], `forward: B and T must be integers ≥ 1, got B = ${B}, T = ${T}.`);
    if (T > maxSeq) throw new ConfigError('T', T, `forward: T = ${T} exceeds the model's maxSeq = ${maxSeq}.`);
    const N = B * T;
    this.checkTokens('forward', tokens, N);
    const keep = opts.keep ?? false;
    if (keep && opts.params !== undefined) throw new ConfigError('keep', true, 'forward: keep (for backward) needs the current parameters; do not pass opts.params with keep.');
    const P = opts.params ?? this.params;
    if (P.length !== this.layout.length) throw new ConfigError('params', P.length, `forward: opts.params has ${P.length} tensors; this model has ${this.layout.length} slots.`);
    let out = opts.out;
    if (out === undefined) {
      if (this.logitsBuf === null || this.logitsBuf.n < N * V) {
        if (this.logitsBuf !== null) be.dispose(this.logitsBuf.t);
        this.logitsBuf = { t: be.zeros('f32', N * V), n: N * V };
      }
      out = this.logitsBuf.t;
    }
    const HS = this.HS;
    const other = opts.params !== undefined;
    const acts = other ? this.otherParamsActs(N, B * NH * T * T) : this.trainActs(N, B * NH * T * T, keep);
    const tok = be.upload('i32', tokens.slice(0, N));
    if (!other) {
      if (this.lastTokens !== null) be.dispose(this.lastTokens);
      this.lastTokens = tok;
      this.kept = null;
    }
    this.embed(acts.res[0]!, tokens, tok, P, N);
    const attention = (s: LayerActs<X>): void => {
      this.ropeQK(s, acts, B, T, 0);
      be.attentionForward(s.ao, s.att, s.q, s.k, s.v, B, T, NH, HS);
    };
    for (let l = 0; l < L; l++) {
      const s = acts.sets[keep ? l : 0]!;
      this.layerForward(l, P, s, acts, acts.res[l]!, s.mid, acts.res[l + 1]!, N, attention);
    }
    be.rmsnormForward(acts.lnf, acts.rstdf, acts.res[L]!, this.at(this.finalNorm, P), 1, N, C, normEps);
    this.matForward(out, acts.lnf, this.headMat, P, N, C, V);
    if (keep) this.kept = { B, T, tokens: tok, host: tokens, version: this.store.version };
    if (other) be.dispose(tok); // after the ops that read it were issued (a GPU backend releases it once they ran)
    return out;
  }

  /**
   * Backpropagates dlogits [B × T × V] through the last `forward(…, { keep: true })`,
   * ACCUMULATING ∂L/∂params into `grads` (call zeroGrad first). Frozen tensors get no gradient.
   */
  backward(dlogits: X['f32']): void {
    if (this.trainable === 'none') throw new ConfigError('trainable', 'none', "backward: this model is inference-only (trainable 'none').");
    const kept = this.kept;
    const acts = this.acts;
    if (kept === null || acts === null) throw new ConfigError('keep', false, 'backward: call forward(tokens, B, T, { keep: true }) first; a forward without keep (or none) came last.');
    const be = this.be;
    const P = this.params;
    const { B, T, tokens } = kept;
    const { d: C, vocab: V, heads: NH, layers: L } = this.cfg;
    const HS = this.HS;
    const N = B * T;
    const g = this.gradScratch(N);
    const gradOf = (r: FRef<X>): X['f32'] => (r.kind === 'slot' ? this.grads[r.slot]! : this.sinkC);
    const embGrad = this.emb?.kind === 'slot' ? this.grads[this.emb.slot]! : null;
    const headGrad = this.head?.kind === 'slot' ? this.grads[this.head.slot]! : null; // = embGrad when tied
    be.fill(g.dlnf, 0);
    const hm = this.headMat;
    if (hm.kind === 'f32') be.matmulBackward(g.dlnf, headGrad, dlogits, acts.lnf, this.at(hm.w, P), 1, N, C, V);
    else if (hm.kind === 'q8') be.matmulBackwardInputQ8(g.dlnf, dlogits, hm.q, hm.scales, 1, N, C, V);
    else be.matmulBackwardInputQ4(g.dlnf, dlogits, hm.q, hm.scales, 1, N, C, V);
    be.fill(g.dx, 0);
    be.rmsnormBackward(g.dx, gradOf(this.finalNorm), g.dlnf, acts.res[L]!, this.at(this.finalNorm, P), acts.rstdf, 1, N, C);
    for (let l = L - 1; l >= 0; l--) {
      const s = acts.sets[l]!;
      const lin = this.lins[l]!;
      be.fill(g.dh, 0);
      this.linearBackward(lin[W2]!, g.dh, g.dx, s.h, s.u[W2]!, g, N);
      be.fill(g.da, 0);
      be.fill(g.db, 0);
      be.swigluBackward(g.da, g.db, g.dh, s.a, s.b, N * this.cfg.hidden);
      be.fill(g.dln, 0);
      this.linearBackward(lin[W1]!, g.dln, g.da, s.ln2, s.u[W1]!, g, N);
      this.linearBackward(lin[W3]!, g.dln, g.db, s.ln2, s.u[W3]!, g, N);
      be.rmsnormBackward(g.dx, gradOf(this.mlpNorm[l]!), g.dln, s.mid, this.at(this.mlpNorm[l]!, P), s.rstd2, 1, N, C);
      be.fill(g.dao, 0);
      this.linearBackward(lin[WO]!, g.dao, g.dx, s.ao, s.u[WO]!, g, N);
      be.fill(g.dqk, 0);
      be.fill(g.dv, 0);
      be.attentionBackward(g.dq, g.dk, g.dv, g.dao, s.q, s.k, s.v, s.att, B, T, NH, HS);
      be.fill(g.dln, 0);
      be.fill(g.drotqk, 0);
      if (this.qkJoint(N)) be.ropeBackward(g.drotqk, g.dqk, this.rope, 2 * B, T, NH, HS, 0); // dq and dk back to back: one op
      else {
        be.ropeBackward(g.drot, g.dq, this.rope, B, T, NH, HS, 0);
        be.ropeBackward(g.drotk, g.dk, this.rope, B, T, NH, HS, 0);
      }
      this.linearBackward(lin[WQ]!, g.dln, g.drot, s.ln1, s.u[WQ]!, g, N);
      this.linearBackward(lin[WK]!, g.dln, g.drotk, s.ln1, s.u[WK]!, g, N);
      this.linearBackward(lin[WV]!, g.dln, g.dv, s.ln1, s.u[WV]!, g, N);
      be.rmsnormBackward(g.dx, gradOf(this.attnNorm[l]!), g.dln, acts.res[l]!, this.at(this.attnNorm[l]!, P), s.rstd1, 1, N, C);
    }
    if (embGrad !== null) be.embeddingBackward(embGrad, g.dx, tokens, B, T, C);
  }

  // ---------------------------------------------------------------- sampling

  /**
   * Samples continuations of each prompt with a KV cache (decode.ts): prompt i is sequence seq0 + i
   * for the sampler and its k-th generated token uses step k. A sequence ends at `stop` (not
   * returned), after `maxNew` tokens, or when prompt + generated reaches maxSeq.
   */
  generate(prompts: readonly Int32Array[], opts: GenerateOptions): Promise<GenerateResult> {
    return decode(this.decodeHost(), prompts, opts);
  }

  /** This model as the decoder sees it (its current parameters and forward pieces). */
  private decodeHost(): DecodeHost<X> {
    return {
      be: this.be,
      cfg: this.cfg,
      HS: this.HS,
      rope: this.rope,
      params: this.params,
      at: (which, P) => this.at(this[which], P),
      embed: (out, tokens, tok, P, N) => this.embed(out, tokens, tok, P, N),
      headForward: (out, inp, P, N) => this.matForward(out, inp, this.headMat, P, N, this.cfg.d, this.cfg.vocab),
      samplingActs: (N) => this.samplingActs(N),
      ropeQK: (s, acts, B, T, pos0) => this.ropeQK(s, acts, B, T, pos0),
      layerForward: (l, P, s, acts, xin, xmid, xout, N, attention) => this.layerForward(l, P, s, acts, xin, xmid, xout, N, attention),
    };
  }
}
