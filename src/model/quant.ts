/**
 * Block quantization of weight matrices: int8 (Q8, the numbers of GGUF Q8_0) and int4 (Q4, the
 * packing of ONNX MatMulNBits), blocks of 32 consecutive values along the input dim, one f16 scale
 * per block. A matrix is [rows × cols] = [out × in], row-major; cols must be a multiple of 32.
 * Every element is within scale/2 of its value: no element is ever clamped (see blockScales).
 *
 * Not here: which tensors get quantized (weights.ts), the dequantizing loops and the quantized
 * matmuls (src/backend/cpu/quant.ts: one copy serves both).
 */
import { dequantRowsQ4, dequantRowsQ8 } from '../backend/cpu/quant';
import { QBLOCK } from '../backend/types';
import { ConfigError, NumericError } from '../core/errors';
import { f16ToF32, f32ToF16 } from '../core/f16';

/** Values per block (the layout the backend's quantized matmuls read). */
export const QK = QBLOCK;

/** How a tensor (or a whole model file) stores its matrices: the one list every reader and menu uses. */
export const QUANT_KINDS = ['f32', 'q8', 'q4'] as const;
export type QuantKind = (typeof QUANT_KINDS)[number];
/** The same kinds in the order a seat offers them (card, links, messages): the quantized ones first, f32 last. */
export const SEAT_QUANTS: readonly QuantKind[] = [...QUANT_KINDS.filter((q) => q !== 'f32'), 'f32'];

export interface Q8Matrix {
  readonly q: Int8Array;
  readonly scales: Uint16Array;
}
export interface Q4Matrix {
  readonly q: Uint8Array;
  readonly scales: Uint16Array;
}

function checkShape(what: string, rows: number, cols: number, len: number | null): void {
  if (!Number.isInteger(rows) || rows < 0 || !Number.isInteger(cols) || cols < 0) {
    throw new ConfigError('shape', [rows, cols], `${what}: shape [${rows}, ${cols}] must be non-negative integers.`);
  }
  if (cols % QK !== 0) {
    throw new ConfigError('shape', [rows, cols], `${what}: input dim ${cols} is not a multiple of ${QK}; only such matrices can be block-quantized (keep this one in f32).`);
  }
  if (len !== null && len !== rows * cols) {
    throw new ConfigError('shape', [rows, cols], `${what}: data has ${len} values but shape [${rows}, ${cols}] needs ${rows * cols}.`);
  }
}

/** Round half away from zero (C's roundf, as ggml uses). */
function roundAway(v: number): number {
  return v < 0 ? -Math.round(-v) : Math.round(v);
}

/**
 * The f16 bit pattern of the smallest f16 value ≥ v (v ≥ 0, finite). Throws NumericError when v
 * exceeds the largest f16 (65504), its message starting with `where` (the tensor and block).
 */
export function f16AtLeast(v: number, where = ''): number {
  let h = f32ToF16(v);
  if (f16ToF32(h) < v) h += 1; // positive f16 bit patterns are ordered like their values
  if (h >= 0x7c00) {
    throw new NumericError(`${where}block scale ${v} does not fit in f16 (largest 65504): the weights are too large to quantize`);
  }
  return h;
}

/**
 * Shared by Q8/Q4: per-block absmax → stored f16 scale bits, for `rows` rows of x from element
 * `xAt`, written to scales from row `at` (messages name rows from `at`); `levels` is 127 or 7.
 * Values are quantized with the *stored* f16 scale, rounded up to the next f16 if rounding to
 * nearest would make it smaller than max|x|/levels, so no element is clamped and |x − x̂| ≤ scale/2
 * exactly (plus the f32 rounding of x̂, ≤ |x̂|·2⁻²⁴). llama.cpp uses the unrounded f32 scale, so in
 * rare elements our q differs from its by one; the format and its meaning are the same.
 */
