/**
 * A model's trainable parameters and their AdamW state on a backend: the layout (named slots of
 * one flat vector), four flat tensors (parameters, gradients, AdamW m and v) holding every slot at
 * an offset padded to VIEW_ALIGN (64 elements; the padding stays zero), one `Backend.view` per
 * slot, and the flat host vectors the rest of the app speaks (`getParams`, `getState`, …: the flat
 * tensors downloaded together in one submission and unpadded; set by one upload gathered into
 * the slots, rows of g = gcd(slot sizes) elements). So AdamW, zeroing and clipping the gradients
 * are one op each over all slots. Not here: which slots a model has or what reads them (model.ts).
 */
import { VIEW_ALIGN, type AdamWParams, type Backend, type HostTensors, type TensorKinds } from '../backend/types';
import { ConfigError } from '../core/errors';
import type { ParamSet } from './acts';
import type { ParamSlot } from './types';

/** Parameter state downloaded: params [n] and optim = [t, m (n), v (n)] (AdamW step count and moments). */
export interface ModelState {
  readonly params: Float32Array;
  readonly optim: Float32Array;
}

/** The host vectors a flat read fills: f32 as the tensors hold it, or f64 (each value converted exactly). */
export type HostVector = Float32Array | Float64Array;
/** Which of them to make. */
export type HostVectorCtor<A extends HostVector> = new (length: number) => A;

/** A slot to lay out: its name, shape and starting values (zeros when absent). */
export interface SlotSpec {
  readonly name: string;
  readonly shape: readonly number[];
  readonly init?: ArrayLike<number>;
}

function gcd(a: number, b: number): number {
  while (b !== 0) [a, b] = [b, a % b];
  return a;
}

export class ParamStore<X extends TensorKinds = HostTensors> {
  /** Named slices of the flat parameter vector (unpadded offsets); one backend view each. */
  readonly layout: readonly ParamSlot[];
  /** Current parameters, ∂L/∂params (backward accumulates), AdamW moments: one view per slot of the flat tensors. */
  readonly params: X['f32'][];
  readonly grads: X['f32'][];
  readonly m: X['f32'][];
  readonly v: X['f32'][];
  private steps = 0;
  private changes = 0;
  /** Number of values in the flat vector. */
  private readonly n: number;
  /** Slot i's first element in the flat tensors (a multiple of VIEW_ALIGN), and their length. */
  private readonly padOff: readonly number[];
  private readonly nPad: number;
  /** The flat tensors the slots view: parameters, gradients, AdamW m and v [nPad]. */
  private readonly flat: { readonly params: X['f32']; readonly grads: X['f32']; readonly m: X['f32']; readonly v: X['f32'] };
  /** Pack row width: gcd of the slot sizes. */
  private readonly g: number;
  private readonly slots = new Map<string, number>();
  /** Zeros [max(1, nPad)]: copies are residualForward(dst, src, zeros). */
  private readonly zeroSlot: X['f32'];
  private readonly packIdx = new Map<string, X['i32']>();

  constructor(
    private readonly be: Backend<X>,
    specs: readonly SlotSpec[],
  ) {
    const layout: ParamSlot[] = [];
    let n = 0;
    for (const { name, shape } of specs) {
      const size = shape.reduce((p, s) => p * s, 1);
      this.slots.set(name, layout.length);
      layout.push({ name, offset: n, size, shape });
      n += size;
    }
    this.layout = layout;
    this.n = n;
    this.g = layout.reduce((g, s) => gcd(g, s.size), 0) || 1;
    let padded = 0;
    this.padOff = layout.map((s) => {
      const o = padded;
      padded += Math.ceil(s.size / VIEW_ALIGN) * VIEW_ALIGN;
      return o;
    });
    this.nPad = padded;
    const flatHost = new Float32Array(padded);
    specs.forEach((s, i) => {
      if (s.init !== undefined) flatHost.set(s.init, this.padOff[i]!);
    });
    this.flat = { params: be.upload('f32', flatHost), grads: be.zeros('f32', padded), m: be.zeros('f32', padded), v: be.zeros('f32', padded) };
    const views = (t: X['f32']): X['f32'][] => layout.map((s, i) => be.view(t, this.padOff[i]!, s.size));
    this.params = views(this.flat.params);
    this.grads = views(this.flat.grads);
    this.m = views(this.flat.m);
    this.v = views(this.flat.v);
    this.zeroSlot = be.zeros('f32', Math.max(1, padded));
  }

