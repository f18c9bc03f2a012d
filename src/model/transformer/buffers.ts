/**
 * Activation and gradient buffers of the Transformer, allocated once and reused (grow-only):
 * a forward over B·T rows needs N = B·T rows of each, attention B·NH·T·T probabilities, and the
 * kernels only require buffers to be at least that long, so one set sized for the largest call
 * serves every smaller one.
 *
 * Shapes: N rows, C model width, H hidden, L layers, r LoRA rank, maxOut = max(C, H).
 *
 * Not here: what is computed into them (transformer.ts, linear.ts).
 */
import type { FloatArray } from '../../backend/types';
import type { FloatArrayCtor } from './types';

/** Activations of one layer (saved for backward when kept). */
export interface LayerActs {
  ln1: FloatArray; // [N × C]
  rstd1: FloatArray; // [N]
  q: FloatArray; // [N × C], rotated
  k: FloatArray; // [N × C], rotated
  v: FloatArray; // [N × C]
  att: FloatArray; // [B × NH × T × T]
  ao: FloatArray; // [N × C], attention output before Wo
  mid: FloatArray; // [N × C], x after the attention residual
  ln2: FloatArray; // [N × C]
  rstd2: FloatArray; // [N]
  a: FloatArray; // [N × H]
  b: FloatArray; // [N × H]
  h: FloatArray; // [N × H]
  u: (FloatArray | null)[]; // per projection [N × r], null where no adapter
}

export interface Acts {
  /** Row capacity (N) and attention capacity (B·NH·T·T) the buffers were sized for. */
  capN: number;
  capAtt: number;
  sets: LayerActs[];
  res: FloatArray[]; // [L + 1] × [N × C]
  lnf: FloatArray; // [N × C]
  rstdf: FloatArray; // [N]
  proj: FloatArray; // [N × C] scratch (Wo / W2 outputs)
  tmp: FloatArray; // [N × maxOut] scratch (LoRA)
}

/** Backward scratch, shared by all layers (overwritten per layer). */
export interface GradScratch {
  capN: number;
  dx: FloatArray;
  dln: FloatArray;
  dq: FloatArray;
  dk: FloatArray;
  dv: FloatArray;
  dao: FloatArray;
  drot: FloatArray;
  dlnf: FloatArray;
  dh: FloatArray;
  da: FloatArray;
  db: FloatArray;
  dsc: FloatArray;
  du: FloatArray;
}

/** Sizes the buffers depend on. `ranks[j]` is projection j's LoRA rank, null if not adapted. */
export interface BufferDims {
  readonly C: number;
  readonly H: number;
  readonly L: number;
  readonly ranks: readonly (number | null)[];
}

/** Activations for N rows: `nSets` per-layer sets (L when kept, else 1 shared), att entries each. */
export function makeActs<A extends FloatArray>(F: FloatArrayCtor<A>, dims: BufferDims, N: number, att: number, nSets: number): Acts {
  const { C, H, L } = dims;
  const sets: LayerActs[] = [];
  for (let s = 0; s < nSets; s++) {
    sets.push({
      ln1: new F(N * C),
      rstd1: new F(N),
      q: new F(N * C),
      k: new F(N * C),
      v: new F(N * C),
      att: new F(att),
      ao: new F(N * C),
      mid: new F(N * C),
      ln2: new F(N * C),
      rstd2: new F(N),
      a: new F(N * H),
      b: new F(N * H),
      h: new F(N * H),
      u: dims.ranks.map((r) => (r === null ? null : new F(N * r))),
    });
  }
  return {
    capN: N,
    capAtt: att,
    sets,
    res: Array.from({ length: L + 1 }, () => new F(N * C)),
    lnf: new F(N * C),
    rstdf: new F(N),
    proj: new F(N * C),
    tmp: new F(N * Math.max(C, H)),
  };
}

/** Backward scratch for N rows. */
export function makeGradScratch<A extends FloatArray>(F: FloatArrayCtor<A>, dims: BufferDims, N: number): GradScratch {
  const { C, H } = dims;
  const r = Math.max(0, ...dims.ranks.map((x) => x ?? 0));
  return {
    capN: N,
    dx: new F(N * C),
    dln: new F(N * C),
    dq: new F(N * C),
    dk: new F(N * C),
    dv: new F(N * C),
    dao: new F(N * C),
    drot: new F(N * C),
    dlnf: new F(N * C),
    dh: new F(N * H),
    da: new F(N * H),
    db: new F(N * H),
    dsc: new F(N * Math.max(C, H)),
    du: new F(N * r),
  };
}
