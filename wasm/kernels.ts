/**
 * WebAssembly SIMD kernels of the CPU backend, in AssemblyScript (compiled by `npm run build:wasm`,
 * scripts/build-wasm.mjs, into src/backend/cpu/wasm/kernels.wasm.ts; loaded by src/backend/cpu/simd.ts).
 *
 * One kernel serves the whole f32 matmul family: a "broadcast × row" product
 *   out[r, j] = Σ_k A(r, k) · B[k, j]        r < R, j < J (J a multiple of 4), k < K
 * with A read through strides (element (r, k) at a + 4·(r·ars + k·aks)) and B, out row-major with
 * J columns. The loader (simd.ts) maps the three matmul products onto it:
 *   forward      out  = inp · Wᵀ    A = inp  (ars C, aks 1),   B = Wᵀ [C × OC]   (transposed on copy-in)
 *   input grad   dinp = dout · W    A = dout (ars OC, aks 1),  B = W  [OC × C]
 *   weight grad  dW   = doutᵀ · inp A = doutᵀ (ars 1, aks OC), B = inp [N × C]
 * so no kernel needs a horizontal (across-lane) sum: every lane is its own output element.
 *
 * Tiling: a 4 × 8 tile of `out` (4 rows of A, two f32x4 columns of B) lives in 8 v128 registers;
 * each step k loads two B vectors and splats four A scalars (v128.load32_splat), i.e. 8 mul + 8 add
 * per 6 loads. 4 × 8 keeps 8 accumulators + 2 B vectors + 1 splat within the 16 xmm registers V8
 * has on x64, so it should not spill (chosen for that; V8's machine code not inspected). Column blocks are the outer loop so a K × 8 strip of B stays in
 * cache while every row tile of A streams past it. Tails: a 4-column block, then single rows.
 *
 * Numerics: each output element is ONE f32 accumulator (one lane) summed in ascending k — not the
 * f64 accumulator of the TypeScript twins (src/backend/cpu/matmul.ts); the results are not bit-equal
 * to them, within the usual f32 bound |Δ| ≤ K·2⁻²⁴·Σ_k |A·B|. The result does not depend on the tile
 * an element falls in (every path is the same ascending f32 sum), so it is deterministic and
 * independent of R and J.
 *
 * Gradients accumulate here (`acc`): the loader copies the gradient in, the kernel adds its sums at
 * the store, the loader copies it back — two memcpys instead of a JS `+=` loop.
 *
 * Memory: no allocator, no GC (`--runtime stub`): the loader owns the exported linear memory and
 * passes byte offsets above `heapBase()`; every pointer must be 16-byte aligned for B and out.
 *
 * Not here: copies in and out, padding (simd.ts), quantized weights (dequantized by the loader),
 * attention and the row kernels (still TypeScript).
 */

/** First free byte after the module's static data: the loader's buffers start here (16-aligned). */
export function heapBase(): usize {
  return (__heap_base + 15) & ~(<usize>15);
}

/** f32x4 store of s, or of (what is there) + s when accumulating. */
// @ts-ignore: decorator
@inline function put(p: usize, s: v128, acc: bool): void {
  v128.store(p, acc ? f32x4.add(v128.load(p), s) : s);
}

/**
 * out[R × J] = A · B (header), or out += A · B when `acc` ≠ 0 (the sum is completed in its lane
 * first, then added once: f32(out + Σ)). J must be a multiple of 4.
 */