  /** AdamW steps taken. */
  get t(): number {
    return this.steps;
  }

  /** Bumped whenever the parameters change (adamStep, setParams, setState). */
  get version(): number {
    return this.changes;
  }

  /** Number of trainable parameters (the flat vector's length). */
  count(): number {
    return this.n;
  }

  /** The index of slot `name` in `layout`. */
  slotOf(name: string): number {
    return this.slots.get(name)!;
  }

  /** Releases every tensor the store holds. */
  dispose(): void {
    const f = this.flat;
    for (const t of [f.params, f.grads, f.m, f.v, this.zeroSlot]) this.be.dispose(t);
    for (const t of this.packIdx.values()) this.be.dispose(t);
    this.packIdx.clear();
  }

  /** grads ← 0 (one fill of the flat gradient). */
  zeroGrad(): void {
    this.be.fill(this.flat.grads, 0);
  }

  /** grads ← s·grads (gradient clipping): the flat gradient through a scratch tensor (two ops), as no op may read and write one tensor. */
  scaleGrads(s: number): void {
    const be = this.be;
    const n = this.nPad;
    if (n === 0) return;
    const tmp = be.zeros('f32', n);
    be.residualForward(tmp, this.zeroSlot, this.flat.grads, n, s);
    be.residualForward(this.flat.grads, this.zeroSlot, tmp, n, 1);
    be.dispose(tmp);
  }

  /** One AdamW step over the flat tensors (elementwise: equal to one per slot; the zero padding stays zero); t ← t + 1. */
  adamStep(hp: AdamWParams): void {
    this.steps += 1;
    this.changes++;
    const f = this.flat;
    if (this.nPad > 0) this.be.adamwStep(f.params, f.grads, f.m, f.v, this.nPad, this.steps, hp);
  }

  /** A device copy of the current parameters (e.g. a frozen reference for the model's `forward({ params })`). */
  copyParams(): X['f32'][] {
    return this.layout.map((s, i) => {
      const t = this.be.zeros('f32', s.size);
      this.be.residualForward(t, this.params[i]!, this.zeroSlot, s.size, 1);
      return t;
    });
  }

  /** Overwrites `dst` (a ParamSet of this layout) with the current parameters. */
  copyParamsInto(dst: ParamSet<X>): void {
    this.layout.forEach((s, i) => this.be.residualForward(dst[i]!, this.params[i]!, this.zeroSlot, s.size, 1));
  }

  /** Overwrites `dst` (a ParamSet of this layout, e.g. from copyParams) with the flat vector `flat` (one upload). */
  writeParams(dst: ParamSet<X>, flat: ArrayLike<number>): void {
    if (flat.length !== this.n) throw new ConfigError('params', flat.length, `writeParams: got ${flat.length} values; this model has ${this.n} trainable parameters.`);
    this.unpack(asF32(flat), [dst]);
  }

  /** Releases a ParamSet made by copyParams. */
  disposeParams(set: ParamSet<X>): void {
    for (const t of set) this.be.dispose(t);
  }

  /** Index tensor placing slot `i` of set `j` at rows (j·n + offset)/g … of a packed flat tensor. */
  private idx(j: number, i: number): X['i32'] {
    const key = `${j}:${i}`;
    let t = this.packIdx.get(key);
    if (!t) {
      const s = this.layout[i]!;
      const r0 = (j * this.n + s.offset) / this.g;
      t = this.be.upload('i32', Int32Array.from({ length: s.size / this.g }, (_, k) => r0 + k));
      this.packIdx.set(key, t);
    }
    return t;
  }

  /**
   * Downloads flat tensors (all asked for at once: one submission on a GPU; read in place where the
   * backend's tensors are host memory, `hostView`) and unpads flat j into `into[j]` from its
   * element `at[j]`, slot by slot at the layout's offsets: straight into the vectors the caller
   * keeps, with no copy between.
   */
  private async readFlat(flats: readonly X['f32'][], into: readonly HostVector[], at: readonly number[]): Promise<void> {
    if (this.n === 0) return;
    const view = this.be.hostView;
    const hs = view ? flats.map((f) => view(f)) : await Promise.all(flats.map((f) => this.be.download('f32', f)));
    hs.forEach((h, j) => this.layout.forEach((s, i) => into[j]!.set(h.subarray(this.padOff[i]!, this.padOff[i]! + s.size), at[j]! + s.offset)));
  }

