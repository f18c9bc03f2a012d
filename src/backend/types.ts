/**
 * The `Backend` interface: the one list of ops a Llama-family model needs for forward, backward,
 * an optimizer step and sampling, implemented kernel for kernel by the CPU reference
 * (`src/backend/cpu/`) and by WebGPU (`src/backend/webgpu/`). Ops work on opaque handles typed per
 * tensor kind (`TensorKinds`: typed arrays on the CPU, buffer wrappers on WebGPU), return `void`
 * and may run later (`download` is the one async call). The CPU's plain functions are the
 * reference: every backend uses their names and argument order. Forward ops OVERWRITE their
 * outputs; backward ops ACCUMULATE into `d…` (as llm.c).
 *
 * Shape letters: B batch, T time, C channels, OC output channels, NH heads, HS head size
 * (C = NH·HS), H MLP hidden, V vocabulary, N rows (B·T or steps K), Tmax KV-cache capacity; every
 * tensor flat, row-major, the last letter fastest.
 *
 * Not here: the kernels, model assembly (src/model), the quantizer (quant.ts: the Q8/Q4 layouts
 * `matmulForwardQ8/Q4` read). Adding an op: docs/kernels.md.
 */

/** Q8/Q4 weights: values per block along C sharing one f16 scale (C must be a multiple of it). */
export const QBLOCK = 32;

/** A float buffer a CPU kernel accepts: f32 in production, f64 in the finite-difference tests. */
export type FloatArray = Float32Array | Float64Array;

/** The host-side array type of each tensor kind. */
export interface HostTensors {
  f32: Float32Array;
  i32: Int32Array;
  i8: Int8Array;
  u8: Uint8Array;
  u16: Uint16Array;
}

/** A backend's handle type for each tensor kind (the CPU uses `HostTensors` itself). */
export type TensorKinds = { [K in keyof HostTensors]: unknown };

/** A weight [OC × C] as the forward products read it: dense f32, or Q8 / Q4 blocks (quant.ts). */
export type StoredMat<X extends TensorKinds> =
  | { readonly kind: 'f32'; readonly w: X['f32'] }
  | { readonly kind: 'q8'; readonly q: X['i8']; readonly scales: X['u16'] }
  | { readonly kind: 'q4'; readonly q: X['u8']; readonly scales: X['u16'] };

/** Element alignment of `Backend.view` offsets (64 f32 = 256 bytes). */
export const VIEW_ALIGN = 64;

/** The tensor kinds, by name. */
export type TensorKind = keyof HostTensors;

/**
 * The objective's settings, docs/method.md §5 (structurally the `ObjectiveSpec` of
 * src/sat/types.ts, of which it needs only these fields; the backend may not import from src/sat).
 */
export interface ClippedLossSpec {
  readonly level: 'sequence' | 'token';
  readonly tokenAgg: 'grpo' | 'bnpo' | 'dr_grpo';
  readonly epsLow: number;
  readonly epsHigh: number;
  readonly beta: number;
}

/** What `clippedLossBackward` reports; on a backend, written in this order into `stats[4]`. */
export interface ClippedLossStats {
  /** L = surrogate − β·klMean. */
  objective: number;
  /** The clipped surrogate part alone. */
  surrogate: number;
  /** Mean over steps of the exact full-vocabulary KL(π_θ‖π_ref). */
  klMean: number;
  /** Fraction of episodes (sequence level) or steps (token level) whose clipped branch is active. */
  clipfrac: number;
}

/** AdamW hyper-parameters (Loshchilov & Hutter 2019). */
export interface AdamWParams {
  readonly lr: number;
  /** Default 0.9. */
  readonly beta1?: number;
  /** Default 0.999. */
  readonly beta2?: number;
  /** Default 1e-8. */
  readonly eps?: number;
  /** Decoupled weight decay λ (θ ← θ − lr·λ·θ); default 0. */
  readonly weightDecay?: number;
}

/**
 * Sampling settings. Random numbers come from Philox4x32-10 (src/core/rng.ts) with
 * key = (seed, stream) and counter = (step, seq0 + b, 0, 0); word 0 → u32ToUniform → u ∈ [0,1).
 */
export interface SampleParams {
  /** Philox key word 0 (u32). */
  readonly seed: number;
  /** Philox key word 1 (u32): names the stream, e.g. mixPath([stage, agent]). */
  readonly stream: number;
  /** Counter word 0: the decoding step (u32). */
  readonly step: number;
  /** τ > 0 divides the logits; τ = 0 is greedy (argmax, lowest index on ties). */
  readonly temperature: number;
  /** Keep the k largest logits (ties → lower index); k ≤ 0 or k ≥ V keeps all. */
  readonly topK: number;
  /** Counter word 1 is seq0 + b for batch row b (default 0): a global sequence id. */
  readonly seq0?: number;
}

/**
 * Every op of the model, over handles of kinds `X`. Argument order and meaning are those of the
 * CPU function of the same name in src/backend/cpu/ (see there for each op's maths).
 */