function blockScales(x: Float32Array, xAt: number, rows: number, cols: number, levels: number, scales: Uint16Array, at: number, what: string): void {
  const nb = cols / QK;
  for (let o = 0; o < rows; o++) {
    for (let b = 0; b < nb; b++) {
      const base = xAt + o * cols + b * QK;
      let amax = 0;
      for (let i = 0; i < QK; i++) {
        const v = x[base + i]!;
        if (!Number.isFinite(v)) {
          throw new NumericError(`${what}: value at [${at + o}, ${b * QK + i}] is ${v}; only finite weights can be quantized`);
        }
        const a = Math.abs(v);
        if (a > amax) amax = a;
      }
      scales[(at + o) * nb + b] = amax === 0 ? 0 : f16AtLeast(amax / levels, `${what}: row ${at + o}, block ${b}: `);
    }
  }
}

/** Where a quantizer writes: rows `at`.. of a matrix of `rows` rows (q and scales sized for all of them). */
function checkInto(what: string, xLen: number, xAt: number, rows: number, cols: number, m: { q: ArrayLike<number>; scales: ArrayLike<number> }, perByte: number, at: number): void {
  checkShape(what, rows, cols, null);
  if (cols === 0) return; // nothing to write
  const total = m.scales.length / (cols / QK);
  if (!Number.isInteger(xAt) || xAt < 0 || xAt + rows * cols > xLen || !Number.isInteger(at) || at < 0 || at + rows > total || m.q.length * perByte !== total * cols) {
    throw new ConfigError('shape', [rows, cols], `${what}: rows [${at}, ${at + rows}) of ${cols} values from element ${xAt} of ${xLen} do not fit a matrix of ${m.q.length * perByte} values and ${m.scales.length} scales.`);
  }
}

/**
 * Q8 blocks of `rows` rows of x (from element `xAt`, `cols` values each) written into rows `at`..
 * of `m`: the same numbers as quantizeQ8 of the whole matrix gives those rows (each row's blocks
 * are its own), so a loader can quantize a matrix row block by row block into its final arrays.
 */
export function quantizeRowsQ8(x: Float32Array, xAt: number, rows: number, cols: number, m: Q8Matrix, at: number, what = 'quantizeQ8'): void {
  checkInto(what, x.length, xAt, rows, cols, m, 1, at);
  blockScales(x, xAt, rows, cols, 127, m.scales, at, what);
  const { q, scales } = m;
  const nb = cols / QK;
  for (let o = 0; o < rows; o++) {
    const dst = (at + o) * cols;
    q.fill(0, dst, dst + cols);
    for (let b = 0; b < nb; b++) {
      const s = f16ToF32(scales[(at + o) * nb + b]!);
      if (s === 0) continue;
      const base = xAt + o * cols + b * QK;
      for (let i = 0; i < QK; i++) {
        const v = roundAway(x[base + i]! / s);
        q[dst + b * QK + i] = v > 127 ? 127 : v < -127 ? -127 : v;
      }
    }
  }
}

/**
 * f32 [rows × cols] → Q8 blocks: q Int8Array(rows·cols) row-major, scales Uint16Array(rows·cols/32)
 * of f16 bits, block of (o, c) = o·(cols/32) + ⌊c/32⌋; scale = max|x|/127 over the block (an
 * all-zero block has scale 0, q = 0), q = round(x/scale) half away from zero, x̂ = q·scale.
 */
export function quantizeQ8(x: Float32Array, rows: number, cols: number, what = 'quantizeQ8'): Q8Matrix {
  checkShape(what, rows, cols, x.length);
  const m = { q: new Int8Array(rows * cols), scales: new Uint16Array((rows * cols) / QK) };
  quantizeRowsQ8(x, 0, rows, cols, m, 0, what);
  return m;
}