  /** One flat tensor as a new [n] vector of `ctor`'s type. */
  private async readOne<A extends HostVector>(flat: X['f32'], ctor: HostVectorCtor<A>): Promise<A> {
    const out = new ctor(this.n);
    await this.readFlat([flat], [out], [0]);
    return out;
  }

  /** Uploads one flat [sets·n] array and scatters it into per-slot sets. */
  private unpack(flat: Float32Array, sets: readonly ParamSet<X>[]): void {
    if (this.n === 0) return;
    const t = this.be.upload('f32', flat);
    sets.forEach((set, j) => this.layout.forEach((s, i) => this.be.embeddingForward(set[i]!, this.idx(j, i), t, 1, s.size / this.g, this.g)));
    this.be.dispose(t);
  }

  /** The current parameters as one flat vector (one download). */
  getParams(): Promise<Float32Array> {
    return this.readOne(this.flat.params, Float32Array);
  }

  /** The current gradient as one flat vector (one download), in f32 or, given Float64Array, in f64. */
  getGrads(): Promise<Float32Array>;
  getGrads<A extends HostVector>(ctor: HostVectorCtor<A>): Promise<A>;
  getGrads(ctor: HostVectorCtor<HostVector> = Float32Array): Promise<HostVector> {
    return this.readOne(this.flat.grads, ctor);
  }

  /** Sets the gradient from a flat vector (one upload), e.g. data-parallel shards summed elsewhere. */
  setGrads(flat: ArrayLike<number>): void {
    if (flat.length !== this.n) throw new ConfigError('grads', flat.length, `setGrads: got ${flat.length} values; this model has ${this.n} trainable parameters.`);
    this.unpack(asF32(flat), [this.grads]);
  }

  /** Sets the parameters from a flat vector (one upload); the optimizer state is kept. */
  setParams(flat: ArrayLike<number>): void {
    if (flat.length !== this.n) throw new ConfigError('params', flat.length, `setParams: got ${flat.length} values; this model has ${this.n} trainable parameters.`);
    this.changes++;
    this.unpack(asF32(flat), [this.params]);
  }

  /** Params and optimizer state ([t, m…, v…]), in one download; in f32 or, given Float64Array, in f64. */
  getState(): Promise<ModelState>;
  getState<A extends HostVector>(ctor: HostVectorCtor<A>): Promise<{ readonly params: A; readonly optim: A }>;
  async getState(ctor: HostVectorCtor<HostVector> = Float32Array): Promise<{ readonly params: HostVector; readonly optim: HostVector }> {
    const n = this.n;
    const params = new ctor(n);
    const optim = new ctor(1 + 2 * n);
    optim[0] = this.steps;
    await this.readFlat([this.flat.params, this.flat.m, this.flat.v], [params, optim, optim], [0, 1, 1 + n]);
    return { params, optim };
  }

  /** Restores a `getState` snapshot (params alone keeps the optimizer state), in one upload. */
  setState(state: { readonly params: ArrayLike<number>; readonly optim?: ArrayLike<number> }): void {
    const n = this.n;
    if (state.params.length !== n) throw new ConfigError('params', state.params.length, `setState: params has ${state.params.length} values; this model has ${n} trainable parameters.`);
    if (state.optim === undefined) return this.setParams(state.params);
    const o = state.optim;
    if (o.length !== 1 + 2 * n) throw new ConfigError('optim', o.length, `setState: optim has ${o.length} values; expected 1 + 2·${n} = ${1 + 2 * n} ([t, m…, v…]).`);
    const t = o[0]!;
    if (!Number.isInteger(t) || t < 0) throw new ConfigError('optim', t, `setState: optim[0] (the AdamW step count) must be an integer ≥ 0, got ${t}.`);
    // TypedArray set: the same f32 rounding as assigning element by element, with no hot loop
    // here for a JavaScript engine to compile in every worker that restores a snapshot.
    const all = new Float32Array(3 * n);
    all.set(state.params);
    all.set(ArrayBuffer.isView(o) ? (o as unknown as Float64Array).subarray(1) : Array.prototype.slice.call(o, 1), n);
    this.steps = t;
    this.changes++;
    this.unpack(all, [this.params, this.m, this.v]);
  }
}

/** `flat` as a Float32Array: itself when it is one (an upload copies it), else converted. */
function asF32(flat: ArrayLike<number>): Float32Array {
  return flat instanceof Float32Array ? flat : Float32Array.from(flat);
}