export interface Backend<X extends TensorKinds = HostTensors> {
  readonly name: string;

  // --- memory (the only async call is download) ---
  /** A new tensor holding a copy of `data`. */
  upload<K extends TensorKind>(kind: K, data: HostTensors[K]): X[K];
  /** A new zero-filled tensor of `length` elements. */
  zeros<K extends TensorKind>(kind: K, length: number): X[K];
  /** Fill a float tensor with a constant (e.g. zero the gradients). */
  fill(t: X['f32'], value: number): void;
  /** Copy of the tensor's contents, after every op issued before it has run. */
  download<K extends TensorKind>(kind: K, t: X[K]): Promise<HostTensors[K]>;
  /**
   * The float tensor's own memory, where it is host memory (the f32 CPU backends): what `download`
   * would copy, without the copy — valid until an op writes or frees the tensor. Absent on WebGPU.
   */
  readonly hostView?: (t: X['f32']) => Float32Array;
  /** Release a tensor (no-op on the CPU; a no-op on a view). */
  dispose(t: X[TensorKind]): void;
  /**
   * A float tensor of `length` elements aliasing `t` from element `offset`, which must be a
   * multiple of VIEW_ALIGN (64: WebGPU binds storage at 256-byte offsets). Ops read and write it
   * like any tensor (the CPU: `subarray`; WebGPU: the buffer bound at that offset); it owns no
   * memory. An op must not write one view of a tensor and read another view of the same tensor
   * (WebGPU tracks a dispatch's usage per buffer, not per range).
   * What lets a model keep its parameters, gradients and moments in one tensor each, so that
   * AdamW, zeroing and read-back are one call over all of them.
   */
  view(t: X['f32'], offset: number, length: number): X['f32'];

  // --- token embedding ---
  embeddingForward(out: X['f32'], tokens: X['i32'], wte: X['f32'], B: number, T: number, C: number): void;
  embeddingBackward(dwte: X['f32'], dout: X['f32'], tokens: X['i32'], B: number, T: number, C: number): void;

  // --- RMSNorm ---
  rmsnormForward(out: X['f32'], rstd: X['f32'], inp: X['f32'], weight: X['f32'], B: number, T: number, C: number, eps: number): void;
  rmsnormBackward(dinp: X['f32'], dweight: X['f32'], dout: X['f32'], inp: X['f32'], weight: X['f32'], rstd: X['f32'], B: number, T: number, C: number): void;

  // --- rotary positions (table from ropeTable, uploaded once) ---
  ropeForward(out: X['f32'], inp: X['f32'], table: X['f32'], B: number, T: number, NH: number, HS: number, pos0: number): void;
  ropeBackward(dinp: X['f32'], dout: X['f32'], table: X['f32'], B: number, T: number, NH: number, HS: number, pos0: number): void;

  // --- causal multi-head attention ---
  attentionForward(out: X['f32'], att: X['f32'], q: X['f32'], k: X['f32'], v: X['f32'], B: number, T: number, NH: number, HS: number): void;
  attentionBackward(dq: X['f32'], dk: X['f32'], dv: X['f32'], dout: X['f32'], q: X['f32'], k: X['f32'], v: X['f32'], att: X['f32'], B: number, T: number, NH: number, HS: number): void;
  kvCacheWrite(kCache: X['f32'], vCache: X['f32'], k: X['f32'], v: X['f32'], B: number, T: number, C: number, pos0: number, Tmax: number): void;
  attentionCachedForward(out: X['f32'], q: X['f32'], kCache: X['f32'], vCache: X['f32'], B: number, T: number, NH: number, HS: number, pos0: number, Tmax: number): void;

  // --- matmul (weights [OC × C], out = inp · Wᵀ) ---
  matmulForward(out: X['f32'], inp: X['f32'], weight: X['f32'], B: number, T: number, C: number, OC: number): void;
  matmulBackward(dinp: X['f32'] | null, dweight: X['f32'] | null, dout: X['f32'], inp: X['f32'], weight: X['f32'], B: number, T: number, C: number, OC: number): void;
  /** out = res + inp · Wᵀ: matmulForward with the following residualForward(out, res, ·, N·OC, 1) folded in (the same bits); `out` must not be `res`. */
  matmulResidualForward(out: X['f32'], inp: X['f32'], weight: X['f32'], res: X['f32'], B: number, T: number, C: number, OC: number): void;
  matmulForwardQ8(out: X['f32'], inp: X['f32'], q: X['i8'], scales: X['u16'], B: number, T: number, C: number, OC: number): void;
  matmulForwardQ4(out: X['f32'], inp: X['f32'], q: X['u8'], scales: X['u16'], B: number, T: number, C: number, OC: number): void;
  /**
   * matmulForwardQ8 / Q4 with inp quantized to int8 per block of 32 and integer dot products
   * (src/backend/cpu/quant.ts matmulForwardQAct; docs/kernels.md "int8 activations"): not the same
   * numbers as the exact ops. Only backends with such kernels have them; the model checks.
   */
  matmulForwardQ8Act?(out: X['f32'], inp: X['f32'], q: X['i8'], scales: X['u16'], B: number, T: number, C: number, OC: number): void;
  matmulForwardQ4Act?(out: X['f32'], inp: X['f32'], q: X['u8'], scales: X['u16'], B: number, T: number, C: number, OC: number): void;
  /**
   * outs[i] = inp · W_iᵀ (W_i [OCs[i] × C], all of one kind) for several weights over one input — a
   * layer's q, k and v, or its gate and up: the same bits as one matmulForward / Q8 / Q4 per weight
   * (…Q8Act / Q4Act with activations 'int8'), as one job on the CPU backend's threads. Backends
   * without it get one call per weight from the model; a backend with it must also take
   * residualForward with out = a (the model then adds LoRA terms in place).
   */
  matmulForwardMany?(outs: readonly X['f32'][], inp: X['f32'], weights: readonly StoredMat<X>[], B: number, T: number, C: number, OCs: readonly number[], activations: 'exact' | 'int8'): void;
  matmulBackwardInputQ8(dinp: X['f32'], dout: X['f32'], q: X['i8'], scales: X['u16'], B: number, T: number, C: number, OC: number): void;
  matmulBackwardInputQ4(dinp: X['f32'], dout: X['f32'], q: X['u8'], scales: X['u16'], B: number, T: number, C: number, OC: number): void;