/** Q8 blocks → f32 [rows × cols] (written into `out` if given). */
export function dequantizeQ8(m: Q8Matrix, rows: number, cols: number, out?: Float32Array): Float32Array {
  checkShape('dequantizeQ8', rows, cols, m.q.length);
  const nb = cols / QK;
  if (m.scales.length !== rows * nb) {
    throw new ConfigError('shape', [rows, cols], `dequantizeQ8: ${m.scales.length} scales but shape [${rows}, ${cols}] needs ${rows * nb}.`);
  }
  const y = out ?? new Float32Array(rows * cols);
  dequantRowsQ8(y, m.q, m.scales, cols, 0, rows);
  return y;
}

/** Q4 blocks of rows of x written into rows `at`.. of `m`, as quantizeRowsQ8 (the same numbers as quantizeQ4 of the whole matrix). */
export function quantizeRowsQ4(x: Float32Array, xAt: number, rows: number, cols: number, m: Q4Matrix, at: number, what = 'quantizeQ4'): void {
  checkInto(what, x.length, xAt, rows, cols, m, 2, at);
  blockScales(x, xAt, rows, cols, 7, m.scales, at, what);
  const { q, scales } = m;
  const nb = cols / QK;
  for (let o = 0; o < rows; o++) {
    const dst = (at + o) * cols;
    q.fill(0x88, dst >> 1, (dst + cols) >> 1); // nibble 8 = value 0
    for (let b = 0; b < nb; b++) {
      const s = f16ToF32(scales[(at + o) * nb + b]!);
      if (s === 0) continue;
      const base = xAt + o * cols + b * QK;
      for (let i = 0; i < QK; i += 2) {
        const lo = Math.min(15, Math.max(0, roundAway(x[base + i]! / s) + 8));
        const hi = Math.min(15, Math.max(0, roundAway(x[base + i + 1]! / s) + 8));
        q[(dst + b * QK + i) >> 1] = lo | (hi << 4);
      }
    }
  }
}

/**
 * f32 [rows × cols] → Q4 blocks: q Uint8Array(rows·cols/2), element (o, c) in byte ⌊(o·cols + c)/2⌋,
 * low nibble for even c; scales as Q8's. scale = max|x|/7, symmetric (nibble 0 never produced:
 * GGUF Q4_0's "signed absmax / −8" clamps the opposite extreme and can be off by a whole scale),
 * nibble = clamp(round(x/scale) + 8, 0, 15), x̂ = (nibble − 8)·scale.
 */
export function quantizeQ4(x: Float32Array, rows: number, cols: number, what = 'quantizeQ4'): Q4Matrix {
  checkShape(what, rows, cols, x.length);
  const m = { q: new Uint8Array((rows * cols) / 2), scales: new Uint16Array((rows * cols) / QK) };
  quantizeRowsQ4(x, 0, rows, cols, m, 0, what);
  return m;
}

/** The 4-bit code (0..15) of element `index` = o·cols + c of a packed Q4 matrix. */
export function q4Nibble(q: Uint8Array, index: number): number {
  const byte = q[index >> 1]!;
  return index & 1 ? byte >> 4 : byte & 0x0f;
}

/** Q4 blocks → f32 [rows × cols] (written into `out` if given). */
export function dequantizeQ4(m: Q4Matrix, rows: number, cols: number, out?: Float32Array): Float32Array {
  checkShape('dequantizeQ4', rows, cols, m.q.length * 2);
  const nb = cols / QK;
  if (m.scales.length !== rows * nb) {
    throw new ConfigError('shape', [rows, cols], `dequantizeQ4: ${m.scales.length} scales but shape [${rows}, ${cols}] needs ${rows * nb}.`);
  }
  const y = out ?? new Float32Array(rows * cols);
  dequantRowsQ4(y, m.q, m.scales, cols, 0, rows);
  return y;
}

/**
 * Index of the first non-finite f16 scale (Inf or NaN), or −1. A loader uses it to reject a
 * corrupt file with the tensor and block named.
 */
export function firstNonFiniteScale(scales: Uint16Array): number {
  for (let i = 0; i < scales.length; i++) if ((scales[i]! & 0x7c00) === 0x7c00) return i;
  return -1;
}