export function gemm(a: usize, ars: i32, aks: i32, b: usize, J: i32, out: usize, R: i32, K: i32, acc: i32): void {
  const ac = acc != 0;
  const bRow = (<usize>J) << 2; // bytes per row of B and of out
  const aR = (<usize>ars) << 2;
  const aK = (<usize>aks) << 2;
  let j = 0;
  for (; j + 8 <= J; j += 8) {
    const bj = b + ((<usize>j) << 2);
    let r = 0;
    for (; r + 4 <= R; r += 4) {
      let p0 = a + (<usize>r) * aR;
      let p1 = p0 + aR;
      let p2 = p1 + aR;
      let p3 = p2 + aR;
      let bp = bj;
      let s00 = f32x4.splat(0), s01 = f32x4.splat(0);
      let s10 = f32x4.splat(0), s11 = f32x4.splat(0);
      let s20 = f32x4.splat(0), s21 = f32x4.splat(0);
      let s30 = f32x4.splat(0), s31 = f32x4.splat(0);
      for (let k = 0; k < K; k++) {
        const b0 = v128.load(bp);
        const b1 = v128.load(bp, 16);
        let x = v128.load32_splat(p0);
        s00 = f32x4.add(s00, f32x4.mul(x, b0));
        s01 = f32x4.add(s01, f32x4.mul(x, b1));
        x = v128.load32_splat(p1);
        s10 = f32x4.add(s10, f32x4.mul(x, b0));
        s11 = f32x4.add(s11, f32x4.mul(x, b1));
        x = v128.load32_splat(p2);
        s20 = f32x4.add(s20, f32x4.mul(x, b0));
        s21 = f32x4.add(s21, f32x4.mul(x, b1));
        x = v128.load32_splat(p3);
        s30 = f32x4.add(s30, f32x4.mul(x, b0));
        s31 = f32x4.add(s31, f32x4.mul(x, b1));
        p0 += aK;
        p1 += aK;
        p2 += aK;
        p3 += aK;
        bp += bRow;
      }
      const o = out + ((<usize>r) * (<usize>J) + (<usize>j)) * 4;
      put(o, s00, ac);
      put(o + 16, s01, ac);
      put(o + bRow, s10, ac);
      put(o + bRow + 16, s11, ac);
      put(o + 2 * bRow, s20, ac);
      put(o + 2 * bRow + 16, s21, ac);
      put(o + 3 * bRow, s30, ac);
      put(o + 3 * bRow + 16, s31, ac);
    }
    for (; r < R; r++) {
      let p0 = a + (<usize>r) * aR;
      let bp = bj;
      let s0 = f32x4.splat(0), s1 = f32x4.splat(0);
      for (let k = 0; k < K; k++) {
        const x = v128.load32_splat(p0);
        s0 = f32x4.add(s0, f32x4.mul(x, v128.load(bp)));
        s1 = f32x4.add(s1, f32x4.mul(x, v128.load(bp, 16)));
        p0 += aK;
        bp += bRow;
      }
      const o = out + ((<usize>r) * (<usize>J) + (<usize>j)) * 4;
      put(o, s0, ac);
      put(o + 16, s1, ac);
    }
  }
  for (; j < J; j += 4) {
    const bj = b + ((<usize>j) << 2);
    let r = 0;
    for (; r + 4 <= R; r += 4) {
      let p0 = a + (<usize>r) * aR;
      let p1 = p0 + aR;
      let p2 = p1 + aR;
      let p3 = p2 + aR;
      let bp = bj;
      let s0 = f32x4.splat(0), s1 = f32x4.splat(0), s2 = f32x4.splat(0), s3 = f32x4.splat(0);
      for (let k = 0; k < K; k++) {
        const b0 = v128.load(bp);
        s0 = f32x4.add(s0, f32x4.mul(v128.load32_splat(p0), b0));
        s1 = f32x4.add(s1, f32x4.mul(v128.load32_splat(p1), b0));
        s2 = f32x4.add(s2, f32x4.mul(v128.load32_splat(p2), b0));
        s3 = f32x4.add(s3, f32x4.mul(v128.load32_splat(p3), b0));
        p0 += aK;
        p1 += aK;
        p2 += aK;
        p3 += aK;
        bp += bRow;
      }
      const o = out + ((<usize>r) * (<usize>J) + (<usize>j)) * 4;
      put(o, s0, ac);
      put(o + bRow, s1, ac);
      put(o + 2 * bRow, s2, ac);
      put(o + 3 * bRow, s3, ac);
    }
    for (; r < R; r++) {
      let p0 = a + (<usize>r) * aR;
      let bp = bj;
      let s0 = f32x4.splat(0);
      for (let k = 0; k < K; k++) {
        s0 = f32x4.add(s0, f32x4.mul(v128.load32_splat(p0), v128.load(bp)));
        p0 += aK;
        bp += bRow;
      }
      put(out + ((<usize>r) * (<usize>J) + (<usize>j)) * 4, s0, ac);
    }
  }
}
