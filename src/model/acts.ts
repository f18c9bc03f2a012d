/**
 * The model's scratch tensors: one block's activations (LayerActs), a forward's (Acts) and a
 * backward's gradient scratch (GradScratch), kept by the model and reused while large enough.
 * Shared by the forward/backward (model.ts) and the KV-cache decoder (decode.ts).
 */
import type { TensorKinds } from '../backend/types';

/** A set of parameter tensors, one per `layout` slot (the current ones, or a copy such as a reference). */
export type ParamSet<X extends TensorKinds> = readonly X['f32'][];

export interface LayerActs<X extends TensorKinds> {
  ln1: X['f32'];
  rstd1: X['f32'];
  /** q and k (rotated) are views of `qk` at the current row count (`placeQK`). */
  qk: X['f32'];
  q: X['f32'];
  k: X['f32'];
  v: X['f32'];
  att: X['f32'];
  ao: X['f32'];
  mid: X['f32'];
  ln2: X['f32'];
  rstd2: X['f32'];
  a: X['f32'];
  b: X['f32'];
  h: X['f32'];
  u: (X['f32'] | null)[];
}

export interface Acts<X extends TensorKinds> {
  capN: number;
  capAtt: number;
  sets: LayerActs<X>[];
  res: X['f32'][];
  lnf: X['f32'];
  rstdf: X['f32'];
  proj: X['f32'];
  /** Pre-rotation q and k [N × C]: views of `qkraw` (`placeQK`). */
  qkraw: X['f32'];
  qraw: X['f32'];
  kraw: X['f32'];
  /** LoRA scratch [N × maxOut]: the base output and the low-rank branch. */
  base: X['f32'];
  tmp: X['f32'];
  all: X['f32'][];
}

export interface GradScratch<X extends TensorKinds> {
  capN: number;
  dx: X['f32'];
  dln: X['f32'];
  /** dq, dk and drot (q's), drotk (k's): views of `dqk` and `drotqk` (`placeQK`). */
  dqk: X['f32'];
  dq: X['f32'];
  dk: X['f32'];
  dv: X['f32'];
  dao: X['f32'];
  drotqk: X['f32'];
  drot: X['f32'];
  drotk: X['f32'];
  dlnf: X['f32'];
  dh: X['f32'];
  da: X['f32'];
  db: X['f32'];
  dsc: X['f32'];
  du: X['f32'];
  all: X['f32'][];
}