  // --- residual / scaled add ---
  residualForward(out: X['f32'], a: X['f32'], b: X['f32'], N: number, scale: number): void;
  residualBackward(da: X['f32'] | null, db: X['f32'] | null, dout: X['f32'], N: number, scale: number): void;

  // --- SwiGLU MLP ---
  swigluForward(out: X['f32'], a: X['f32'], b: X['f32'], N: number): void;
  swigluBackward(da: X['f32'], db: X['f32'], dout: X['f32'], a: X['f32'], b: X['f32'], N: number): void;
  mlpForward(out: X['f32'], a: X['f32'], b: X['f32'], h: X['f32'], inp: X['f32'], w1: X['f32'], w3: X['f32'], w2: X['f32'], B: number, T: number, C: number, H: number): void;
  mlpBackward(dinp: X['f32'], dw1: X['f32'] | null, dw3: X['f32'] | null, dw2: X['f32'] | null, dh: X['f32'], da: X['f32'], db: X['f32'], dout: X['f32'], inp: X['f32'], a: X['f32'], b: X['f32'], h: X['f32'], w1: X['f32'], w3: X['f32'], w2: X['f32'], B: number, T: number, C: number, H: number): void;

  // --- log-probabilities, KL ---
  logSoftmaxForward(out: X['f32'], logits: X['f32'], N: number, V: number, temperature: number): void;
  logSoftmaxBackward(dlogits: X['f32'], dlogp: X['f32'], logp: X['f32'], N: number, V: number, temperature: number): void;
  gatherForward(out: X['f32'], logp: X['f32'], targets: X['i32'], N: number, V: number): void;
  gatherBackward(dlogp: X['f32'], dout: X['f32'], targets: X['i32'], N: number, V: number): void;
  /**
   * The next-token loss chain as one op: lrow[n] = log_softmax(logits)[n, targets[n]] (τ = 1) and,
   * unless dlogits is null, dlogits += ∂(Σ_n dout[n]·lrow[n])/∂logits — logSoftmaxForward,
   * gatherForward, gatherBackward and logSoftmaxBackward composed (one dispatch on WebGPU, no
   * N × V log-prob scratch). Overwrites lrow, accumulates dlogits.
   */
  crossEntropy(lrow: X['f32'], dlogits: X['f32'] | null, logits: X['f32'], targets: X['i32'], dout: X['f32'] | null, N: number, V: number): void;
  klForward(out: X['f32'], logitsP: X['f32'], logitsQ: X['f32'], N: number, V: number, temperature: number): void;
  klBackward(dlogitsP: X['f32'] | null, dlogitsQ: X['f32'] | null, dout: X['f32'], logitsP: X['f32'], logitsQ: X['f32'], N: number, V: number, temperature: number): void;

  // --- the SAT objective's gradient w.r.t. the logits (stats[4] ← objective, surrogate, klMean, clipfrac) ---
  clippedLossBackward(
    dlogits: X['f32'],
    stats: X['f32'],
    logitsTheta: X['f32'],
    logitsRef: X['f32'],
    actions: X['i32'],
    episodeOf: X['i32'],
    adv: X['f32'],
    weight: X['f32'],
    K: number,
    V: number,
    N: number,
    horizon: number,
    temperature: number,
    spec: ClippedLossSpec,
    scale: number,
  ): void;

  // --- optimizer ---
  adamwStep(params: X['f32'], grads: X['f32'], m: X['f32'], v: X['f32'], n: number, t: number, hp: AdamWParams): void;

  // --- sampling ---
  sampleForward(out: X['i32'], logits: X['f32'], B: number, V: number, sp: SampleParams): void;
}
