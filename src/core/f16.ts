/**
 * IEEE 754 half precision (binary16) ↔ f32 conversion, for the scales of int8/int4 weight blocks
 * (one f16 per 32 values, as GGUF Q8_0 and ONNX MatMulNBits store them).
 *
 * Conversion to f16 rounds to nearest, ties to even; overflow gives ±Infinity, NaN stays NaN.
 * Not here: f16 arithmetic (we never compute in f16, we only store in it).
 */

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

/** The f16 bit pattern (0..65535) nearest to x. */
export function f32ToF16(x: number): number {
  f32[0] = x;
  const bits = u32[0]!;
  const sign = (bits >>> 16) & 0x8000;
  const exp = (bits >>> 23) & 0xff;
  let mant = bits & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant ? 0x200 : 0); // Inf or NaN
  let e = exp - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00; // overflow → Inf
  if (e <= 0) {
    // Subnormal f16 (or zero): shift the implicit 1 in, round to nearest even.
    if (e < -10) return sign;
    mant |= 0x800000;
    const shift = 14 - e;
    let half = mant >>> shift;
    const rem = mant & ((1 << shift) - 1);
    const mid = 1 << (shift - 1);
    if (rem > mid || (rem === mid && (half & 1))) half++;
    return sign | half;
  }
  let half = (e << 10) | (mant >>> 13);
  const rem = mant & 0x1fff;
  if (rem > 0x1000 || (rem === 0x1000 && (half & 1))) half++; // may carry into the exponent: still correct
  return sign | half;
}

/** The value of an f16 bit pattern. */
export function f16ToF32(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const exp = (h >>> 10) & 0x1f;
  const mant = h & 0x3ff;
  if (exp === 0) return sign * mant * 2 ** -24;
  if (exp === 0x1f) return mant ? NaN : sign * Infinity;
  return sign * (1 + mant / 1024) * 2 ** (exp - 15);
}
